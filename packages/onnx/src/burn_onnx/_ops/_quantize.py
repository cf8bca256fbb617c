"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (per tensor, axis or block).

DequantizeLinear runs on ``burn.quantization`` (``QuantizedTensor.dequantize``, the backend's
``dequantize`` op) when its scale is per tensor or per axis: ONNX's ``(x - zero_point) * scale`` in the
scale's float type is exactly what that op computes. Blocked scales keep the composition below (burn's
per_block runs along the last dim only, ONNX's along ``axis``).

QuantizeLinear and DynamicQuantizeLinear keep their composition on purpose: ONNX (and onnxruntime)
round ``x / scale``, while ``burn.quantization`` rounds ``x * (1 / scale)`` like PyTorch; the two differ
by one on many exact ties (e.g. 30 of 600 points ``(k + 0.5) * 0.02`` in float32), and ONNX's integers
are the ones to keep. They also produce uint8/int16/int32, which ``QuantScheme`` (int8 only) lacks.
"""

from __future__ import annotations

from typing import Any

import burn

from .._dtypes import BURN_TO_ONNX, on_grid
from .._graph import Node
from .._registry import op
from ._common import axis, index_tensor

# the integer types QuantizeLinear saturates to (ONNX element type -> range); the 8- and 4-bit float
# types round to their own values instead
_ONNX_RANGES = {
    2: (0, 255),
    3: (-128, 127),
    4: (0, 65535),
    5: (-32768, 32767),
    6: (-(2**31), 2**31 - 1),
    21: (0, 15),
    22: (-8, 7),
    25: (0, 3),
    26: (-2, 1),
}
_FLOAT_CODES = frozenset({17, 18, 19, 20, 23})


def _quant_check(node: Node) -> str | None:
    dt = node.attrs.get("output_dtype", 0)
    if dt and dt not in _ONNX_RANGES and dt not in _FLOAT_CODES:
        return f"output_dtype {dt} is not supported"
    return None


def _broadcast(ctx: Any, node: Node, p: burn.Tensor, x: burn.Tensor) -> burn.Tensor:
    """A scale or zero point shaped to broadcast against x: scalar, per axis, or per block."""
    if p.ndim == 0 or p.numel() == 1 and p.ndim <= 1:
        return p.reshape(())
    a = axis(int(node.attrs.get("axis", 1)), x.ndim, node)
    block = int(node.attrs.get("block_size", 0))
    if block:
        picks = index_tensor([i // block for i in range(x.shape[a])], p.device)
        return p.select(a, picks)
    view = [1] * x.ndim
    view[a] = x.shape[a]
    return p.reshape(*view)


def _quantized_type(ctx: Any, node: Node, zp: Any) -> int:
    """The ONNX type QuantizeLinear produces: the zero point's declared type (a device may hold int8
    in int32, the host int4 in int8), else ``output_dtype``, else uint8."""
    if zp is not None:
        code = ctx.declared_elem(2) or BURN_TO_ONNX.get(ctx.declared_dtype(2) or zp.dtype.name)
        if code:
            return int(code)
    return int(node.attrs.get("output_dtype", 0) or 2)


@op("QuantizeLinear", check=_quant_check)
def quantize_linear(ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, zp: Any = None) -> burn.Tensor:
    code = _quantized_type(ctx, node, zp)
    out_dt = ctx.dtype(code)
    s = _broadcast(ctx, node, scale, x)
    q = x.float() / s.float()
    if code in _FLOAT_CODES:  # round to the float8/float4 grid (on the host, through ml_dtypes)
        if zp is not None:
            q = q + _broadcast(ctx, node, zp, x).float()
        grid = on_grid(q.numpy(), code, bool(node.attrs.get("saturate", 1)))
        return ctx.tensor(grid, out_dt)
    q = q.round()
    if zp is not None:
        q = q + _broadcast(ctx, node, zp, x).float()
    lo, hi = _ONNX_RANGES.get(code, (0, 255))
    return q.clamp(float(lo), float(hi)).cast(out_dt)


@op("DequantizeLinear")
def dequantize_linear(
    ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, zp: Any = None
) -> burn.Tensor:
    if not int(node.attrs.get("block_size", 0)) and x.dtype.is_int and scale.dtype.is_float:
        return _dequantize(node, x, scale, zp)
    v = x.cast(scale.dtype) if scale.dtype.is_float else x.float()
    if zp is not None:
        v = v - _broadcast(ctx, node, zp, x).cast(v.dtype)
    return v * _broadcast(ctx, node, scale, x)


def _dequantize(node: Node, x: burn.Tensor, scale: burn.Tensor, zp: burn.Tensor | None) -> burn.Tensor:
    """Per tensor or per axis through ``burn.quantization``. The scheme's int8 range is not used by
    ``dequantize`` (values of any int dtype are cast, shifted and scaled), so uint8/int16/int32 inputs
    dequantize exactly as int8 ones."""
    from burn.quantization import QuantizedTensor, QuantScheme

    pshape: tuple[int, ...]
    if scale.ndim == 0 or scale.numel() == 1 and scale.ndim <= 1:
        scheme, pshape = QuantScheme(mode="affine"), ()
    else:
        a = axis(int(node.attrs.get("axis", 1)), x.ndim, node)
        scheme, pshape = QuantScheme(mode="affine", granularity="per_channel", axis=a), (x.shape[a],)
    s = scale.reshape(*pshape)
    if zp is None:
        z = burn.zeros(pshape, dtype=x.backend.default_int, device=x.device)
    else:
        z = zp.reshape(*pshape)
    return QuantizedTensor(x, s, z, scheme, scale.dtype).dequantize()


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(
    ctx: Any, node: Node, x: burn.Tensor
) -> tuple[burn.Tensor, burn.Tensor, burn.Tensor]:
    lo = x.min().clamp_max(0.0)
    hi = x.max().clamp_min(0.0)
    scale = (hi - lo) / 255.0
    zp = (-lo / scale).round().clamp(0.0, 255.0)
    y = ((x / scale).round() + zp).clamp(0.0, 255.0)
    u8 = ctx.fit(burn.uint8)
    return y.cast(u8), scale, zp.cast(u8)
