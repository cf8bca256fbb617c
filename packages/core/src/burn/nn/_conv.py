"""Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d over channels-first input (N, C, *spatial).

Configs follow Burn: ``Conv1dConfig(channels_in, channels_out, kernel_size)``,
``Conv2dConfig(channels=(c_in, c_out), kernel_size=(kh, kw))``; ``padding`` is an int, a tuple, ``"valid"``
or ``"same"`` (stride 1, odd kernels). Weights are (c_out, c_in / groups, *kernel) for convolutions and
(c_in, c_out / groups, *kernel) for transposed ones, as in Burn and PyTorch; the default initializer is
Kaiming-uniform with gain 1/sqrt(3) on fan_in (PyTorch's default bound 1/sqrt(fan_in)).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from ..config import Config, check
from . import functional as F
from ._module import Module
from ._param import Param
from .init import Initializer, KaimingUniform, fans

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor

_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)
IntOrTuple = int | tuple[int, ...]
PaddingMode = Literal["valid", "same"]


def int_or_tuple(n: int) -> str:
    """How an argument of n spatial sizes may be given, for error messages: PyTorch's forms."""
    return f"an int or a tuple of {n} int" + ("s" if n > 1 else "")


def _tuple(owner: str, name: str, v: Any, n: int, minimum: int) -> tuple[int, ...]:
    is_int = isinstance(v, int) and not isinstance(v, bool)
    out = (v,) * n if is_int else tuple(v) if isinstance(v, (tuple, list)) else ()
    check(
        len(out) == n and all(isinstance(i, int) and not isinstance(i, bool) for i in out),
        owner,
        f"{name} must be {int_or_tuple(n)}, got {v!r}",
    )
    check(all(i >= minimum for i in out), owner, f"{name} must be >= {minimum}, got {v!r}")
    return out


