"""``Param`` (a trainable tensor with a stable id) and ``RunningState`` (recorded, not trained).

A Param's ``id`` is a short random hex string fixed at creation. It survives optimizer updates, device
moves and record files, so optimizer state keyed by id stays valid across checkpoints (Burn's ParamId).
On an autodiff device a trainable Param's tensor is a ``require_grad`` leaf.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from .._tensor import Tensor, _wrap

if TYPE_CHECKING:
    from .._device import Device
    from .._dtype import DType
    from ..backend import Backend


def new_param_id() -> str:
    return uuid.uuid4().hex[:16]


def lift(inner: Tensor, backend: Backend) -> Tensor:
    """A tensor of the inner backend placed back on ``backend`` (the Autodiff decorator or itself)."""
    if backend.is_autodiff and not inner.backend.is_autodiff:
        return _wrap(backend.from_inner(inner.primitive), backend)
    return inner


class _Recorded:
    """What ``Param`` and ``RunningState`` share: a stable ``id`` and the tensor ``value``."""

    __slots__ = ("id", "value")
    id: str
    value: Tensor

    def val(self) -> Tensor:
        """The tensor (Burn's ``param.val()``)."""
        return self.value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> DType:
        return self.value.dtype


class Param(_Recorded):
    """A module parameter: a tensor, a stable ``id`` and whether it is trained (``require_grad``).

    >>> p = Param(burn.zeros(3))
    >>> p.val().shape
    (3,)
    """

    __slots__ = ("require_grad",)

    def __init__(self, value: Tensor, id: str | None = None, require_grad: bool = True) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Param: expected a burn.Tensor, got {type(value).__name__}")
        self.id = id or new_param_id()
        self.require_grad = bool(require_grad)
        self.value = _as_leaf(value, self.require_grad)

    def set(self, value: Tensor) -> None:
        """Replace the tensor, keeping the id (it becomes a require_grad leaf again if trained)."""
        self.value = _as_leaf(value, self.require_grad)

    def with_value(self, value: Tensor) -> Param:
        """A new Param with the same id and trainability holding ``value``."""
        return Param(value, self.id, self.require_grad)

    def set_require_grad(self, flag: bool) -> Param:
        """Freeze (False) or unfreeze (True) this param; returns self."""
        self.require_grad = bool(flag)
        self.value = self.value.detach() if not flag else _as_leaf(self.value, True)
        return self

    @property
    def device(self) -> Device:
        return self.value.device

    def numel(self) -> int:
        return self.value.numel()

    def __repr__(self) -> str:
        frozen = "" if self.require_grad else ", frozen"
        return f"Param(id={self.id}, shape={self.shape}, dtype={self.dtype.name}{frozen})"


class RunningState(_Recorded):
    """A recorded tensor that is not trained: batch-norm running statistics. ``value`` is replaced
    (never graph-tracked) by the forward pass that updates it.

    >>> bn = nn.BatchNormConfig(2).init()
    >>> bn.running_var, bn.running_var.val().tolist()
    (RunningState(shape=(2,), dtype=float32), [1.0, 1.0])
    >>> sorted(bn.record()), bn.num_params()   # recorded, but not a param
    (['beta', 'gamma', 'running_mean', 'running_var'], 4)
    """

    __slots__ = ()

    def __init__(self, value: Tensor, id: str | None = None) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"RunningState: expected a burn.Tensor, got {type(value).__name__}")
        self.id = id or new_param_id()
        self.value = value.detach()

    def set(self, value: Tensor) -> None:
        self.value = value.detach()

    def with_value(self, value: Tensor) -> RunningState:
        return RunningState(value, self.id)

    def __repr__(self) -> str:
        return f"RunningState(shape={self.shape}, dtype={self.dtype.name})"


def _as_leaf(value: Tensor, require_grad: bool) -> Tensor:
    if not value.backend.is_autodiff:
        return value
    if require_grad and value.dtype.is_float:
        # a fresh leaf: cut any graph the value came from, then mark it
        return value.detach().require_grad()
    return value.detach()
