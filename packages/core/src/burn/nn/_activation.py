"""Activation modules: thin wrappers over ``burn.nn.functional`` (PRelu holds a learned slope)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from . import functional as F
from ._module import Module
from ._param import Param
from .init import Constant

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class Relu(Module):
    """max(x, 0) element-wise (``F.relu``). x: any shape -> same shape.

    >>> nn.Relu()(burn.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Gelu(Module):
    """x * Phi(x) element-wise (``F.gelu``); ``approximate="tanh"``: the tanh approximation.
    x: any shape -> same shape.

    >>> [round(v, 3) for v in nn.Gelu()(burn.tensor([-3.0, 0.0, 3.0])).tolist()]
    [-0.004, 0.0, 2.996]
    """

    def __init__(self, approximate: str = "none") -> None:
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class Silu(Module):
    """x * sigmoid(x) element-wise (``F.silu``). x: any shape -> same shape.

    >>> [round(v, 4) for v in nn.Silu()(burn.tensor([0.0, 1.0])).tolist()]
    [0.0, 0.7311]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) element-wise (``F.sigmoid``). x: any shape -> same shape.

    >>> nn.Sigmoid()(burn.zeros(3)).tolist()
    [0.5, 0.5, 0.5]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    """tanh(x) element-wise (``F.tanh``). x: any shape -> same shape.

    >>> nn.Tanh()(burn.tensor([0.0, 100.0])).tolist()
    [0.0, 1.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class LeakyRelu(Module):
    """x where x >= 0, else negative_slope * x (``F.leaky_relu``). x: any shape -> same shape.

    >>> nn.LeakyRelu(negative_slope=0.5)(burn.tensor([-2.0, 3.0])).tolist()
    [-1.0, 3.0]
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)


class PRelu(Module):
    """Leaky relu with a learned slope ``alpha`` of shape (num_parameters,): 1 shared, or one per
    channel (dim 1). x: (N, C, ...) -> same shape.

    >>> prelu = nn.PReluConfig(num_parameters=3).init()
    >>> prelu.alpha.shape, prelu(burn.ones((2, 3, 4))).shape
    ((3,), (2, 3, 4))
    """

    def __init__(self, config: PReluConfig, device: DeviceLike = None) -> None:
        check(
            config.num_parameters > 0,
            "PReluConfig",
            f"num_parameters must be positive, got {config.num_parameters}",
        )
        self.num_parameters = config.num_parameters
        self.alpha = Param(Constant(config.alpha).init((config.num_parameters,), device=device))
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.alpha.val())


class _NoParamConfig(Config):
    def init(self, device: DeviceLike = None) -> Module:
        return _MODULES[type(self).__name__]()


class ReluConfig(_NoParamConfig):
    """Builds ``nn.Relu`` (no fields).

    >>> nn.ReluConfig().init()
    Relu
    """


class SiluConfig(_NoParamConfig):
    """Builds ``nn.Silu`` (no fields).

    >>> nn.SiluConfig().init()
    Silu
    """


class SigmoidConfig(_NoParamConfig):
    """Builds ``nn.Sigmoid`` (no fields).

    >>> nn.SigmoidConfig().init()
    Sigmoid
    """


class TanhConfig(_NoParamConfig):
    """Builds ``nn.Tanh`` (no fields).

    >>> nn.TanhConfig().init()
    Tanh
    """


class GeluConfig(Config):
    """Builds ``nn.Gelu``; ``approximate`` is ``"none"`` (exact, erf) or ``"tanh"``.

    >>> nn.GeluConfig(approximate="tanh").init()
    Gelu {approximate: tanh}
    """

    approximate: str = "none"

    def init(self, device: DeviceLike = None) -> Gelu:
        check(
            self.approximate in ("none", "tanh"),
            "GeluConfig",
            f"approximate must be 'none' or 'tanh', got {self.approximate!r}",
        )
        return Gelu(self.approximate)


class LeakyReluConfig(Config):
    """Builds ``nn.LeakyRelu`` with ``negative_slope`` (default 0.01).

    >>> nn.LeakyReluConfig(0.2).init()
    LeakyRelu {negative_slope: 0.2}
    """

    negative_slope: float = 0.01

    def init(self, device: DeviceLike = None) -> LeakyRelu:
        return LeakyRelu(self.negative_slope)


class PReluConfig(Config):
    """Builds ``nn.PRelu``: ``num_parameters`` slopes (1, or the channel count), each starting at ``alpha``.

    >>> nn.PReluConfig(num_parameters=2, alpha=0.5).init().alpha.val().tolist()
    [0.5, 0.5]
    """

    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device: DeviceLike = None) -> PRelu:
        return PRelu(self, device)


_MODULES = {"ReluConfig": Relu, "SiluConfig": Silu, "SigmoidConfig": Sigmoid, "TanhConfig": Tanh}
