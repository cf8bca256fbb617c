"""Conformance rows of the vision and quantization ops (deform_conv2d, roi_align, nms, quantize,
dequantize, quantized_matmul): ``burn.testing.SPECS`` includes them, so every backend is checked
against the numpy backend on them, and their graphs are captured and replayed like every other row."""

from __future__ import annotations

from typing import Any

import numpy as np

import burn

from .._specs import BF16, F16, F32, F64, FLOATS, OpSpec, _module_fn, _values, gen


def _deform_inputs(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    x = _values(rng, dtype, (2, 4, 5, 6), "normal")
    offset = (rng.standard_normal((2, 2 * 2 * 9, 5, 6)) * 1.5).astype(dtype)
    weight = _values(rng, dtype, (6, 2, 3, 3), "normal")
    mask = rng.random((2, 2 * 9, 5, 6)).astype(dtype)
    bias = _values(rng, dtype, (6,), "normal")
    return [x, offset, weight, mask, bias]


def _rois(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    x = _values(rng, dtype, (2, 3, 6, 7), "normal")
    xy = rng.uniform(-1, 5, (5, 2))
    boxes = np.concatenate([rng.integers(0, 2, (5, 1)), xy, xy + rng.uniform(0.5, 4, (5, 2))], 1)
    return [x, boxes.astype(dtype)]


def _nms_inputs(rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    xy = rng.uniform(0, 20, (12, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(2, 10, (12, 2))], 1)
    return [boxes.astype(dtype), rng.random(12).astype(dtype)]


def _nms_keep(c: Any, boxes: burn.Tensor, scores: burn.Tensor) -> burn.Tensor:
    """The backend's keep mask (F.nms compacts it on the host, which a captured graph cannot hold)."""
    b = boxes.backend
    return burn.backend.from_primitive(b.nms(boxes.primitive, scores.primitive, 0.4), b)


def _quant_round_trip(c: Any, x: burn.Tensor) -> tuple[burn.Tensor, burn.Tensor]:
    from burn.quantization import QuantScheme

    q = x.quantize_dynamic(QuantScheme(mode="affine", granularity="per_channel", axis=1))
    return q.dequantize(), q.scale()


def _quant_linear(c: Any, x: burn.Tensor, w: burn.Tensor) -> burn.Tensor:
    from burn.quantization import QuantScheme, quantized_linear

    return quantized_linear(x, w.quantize_dynamic(QuantScheme(granularity="per_channel", axis=1)))


def rows() -> list[OpSpec]:
    # bfloat16: a backend composing these from its core (core-only) rounds every bilinear tap to 8 bits
    tol = {F32: (1e-4, 1e-4), F64: (1e-9, 1e-9), F16: (3e-2, 8e-2), BF16: (6e-2, 1.5e-1)}
    # quantized values may round one step apart where backends' float reciprocals differ in the last bit
    qtol = {F32: (0.0, 0.05), F64: (0.0, 1e-9)}
    return [
        OpSpec(
            "deform_conv2d",
            lambda c, x, off, w, m, b: _module_fn("deform_conv2d")(x, off, w, b, padding=1, mask=m, groups=2),
            _deform_inputs,
            FLOATS,
            None,
            tol,
        ),
        OpSpec(
            "roi_align",
            lambda c, x, boxes: _module_fn("roi_align")(x, boxes, (2, 3), 1.0, 2, True),
            _rois,
            FLOATS,
            None,
            tol,
        ),
        OpSpec("nms_keep", _nms_keep, _nms_inputs, (F32, F64)),
        OpSpec("quantize_dynamic_per_channel", _quant_round_trip, gen((3, 5, 4)), (F32, F64), None, qtol),
        OpSpec("quantized_linear", _quant_linear, gen((4, 24), (24, 5)), (F32, F64), None, qtol),
    ]
