"""The optimizer driver shared by every optimizer: gradients in, params updated, state kept per param id.

``opt.step(lr, model, grads)`` updates each trainable param in place (a new tensor with the same id,
a ``require_grad`` leaf again on autodiff devices) and returns the model. Per-param state (moments,
step counts) lives on the inner backend, keyed by the param's stable id, and round-trips through
``record()`` / ``load_record()`` as plain numpy arrays and numbers.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import ConfigError, RecordError, ShapeError
from .._tensor import Tensor
from .._transaction import Transaction
from ..autotune import tune_pending
from ..fusion._backend import end_stream
from ..nn._param import lift
from ._grads import GradientsParams, check_gradients, grad_of

State = dict[str, Any]


class Optimizer:
    """Base class. Subclasses implement ``_update(lr, w, g, state) -> (new_w, new_state)`` where w and
    g are tensors on the inner backend and state is None on a param's first step.

    ``step(lr, model, grads)`` updates the model's params in place and returns it; ``record()`` and
    ``load_record()`` save and restore the per-param state (keyed by param id).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.AdamConfig().init()
    >>> model = opt.step(1e-3, model, grads)
    >>> record = opt.record()
    >>> record["optimizer"], sorted(record["states"]) == sorted(p.id for p in model.params())
    ('Adam', True)
    >>> resumed = burn.optim.AdamConfig().init().load_record(record)
    """

    def __init__(self, config: Any) -> None:
        self.config = config
        self._states: dict[str, State] = {}
        self._pending: dict[str, dict[str, Any]] = {}  # loaded from a record, materialised on use

    def step(self, lr: float, module: Any, grads: Any) -> Any:
        """Apply one update with learning rate ``lr``; ``grads`` is a burn.Gradients or GradientsParams."""
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
            raise ConfigError(f"{type(self).__name__}.step: lr must be a finite number >= 0, got {lr!r}")
        by_id = isinstance(grads, GradientsParams)
        if not by_id:  # a burn.Gradients: each param's gradient is read in the one walk below
            check_gradients(grads)
        work = []  # every param's (param, value, gradient), checked before any param changes
        for name, param in module.named_params():
            if not param.require_grad:
                continue
            g = grads.get(param.id) if by_id else grad_of(param, grads)
            if g is None:
                continue
            w = param.value.inner()
            if g.shape != w.shape:
                raise ShapeError(
                    f"{type(self).__name__}.step: gradient of {name} has shape {g.shape}, param {w.shape}"
                )
            work.append((param, w, g))
        clipping = getattr(self.config, "grad_clipping", None)
        devices = set()
        for param, w, g in work:
            if g.device != w.device:
                g = g.to(w.device)
            g = g.cast(w.dtype)
            if clipping is not None:
                g = clipping.clip(g)
            new_w, state = self._update(float(lr), w, g, self._state_for(param.id, w))
            self._states[param.id] = state
            param.set(lift(new_w.cast(w.dtype), param.value.backend))
            devices.add(w.device)
        for dev in devices:  # a training step ends here: fusion launches it as one stream
            end_stream(dev)
        tune_pending()  # then the kernels met so far tune for a while (``BURN_AUTOTUNE_BUDGET_MS``)
        return module

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        raise NotImplementedError

    def _state_for(self, pid: str, like: Tensor) -> State | None:
        if pid in self._states:
            return self._states[pid]
        raw = self._pending.pop(pid, None)
        if raw is None:
            return None
        from .._creation import tensor

        return {
            k: tensor(v, dtype=like.dtype, device=like.device) if hasattr(v, "shape") else v
            for k, v in raw.items()
        }

    # ------------------------------------------------------------------ records
    def record(self) -> dict[str, Any]:
        """``{"optimizer": name, "states": {param_id: {key: numpy array | number}}}``."""
        states: dict[str, dict[str, Any]] = {pid: dict(raw) for pid, raw in self._pending.items()}
        read = Transaction()  # every state tensor in one read (one device sync, not one per tensor)
        places = []
        for pid, state in self._states.items():
            states[pid] = dict(state)
            for k, v in state.items():
                if isinstance(v, Tensor):
                    read.register(v)
                    places.append((pid, k))
        for (pid, k), arr in zip(places, read.execute()):
            states[pid][k] = arr
        return {"optimizer": type(self).__name__, "states": states}

    def load_record(self, record: dict[str, Any]) -> Optimizer:
        """Restore state saved by ``record()``; checked before anything changes. Returns self."""
        if not isinstance(record, dict) or "states" not in record or not isinstance(record["states"], dict):
            raise RecordError(f"{type(self).__name__}.load_record: expected a dict with a 'states' dict")
        kind = record.get("optimizer")
        if kind != type(self).__name__:
            raise RecordError(f"{type(self).__name__}.load_record: record is for optimizer {kind!r}")
        expected = set(self._state_keys())
        problems = []
        for pid, st in record["states"].items():
            if not isinstance(st, dict) or set(st) != expected:
                got = sorted(st) if isinstance(st, dict) else type(st).__name__
                problems.append(f"param {pid}: keys {got}, expected {sorted(expected)}")
        if problems:
            raise RecordError(f"{type(self).__name__}.load_record: " + "; ".join(problems))
        self._states = {}
        self._pending = {pid: dict(st) for pid, st in record["states"].items()}
        return self

    def _state_keys(self) -> tuple[str, ...]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config})"


def decay(w: Tensor, g: Tensor, weight_decay: float | None) -> Tensor:
    """L2 penalty folded into the gradient: g + weight_decay * w."""
    return g if not weight_decay else g + w * weight_decay


def check_common(owner: str, cfg: Any) -> None:
    from ..config import check

    wd = getattr(cfg, "weight_decay", None)
    check(wd is None or wd >= 0, owner, f"weight_decay must be >= 0 or None, got {wd}")
    eps = getattr(cfg, "epsilon", None)
    check(eps is None or eps > 0, owner, f"epsilon must be positive, got {eps}")
