"""``nn.DeformConv2d``: deformable 2-d convolution (Burn 0.16's DeformConv2d, torchvision's
DeformConv2d). Offsets (and the optional DCNv2 mask) are inputs of the forward, usually predicted by a
plain ``Conv2d`` next to it: ``m(x, offset, mask=None)``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..config import Config, check
from . import functional as F
from ._conv import _tuple
from ._module import Module
from ._param import Param
from .init import Initializer, KaimingUniform, fans

if TYPE_CHECKING:
    from .._device import DeviceLike
    from .._tensor import Tensor

_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


class DeformConv2d(Module):
    """Deformable convolution: (N, C_in, H, W) with offsets (N, 2 * offset_groups * kh * kw, H_out,
    W_out) and an optional mask (N, offset_groups * kh * kw, H_out, W_out) -> (N, C_out, H_out, W_out).

    >>> m = nn.DeformConv2dConfig(channels=(2, 4), kernel_size=(3, 3), padding=1).init()
    >>> x, offset = burn.ones((1, 2, 5, 5)), burn.zeros((1, 18, 5, 5))
    >>> m(x, offset).shape, m.weight.shape
    ((1, 4, 5, 5), (4, 2, 3, 3))
    """

    def __init__(self, config: DeformConv2dConfig, device: DeviceLike = None) -> None:
        owner = type(config).__name__
        c_in, c_out = tuple(config.channels)
        check(c_in > 0 and c_out > 0, owner, f"channels must be positive, got ({c_in}, {c_out})")
        groups, og = config.groups, config.offset_groups
        check(
            groups > 0 and c_in % groups == 0 and c_out % groups == 0,
            owner,
            f"channels ({c_in}, {c_out}) must be divisible by groups={groups}",
        )
        check(og > 0 and c_in % og == 0, owner, f"offset_groups={og} must divide the input channels ({c_in})")
        self.channels = (c_in, c_out)
        self.kernel_size = _tuple(owner, "kernel_size", config.kernel_size, 2, 1)
        self.stride = _tuple(owner, "stride", config.stride, 2, 1)
        self.padding = _tuple(owner, "padding", config.padding, 2, 0)
        self.dilation = _tuple(owner, "dilation", config.dilation, 2, 1)
        self.groups = groups
        self.offset_groups = og
        shape = (c_out, c_in // groups, *self.kernel_size)
        fan_in, fan_out = fans(shape)
        init: Initializer = config.initializer
        self.weight = Param(init.init(shape, fan_in, fan_out, device))
        self.bias = Param(init.init((c_out,), fan_in, fan_out, device)) if config.bias else None

    def forward(self, x: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        return F.deform_conv2d(
            x,
            offset,
            self.weight.val(),
            None if self.bias is None else self.bias.val(),
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            mask=mask,
            groups=self.groups,
        )


class DeformConv2dConfig(Config):
    """Builds ``nn.DeformConv2d``: ``channels=(c_in, c_out)``; kernel_size, stride, padding and dilation
    are ints or pairs; ``offset_groups`` divides c_in (the offsets' channel groups). Weight
    (c_out, c_in / groups, kh, kw), bias (c_out,).

    >>> nn.DeformConv2dConfig(channels=(4, 8), kernel_size=3, offset_groups=2).init().weight.shape
    (8, 4, 3, 3)
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int] | int = (3, 3)
    stride: tuple[int, int] | int = 1
    padding: tuple[int, int] | int = 0
    dilation: tuple[int, int] | int = 1
    offset_groups: int = 1
    groups: int = 1
    bias: bool = True
    initializer: Initializer = _DEFAULT_INIT

    def init(self, device: DeviceLike = None) -> DeformConv2d:
        return DeformConv2d(self, device)
