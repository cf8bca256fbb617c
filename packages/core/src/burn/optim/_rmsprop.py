"""RMSProp (Hinton), optionally centred and with momentum, following PyTorch's update."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from ._base import Optimizer, State, check_common, decay
from ._clipping import GradientClipping

if TYPE_CHECKING:
    from .._tensor import Tensor


class RmsPropConfig(Config):
    """sq = alpha * sq + (1 - alpha) * g^2; avg = sq - gavg^2 (centred, gavg the running mean of g) or
    sq; step = g / (sqrt(avg) + eps); with momentum: buf = momentum * buf + step, w -= lr * buf.
    Burn's epsilon default is 1e-5, PyTorch's eps 1e-8 (pass ``epsilon=1e-8`` to match); alpha 0.99 in both.

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> before = model.weight.val().numpy()
    >>> model = burn.optim.RmsPropConfig(alpha=0.99).init().step(0.1, model, grads)
    >>> np.allclose(before - model.weight.val().numpy(), 1.0, atol=1e-4)   # 10 * lr: g / sqrt(0.01 g^2)
    True
    """

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
    """RMSProp, built by ``RmsPropConfig.init()``; keeps square_avg, plus grad_avg (centered) and
    momentum (momentum > 0).

    >>> dev = burn.device("cpu", autodiff=True)
    >>> model = nn.LinearConfig(2, 1).init(dev)
    >>> grads = model(burn.ones((4, 2), device=dev)).sum().backward()   # d loss / d weight = 4
    >>> opt = burn.optim.RmsPropConfig(centered=True).init()
    >>> model = opt.step(1e-3, model, grads)
    >>> [sorted(state) for state in opt.record()["states"].values()]   # weight, bias
    [['grad_avg', 'square_avg'], ['grad_avg', 'square_avg']]
    """

    config: RmsPropConfig

    def _state_keys(self) -> tuple[str, ...]:
        keys = ["square_avg"]
        if self.config.centered:
            keys.append("grad_avg")
        if self.config.momentum:
            keys.append("momentum")
        return tuple(keys)

    def _update(self, lr: float, w: Tensor, g: Tensor, state: State | None) -> tuple[Tensor, State]:
        c = self.config
        g = decay(w, g, c.weight_decay)
        sq = (
            g * g * (1.0 - c.alpha)
            if state is None
            else state["square_avg"] * c.alpha + g * g * (1.0 - c.alpha)
        )
        new = {"square_avg": sq}
        avg = sq
        if c.centered:
            gavg = g * (1.0 - c.alpha) if state is None else state["grad_avg"] * c.alpha + g * (1.0 - c.alpha)
            new["grad_avg"] = gavg
            avg = sq - gavg * gavg
        step = g / (avg.sqrt() + c.epsilon)
        if c.momentum:
            step = step if state is None else state["momentum"] * c.momentum + step
            new["momentum"] = step
        return w - step * lr, new
