"""RMSProp (Hinton), optionally centred and with momentum, following PyTorch's update."""

from __future__ import annotations

from ..config import Config, check
from ._base import Optimizer, check_common, decay
from ._clipping import GradientClipping


class RmsPropConfig(Config):
    """sq = alpha * sq + (1 - alpha) * g^2; avg = sq - gavg^2 (centred, gavg the running mean of g) or
    sq; step = g / (sqrt(avg) + eps); with momentum: buf = momentum * buf + step, w -= lr * buf."""

    alpha: float = 0.99
    epsilon: float = 1e-5
    centered: bool = False
    momentum: float = 0.0
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> RmsProp:
        check(0 <= self.alpha <= 1, "RmsPropConfig", f"alpha must be in [0, 1], got {self.alpha}")
        check(self.momentum >= 0, "RmsPropConfig", f"momentum must be >= 0, got {self.momentum}")
        check_common("RmsPropConfig", self)
        return RmsProp(self)


class RmsProp(Optimizer):
    config: RmsPropConfig

    def _state_keys(self):
        keys = ["square_avg"]
        if self.config.centered:
            keys.append("grad_avg")
        if self.config.momentum:
            keys.append("momentum")
        return tuple(keys)

    def _update(self, lr, w, g, state):
        c = self.config
        g = decay(w, g, c.weight_decay)
        first = state is None
        sq = g * g * (1.0 - c.alpha) if first else state["square_avg"] * c.alpha + g * g * (1.0 - c.alpha)
        new = {"square_avg": sq}
        avg = sq
        if c.centered:
            gavg = g * (1.0 - c.alpha) if first else state["grad_avg"] * c.alpha + g * (1.0 - c.alpha)
            new["grad_avg"] = gavg
            avg = sq - gavg * gavg
        step = g / (avg.sqrt() + c.epsilon)
        if c.momentum:
            step = step if first else state["momentum"] * c.momentum + step
            new["momentum"] = step
        return w - step * lr, new
