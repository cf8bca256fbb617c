"""Module ops (Burn's ModuleOps): convolution, pooling, interpolation, embedding, unfold.

Layouts are channels-first as in PyTorch: x is (N, C, *spatial) with 1 to 3 spatial dims. Every
argument arrives normalised by the frontend: ``stride``/``padding``/``dilation``/``kernel`` are tuples
with one entry per spatial dim, shapes are checked. The defaults here are written in terms of the
backend's required core, so a third-party backend gets every module op by implementing the core.
"""

from __future__ import annotations

from typing import Any

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
        raise NotImplementedError("conv default not implemented yet")

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
        raise NotImplementedError("conv_transpose default not implemented yet")

    def max_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        """N-d max pool: (values, indices); indices point into the flattened spatial input (PyTorch)."""
        raise NotImplementedError("max_pool default not implemented yet")

    def avg_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        raise NotImplementedError("avg_pool default not implemented yet")

    def adaptive_avg_pool(self, x: Prim, output_size: Ints) -> Prim:
        raise NotImplementedError("adaptive_avg_pool default not implemented yet")

    def adaptive_max_pool(self, x: Prim, output_size: Ints) -> tuple[Prim, Prim]:
        raise NotImplementedError("adaptive_max_pool default not implemented yet")

    def interpolate(self, x: Prim, size: Ints, mode: str, align_corners: bool) -> Prim:
        """Resize the spatial dims of x (N, C, H, W) to ``size``: nearest, bilinear or bicubic."""
        raise NotImplementedError("interpolate default not implemented yet")

    def embedding(self, weight: Prim, indices: Prim) -> Prim:
        """Rows of weight (V, D) for int indices of any shape: result indices.shape + (D,)."""
        shape = self.shape_of(indices)
        flat = self.reshape(indices, (-1,))
        rows = self.select(weight, 0, flat)
        return self.reshape(rows, tuple(shape) + (self.shape_of(weight)[1],))

    def unfold4d(self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Prim:
        """im2col of x (N, C, H, W): (N, C * kh * kw, L) with L output positions, as torch's unfold."""
        raise NotImplementedError("unfold4d default not implemented yet")
