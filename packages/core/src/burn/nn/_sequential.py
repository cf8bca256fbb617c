"""Sequential: modules applied in order."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..config import Config, check
from ._module import Module


class SequentialConfig(Config):
    """``SequentialConfig([LinearConfig(4, 8), ReluConfig(), LinearConfig(8, 1)]).init(device)``."""

    layers: list = field(default_factory=list)

    def init(self, device: Any = None) -> Sequential:
        for i, layer in enumerate(self.layers):
            check(
                hasattr(layer, "init"),
                "SequentialConfig",
                f"layer {i} ({type(layer).__name__}) has no init()",
            )
        return Sequential(*(layer.init(device) for layer in self.layers))


class Sequential(Module):
    """Apply each module to the previous one's output. ``Sequential(m1, m2, ...)``."""

    def __init__(self, *layers: Module) -> None:
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise TypeError(f"Sequential: layer {i} must be an nn.Module, got {type(layer).__name__}")
        self.layers = list(layers)

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]
