"""Backward rules of the vision ops (deform_conv2d, roi_align) and the Autodiff methods of the vision
and quantization ops.

deform_conv2d differentiates x, offset, weight, mask and bias through ``burn.backend``'s
``deform_conv2d_backward`` (gathers and scatters on the inner backend); roi_align differentiates x
only (boxes get no gradient, as torchvision). nms, quantize, quantized_matmul and dequantize have int or
bool results or int inputs: they run on the inner backend untracked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn.backend import deform_conv2d_backward, roi_align_backward

from ._graph import ADPrim
from ._rule import Ctx, Grads, Prim, Rule

if TYPE_CHECKING:
    from burn.backend import Backend, DType


def _in(v: Any) -> Any:
    return v.inner if type(v) is ADPrim else v


def _deform_fwd(
    B: Backend, m: tuple[Any, ...], x: Prim, off: Prim, w: Prim, mask: Prim | None, bias: Prim | None
) -> Prim:
    return B.deform_conv2d(x, off, w, mask, bias, *m)


def _deform_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    mask = c.x(3)
    gx, goff, gw, gmask, gb = deform_conv2d_backward(B, c.x(0), c.x(1), c.x(2), mask, g, *c.meta)
    return (
        gx if c.needs(0) else None,
        goff if c.needs(1) else None,
        gw if c.needs(2) else None,
        gmask if c.needs(3) else None,
        gb if c.needs(4) else None,
    )


def _roi_align_b(B: Backend, g: Prim, c: Ctx) -> Grads:
    gx = roi_align_backward(B, g, c.x(1), c.in_shape(0), *c.meta) if c.needs(0) else None
    return gx, None


ROWS = [
    Rule("deform_conv2d", _deform_fwd, _deform_b, save_in=(0, 1, 2, 3), memory_bound=False),
    Rule("roi_align", lambda B, m, x, boxes: B.roi_align(x, boxes, *m), _roi_align_b, save_in=(1,)),
]
_RULES = {r.name: r for r in ROWS}


class AutodiffVisionOps:
    """Autodiff's vision and quantization ops (a base of ``Autodiff``)."""

    inner: Backend

    if TYPE_CHECKING:  # provided by Autodiff

        def _op(self, rule: Rule, inputs: Sequence[Any], meta: Any) -> Any: ...

    def deform_conv2d(
        self,
        x: ADPrim,
        offset: ADPrim,
        weight: ADPrim,
        mask: ADPrim | None,
        bias: ADPrim | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
        offset_groups: int,
    ) -> ADPrim:
        meta = (tuple(stride), tuple(padding), tuple(dilation), groups, offset_groups)
        return self._op(_RULES["deform_conv2d"], (x, offset, weight, mask, bias), meta)

    def roi_align(
        self,
        x: ADPrim,
        boxes: ADPrim,
        output_size: tuple[int, ...],
        spatial_scale: float,
        sampling_ratio: int,
        aligned: bool,
    ) -> ADPrim:
        meta = (tuple(output_size), spatial_scale, sampling_ratio, aligned)
        return self._op(_RULES["roi_align"], (x, boxes), meta)

    def nms(self, boxes: ADPrim, scores: ADPrim, iou_threshold: float) -> ADPrim:
        return ADPrim(self.inner.nms(_in(boxes), _in(scores), iou_threshold))

    def quantize(self, x: ADPrim, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.quantize(_in(x), _in(scale), _in(zero_point), qmin, qmax, dtype))

    def dequantize(self, q: ADPrim, scale: Any, zero_point: Any, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.dequantize(_in(q), _in(scale), _in(zero_point), dtype))

    def quantized_matmul(self, a: ADPrim, w: ADPrim) -> ADPrim:
        return ADPrim(self.inner.quantized_matmul(_in(a), _in(w)))
