"""Activation modules: thin wrappers over ``burn.nn.functional`` (PRelu holds a learned slope)."""

from __future__ import annotations

from typing import Any

from ..config import Config, check
from . import functional as F
from ._module import Module
from ._param import Param
from .init import Constant


class Relu(Module):
    def forward(self, x: Any) -> Any:
        return F.relu(x)


class Gelu(Module):
    def __init__(self, approximate: str = "none") -> None:
        self.approximate = approximate

    def forward(self, x: Any) -> Any:
        return F.gelu(x, self.approximate)


class Silu(Module):
    def forward(self, x: Any) -> Any:
        return F.silu(x)


class Sigmoid(Module):
    def forward(self, x: Any) -> Any:
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Any) -> Any:
        return F.tanh(x)


class LeakyRelu(Module):
    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def forward(self, x: Any) -> Any:
        return F.leaky_relu(x, self.negative_slope)


class PRelu(Module):
    """Leaky relu with a learned slope ``alpha`` of shape (num_parameters,) (1 or the channels)."""

    def __init__(self, config: PReluConfig, device: Any = None) -> None:
        check(
            config.num_parameters > 0,
            "PReluConfig",
            f"num_parameters must be positive, got {config.num_parameters}",
        )
        self.num_parameters = config.num_parameters
        self.alpha = Param(Constant(config.alpha).init((config.num_parameters,), device=device))
        self._config = config

    def forward(self, x: Any) -> Any:
        return F.prelu(x, self.alpha.val())


class _NoParamConfig(Config):
    def init(self, device: Any = None) -> Module:
        return _MODULES[type(self).__name__]()


class ReluConfig(_NoParamConfig):
    pass


class SiluConfig(_NoParamConfig):
    pass


class SigmoidConfig(_NoParamConfig):
    pass


class TanhConfig(_NoParamConfig):
    pass


class GeluConfig(Config):
    approximate: str = "none"

    def init(self, device: Any = None) -> Gelu:
        check(
            self.approximate in ("none", "tanh"),
            "GeluConfig",
            f"approximate must be 'none' or 'tanh', got {self.approximate!r}",
        )
        return Gelu(self.approximate)


class LeakyReluConfig(Config):
    negative_slope: float = 0.01

    def init(self, device: Any = None) -> LeakyRelu:
        return LeakyRelu(self.negative_slope)


class PReluConfig(Config):
    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device: Any = None) -> PRelu:
        return PRelu(self, device)


_MODULES = {"ReluConfig": Relu, "SiluConfig": Silu, "SigmoidConfig": Sigmoid, "TanhConfig": Tanh}
