"""Core-only defaults for quantization: quantize, dequantize and the integer matmul of quantized values.

Every function takes the backend ``b`` first and composes the required core (``binary``, ``unary``,
``clamp``, ``cast``, ``matmul``, ``slice``), so numpy, wgpu, CUDA and third-party backends all quantize
the same way. Rounding is ``unary("round")``: half to even on every backend (numpy, WGSL ``round``,
CUDA ``rint``), as PyTorch's ``quantize_per_tensor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._dtype import float32, float64

if TYPE_CHECKING:
    from .._dtype import DType
    from ._base import Backend

Prim = Any
Param = Any  # a primitive broadcastable against x, or a Python number

# float32 holds every integer up to 2**24 exactly: a sum of 1024 products of int8 values
# (|product| <= 2**14) stays within it, so chunks of this depth accumulate exactly in float32
_F32_EXACT_DEPTH = 1024


def _as(b: Backend, p: Param, dtype: DType) -> Param:
    if isinstance(p, (int, float)):
        return float(p) if dtype.is_float else int(p)
    return p if b.dtype_of(p) is dtype else b.cast(p, dtype)


def quantize(
    b: Backend, x: Prim, scale: Param, zero_point: Param, qmin: int, qmax: int, dtype: DType
) -> Prim:
    """``clamp(round_half_even(x * (1 / scale)) + zero_point, qmin, qmax)`` as the int ``dtype``.

    x is float; ``scale`` (float, > 0) and ``zero_point`` (any numeric dtype, integral values)
    broadcast against x; both may be Python numbers."""
    fdt = b.dtype_of(x)
    # x * (1 / scale), the reciprocal rounded in the scale's float: PyTorch's quantize_val, so ties
    # land where its int values do (x / scale differs in the last bit for scales like 0.02)
    inv = 1.0 / scale if isinstance(scale, (int, float)) else b.binary("div", 1.0, scale)
    y = b.unary("round", b.binary("mul", x, _as(b, inv, fdt)))
    zp = _as(b, zero_point, fdt)
    if not (isinstance(zp, float) and zp == 0.0):
        y = b.binary("add", y, zp)
    return b.cast(b.clamp(y, float(qmin), float(qmax)), dtype)


def dequantize(b: Backend, q: Prim, scale: Param, zero_point: Param, dtype: DType) -> Prim:
    """``(q - zero_point) * scale`` in the float ``dtype``; scale and zero_point broadcast against q."""
    y = b.cast(q, dtype)
    zp = _as(b, zero_point, dtype)
    if not (isinstance(zp, float) and zp == 0.0):
        y = b.binary("sub", y, zp)
    return b.binary("mul", y, _as(b, scale, dtype))


def quantized_matmul(b: Backend, a: Prim, w: Prim) -> Prim:
    """Matmul of int8-valued tensors a (..., M, K) and w (..., K, N) with exact int32 accumulation.

    The default multiplies in a float the backend has and casts back: float64 holds every int32 sum of
    int8 products exactly; without float64 (WGSL) the contraction is split into chunks of 1024, each
    exact in float32, and the chunks are summed as ints. The result has the backend's default int dtype."""
    out_dt = b.default_int
    if float64 in b.dtypes:
        return b.cast(b.matmul(b.cast(a, float64), b.cast(w, float64)), out_dt)
    fdt = float32 if float32 in b.dtypes else b.default_float
    ash, wsh = b.shape_of(a), b.shape_of(w)
    k = ash[-1]
    total = None
    for start in range(0, k, _F32_EXACT_DEPTH):
        stop = min(k, start + _F32_EXACT_DEPTH)
        ai, wi = a, w
        if stop - start != k:
            ai = b.slice(a, tuple((0, n, 1) for n in ash[:-1]) + ((start, stop, 1),))
            wi = b.slice(w, tuple((0, n, 1) for n in wsh[:-2]) + ((start, stop, 1), (0, wsh[-1], 1)))
        part = b.cast(b.matmul(b.cast(ai, fdt), b.cast(wi, fdt)), out_dt)
        total = part if total is None else b.binary("add", total, part)
    assert total is not None  # k >= 1: the frontend rejects empty contractions
    return total
