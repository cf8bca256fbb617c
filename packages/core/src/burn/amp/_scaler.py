"""``burn.amp.GradScaler``: dynamic loss scaling for float16 training.

float16 holds nothing below about 6e-8, so small gradients of a half backward underflow to zero. The
scaler multiplies the loss (the backward seed) by ``scale`` so they stay representable, divides the
float32 gradients by it again before the optimizer, and adapts: a step whose gradients hold an inf or a
NaN (the scale was too large) is skipped and the scale multiplied by ``backoff_factor``; after
``growth_interval`` good steps in a row it is multiplied by ``growth_factor``. Scales are powers of two
by default, so scaling and unscaling are exact.

bfloat16 has float32's exponent range, so its gradients do not underflow where float32's would not:
as in PyTorch, bfloat16 training needs no scaler (``LearnerBuilder.mixed_precision("bfloat16")``
turns it off by default); one still works with it (``enabled=True``) and changes nothing but cost.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from .. import _dtype as D
from .._amp_state import LOCAL


def _positive(name: str, value: Any, minimum: float = 0.0, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"GradScaler: {name} must be a finite number, got {value!r}")
    if value < minimum or (strict and value == minimum):
        raise ValueError(f"GradScaler: {name} must be > {minimum}, got {value!r}")
    return float(value)


class GradScaler:
    """Dynamic loss scaling: ``scale`` the loss, ``step`` (unscale, skip on inf/NaN, adapt the scale).

    ``init_scale``: the first scale. ``growth_factor`` (> 1) and ``backoff_factor`` (in (0, 1)): the
    scale's change after ``growth_interval`` finite steps in a row, and after a step with an inf/NaN
    gradient (skipped). ``enabled=False``: scale 1, never skips (the same code runs in float32).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> opt = burn.optim.SgdConfig().init()
    >>> scaler = burn.amp.GradScaler(init_scale=1024.0, growth_interval=2)
    >>> loss = model(burn.ones((4, 2), device=dev)).sum()
    >>> grads = scaler.scale(loss).backward()          # d(1024 * loss)
    >>> model = scaler.step(opt, 0.1, model, grads)   # unscaled, finite: the step is taken
    >>> scaler.last_step_skipped, scaler.get_scale()
    (False, 1024.0)
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self.init_scale = _positive("init_scale", init_scale)
        self.growth_factor = _positive("growth_factor", growth_factor, 1.0)
        self.backoff_factor = _positive("backoff_factor", backoff_factor)
        if self.backoff_factor >= 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be < 1, got {backoff_factor!r}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 1, got {growth_interval!r}")
        self.growth_interval = growth_interval
        self.enabled = bool(enabled)
        self._scale = self.init_scale if self.enabled else 1.0
        self._growth_tracker = 0  # finite steps in a row since the last change of scale
        self.skipped_steps = 0  # steps skipped in all (for logs)
        self.last_step_skipped = False

    # ---------------------------------------------------------------- scaling
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled).

        >>> burn.amp.GradScaler().get_scale()
        65536.0
        """
        return self._scale

    def scale(self, loss: Any) -> Any:
        """``loss * scale`` in float32 (a half loss is widened first, so the scale cannot overflow it).

        >>> burn.amp.GradScaler(init_scale=8.0).scale(burn.tensor(0.5)).item()
        4.0
        """
        if loss.dtype.is_float and loss.dtype is not D.float32 and loss.dtype.itemsize < 4:
            loss = loss.cast(D.float32)
        return loss * self._scale if self.enabled else loss

    @contextlib.contextmanager
    def scaled_backward(self) -> Iterator[GradScaler]:
        """Inside, ``loss.backward()`` (no explicit seed) computes the gradients of ``scale * loss``:
        for a ``train_step`` that calls ``backward`` itself (the Learner uses this).

        >>> dev = burn.device("cpu", autodiff=True)
        >>> x = burn.tensor([1.0, 2.0], device=dev).require_grad()
        >>> with burn.amp.GradScaler(init_scale=4.0).scaled_backward():
        ...     grads = (x * x).sum().backward()
        >>> x.grad(grads).tolist()
        [8.0, 16.0]
        """
        saved = LOCAL.loss_scale
        LOCAL.loss_scale = self._scale if self.enabled else None
        try:
            yield self
        finally:
            LOCAL.loss_scale = saved

    # ---------------------------------------------------------------- gradients
    def unscale(self, grads: Any) -> Any:
        """The gradients divided by the scale (same container type: ``burn.Gradients`` or
        ``optim.GradientsParams``); the input is left as it is.

        >>> dev = burn.device("cpu", autodiff=True)
        >>> x = burn.tensor([3.0], device=dev).require_grad()
        >>> scaler = burn.amp.GradScaler(init_scale=16.0)
        >>> x.grad(scaler.unscale(scaler.scale(x * 2.0).sum().backward())).tolist()
        [2.0]
        """
        if not self.enabled or self._scale == 1.0:
            return grads
        inv = 1.0 / self._scale
        return _map_grads(grads, lambda g: g * inv)

    def all_finite(self, grads: Any) -> bool:
        """Whether every gradient value is finite (one device sync for all of them).

        >>> from burn.optim import GradientsParams
        >>> scaler = burn.amp.GradScaler()
        >>> scaler.all_finite(GradientsParams({"w": burn.tensor([1.0, 2.0])}))
        True
        >>> scaler.all_finite(GradientsParams({"w": burn.tensor([1.0, float("inf")])}))
        False
        """
        bad = None
        for g in _tensors(grads):
            part = (g.isinf() | g.isnan()).any()  # a bool scalar per gradient, read once at the end
            bad = part if bad is None else bad | part
        return bad is None or not bool(bad.item())

    def update(self, found_inf: bool) -> None:
        """Adapt the scale after a step: back off on inf/NaN, grow after ``growth_interval`` good steps.

        >>> scaler = burn.amp.GradScaler(init_scale=8.0, growth_interval=2)
        >>> scaler.update(True); scaler.get_scale()
        4.0
        >>> scaler.update(False); scaler.update(False); scaler.get_scale()
        8.0
        """
        if not self.enabled:
            return
        if found_inf:
            self._scale = max(self._scale * self.backoff_factor, 2.0**-24)
            self._growth_tracker = 0
            return
        self._growth_tracker += 1
        if self._growth_tracker >= self.growth_interval:
            grown = self._scale * self.growth_factor
            if math.isfinite(grown):  # as PyTorch: never grow into inf
                self._scale = grown
            self._growth_tracker = 0

    def step(self, optim: Any, lr: float, model: Any, grads: Any) -> Any:
        """Unscale ``grads``, then ``optim.step(lr, model, grads)`` when they are finite, else skip
        (``model`` returned unchanged, ``last_step_skipped`` True); then ``update``. Returns the model."""
        unscaled = self.unscale(grads)
        finite = not self.enabled or self.all_finite(unscaled)
        self.last_step_skipped = not finite
        if finite:
            model = optim.step(lr, model, unscaled)
        else:
            self.skipped_steps += 1
        self.update(not finite)
        return model

    # ---------------------------------------------------------------- record
    def record(self) -> dict[str, Any]:
        """The state to checkpoint (plain numbers, JSON-safe; floats round-trip exactly).

        >>> burn.amp.GradScaler(init_scale=8.0).record()["scale"]
        8.0
        """
        return {
            "scale": self._scale,
            "growth_tracker": self._growth_tracker,
            "skipped_steps": self.skipped_steps,
            "enabled": self.enabled,
        }

    def load_record(self, record: dict[str, Any]) -> GradScaler:
        """Restore ``record()``'s state; returns self.

        >>> s = burn.amp.GradScaler().load_record({"scale": 32.0, "growth_tracker": 3})
        >>> s.get_scale(), s.record()["growth_tracker"]
        (32.0, 3)
        """
        if not isinstance(record, dict) or "scale" not in record:
            raise ValueError(f"GradScaler.load_record: expected a dict with 'scale', got {record!r}")
        self._scale = _positive("scale (in the record)", record["scale"])
        self._growth_tracker = int(record.get("growth_tracker", 0))
        self.skipped_steps = int(record.get("skipped_steps", 0))
        return self

    def __repr__(self) -> str:
        return (
            f"GradScaler(scale={self._scale}, growth_factor={self.growth_factor}, "
            f"backoff_factor={self.backoff_factor}, growth_interval={self.growth_interval}, "
            f"enabled={self.enabled})"
        )


def _tensors(grads: Any) -> Iterator[Any]:
    """Every gradient of a ``burn.Gradients`` or ``optim.GradientsParams`` as a tensor."""
    from .._gradients import Gradients
    from .._tensor import _wrap

    if isinstance(grads, Gradients):
        for node in grads.node_ids():
            yield _wrap(grads.get_prim(node), grads.backend)
    elif hasattr(grads, "items"):
        for _, g in grads.items():
            yield g
    else:
        raise TypeError(
            f"GradScaler: expected a burn.Gradients or an optim.GradientsParams, got {type(grads).__name__}"
        )


def _map_grads(grads: Any, fn: Any) -> Any:
    from .._gradients import Gradients
    from .._tensor import _wrap

    if isinstance(grads, Gradients):
        out = Gradients(grads.backend)
        for node in grads.node_ids():
            out.set_prim(node, fn(_wrap(grads.get_prim(node), grads.backend))._p)
        return out
    if not hasattr(grads, "items"):
        raise TypeError(
            f"GradScaler: expected a burn.Gradients or an optim.GradientsParams, got {type(grads).__name__}"
        )
    return type(grads)({pid: fn(g) for pid, g in grads.items()})
