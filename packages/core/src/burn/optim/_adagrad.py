"""AdaGrad (Duchi et al.), with PyTorch's learning-rate decay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping

if TYPE_CHECKING:
    from .._tensor import Tensor


class AdaGradConfig(Config):
    """sum += g^2; w -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + epsilon). Burn's epsilon
    default is 1e-5, PyTorch's eps 1e-10 (pass ``epsilon=1e-10`` to match).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> before = model.weight.val().numpy()
    >>> model = burn.optim.AdaGradConfig().init().step(0.1, model, grads)
    >>> np.allclose(before - model.weight.val().numpy(), 0.1, atol=1e-4)   # the first step is lr * sign(g)
    True
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: float | None = None
    grad_clipping: GradientClipping | None = None

    def init(self) -> AdaGrad:
        check(self.lr_decay >= 0, "AdaGradConfig", f"lr_decay must be >= 0, got {self.lr_decay}")
        check_common("AdaGradConfig", self)
        return AdaGrad(self)


class AdaGrad(Optimizer):
    """AdaGrad, built by ``AdaGradConfig.init()``; keeps the sum of squared gradients and the step count.

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.AdaGradConfig().init()
    >>> model = opt.step(1e-3, model, grads)
    >>> [sorted(state) for state in opt.record()["states"].values()]   # weight, bias
    [['sum', 'time'], ['sum', 'time']]
    """

    config: AdaGradConfig

    def _state_keys(self) -> tuple[str, ...]:
        return ("sum", "time")

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        c = self.config
        g = decay(w, g, c.weight_decay)
        t = 1 if state is None else state["time"] + 1
        total = g * g if state is None else state["sum"] + g * g
        clr = lr / (1.0 + (t - 1) * c.lr_decay)
        return w - g / (total.sqrt() + c.epsilon) * clr, {"sum": total, "time": t}
