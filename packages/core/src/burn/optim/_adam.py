"""Adam and AdamW (decoupled weight decay)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import Config, check
from ..fusion import FusedKernel, launch
from ._base import Optimizer, State, check_common
from ._clipping import GradientClipping
from ._kernels import KernelWriter

if TYPE_CHECKING:
    from .._dtype import DType
    from .._tensor import Tensor


def _check_betas(owner: str, c: Config) -> None:
    for name in ("beta1", "beta2"):
        v = getattr(c, name)
        check(0 <= v < 1, owner, f"{name} must be in [0, 1), got {v}")
    check_common(owner, c)


def _adam_direction(c: AdamConfig | AdamWConfig, g: Tensor, state: State | None) -> tuple[Tensor, State]:
    """Bias-corrected m_hat / (sqrt(v_hat) + eps) and the new state (Kingma & Ba, Algorithm 1): the
    reference the fused update (``_adam_update``) computes with the same ops in the same order."""
    t = 1 if state is None else state["time"] + 1
    m = g * (1.0 - c.beta1) if state is None else state["moment_1"] * c.beta1 + g * (1.0 - c.beta1)
    v = g * g * (1.0 - c.beta2) if state is None else state["moment_2"] * c.beta2 + g * g * (1.0 - c.beta2)
    m_hat = m / (1.0 - c.beta1**t)
    v_hat = v / (1.0 - c.beta2**t)
    return m_hat / (v_hat.sqrt() + c.epsilon), {"moment_1": m, "moment_2": v, "time": t}


def _adam_plan(shape: tuple[int, ...], dt: DType, first: bool, l2: bool, decoupled: bool) -> FusedKernel:
    """One param's whole Adam (``decoupled``: AdamW) update as one element-wise kernel: inputs w, g and
    (after the first step) both moments; scalars lr, beta1, 1 - beta1, beta2, 1 - beta2, both bias
    corrections, epsilon, then the L2 weight decay (``l2``) or 1 - lr * weight_decay (``decoupled``);
    outputs the new w and both moments. The ops and their order are ``_adam_direction``'s."""
    k = KernelWriter(dt, 2 if first else 4, 8 + l2 + decoupled)
    w, g = 0, 1
    lr, b1, omb1, b2, omb2, bc1, bc2, eps = k.scalar_numbers[:8]
    if l2:
        g = k.op("binary", "add", g, k.op("binary", "mul", w, k.scalar_numbers[8]))
    if first:
        m = k.op("binary", "mul", g, omb1)
        v = k.op("binary", "mul", k.op("binary", "mul", g, g), omb2)
    else:
        m = k.op("binary", "add", k.op("binary", "mul", 2, b1), k.op("binary", "mul", g, omb1))
        sq = k.op("binary", "mul", k.op("binary", "mul", g, g), omb2)
        v = k.op("binary", "add", k.op("binary", "mul", 3, b2), sq)
    m_hat = k.op("binary", "div", m, bc1)
    v_hat = k.op("binary", "div", v, bc2)
    direction = k.op("binary", "div", m_hat, k.op("binary", "add", k.op("unary", "sqrt", v_hat), eps))
    step = k.op("binary", "mul", direction, lr)
    kept = k.op("binary", "mul", w, k.scalar_numbers[-1]) if decoupled else w
    return k.plan(shape, (k.op("binary", "sub", kept, step), m, v))


_PLANS: dict[tuple[Any, ...], FusedKernel] = {}
_PLAN_LIMIT = 4096


def _adam_update(
    c: AdamConfig | AdamWConfig, lr: float, w: Tensor, g: Tensor, state: State | None, decoupled: bool
) -> tuple[Tensor, State]:
    """The new w and state of one Adam/AdamW step, as one kernel (``burn.fusion.launch``)."""
    t = 1 if state is None else state["time"] + 1
    wd = c.weight_decay or 0.0
    l2 = bool(wd) and not decoupled
    key = (w.shape, w.dtype, state is None, l2, decoupled)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLAN_LIMIT:
            _PLANS.clear()
        plan = _PLANS[key] = _adam_plan(*key)
    inputs = [w, g] if state is None else [w, g, state["moment_1"], state["moment_2"]]
    scalars = [
        lr,
        c.beta1,
        1.0 - c.beta1,
        c.beta2,
        1.0 - c.beta2,
        1.0 - c.beta1**t,
        1.0 - c.beta2**t,
        c.epsilon,
    ]
    if l2:
        scalars.append(wd)
    if decoupled:
        scalars.append(1.0 - lr * wd)
    new_w, m, v = launch(plan, inputs, scalars)
    return new_w, {"moment_1": m, "moment_2": v, "time": t}


class AdamConfig(Config):
    """Adam; ``weight_decay`` adds an L2 penalty weight_decay * w to the gradient (Burn's defaults:
    beta1 0.9, beta2 0.999, epsilon 1e-5; PyTorch's eps default is 1e-8: pass ``epsilon=1e-8`` to match
    it). The learning rate is given at each ``step(lr, ...)``, not here.

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
        return _adam_update(self.config, lr, w, g, state, decoupled=False)


class AdamWConfig(Config):
    """AdamW: w = w * (1 - lr * weight_decay) - lr * adam_direction (Loshchilov & Hutter). Burn's
    defaults: epsilon 1e-5 and weight_decay 1e-4; PyTorch's are eps 1e-8 and weight_decay 0.01: pass
    ``epsilon=1e-8, weight_decay=0.01`` to match them.

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
        return _adam_update(self.config, lr, w, g, state, decoupled=True)
