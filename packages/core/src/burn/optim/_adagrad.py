"""AdaGrad (Duchi et al.), with PyTorch's learning-rate decay."""

from __future__ import annotations

from ..config import Config, check
from ._base import Optimizer, check_common, decay
from ._clipping import GradientClipping


class AdaGradConfig(Config):
    """sum += g^2; w -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + epsilon)."""

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> AdaGrad:
        check(self.lr_decay >= 0, "AdaGradConfig", f"lr_decay must be >= 0, got {self.lr_decay}")
        check_common("AdaGradConfig", self)
        return AdaGrad(self)


class AdaGrad(Optimizer):
    config: AdaGradConfig

    def _state_keys(self):
        return ("sum", "time")

    def _update(self, lr, w, g, state):
        c = self.config
        g = decay(w, g, c.weight_decay)
        t = 1 if state is None else state["time"] + 1
        total = g * g if state is None else state["sum"] + g * g
        clr = lr / (1.0 + (t - 1) * c.lr_decay)
        return w - g / (total.sqrt() + c.epsilon) * clr, {"sum": total, "time": t}
