"""Dropout: active when its input lives on an autodiff device (training), off after ``valid()``."""

from __future__ import annotations

from typing import Any

from ..config import Config, check
from . import functional as F
from ._module import Module


class DropoutConfig(Config):
    prob: float = 0.5

    def init(self, device: Any = None) -> Dropout:
        return Dropout(self)


class Dropout(Module):
    """Zero each element with probability ``prob``, scaling the rest by 1 / (1 - prob), on autodiff
    devices only (Burn's rule: training is what runs under autodiff). x: any shape -> same shape."""

    def __init__(self, config: DropoutConfig | float = 0.5) -> None:
        prob = config.prob if isinstance(config, DropoutConfig) else float(config)
        check(0.0 <= prob <= 1.0, "DropoutConfig", f"prob must be in [0, 1], got {prob}")
        self.prob = prob

    def forward(self, x: Any) -> Any:
        return F.dropout(x, self.prob)
