"""Dropout: active when its input lives on an autodiff device (training), off after ``valid()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config, check
from . import functional as F
from ._module import Module

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


class DropoutConfig(Config):
    """Builds ``nn.Dropout`` with drop probability ``prob`` in [0, 1].

    >>> nn.DropoutConfig(prob=0.1).init()
    Dropout {prob: 0.1}
    """

    prob: float = 0.5

    def init(self, device: DeviceLike = None) -> Dropout:
        return Dropout(self)


class Dropout(Module):
    """Zero each element with probability ``prob``, scaling the rest by 1 / (1 - prob), on autodiff
    devices only (Burn's rule: training is what runs under autodiff). x: any shape -> same shape.

    >>> drop = nn.DropoutConfig(prob=0.5).init()
    >>> drop(burn.ones(4)).tolist()   # off: not on an autodiff device
    [1.0, 1.0, 1.0, 1.0]
    >>> x = burn.ones(1000, device=burn.device("cpu", autodiff=True))
    >>> sorted(set(drop(x).tolist()))   # on: each element dropped or scaled by 2
    [0.0, 2.0]
    """

    def __init__(self, config: DropoutConfig | float = 0.5) -> None:
        prob = config.prob if isinstance(config, DropoutConfig) else float(config)
        check(0.0 <= prob <= 1.0, "DropoutConfig", f"prob must be in [0, 1], got {prob}")
        self.prob = prob

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.prob)
