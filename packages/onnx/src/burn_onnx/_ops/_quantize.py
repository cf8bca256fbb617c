"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (per tensor, axis or block)."""

from __future__ import annotations

from typing import Any

import burn

from .._graph import Node
from .._registry import op
from ._common import axis, index_tensor

_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}
_ONNX_RANGES = {2: (0, 255), 3: (-128, 127), 4: (0, 65535), 5: (-32768, 32767), 6: (-(2**31), 2**31 - 1)}


def _quant_check(node: Node) -> str | None:
    dt = node.attrs.get("output_dtype", 0)
    if dt and dt not in _ONNX_RANGES:
        return f"output_dtype {dt} (float8/4-bit) is not supported"
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


@op("QuantizeLinear", check=_quant_check)
def quantize_linear(ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, zp: Any = None) -> burn.Tensor:
    if zp is not None:
        lo, hi = _RANGES.get(zp.dtype.name, (0, 255))
        out_dt = zp.dtype
    else:
        code = int(node.attrs.get("output_dtype", 0) or 2)
        lo, hi = _ONNX_RANGES[code]
        out_dt = ctx.dtype(code)
    s = _broadcast(ctx, node, scale, x)
    q = (x.float() / s.float()).round()
    if zp is not None:
        q = q + _broadcast(ctx, node, zp, x).float()
    return q.clamp(float(lo), float(hi)).cast(out_dt)


@op("DequantizeLinear")
def dequantize_linear(
    ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, zp: Any = None
) -> burn.Tensor:
    v = x.cast(scale.dtype) if scale.dtype.is_float else x.float()
    if zp is not None:
        v = v - _broadcast(ctx, node, zp, x).cast(v.dtype)
    return v * _broadcast(ctx, node, scale, x)


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
