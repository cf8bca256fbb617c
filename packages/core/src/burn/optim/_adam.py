"""Adam and AdamW (decoupled weight decay)."""

from __future__ import annotations

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping


def _check_betas(owner: str, c: Config) -> None:
    for name in ("beta1", "beta2"):
        v = getattr(c, name)
        check(0 <= v < 1, owner, f"{name} must be in [0, 1), got {v}")
    check_common(owner, c)


def _adam_direction(c, g, state: State | None):
    """Bias-corrected m_hat / (sqrt(v_hat) + eps) and the new state (Kingma & Ba, Algorithm 1)."""
    t = 1 if state is None else state["time"] + 1
    m = g * (1.0 - c.beta1) if state is None else state["moment_1"] * c.beta1 + g * (1.0 - c.beta1)
    v = g * g * (1.0 - c.beta2) if state is None else state["moment_2"] * c.beta2 + g * g * (1.0 - c.beta2)
    m_hat = m / (1.0 - c.beta1**t)
    v_hat = v / (1.0 - c.beta2**t)
    return m_hat / (v_hat.sqrt() + c.epsilon), {"moment_1": m, "moment_2": v, "time": t}


class AdamConfig(Config):
    """Adam; ``weight_decay`` adds an L2 penalty weight_decay * w to the gradient (Burn's defaults:
    beta1 0.9, beta2 0.999, epsilon 1e-5)."""

    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> Adam:
        _check_betas("AdamConfig", self)
        return Adam(self)


class Adam(Optimizer):
    config: AdamConfig

    def _state_keys(self):
        return ("moment_1", "moment_2", "time")

    def _update(self, lr, w, g, state):
        direction, state = _adam_direction(self.config, decay(w, g, self.config.weight_decay), state)
        return w - direction * lr, state


class AdamWConfig(Config):
    """AdamW: w = w * (1 - lr * weight_decay) - lr * adam_direction (Loshchilov & Hutter)."""

    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClipping | None = None

    def init(self) -> AdamW:
        _check_betas("AdamWConfig", self)
        return AdamW(self)


class AdamW(Optimizer):
    config: AdamWConfig

    def _state_keys(self):
        return ("moment_1", "moment_2", "time")

    def _update(self, lr, w, g, state):
        direction, state = _adam_direction(self.config, g, state)
        return w * (1.0 - lr * self.config.weight_decay) - direction * lr, state
