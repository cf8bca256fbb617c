"""Stochastic gradient descent with optional momentum (heavy-ball or Nesterov) and weight decay."""

from __future__ import annotations

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping


class SgdConfig(Config):
    """g = grad + weight_decay * w; with momentum: buf = momentum * buf + (1 - dampening) * g (buf = g on
    the first step), g = g + momentum * buf (nesterov) or buf; then w = w - lr * g (PyTorch's rule)."""

    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> Sgd:
        check(self.momentum >= 0, "SgdConfig", f"momentum must be >= 0, got {self.momentum}")
        check(0 <= self.dampening <= 1, "SgdConfig", f"dampening must be in [0, 1], got {self.dampening}")
        check(
            not self.nesterov or (self.momentum > 0 and self.dampening == 0),
            "SgdConfig",
            "nesterov needs momentum > 0 and dampening == 0",
        )
        check_common("SgdConfig", self)
        return Sgd(self)


class Sgd(Optimizer):
    config: SgdConfig

    def _state_keys(self) -> tuple[str, ...]:
        return ("momentum",) if self.config.momentum else ()

    def _update(self, lr, w, g, state: State | None):
        c = self.config
        g = decay(w, g, c.weight_decay)
        if not c.momentum:
            return w - g * lr, {}
        buf = g if state is None else state["momentum"] * c.momentum + g * (1.0 - c.dampening)
        step = g + buf * c.momentum if c.nesterov else buf
        return w - step * lr, {"momentum": buf}
