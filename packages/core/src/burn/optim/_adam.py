"""Adam and AdamW (decoupled weight decay)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping

if TYPE_CHECKING:
    from .._tensor import Tensor


def _check_betas(owner: str, c: Config) -> None:
    for name in ("beta1", "beta2"):
        v = getattr(c, name)
        check(0 <= v < 1, owner, f"{name} must be in [0, 1), got {v}")
    check_common(owner, c)


def _adam_direction(c: AdamConfig | AdamWConfig, g: Tensor, state: State | None) -> tuple[Tensor, State]:
    """Bias-corrected m_hat / (sqrt(v_hat) + eps) and the new state (Kingma & Ba, Algorithm 1)."""
    t = 1 if state is None else state["time"] + 1
    m = g * (1.0 - c.beta1) if state is None else state["moment_1"] * c.beta1 + g * (1.0 - c.beta1)
    v = g * g * (1.0 - c.beta2) if state is None else state["moment_2"] * c.beta2 + g * g * (1.0 - c.beta2)
    m_hat = m / (1.0 - c.beta1**t)
    v_hat = v / (1.0 - c.beta2**t)
    return m_hat / (v_hat.sqrt() + c.epsilon), {"moment_1": m, "moment_2": v, "time": t}


class AdamConfig(Config):
    """Adam; ``weight_decay`` adds an L2 penalty weight_decay * w to the gradient (Burn's defaults:
    beta1 0.9, beta2 0.999, epsilon 1e-5).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> before = model.weight.val().numpy()
    >>> model = burn.optim.AdamConfig().init().step(0.1, model, grads)
    >>> np.allclose(before - model.weight.val().numpy(), 0.1, atol=1e-4)   # the first step is lr * sign(g)
    True
    """

    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> Adam:
        _check_betas("AdamConfig", self)
        return Adam(self)


class Adam(Optimizer):
    """Adam, built by ``AdamConfig.init()``; keeps both moments (shaped like the param) and the step
    count per param.

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.AdamConfig().init()
    >>> model = opt.step(1e-3, model, grads)
    >>> [sorted(state) for state in opt.record()["states"].values()]   # weight, bias
    [['moment_1', 'moment_2', 'time'], ['moment_1', 'moment_2', 'time']]
    """

    config: AdamConfig

    def _state_keys(self) -> tuple[str, ...]:
        return ("moment_1", "moment_2", "time")

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        direction, state = _adam_direction(self.config, decay(w, g, self.config.weight_decay), state)
        return w - direction * lr, state


class AdamWConfig(Config):
    """AdamW: w = w * (1 - lr * weight_decay) - lr * adam_direction (Loshchilov & Hutter).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> before = model.weight.val().numpy()
    >>> model = burn.optim.AdamWConfig(weight_decay=1e-4).init().step(0.1, model, grads)
    >>> np.allclose(before - model.weight.val().numpy(), 0.1, atol=1e-4)   # ~lr * sign(g), less 1e-5 * w
    True
    """

    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClipping | None = None

    def init(self) -> AdamW:
        _check_betas("AdamWConfig", self)
        return AdamW(self)


class AdamW(Optimizer):
    """AdamW, built by ``AdamWConfig.init()``; the same state as Adam.

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.AdamWConfig().init()
    >>> model = opt.step(1e-3, model, grads)
    >>> [sorted(state) for state in opt.record()["states"].values()]   # weight, bias
    [['moment_1', 'moment_2', 'time'], ['moment_1', 'moment_2', 'time']]
    """

    config: AdamWConfig

    def _state_keys(self) -> tuple[str, ...]:
        return ("moment_1", "moment_2", "time")

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        direction, state = _adam_direction(self.config, g, state)
        return w * (1.0 - lr * self.config.weight_decay) - direction * lr, state
