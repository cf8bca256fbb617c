"""Normalisation layers: BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RmsNorm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from ._module import Module
from ._param import Param, RunningState, lift
from .functional import _norm as FN
from .init import Ones, Zeros

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class BatchNormConfig(Config):
    """Builds ``nn.BatchNorm`` over ``num_features`` channels: gamma, beta and the running statistics,
    each (num_features,).

    >>> nn.BatchNormConfig(16, momentum=0.01).init()
    BatchNorm {num_features: 16, epsilon: 1e-05, momentum: 0.01, params: 32}
    """

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def init(self, device: DeviceLike = None) -> BatchNorm:
        return BatchNorm(self, device)


class BatchNorm(Module):
    """Batch norm over (N, C, ...) with C = num_features.

    On an autodiff device (training) it normalises with the batch's statistics and updates the running
    mean and (biased) variance: ``running = (1 - momentum) * running + momentum * batch``, outside the
    graph. Elsewhere (after ``valid()``) it uses the running statistics. x: (N, C, ...) -> same shape.

    >>> dev = burn.device("cpu", autodiff=True)
    >>> bn = nn.BatchNormConfig(num_features=3).init(dev)
    >>> bn(burn.full((4, 3, 2, 2), 10.0, device=dev)).shape
    (4, 3, 2, 2)
    >>> bn.running_mean.val().tolist()   # 0.9 * 0 + 0.1 * 10
    [1.0, 1.0, 1.0]
    """

    def __init__(self, config: BatchNormConfig, device: DeviceLike = None) -> None:
        check(
            config.num_features > 0,
            "BatchNormConfig",
            f"num_features must be positive, got {config.num_features}",
        )
        check(
            0.0 <= config.momentum <= 1.0,
            "BatchNormConfig",
            f"momentum must be in [0, 1], got {config.momentum}",
        )
        check(config.epsilon > 0, "BatchNormConfig", f"epsilon must be positive, got {config.epsilon}")
        c = config.num_features
        self.num_features, self.epsilon, self.momentum = c, config.epsilon, config.momentum
        self.gamma = Param(Ones().init((c,), device=device))
        self.beta = Param(Zeros().init((c,), device=device))
        self.running_mean = RunningState(Zeros().init((c,), device=device))
        self.running_var = RunningState(Ones().init((c,), device=device))
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        if not x.backend.is_autodiff:
            return FN.batch_norm(
                x,
                self.running_mean.val(),
                self.running_var.val(),
                self.gamma.val(),
                self.beta.val(),
                False,
                self.epsilon,
            )
        out, mean, var = FN.batch_norm_train(x, self.gamma.val(), self.beta.val(), self.epsilon)
        m = self.momentum
        for state, batch in ((self.running_mean, mean), (self.running_var, var)):
            inner = state.val().inner() * (1.0 - m) + batch.inner().cast(state.dtype) * m
            state.set(lift(inner, state.val().backend))
        return out


class LayerNormConfig(Config):
    """Builds ``nn.LayerNorm`` over the last dim, of size ``d_model``.

    >>> nn.LayerNormConfig(d_model=512).init()
    LayerNorm {d_model: 512, epsilon: 1e-05, params: 1024}
    """

    d_model: int
    epsilon: float = 1e-5

    def init(self, device: DeviceLike = None) -> LayerNorm:
        return LayerNorm(self, device)


class LayerNorm(Module):
    """Normalise the last dim (d_model), then scale by gamma and shift by beta.
    x: (..., d_model) -> same shape.

    >>> ln = nn.LayerNormConfig(4).init()
    >>> [round(v, 3) for v in ln(burn.tensor([[1.0, 2.0, 3.0, 4.0]]))[0].tolist()]
    [-1.342, -0.447, 0.447, 1.342]
    """

    def __init__(self, config: LayerNormConfig, device: DeviceLike = None) -> None:
        check(config.d_model > 0, "LayerNormConfig", f"d_model must be positive, got {config.d_model}")
        self.d_model, self.epsilon = config.d_model, config.epsilon
        self.gamma = Param(Ones().init((config.d_model,), device=device))
        self.beta = Param(Zeros().init((config.d_model,), device=device))
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        return FN.layer_norm(x, self.d_model, self.gamma.val(), self.beta.val(), self.epsilon)


class GroupNormConfig(Config):
    """Builds ``nn.GroupNorm``: ``num_channels`` split into ``num_groups`` groups; ``affine`` adds a
    per-channel gamma and beta.

    >>> nn.GroupNormConfig(num_groups=2, num_channels=6, affine=False).init().num_params()
    0
    """

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: DeviceLike = None) -> GroupNorm:
        return GroupNorm(self, device)


class GroupNorm(Module):
    """Normalise (N, C, ...) over groups of C / num_groups channels and the spatial dims.
    x: (N, num_channels, ...) -> same shape.

    >>> gn = nn.GroupNormConfig(num_groups=2, num_channels=6).init()
    >>> gn(burn.randn((4, 6, 5, 5))).shape
    (4, 6, 5, 5)
    """

    def __init__(self, config: GroupNormConfig, device: DeviceLike = None) -> None:
        g, c = config.num_groups, config.num_channels
        check(
            g > 0 and c > 0 and c % g == 0,
            "GroupNormConfig",
            f"num_channels ({c}) must be a positive multiple of num_groups ({g})",
        )
        self.num_groups, self.num_channels, self.epsilon = g, c, config.epsilon
        self.gamma = Param(Ones().init((c,), device=device)) if config.affine else None
        self.beta = Param(Zeros().init((c,), device=device)) if config.affine else None
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        gamma, beta = _affine(self)
        return FN.group_norm(x, self.num_groups, gamma, beta, self.epsilon)


class InstanceNormConfig(Config):
    """Builds ``nn.InstanceNorm`` over ``num_channels`` channels (with gamma and beta if ``affine``).

    >>> nn.InstanceNormConfig(num_channels=3).init().num_params()
    6
    """

    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: DeviceLike = None) -> InstanceNorm:
        return InstanceNorm(self, device)


class InstanceNorm(Module):
    """Normalise each (sample, channel) over the spatial dims. x: (N, num_channels, ...) -> same shape.

    >>> norm = nn.InstanceNormConfig(num_channels=3).init()
    >>> y = norm(burn.randn((2, 3, 8, 8)))
    >>> y.shape, y.mean((2, 3)).abs().max().item() < 1e-5   # zero mean per (sample, channel)
    ((2, 3, 8, 8), True)
    """

    def __init__(self, config: InstanceNormConfig, device: DeviceLike = None) -> None:
        c = config.num_channels
        check(c > 0, "InstanceNormConfig", f"num_channels must be positive, got {c}")
        self.num_channels, self.epsilon = c, config.epsilon
        self.gamma = Param(Ones().init((c,), device=device)) if config.affine else None
        self.beta = Param(Zeros().init((c,), device=device)) if config.affine else None
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        gamma, beta = _affine(self)
        return FN.instance_norm(x, gamma, beta, self.epsilon)


class RmsNormConfig(Config):
    """Builds ``nn.RmsNorm`` over the last dim, of size ``d_model`` (a gamma, no beta).

    >>> nn.RmsNormConfig(64, epsilon=1e-6).init().gamma.shape
    (64,)
    """

    d_model: int
    epsilon: float = 1e-5

    def init(self, device: DeviceLike = None) -> RmsNorm:
        return RmsNorm(self, device)


class RmsNorm(Module):
    """x / sqrt(mean(x^2) + eps) * gamma over the last dim. x: (..., d_model) -> same shape.

    >>> norm = nn.RmsNormConfig(d_model=2).init()
    >>> [round(v, 3) for v in norm(burn.tensor([[3.0, 4.0]]))[0].tolist()]   # rms = sqrt(12.5)
    [0.849, 1.131]
    """

    def __init__(self, config: RmsNormConfig, device: DeviceLike = None) -> None:
        check(config.d_model > 0, "RmsNormConfig", f"d_model must be positive, got {config.d_model}")
        check(config.epsilon > 0, "RmsNormConfig", f"epsilon must be positive, got {config.epsilon}")
        self.d_model, self.epsilon = config.d_model, config.epsilon
        self.gamma = Param(Ones().init((config.d_model,), device=device))
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        return FN.rms_norm(x, self.gamma.val(), self.epsilon)


def _affine(m: LayerNorm | GroupNorm | InstanceNorm) -> tuple[Tensor | None, Tensor | None]:
    return (None if m.gamma is None else m.gamma.val()), (None if m.beta is None else m.beta.val())
