"""Pooling modules over channels-first input. Defaults follow Burn: ``stride`` 1 and no padding (pass
``stride=kernel_size`` for PyTorch's non-overlapping default)."""

from __future__ import annotations

from typing import Any

from ..config import Config, check
from . import functional as F
from ._conv import _tuple
from ._module import Module


class _Pool(Module):
    _n = 2
    _op = "max"

    def __init__(self, config: Any) -> None:
        owner, n = type(config).__name__, self._n
        self.kernel_size = _tuple(owner, "kernel_size", config.kernel_size, n, 1)
        self.stride = _tuple(owner, "stride", config.stride, n, 1)
        self.padding = _tuple(owner, "padding", config.padding, n, 0)
        check(
            all(2 * p <= k for p, k in zip(self.padding, self.kernel_size)),
            owner,
            f"padding {self.padding} must be at most half of kernel_size {self.kernel_size}",
        )
        self.ceil_mode = config.ceil_mode
        if self._op == "max":
            self.dilation = _tuple(owner, "dilation", config.dilation, n, 1)
        else:
            self.count_include_pad = config.count_include_pad
        self._config = config

    def forward(self, x: Any) -> Any:
        fn = getattr(F, f"{self._op}_pool{self._n}d")
        if self._op == "max":
            return fn(
                x,
                self.kernel_size,
                stride=self.stride,
                padding=self.padding,
                dilation=self.dilation,
                ceil_mode=self.ceil_mode,
            )
        return fn(
            x,
            self.kernel_size,
            stride=self.stride,
            padding=self.padding,
            count_include_pad=self.count_include_pad,
            ceil_mode=self.ceil_mode,
        )


class MaxPool1d(_Pool):
    """(N, C, L) -> (N, C, L_out)."""

    _n, _op = 1, "max"


class MaxPool2d(_Pool):
    """(N, C, H, W) -> (N, C, H_out, W_out)."""

    _n, _op = 2, "max"


class AvgPool1d(_Pool):
    _n, _op = 1, "avg"


class AvgPool2d(_Pool):
    _n, _op = 2, "avg"


class MaxPool1dConfig(Config):
    kernel_size: int
    stride: int = 1
    padding: int = 0
    dilation: int = 1
    ceil_mode: bool = False

    def init(self, device: Any = None) -> MaxPool1d:
        return MaxPool1d(self)


class MaxPool2dConfig(Config):
    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    padding: tuple[int, int] | int = 0
    dilation: tuple[int, int] | int = 1
    ceil_mode: bool = False

    def init(self, device: Any = None) -> MaxPool2d:
        return MaxPool2d(self)


class AvgPool1dConfig(Config):
    kernel_size: int
    stride: int = 1
    padding: int = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: Any = None) -> AvgPool1d:
        return AvgPool1d(self)


class AvgPool2dConfig(Config):
    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    padding: tuple[int, int] | int = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: Any = None) -> AvgPool2d:
        return AvgPool2d(self)


class _AdaptiveAvgPool(Module):
    _n = 2

    def __init__(self, config: Any) -> None:
        self.output_size = _tuple(type(config).__name__, "output_size", config.output_size, self._n, 1)
        self._config = config

    def forward(self, x: Any) -> Any:
        size = self.output_size[0] if self._n == 1 else self.output_size
        return getattr(F, f"adaptive_avg_pool{self._n}d")(x, size)


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """(N, C, L) -> (N, C, output_size)."""

    _n = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """(N, C, H, W) -> (N, C, *output_size)."""

    _n = 2


class AdaptiveAvgPool1dConfig(Config):
    output_size: int

    def init(self, device: Any = None) -> AdaptiveAvgPool1d:
        return AdaptiveAvgPool1d(self)


class AdaptiveAvgPool2dConfig(Config):
    output_size: tuple[int, int] | int

    def init(self, device: Any = None) -> AdaptiveAvgPool2d:
        return AdaptiveAvgPool2d(self)
