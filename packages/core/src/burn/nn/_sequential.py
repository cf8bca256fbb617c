"""Sequential: modules applied in order."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from ..config import Config, check
from ._module import Module

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class SequentialConfig(Config):
    """Builds ``nn.Sequential`` from a list of configs, each initialised on the same device.

    >>> cfg = nn.SequentialConfig([nn.LinearConfig(4, 8), nn.ReluConfig(), nn.LinearConfig(8, 1)])
    >>> cfg.init(burn.device("cpu")).num_params()   # (4 * 8 + 8) + (8 * 1 + 1)
    49
    """

    layers: list = field(default_factory=list)

    def init(self, device: DeviceLike = None) -> Sequential:
        for i, layer in enumerate(self.layers):
            check(
                hasattr(layer, "init"),
                "SequentialConfig",
                f"layer {i} ({type(layer).__name__}) has no init()",
            )
        return Sequential(*(layer.init(device) for layer in self.layers))


class Sequential(Module):
    """Apply each module to the previous one's output. ``Sequential(m1, m2, ...)``; x: what the first
    layer takes -> what the last one returns.

    >>> model = nn.Sequential(nn.LinearConfig(4, 8).init(), nn.Relu(), nn.LinearConfig(8, 1).init())
    >>> len(model), model(burn.ones((3, 4))).shape
    (3, (3, 1))
    """

    def __init__(self, *layers: Module) -> None:
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise TypeError(f"Sequential: layer {i} must be an nn.Module, got {type(layer).__name__}")
        self.layers = list(layers)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]
