"""Stochastic gradient descent with optional momentum (heavy-ball or Nesterov) and weight decay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping

if TYPE_CHECKING:
    from .._tensor import Tensor


class SgdConfig(Config):
    """g = grad + weight_decay * w; with momentum: buf = momentum * buf + (1 - dampening) * g (buf = g on
    the first step), g = g + momentum * buf (nesterov) or buf; then w = w - lr * g (PyTorch's rule).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> before = model.weight.val().numpy()
    >>> model = burn.optim.SgdConfig().init().step(0.1, model, grads)
    >>> np.allclose(before - model.weight.val().numpy(), 0.4, atol=1e-4)   # lr * g = 0.1 * 4
    True
    """

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
    """Stochastic gradient descent, built by ``SgdConfig.init()``; with momentum it keeps one buffer
    per param (shaped like it).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.SgdConfig(momentum=0.9).init()
    >>> model = opt.step(1e-3, model, grads)
    >>> [sorted(state) for state in opt.record()["states"].values()]   # weight, bias
    [['momentum'], ['momentum']]
    """

    config: SgdConfig

    def _state_keys(self) -> tuple[str, ...]:
        return ("momentum",) if self.config.momentum else ()

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        c = self.config
        g = decay(w, g, c.weight_decay)
        if not c.momentum:
            return w - g * lr, {}
        buf = g if state is None else state["momentum"] * c.momentum + g * (1.0 - c.dampening)
        step = g + buf * c.momentum if c.nesterov else buf
        return w - step * lr, {"momentum": buf}
