"""``GradientsParams`` (gradients keyed by param id) and ``GradientsAccumulator``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .._errors import DeviceError, ShapeError
from .._tensor import Tensor


def check_gradients(grads: Any) -> None:
    """TypeError unless ``grads`` is a ``burn.Gradients`` (what ``loss.backward()`` returns)."""
    from .._gradients import Gradients

    if not isinstance(grads, Gradients):
        raise TypeError(f"GradientsParams.from_grads: expected a burn.Gradients, got {type(grads).__name__}")


def grad_of(param: Any, grads: Any) -> Tensor | None:
    """The gradient of trainable ``param`` in ``grads`` (None if it has none); DeviceError when the
    param is not on an autodiff device."""
    if not param.value.backend.is_autodiff:
        raise DeviceError(
            f"GradientsParams.from_grads: param {param.id} is on {param.device}, which has no autodiff; "
            "build the model on burn.device(..., autodiff=True)"
        )
    g: Tensor | None = param.value.grad(grads)
    return g


class GradientsParams:
    """Param id -> gradient tensor (on the inner, non-autodiff backend).

    Build it from ``loss.backward()`` with ``GradientsParams.from_grads(grads, model)``, or by hand with
    ``register(param_id, tensor)`` (optimizers accept either this or a ``burn.Gradients``).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> params = GradientsParams.from_grads(grads, model)
    >>> len(params), params.get(model.weight.id).tolist()
    (2, [[4.0], [4.0]])
    """

    def __init__(self, grads: dict[str, Tensor] | None = None) -> None:
        self._grads: dict[str, Tensor] = {}
        for pid, g in (grads or {}).items():
            self.register(pid, g)

    @classmethod
    def from_grads(cls, grads: Any, module: Any) -> GradientsParams:
        """The gradient of every trainable param of ``module`` found in ``grads`` (a burn.Gradients)."""
        return cls.from_params(grads, module, None)

    @classmethod
    def from_params(cls, grads: Any, module: Any, param_ids: Iterable[str] | None) -> GradientsParams:
        """Like ``from_grads``, restricted to ``param_ids`` (e.g. one optimizer per param group)."""
        check_gradients(grads)
        wanted = None if param_ids is None else set(param_ids)
        out = cls()
        for param in module.params():
            if not param.require_grad or (wanted is not None and param.id not in wanted):
                continue
            g = grad_of(param, grads)
            if g is not None:
                out._grads[param.id] = g
        return out

    def register(self, param_id: str, grad: Tensor) -> None:
        if not isinstance(grad, Tensor):
            raise TypeError(
                f"GradientsParams.register: grad must be a burn.Tensor, got {type(grad).__name__}"
            )
        self._grads[param_id] = grad.inner()

    def get(self, param_id: str) -> Tensor | None:
        return self._grads.get(param_id)

    def remove(self, param_id: str) -> Tensor | None:
        return self._grads.pop(param_id, None)

    def ids(self) -> list[str]:
        return list(self._grads)

    def items(self) -> Iterator[tuple[str, Tensor]]:
        return iter(self._grads.items())

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, param_id: object) -> bool:
        return param_id in self._grads

    def __repr__(self) -> str:
        return f"GradientsParams({len(self)} params)"


class GradientsAccumulator:
    """Sum gradients over several backward passes (gradient accumulation).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> acc = GradientsAccumulator()
    >>> for _ in range(3):   # three backward passes, gradient 1 each
    ...     acc.accumulate(model, model(burn.ones((1, 2), device=dev)).sum().backward())
    >>> grads = acc.grads()   # summed; the accumulator starts over
    >>> grads.get(model.weight.id).tolist(), acc.count
    ([[3.0], [3.0]], 0)
    >>> model = burn.optim.SgdConfig().init().step(0.1, model, grads)
    """

    def __init__(self) -> None:
        self._sum = GradientsParams()
        self.count = 0

    def accumulate(self, module: Any, grads: Any) -> None:
        """Add ``grads`` (GradientsParams or burn.Gradients of ``module``) to the running sum."""
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, module)
        for pid, g in grads.items():
            prev = self._sum.get(pid)
            if prev is not None and prev.shape != g.shape:
                raise ShapeError(
                    f"GradientsAccumulator: param {pid} gradient shape {g.shape} != earlier {prev.shape}"
                )
            self._sum._grads[pid] = g if prev is None else prev + g
        self.count += 1

    def grads(self) -> GradientsParams:
        """The summed gradients; the accumulator starts over empty."""
        out, self._sum, self.count = self._sum, GradientsParams(), 0
        return out
