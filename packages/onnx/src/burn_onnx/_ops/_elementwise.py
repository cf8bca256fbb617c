"""Element-wise ops: math, activations, comparisons, logic, bit shifts, Clip, Softmax and friends."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import burn
import numpy as np
from burn.nn import functional as F

from .._dtypes import BURN_TO_ONNX, numpy_dtype
from .._graph import Node
from .._registry import attr_in, op
from ._common import as_float, axis, same_dtype

# ------------------------------------------------------------------ unary


def _asinh(x: burn.Tensor) -> burn.Tensor:
    return (x + (x * x + 1.0).sqrt()).log()


def _acosh(x: burn.Tensor) -> burn.Tensor:
    return (x + (x * x - 1.0).sqrt()).log()


def _atanh(x: burn.Tensor) -> burn.Tensor:
    return ((1.0 + x) / (1.0 - x)).log() * 0.5


def _relu(x: burn.Tensor) -> burn.Tensor:
    return x.relu() if x.dtype.is_float else x.clamp_min(0)


UNARY: dict[str, Callable[[burn.Tensor], burn.Tensor]] = {
    "Abs": lambda x: x.abs(),
    "Neg": lambda x: -x,
    "Sign": lambda x: x.sign(),
    "Relu": _relu,
    "Exp": lambda x: x.exp(),
    "Log": lambda x: x.log(),
    "Sqrt": lambda x: x.sqrt(),
    "Reciprocal": lambda x: x.reciprocal(),
    "Sin": lambda x: x.sin(),
    "Cos": lambda x: x.cos(),
    "Tan": lambda x: x.tan(),
    "Asin": lambda x: x.asin(),
    "Acos": lambda x: x.acos(),
    "Atan": lambda x: x.atan(),
    "Sinh": lambda x: x.sinh(),
    "Cosh": lambda x: x.cosh(),
    "Tanh": lambda x: x.tanh(),
    "Asinh": _asinh,
    "Acosh": _acosh,
    "Atanh": _atanh,
    "Sigmoid": lambda x: x.sigmoid(),
    "Erf": lambda x: x.erf(),
    "Floor": lambda x: x.floor(),
    "Ceil": lambda x: x.ceil(),
    "Round": lambda x: x.round(),
    "IsNaN": lambda x: x.isnan(),
    "Not": lambda x: x.logical_not(),
    "Softsign": lambda x: x / (x.abs() + 1.0),
    "Softplus": lambda x: F.softplus(x),
    "Mish": lambda x: F.mish(x),
    "Identity": lambda x: x,
}


def _unary(fn: Callable[[burn.Tensor], burn.Tensor]) -> Callable[..., Any]:
    def convert(ctx: Any, node: Node, x: Any) -> Any:
        if isinstance(x, list):  # Identity of a sequence
            return x
        return fn(x)

    return convert


for _name, _fn in UNARY.items():
    op(_name)(_unary(_fn))


@op("IsInf")
def is_inf(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    pos, neg = node.attrs.get("detect_positive", 1), node.attrs.get("detect_negative", 1)
    inf = x.isinf()
    if pos and neg:
        return inf
    if pos:
        return inf.logical_and(x > 0)
    if neg:
        return inf.logical_and(x < 0)
    return inf.logical_and(x != x)  # neither: all False


# ------------------------------------------------------------------ activations with attributes


@op("LeakyRelu")
def leaky_relu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    return F.leaky_relu(x, float(node.attrs.get("alpha", 0.01)))


@op("Elu")
def elu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    alpha = float(node.attrs.get("alpha", 1.0))
    return burn.where(x > 0, x, (x.exp() - 1.0) * alpha)


@op("Celu")
def celu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    alpha = float(node.attrs.get("alpha", 1.0))
    return x.clamp_min(0.0) + ((x / alpha).exp() - 1.0).clamp_max(0.0) * alpha


@op("Selu")
def selu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    alpha = float(node.attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(node.attrs.get("gamma", 1.05070102214813232421875))
    return burn.where(x > 0, x * gamma, (x.exp() - 1.0) * (alpha * gamma))


@op("HardSigmoid")
def hard_sigmoid(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    alpha, beta = float(node.attrs.get("alpha", 0.2)), float(node.attrs.get("beta", 0.5))
    return (x * alpha + beta).clamp(0.0, 1.0)


@op("HardSwish")
def hard_swish(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    return x * (x * (1.0 / 6.0) + 0.5).clamp(0.0, 1.0)


@op("ThresholdedRelu")
def thresholded_relu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    alpha = float(node.attrs.get("alpha", 1.0))
    return burn.where(x > alpha, x, 0.0)


@op("Shrink")
def shrink(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    bias, lambd = float(node.attrs.get("bias", 0.0)), float(node.attrs.get("lambd", 0.5))
    y = burn.where(x < -lambd, x + bias, burn.where(x > lambd, x - bias, 0.0))
    return same_dtype(y, x)


@op("Gelu", since=20, check=attr_in("approximate", ("none", "tanh"), "none"))
def gelu(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    return F.gelu(x, approximate=node.attrs.get("approximate", "none"))


@op("PRelu")
def prelu(ctx: Any, node: Node, x: burn.Tensor, slope: burn.Tensor) -> burn.Tensor:
    if node.opset < 7 and slope.ndim == 1 and slope.shape[0] > 1 and x.ndim > 2:
        # PRelu-1/6 predate broadcasting: a slope of C values is one per channel (axis 1)
        if slope.shape[0] != x.shape[1]:
            raise burn.ShapeError(
                f"PRelu (opset {node.opset}) {node.name!r}: slope has {slope.shape[0]} values, expected 1 "
                f"or one per channel ({x.shape[1]} for input {x.shape})"
            )
        slope = slope.reshape(slope.shape[0], *([1] * (x.ndim - 2)))
    return burn.where(x < 0, x * slope, x)


# ------------------------------------------------------------------ binary


def _legacy_broadcast(node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """Opset < 7: ``broadcast=1`` with ``axis`` aligns b's dims with a's starting at ``axis``."""
    if node.opset >= 7 or not node.attrs.get("broadcast", 0) or "axis" not in node.attrs:
        return b
    start = axis(int(node.attrs["axis"]), a.ndim, node)
    trailing = a.ndim - start - b.ndim
    return b.reshape(*b.shape, *([1] * trailing)) if trailing > 0 else b


def _trunc_div(a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    """Integer division rounding toward zero (C, and ONNX's Div on ints)."""
    q = a // b
    fix = ((a - q * b) != 0).logical_and((a < 0).logical_xor(b < 0))
    return q + fix.cast(q.dtype)


def _div(a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    if a.dtype.is_float or b.dtype.is_float:
        return a / b
    return _trunc_div(a, b)


BINARY: dict[str, Callable[[burn.Tensor, burn.Tensor], burn.Tensor]] = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": _div,
    "Equal": lambda a, b: a == b,
    "Greater": lambda a, b: a > b,
    "GreaterOrEqual": lambda a, b: a >= b,
    "Less": lambda a, b: a < b,
    "LessOrEqual": lambda a, b: a <= b,
    "And": lambda a, b: a.logical_and(b),
    "Or": lambda a, b: a.logical_or(b),
    "Xor": lambda a, b: a.logical_xor(b),
    "BitwiseAnd": lambda a, b: a & b,
    "BitwiseOr": lambda a, b: a | b,
    "BitwiseXor": lambda a, b: a ^ b,
}


def _binary(fn: Callable[[burn.Tensor, burn.Tensor], burn.Tensor]) -> Callable[..., Any]:
    def convert(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
        return fn(a, _legacy_broadcast(node, a, b))

    return convert


for _name, _fn2 in BINARY.items():
    op(_name)(_binary(_fn2))


@op("Pow")
def pow_(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    b = _legacy_broadcast(node, a, b)
    e = ctx.host_scalar(1)
    if e is not None and b.ndim <= a.ndim:
        if e == 2:
            return a * a
        if a.dtype.is_float:
            return a ** float(e)
    if not a.dtype.is_float:
        return (a.float() ** b.float()).round().cast(a.dtype)
    return same_dtype(a ** b.cast(a.dtype), a)


@op("Mod")
def mod(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    return a.fmod(b) if node.attrs.get("fmod", 0) else a.remainder(b)


@op("BitShift", check=attr_in("direction", ("LEFT", "RIGHT"), None))
def bit_shift(ctx: Any, node: Node, x: burn.Tensor, y: burn.Tensor) -> burn.Tensor:
    """A shift by a negative amount or by the width or more gives 0 to the left, and to the right the
    sign (0 or -1) of ``x``, as ONNX defines. The width is the declared type's (uint16 is held in
    int32); a right shift runs in int64 where the backend has it, so 2**(width-1) does not overflow."""
    code = ctx.declared_elem(0) or BURN_TO_ONNX.get(ctx.declared_dtype(0) or x.dtype.name)
    width = 8 * numpy_dtype(code).itemsize if code else 8 * np.dtype(x.dtype.name).itemsize
    valid = (y >= 0).logical_and(y < width)
    y = burn.where(valid, y, burn.zeros_like(y))
    if node.attrs["direction"] == "LEFT":
        out = x * (burn.ones_like(y) * 2) ** y
        return burn.where(valid, out, burn.zeros_like(out))
    wide = ctx.fit(burn.int64)
    out = (x.cast(wide) // (burn.ones_like(y).cast(wide) * 2) ** y.cast(wide)).cast(x.dtype)
    sign = burn.zeros_like(x) - (x < 0).cast(x.dtype)  # -1 where negative (never for unsigned)
    return burn.where(valid, out, sign)


@op("BitwiseNot")
def bitwise_not(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    if ctx.declared_elem(0) == 4:  # uint16 held in int32: the complement of its 16 bits
        return 65535 - x
    return ~x


@op("Swish", since=24)
def swish(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    v = x.float() if x.dtype.itemsize < 4 else x  # float16: one rounding at the end, as references do
    return same_dtype(v * (v * float(node.attrs.get("alpha", 1.0))).sigmoid(), x)


@op("SwiGLU", since=28)
def swiglu(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    return swish(ctx, node, a) * b


def _variadic(
    fn: Callable[[burn.Tensor, burn.Tensor], burn.Tensor], mean: bool = False
) -> Callable[..., Any]:
    def convert(ctx: Any, node: Node, *xs: burn.Tensor) -> burn.Tensor:
        xs = tuple(x for x in xs if x is not None)
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        if mean:
            out = out / float(len(xs))
        return out

    return convert


op("Max")(_variadic(lambda a, b: a.maximum(b)))
op("Min")(_variadic(lambda a, b: a.minimum(b)))
op("Sum")(_variadic(lambda a, b: a + b))
op("Mean")(_variadic(lambda a, b: a + b, mean=True))


@op("Clip", host=(1, 2))
def clip(ctx: Any, node: Node, x: burn.Tensor, lo: Any = None, hi: Any = None) -> burn.Tensor:
    if node.opset < 11:
        low, high = node.attrs.get("min"), node.attrs.get("max")
    else:
        low, high = ctx.scalar(lo), ctx.scalar(hi)
    if not x.dtype.is_float:
        low = None if low is None else int(low)
        high = None if high is None else int(high)
    elif low is not None and high is not None and low > high:
        return burn.full(x.shape, float(high), dtype=x.dtype, device=x.device)
    if low is None and high is None:
        return x
    return x.clamp(low, high)


# ------------------------------------------------------------------ softmax family


def _coerced(fn: Callable[[burn.Tensor, int], burn.Tensor]) -> Callable[..., Any]:
    """Opset < 13: the input is viewed as 2-d at ``axis`` (default 1); since 13, one axis (default -1)."""

    def convert(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
        if node.opset >= 13:
            return fn(x, axis(int(node.attrs.get("axis", -1)), x.ndim, node))
        a = axis(int(node.attrs.get("axis", 1)), x.ndim, node) if x.ndim else 0
        shape = x.shape
        outer = math.prod(shape[:a])
        y = fn(x.reshape(outer, math.prod(shape[a:])), 1)
        return y.reshape(*shape)

    return convert


def _hardmax(x: burn.Tensor, dim: int) -> burn.Tensor:
    idx = x.argmax(dim, keepdim=True)
    positions = burn.arange(0, x.shape[dim], device=x.device).cast(idx.dtype)
    view = [1] * x.ndim
    view[dim] = x.shape[dim]
    return (positions.reshape(*view) == idx).cast(x.dtype)


op("Softmax")(_coerced(lambda x, d: F.softmax(as_float(x), d)))
op("LogSoftmax")(_coerced(lambda x, d: F.log_softmax(as_float(x), d)))
op("Hardmax")(_coerced(_hardmax))
