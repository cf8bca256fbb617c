"""What a model's ``train_step`` / ``valid_step`` return.

``TrainOutput(model, item=ClassificationOutput(loss, output, targets), grads=grads)``. Items hold
tensors; the learner ``detach()``es them on the training thread (cheap: it drops the autodiff graph)
and the event processor ``sync()``s them to numpy later, off the training path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import Field, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Self

from burn import Gradients
from burn.optim import GradientsParams


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "_b") and hasattr(value, "_p") and hasattr(value, "numpy")


class _Item:
    """Tensor fields read to the host with one device sync; everything else passes through."""

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def detach(self) -> Self:
        """The same item with tensors detached from the autodiff graph (no device sync)."""
        changes = {
            f.name: getattr(self, f.name).detach() for f in fields(self) if _is_tensor(getattr(self, f.name))
        }
        return replace(self, **changes) if changes else self

    def sync(self) -> Self:
        """The same item with every tensor field as a numpy array (one ``burn.Transaction``)."""
        return sync_many([self])[0]

    def _tensor_fields(self) -> list[str]:
        return [f.name for f in fields(self) if _is_tensor(getattr(self, f.name))]

    def device_bytes(self) -> int:
        """Bytes its tensor fields hold on their device (what keeping the item unread costs)."""
        total = 0
        for name in self._tensor_fields():
            t = getattr(self, name)
            total += math.prod(t.shape) * t.dtype.itemsize
        return total

    def __len__(self) -> int:
        """Number of samples in the batch (the first dim of ``targets`` or ``output``)."""
        for name in ("targets", "output"):
            value = getattr(self, name, None)
            shape = getattr(value, "shape", None)
            if shape:
                return int(shape[0])
        raise TypeError(f"{type(self).__name__} has no batch dim to count samples from")


@dataclass
class ClassificationOutput(_Item):
    """A classification batch: scalar ``loss``, ``output`` logits/scores (N, C), ``targets`` ints (N,)."""

    loss: Any
    output: Any
    targets: Any


@dataclass
class MultiLabelClassificationOutput(_Item):
    """A multilabel batch: scalar ``loss``, ``output`` scores (N, C), ``targets`` 0/1 labels (N, C)."""

    loss: Any
    output: Any
    targets: Any


@dataclass
class RegressionOutput(_Item):
    """A regression batch: scalar ``loss``, ``output`` (N, ...), ``targets`` (N, ...)."""

    loss: Any
    output: Any
    targets: Any


def sync_many(items: Sequence[Any]) -> list[Any]:
    """``[item.sync() for item in items]`` with one ``burn.Transaction`` (one device sync per
    backend) for the tensor fields of every ``ClassificationOutput``-like item; other items with a
    ``sync()`` are synced one by one, and items without one pass through."""
    out = list(items)
    pending: list[tuple[int, list[str]]] = []
    tensors: list[Any] = []
    for i, item in enumerate(out):
        if isinstance(item, _Item):
            names = item._tensor_fields()
            if names:
                pending.append((i, names))
                tensors.extend(getattr(item, name) for name in names)
        elif hasattr(item, "sync"):
            out[i] = item.sync()
    if tensors:
        import burn

        tx = burn.Transaction()
        for t in tensors:
            tx.register(t)
        arrays = iter(tx.execute())
        for i, names in pending:
            out[i] = replace(out[i], **{name: next(arrays) for name in names})
    return out


def _is_gradients(value: Any) -> bool:
    return isinstance(value, (Gradients, GradientsParams))


class TrainOutput:
    """What ``train_step`` returns: the model, the gradients of the loss, and the item for metrics.

    ``grads`` is what ``loss.backward()`` returned (``burn.Gradients``) or an
    ``optim.GradientsParams``; the learner turns it into parameter gradients for the optimizer.
    """

    __slots__ = ("model", "item", "grads")

    def __init__(self, model: Any, item: Any = None, grads: Any = None) -> None:
        if _is_gradients(item) and not _is_gradients(grads):
            item, grads = grads, item  # Burn's positional order is (model, grads, item)
        if grads is None:
            raise TypeError("TrainOutput: grads is required (what loss.backward() returned)")
        self.model = model
        self.item = item
        self.grads = grads

    def __repr__(self) -> str:
        return f"TrainOutput(model={type(self.model).__name__}, item={type(self.item).__name__}, grads={self.grads!r})"
