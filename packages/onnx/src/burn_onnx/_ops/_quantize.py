"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (per tensor, axis or block);
integer MatMul/Conv and their QLinear forms.

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


# ------------------------------------------------------------------ integer matmul and conv
# Integer products are computed in float64 where the backend has it (exact up to 2**53), else float32.


def _shifted(ctx: Any, x: burn.Tensor, zp: Any, per_row: bool = False, kernel_rank: int = 0) -> burn.Tensor:
    """``x - zero_point`` as floats: a per-row zero point (MatMul's A) or a per-output-channel one
    (a conv weight of rank ``kernel_rank``) is shaped to broadcast."""
    wide = ctx.fit(burn.float64)
    v = x.cast(wide)
    if zp is None:
        return v
    z = zp.cast(wide)
    if z.numel() > 1 and per_row:
        z = z.reshape(-1, 1)
    elif z.numel() > 1 and kernel_rank:
        z = z.reshape(-1, *([1] * (kernel_rank - 1)))
    return v - z


@op("MatMulInteger", since=10)
def matmul_integer(
    ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor, azp: Any = None, bzp: Any = None
) -> Any:
    out = _shifted(ctx, a, azp, per_row=True).matmul(_shifted(ctx, b, bzp))
    return out.round().cast(ctx.fit(burn.int32))


@op("ConvInteger", since=10)
def conv_integer(
    ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, xzp: Any = None, wzp: Any = None
) -> Any:
    from ._nn import conv

    out = conv(ctx, node, _shifted(ctx, x, xzp), _shifted(ctx, w, wzp, kernel_rank=w.ndim))
    return out.round().cast(ctx.fit(burn.int32))


def _requantize(ctx: Any, acc: burn.Tensor, scale: burn.Tensor, ys: Any, yzp: Any, code: int) -> burn.Tensor:
    """``round(acc * scale / y_scale) + y_zero_point``, saturated to the output type."""
    wide = acc.dtype
    q = (acc * scale.cast(wide) / ys.cast(wide).reshape(())).round() + yzp.cast(wide).reshape(())
    lo, hi = _ONNX_RANGES.get(code, (0, 255))
    return q.clamp(float(lo), float(hi)).cast(ctx.dtype(code))


@op("QLinearMatMul", since=10)
def qlinear_matmul(
    ctx: Any, node: Node, a: Any, a_s: Any, azp: Any, b: Any, b_s: Any, bzp: Any, ys: Any, yzp: Any
) -> burn.Tensor:
    acc = _shifted(ctx, a, azp, per_row=True).matmul(_shifted(ctx, b, bzp))
    scale = a_s.reshape(-1, 1) if a_s.numel() > 1 else a_s.reshape(())
    scale = scale.cast(acc.dtype) * (b_s.reshape(-1) if b_s.numel() > 1 else b_s.reshape(())).cast(acc.dtype)
    code = ctx.declared_elem(7) or BURN_TO_ONNX.get(ctx.declared_dtype(7) or yzp.dtype.name) or 2
    return _requantize(ctx, acc, scale, ys, yzp, int(code))


@op("QLinearConv", since=10)
def qlinear_conv(
    ctx: Any,
    node: Node,
    x: Any,
    xs: Any,
    xzp: Any,
    w: Any,
    ws: Any,
    wzp: Any,
    ys: Any,
    yzp: Any,
    bias: Any = None,
) -> burn.Tensor:
    from ._nn import conv

    acc = conv(ctx, node, _shifted(ctx, x, xzp), _shifted(ctx, w, wzp, kernel_rank=w.ndim))
    channel = [1] * acc.ndim
    channel[1] = -1
    if bias is not None:
        acc = acc + bias.cast(acc.dtype).reshape(*channel)
    scale = xs.cast(acc.dtype).reshape(()) * ws.cast(acc.dtype).reshape(*channel if ws.numel() > 1 else ())
    code = ctx.declared_elem(7) or BURN_TO_ONNX.get(ctx.declared_dtype(7) or yzp.dtype.name) or 2
    return _requantize(ctx, acc, scale, ys, yzp, int(code))
