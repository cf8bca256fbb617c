"""Module ops (Burn's ModuleOps): convolution, pooling, interpolation, embedding, unfold.

Layouts are channels-first as in PyTorch: x is (N, C, *spatial) with 1 to 3 spatial dims. Every
argument arrives normalised by the frontend: ``stride``/``padding``/``dilation``/``kernel`` are tuples
with one entry per spatial dim, shapes are checked. The defaults here are written in terms of the
backend's required core, so a third-party backend gets every module op by implementing the core.
"""

from __future__ import annotations

from typing import Any

from . import _conv_defaults, _interpolate_defaults, _pool_defaults

Prim = Any
Ints = tuple[int, ...]


class ModuleOps:
    def conv(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        """N-d convolution. weight (C_out, C_in // groups, *kernel), bias (C_out,) or None."""
        return _conv_defaults.conv(self, x, weight, bias, stride, padding, dilation, groups)

    def conv_transpose(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        output_padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        """N-d transposed convolution. weight (C_in, C_out // groups, *kernel), as PyTorch."""
        return _conv_defaults.conv_transpose(
            self, x, weight, bias, stride, padding, output_padding, dilation, groups
        )

    def max_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        """N-d max pool: (values, indices); indices point into the flattened spatial input (PyTorch)."""
        return _pool_defaults.max_pool(self, x, kernel, stride, padding, dilation, ceil_mode)

    def avg_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        """N-d average pool; the divisor counts padding when ``count_include_pad`` (PyTorch)."""
        return _pool_defaults.avg_pool(self, x, kernel, stride, padding, count_include_pad, ceil_mode)

    def adaptive_avg_pool(self, x: Prim, output_size: Ints) -> Prim:
        """Mean over PyTorch's adaptive windows [floor(i*in/out), ceil((i+1)*in/out)) per dim."""
        return _pool_defaults.adaptive_avg_pool(self, x, output_size)

    def adaptive_max_pool(self, x: Prim, output_size: Ints) -> tuple[Prim, Prim]:
        """Max over adaptive windows: (values, flat spatial indices) as ``max_pool``."""
        return _pool_defaults.adaptive_max_pool(self, x, output_size)

    def interpolate(self, x: Prim, size: Ints, mode: str, align_corners: bool) -> Prim:
        """Resize the spatial dims of x (N, C, H, W) to ``size``: "nearest", "bilinear" or "bicubic",
        with PyTorch's coordinate rules (ratio in / out; ``align_corners`` ignored for nearest). The
        frontend sends 4-d inputs only (1-d resizes arrive with a unit height); the default handles
        any number of spatial dims."""
        return _interpolate_defaults.interpolate(self, x, size, mode, align_corners)

    def embedding(self, weight: Prim, indices: Prim) -> Prim:
        """Rows of weight (V, D) for int indices of any shape: result indices.shape + (D,)."""
        shape = self.shape_of(indices)
        flat = self.reshape(indices, (-1,))
        rows = self.select(weight, 0, flat)
        return self.reshape(rows, tuple(shape) + (self.shape_of(weight)[1],))

    def unfold4d(self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Prim:
        """im2col of x (N, C, H, W): (N, C * kh * kw, L) with L output positions, as torch's unfold."""
        return _conv_defaults.unfold4d(self, x, kernel, stride, padding, dilation)