def _padding(
    owner: str, padding: Any, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]
) -> tuple[int, ...]:
    n = len(kernel)
    if padding == "valid":
        return (0,) * n
    if padding == "same":
        check(all(s == 1 for s in stride), owner, f"padding='same' needs stride 1, got {stride}")
        check(all(k % 2 == 1 for k in kernel), owner, f"padding='same' needs odd kernel sizes, got {kernel}")
        return tuple((k - 1) * d // 2 for k, d in zip(kernel, dilation))
    check(
        not isinstance(padding, str),
        owner,
        f"padding must be {int_or_tuple(n)}, 'valid' or 'same', got {padding!r}",
    )
    return _tuple(owner, "padding", padding, n, 0)


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, config: Any, device: DeviceLike = None) -> None:
        owner, n = type(config).__name__, self._n
        c_in, c_out = (
            (config.channels_in, config.channels_out)
            if hasattr(config, "channels_in")
            else tuple(config.channels)
        )
        check(c_in > 0 and c_out > 0, owner, f"channels must be positive, got ({c_in}, {c_out})")
        groups = config.groups
        check(
            groups > 0 and c_in % groups == 0 and c_out % groups == 0,
            owner,
            f"channels ({c_in}, {c_out}) must be divisible by groups={groups}",
        )
        self.channels = (c_in, c_out)
        self.kernel_size = _tuple(owner, "kernel_size", config.kernel_size, n, 1)
        self.stride = _tuple(owner, "stride", config.stride, n, 1)
        self.dilation = _tuple(owner, "dilation", config.dilation, n, 1)
        self.groups = groups
        if self._transposed:
            self.padding = _tuple(owner, "padding", config.padding, n, 0)
            self.padding_out = _tuple(owner, "padding_out", config.padding_out, n, 0)
            shape = (c_in, c_out // groups, *self.kernel_size)
        else:
            self.padding = _padding(owner, config.padding, self.kernel_size, self.dilation, self.stride)
            shape = (c_out, c_in // groups, *self.kernel_size)
        fan_in, fan_out = fans(shape)
        init: Initializer = config.initializer
        self.weight = Param(init.init(shape, fan_in, fan_out, device))
        bias_size = c_out
        self.bias = Param(init.init((bias_size,), fan_in, fan_out, device)) if config.bias else None
        self._config = config

    def forward(self, x: Tensor) -> Tensor:
        bias = None if self.bias is None else self.bias.val()
        if self._transposed:
            fn = getattr(F, f"conv_transpose{self._n}d")
            return fn(
                x,
                self.weight.val(),
                bias,
                stride=self.stride,
                padding=self.padding,
                output_padding=self.padding_out,
                groups=self.groups,
                dilation=self.dilation,
            )
        fn = getattr(F, f"conv{self._n}d")
        return fn(
            x,
            self.weight.val(),
            bias,
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
        )


class Conv1d(_ConvNd):
    """1-d convolution: (N, C_in, L) -> (N, C_out, L_out), with
    L_out = (L + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1.

    >>> conv = nn.Conv1dConfig(3, 8, 3, padding="same").init()
    >>> conv(burn.zeros((2, 3, 10))).shape
    (2, 8, 10)
    """

    _n = 1


class Conv2d(_ConvNd):
    """2-d convolution: (N, C_in, H, W) -> (N, C_out, H_out, W_out), each spatial size as in Conv1d.

    >>> conv = nn.Conv2dConfig((3, 8), (3, 3)).init(burn.device("cpu"))
    >>> conv(burn.zeros((2, 3, 16, 16))).shape
    (2, 8, 14, 14)
    """

    _n = 2


class Conv3d(_ConvNd):
    """3-d convolution: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out).

    >>> conv = nn.Conv3dConfig((1, 4), 3).init()
    >>> conv(burn.zeros((1, 1, 5, 6, 7))).shape
    (1, 4, 3, 4, 5)
    """

    _n = 3


class ConvTranspose1d(_ConvNd):
    """1-d transposed convolution: (N, C_in, L) -> (N, C_out, L_out), with
    L_out = (L - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + padding_out + 1.

    >>> up = nn.ConvTranspose1dConfig((4, 2), 3, stride=2).init()
    >>> up(burn.zeros((1, 4, 5))).shape
    (1, 2, 11)
    """

    _n, _transposed = 1, True


class ConvTranspose2d(_ConvNd):
    """2-d transposed convolution: (N, C_in, H, W) -> (N, C_out, H_out, W_out), each as in
    ConvTranspose1d.

    >>> up = nn.ConvTranspose2dConfig((8, 3), (4, 4), stride=2, padding=1).init()
    >>> up(burn.zeros((1, 8, 7, 7))).shape
    (1, 3, 14, 14)
    """

    _n, _transposed = 2, True


class ConvTranspose3d(_ConvNd):
    """3-d transposed convolution: (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out).

    >>> up = nn.ConvTranspose3dConfig((2, 1), 2, stride=2).init()
    >>> up(burn.zeros((1, 2, 3, 3, 3))).shape
    (1, 1, 6, 6, 6)
    """

    _n, _transposed = 3, True


class Conv1dConfig(Config):
    """Builds ``nn.Conv1d``: weight (channels_out, channels_in / groups, kernel_size), bias
    (channels_out,); ``padding`` is an int (or a 1-tuple, as PyTorch takes), ``"valid"`` or ``"same"``.

    >>> nn.Conv1dConfig(4, 8, 3, groups=2).init().weight.shape
    (8, 2, 3)
    """

    channels_in: int
    channels_out: int
    kernel_size: tuple[int] | int
    stride: tuple[int] | int = 1
    dilation: tuple[int] | int = 1
    groups: int = 1
    padding: tuple[int] | int | PaddingMode = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> Conv1d:
        return Conv1d(self, device)


class Conv2dConfig(Config):
    """Builds ``nn.Conv2d``: ``channels=(c_in, c_out)``; kernel_size, stride, dilation and padding are
    ints or pairs (padding also ``"valid"`` or ``"same"``). Weight (c_out, c_in / groups, kh, kw).

    >>> conv = nn.Conv2dConfig((3, 8), 3, stride=2, padding=1).init()
    >>> conv.weight.shape, conv(burn.zeros((1, 3, 32, 32))).shape
    ((8, 3, 3, 3), (1, 8, 16, 16))
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    dilation: tuple[int, int] | int = 1
    groups: int = 1
    padding: tuple[int, int] | int | PaddingMode = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> Conv2d:
        return Conv2d(self, device)


class Conv3dConfig(Config):
    """Builds ``nn.Conv3d``: as Conv2dConfig with triples; weight (c_out, c_in / groups, kd, kh, kw).

    >>> nn.Conv3dConfig((2, 4), (1, 3, 3), padding="same").init().weight.shape
    (4, 2, 1, 3, 3)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int] | int
    stride: tuple[int, int, int] | int = 1
    dilation: tuple[int, int, int] | int = 1
    groups: int = 1
    padding: tuple[int, int, int] | int | PaddingMode = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> Conv3d:
        return Conv3d(self, device)


class ConvTranspose1dConfig(Config):
    """Builds ``nn.ConvTranspose1d``: ``channels=(c_in, c_out)``, weight (c_in, c_out / groups, k);
    ``padding_out`` adds to one side of the output (PyTorch's output_padding).

    >>> nn.ConvTranspose1dConfig((4, 2), 3).init().weight.shape
    (4, 2, 3)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int] | int
    stride: tuple[int] | int = 1
    dilation: tuple[int] | int = 1
    groups: int = 1
    padding: tuple[int] | int = 0
    padding_out: tuple[int] | int = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> ConvTranspose1d:
        return ConvTranspose1d(self, device)


class ConvTranspose2dConfig(Config):
    """Builds ``nn.ConvTranspose2d``: ints or pairs; weight (c_in, c_out / groups, kh, kw).

    >>> nn.ConvTranspose2dConfig((8, 4), 3, groups=2).init().weight.shape
    (8, 2, 3, 3)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int] | int
    stride: tuple[int, int] | int = 1
    dilation: tuple[int, int] | int = 1
    groups: int = 1
    padding: tuple[int, int] | int = 0
    padding_out: tuple[int, int] | int = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> ConvTranspose2d:
        return ConvTranspose2d(self, device)


class ConvTranspose3dConfig(Config):
    """Builds ``nn.ConvTranspose3d``: ints or triples; weight (c_in, c_out / groups, kd, kh, kw).

    >>> nn.ConvTranspose3dConfig((2, 4), 3, bias=False).init().weight.shape
    (2, 4, 3, 3, 3)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int] | int
    stride: tuple[int, int, int] | int = 1
    dilation: tuple[int, int, int] | int = 1
    groups: int = 1
    padding: tuple[int, int, int] | int = 0
    padding_out: tuple[int, int, int] | int = 0
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> ConvTranspose3d:
        return ConvTranspose3d(self, device)
