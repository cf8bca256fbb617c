"""Module ops (Burn's ModuleOps): convolution, pooling, interpolation, attention, embedding, unfold.

Layouts are channels-first as in PyTorch: x is (N, C, *spatial) with 1 to 3 spatial dims. Every
argument arrives normalised by the frontend: ``stride``/``padding``/``dilation``/``kernel`` are tuples
with one entry per spatial dim, shapes are checked. The defaults are written in terms of the backend's
required core, so a third-party backend gets every module op by implementing the core.

Each default is a function of ``(backend, ...)`` in ``_conv_defaults``, ``_pool_defaults``,
``_interpolate_defaults`` or ``_attention_defaults``; the class binds them as methods, so the signature and docstring of each
method live once, with its default. A backend overrides a method (same signature) where it pays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import (
    _attention_defaults,
    _conv_defaults,
    _interpolate_defaults,
    _pool_defaults,
    _quant_defaults,
    _vision_defaults,
)

Prim = Any
Ints = tuple[int, ...]


class ModuleOps:
    if TYPE_CHECKING:  # a base of Backend, which provides these (its required core)

        def shape_of(self, x: Prim) -> tuple[int, ...]: ...

        def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim: ...

        def select(self, x: Prim, dim: int, indices: Prim) -> Prim: ...

    conv = _conv_defaults.conv
    conv_transpose = _conv_defaults.conv_transpose
    unfold4d = _conv_defaults.unfold4d
    conv_weight_grad = _conv_defaults.conv_weight_grad
    max_pool = _pool_defaults.max_pool
    avg_pool = _pool_defaults.avg_pool
    adaptive_avg_pool = _pool_defaults.adaptive_avg_pool
    adaptive_max_pool = _pool_defaults.adaptive_max_pool
    interpolate = _interpolate_defaults.interpolate
    attention = _attention_defaults.attention
    attention_backward = _attention_defaults.attention_backward
    deform_conv2d = _vision_defaults.deform_conv2d
    roi_align = _vision_defaults.roi_align
    nms = _vision_defaults.nms
    quantize = _quant_defaults.quantize
    dequantize = _quant_defaults.dequantize
    quantized_matmul = _quant_defaults.quantized_matmul

    def embedding(self, weight: Prim, indices: Prim) -> Prim:
        """Rows of weight (V, D) for int indices of any shape: result indices.shape + (D,)."""
        shape = self.shape_of(indices)
        flat = self.reshape(indices, (-1,))
        rows = self.select(weight, 0, flat)
        return self.reshape(rows, tuple(shape) + (self.shape_of(weight)[1],))
