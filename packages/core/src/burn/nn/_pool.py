"""Pooling modules over channels-first input. Defaults follow Burn: ``stride`` 1 and no padding (pass
``stride=kernel_size`` for PyTorch's non-overlapping default)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import Config, check
from . import functional as F
from ._conv import _tuple
from ._module import Module

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor


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

    def forward(self, x: Tensor) -> Tensor:
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
    """Max over sliding windows: (N, C, L) -> (N, C, L_out), with
    L_out = (L + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1.

    >>> pool = nn.MaxPool1dConfig(kernel_size=2, stride=2).init()
    >>> pool(burn.tensor([[[1.0, 5.0, 2.0, 3.0]]])).tolist()
    [[[5.0, 3.0]]]
    """

    _n, _op = 1, "max"


class MaxPool2d(_Pool):
    """Max over sliding windows: (N, C, H, W) -> (N, C, H_out, W_out), each size as in MaxPool1d.

    >>> pool = nn.MaxPool2dConfig((2, 2), stride=(2, 2)).init()
    >>> pool(burn.zeros((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
    """

    _n, _op = 2, "max"


class AvgPool1d(_Pool):
    """Mean over sliding windows: (N, C, L) -> (N, C, L_out), L_out = (L + 2 * padding - kernel_size)
    // stride + 1; ``count_include_pad`` counts the zero padding in the divisor.

    >>> pool = nn.AvgPool1dConfig(kernel_size=2).init()   # stride 1
    >>> pool(burn.tensor([[[1.0, 3.0, 5.0]]])).tolist()
    [[[2.0, 4.0]]]
    """

    _n, _op = 1, "avg"


class AvgPool2d(_Pool):
    """Mean over sliding windows: (N, C, H, W) -> (N, C, H_out, W_out), each size as in AvgPool1d.

    >>> pool = nn.AvgPool2dConfig(3, padding=1).init()
    >>> pool(burn.ones((2, 4, 5, 5))).shape
    (2, 4, 5, 5)
    """

    _n, _op = 2, "avg"


class MaxPool3d(_Pool):
    """Max over sliding windows: (N, C, D, H, W) -> (N, C, D_out, H_out, W_out), each size as in MaxPool1d.

    >>> pool = nn.MaxPool3dConfig(2, stride=2).init()
    >>> pool(burn.zeros((1, 3, 4, 6, 8))).shape
    (1, 3, 2, 3, 4)
    """

    _n, _op = 3, "max"


class AvgPool3d(_Pool):
    """Mean over sliding windows: (N, C, D, H, W) -> (N, C, D_out, H_out, W_out), each size as in
    AvgPool1d.

    >>> pool = nn.AvgPool3dConfig(3, padding=1).init()
    >>> pool(burn.ones((1, 2, 4, 4, 4))).shape
    (1, 2, 4, 4, 4)
    """

    _n, _op = 3, "avg"


class MaxPool1dConfig(Config):
    """Builds ``nn.MaxPool1d``; ``stride`` defaults to 1 (Burn), not to kernel_size (PyTorch).

    >>> nn.MaxPool1dConfig(3).init()
    MaxPool1d {kernel_size: (3,), stride: (1,), padding: (0,), ceil_mode: False, dilation: (1,)}
    """

    kernel_size: tuple[int] | int
    stride: tuple[int] | int = 1
    padding: tuple[int] | int = 0
    dilation: tuple[int] | int = 1
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> MaxPool1d:
        return MaxPool1d(self)


class MaxPool2dConfig(Config):
    """Builds ``nn.MaxPool2d``: kernel_size, stride (default 1), padding and dilation are ints or pairs.

    >>> nn.MaxPool2dConfig(3, stride=2).init()
    MaxPool2d {kernel_size: (3, 3), stride: (2, 2), padding: (0, 0), ceil_mode: False, dilation: (1, 1)}
    """

    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    padding: tuple[int, int] | int = 0
    dilation: tuple[int, int] | int = 1
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> MaxPool2d:
        return MaxPool2d(self)


class AvgPool1dConfig(Config):
    """Builds ``nn.AvgPool1d``; ``stride`` defaults to 1 (Burn).

    >>> nn.AvgPool1dConfig(2, count_include_pad=False).init().count_include_pad
    False
    """

    kernel_size: tuple[int] | int
    stride: tuple[int] | int = 1
    padding: tuple[int] | int = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> AvgPool1d:
        return AvgPool1d(self)


class AvgPool2dConfig(Config):
    """Builds ``nn.AvgPool2d``: kernel_size, stride (default 1) and padding are ints or pairs.

    >>> pool = nn.AvgPool2dConfig(3, padding=1).init()
    >>> pool.kernel_size, pool.stride, pool.padding
    ((3, 3), (1, 1), (1, 1))
    """

    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    padding: tuple[int, int] | int = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> AvgPool2d:
        return AvgPool2d(self)


class MaxPool3dConfig(Config):
    """Builds ``nn.MaxPool3d``: kernel_size, stride (default 1, as Burn), padding and dilation are ints or
    triples.

    >>> nn.MaxPool3dConfig(2, stride=(1, 2, 2)).init().stride
    (1, 2, 2)
    """

    kernel_size: tuple[int, int, int] | int
    stride: tuple[int, int, int] | int = 1
    padding: tuple[int, int, int] | int = 0
    dilation: tuple[int, int, int] | int = 1
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> MaxPool3d:
        return MaxPool3d(self)


class AvgPool3dConfig(Config):
    """Builds ``nn.AvgPool3d``: kernel_size, stride (default 1) and padding are ints or triples.

    >>> nn.AvgPool3dConfig((1, 2, 2)).init().kernel_size
    (1, 2, 2)
    """

    kernel_size: tuple[int, int, int] | int
    stride: tuple[int, int, int] | int = 1
    padding: tuple[int, int, int] | int = 0
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: DeviceLike = None) -> AvgPool3d:
        return AvgPool3d(self)


class _AdaptiveAvgPool(Module):
    _n = 2

    def __init__(self, config: Any) -> None:
        self.output_size = _tuple(type(config).__name__, "output_size", config.output_size, self._n, 1)
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        size = self.output_size[0] if self._n == 1 else self.output_size
        return getattr(F, f"adaptive_avg_pool{self._n}d")(x, size)


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """Mean over ``output_size`` adaptive windows: (N, C, L) -> (N, C, output_size).

    >>> pool = nn.AdaptiveAvgPool1dConfig(2).init()
    >>> pool(burn.tensor([[[1.0, 3.0, 5.0, 7.0]]])).tolist()
    [[[2.0, 6.0]]]
    """

    _n = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """Mean over adaptive windows: (N, C, H, W) -> (N, C, *output_size).

    >>> gap = nn.AdaptiveAvgPool2dConfig((1, 1)).init()   # global average pooling
    >>> gap(burn.ones((2, 16, 7, 7))).shape
    (2, 16, 1, 1)
    """

    _n = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    """Mean over adaptive windows: (N, C, D, H, W) -> (N, C, *output_size).

    >>> pool = nn.AdaptiveAvgPool3dConfig((1, 2, 2)).init()
    >>> pool(burn.ones((2, 4, 5, 6, 7))).shape
    (2, 4, 1, 2, 2)
    """

    _n = 3


class AdaptiveAvgPool1dConfig(Config):
    """Builds ``nn.AdaptiveAvgPool1d`` with an int (or 1-tuple, as PyTorch takes) ``output_size``.

    >>> nn.AdaptiveAvgPool1dConfig(4).init().output_size
    (4,)
    """

    output_size: tuple[int] | int

    def init(self, device: DeviceLike = None) -> AdaptiveAvgPool1d:
        return AdaptiveAvgPool1d(self)


class AdaptiveAvgPool2dConfig(Config):
    """Builds ``nn.AdaptiveAvgPool2d``; ``output_size`` is an int (square) or a pair.

    >>> nn.AdaptiveAvgPool2dConfig(7).init().output_size
    (7, 7)
    """

    output_size: tuple[int, int] | int

    def init(self, device: DeviceLike = None) -> AdaptiveAvgPool2d:
        return AdaptiveAvgPool2d(self)


class AdaptiveAvgPool3dConfig(Config):
    """Builds ``nn.AdaptiveAvgPool3d``; ``output_size`` is an int (cube) or a triple.

    >>> nn.AdaptiveAvgPool3dConfig(2).init().output_size
    (2, 2, 2)
    """

    output_size: tuple[int, int, int] | int

    def init(self, device: DeviceLike = None) -> AdaptiveAvgPool3d:
        return AdaptiveAvgPool3d(self)
