"""Export rules: one small converter per op kind, from an ``OpRecord`` to ONNX nodes.

Each rule takes the builder and the record (its arguments in the backend method's order, tensors as
``Ref``) and returns the ONNX names of the record's outputs (``None`` for an output ONNX does not give,
such as adaptive max-pool indices: using one is reported then). A rule raises ``OpUnsupported`` for
arguments it cannot express; a kind with no row in ``RULES`` (here, or ``SHAPE_RULES`` for layout, index, module and
creation ops) is unsupported. Adding an op = one row in one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from burn.backend import NUMPY_DTYPES
from burn.ir import OpRecord, Ref

from ._attention_rule import attention as _attention
from ._builder import Builder, OpUnsupported, Rule, onnx_type, reduce_node
from ._builder import output_name as _out
from ._shape_rules import SHAPE_RULES

# element-wise kinds that are one ONNX node of the same inputs
_UNARY_NODES: dict[str, str] = {
    "neg": "Neg",
    "abs": "Abs",
    "sign": "Sign",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "sin": "Sin",
    "cos": "Cos",
    "tan": "Tan",
    "asin": "Asin",
    "acos": "Acos",
    "atan": "Atan",
    "sinh": "Sinh",
    "cosh": "Cosh",
    "tanh": "Tanh",
    "erf": "Erf",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",  # half to even, as numpy
    "reciprocal": "Reciprocal",
    "isnan": "IsNaN",
    "isinf": "IsInf",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "softplus": "Softplus",
}
_BINARY_NODES: dict[str, str] = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "eq": "Equal",
    "lt": "Less",
    "le": "LessOrEqual",
    "gt": "Greater",
    "ge": "GreaterOrEqual",
}
_BOOL_NODES: dict[str, tuple[str, str]] = {  # kind -> (bool op, bitwise op on ints, opset 18)
    "and": ("And", "BitwiseAnd"),
    "or": ("Or", "BitwiseOr"),
    "xor": ("Xor", "BitwiseXor"),
}
_REDUCE_NODES: dict[str, str] = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "prod": "ReduceProd",
    "max": "ReduceMax",
    "min": "ReduceMin",
}


# ---------------------------------------------------------------- element-wise
def _unary_node(onnx_op: str) -> Rule:
    return lambda b, op: [b.node(onnx_op, [b.name(op.args[0])], [_out(op)])]


def _composed(fn: Callable[[Builder, str, Any], str]) -> Rule:
    """A unary rule built from a few nodes: ``fn(builder, x, dtype)`` returns the result's name, which
    an Identity renames to the op's output."""

    def rule(b: Builder, op: OpRecord) -> list[str]:
        x = op.args[0]
        return [b.node("Identity", [fn(b, b.name(x), b.ref(x).dtype)], [_out(op)])]

    return rule


def _k(b: Builder, value: float, dt: Any) -> str:
    return b.scalar(value, dt)


def _gelu_erf(b: Builder, x: str, dt: Any) -> str:
    cdf = b.node("Add", [b.node("Erf", [b.node("Mul", [x, _k(b, 1 / math.sqrt(2), dt)])]), _k(b, 1.0, dt)])
    return b.node("Mul", [b.node("Mul", [x, _k(b, 0.5, dt)]), cdf])


def _gelu_tanh(b: Builder, x: str, dt: Any) -> str:
    cube = b.node("Mul", [b.node("Mul", [x, x]), x])
    inner = b.node("Add", [x, b.node("Mul", [cube, _k(b, 0.044715, dt)])])
    t = b.node("Tanh", [b.node("Mul", [inner, _k(b, math.sqrt(2 / math.pi), dt)])])
    return b.node("Mul", [b.node("Mul", [x, _k(b, 0.5, dt)]), b.node("Add", [t, _k(b, 1.0, dt)])])


def _gelu(approximate: str, fallback: Callable[[Builder, str, Any], str]) -> Rule:
    def compose(b: Builder, x: str, dt: Any) -> str:
        if b.opset >= 20:  # Gelu is an ONNX op from opset 20 on
            return b.node("Gelu", [x], approximate=approximate)
        return fallback(b, x, dt)

    return _composed(compose)


_UNARY_COMPOSED: dict[str, Callable[[Builder, str, Any], str]] = {
    "square": lambda b, x, dt: b.node("Mul", [x, x]),
    "expm1": lambda b, x, dt: b.node("Sub", [b.node("Exp", [x]), _k(b, 1.0, dt)]),
    "log1p": lambda b, x, dt: b.node("Log", [b.node("Add", [x, _k(b, 1.0, dt)])]),
    "rsqrt": lambda b, x, dt: b.node("Reciprocal", [b.node("Sqrt", [x])]),
    "trunc": lambda b, x, dt: b.node("Mul", [b.node("Sign", [x]), b.node("Floor", [b.node("Abs", [x])])]),
    "silu": lambda b, x, dt: b.node("Mul", [x, b.node("Sigmoid", [x])]),
    "mish": lambda b, x, dt: b.node("Mul", [x, b.node("Tanh", [b.node("Softplus", [x])])]),
    "hard_sigmoid": lambda b, x, dt: b.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5),
}


def _not(b: Builder, op: OpRecord) -> list[str]:
    x = op.args[0]
    if b.ref(x).dtype.is_bool:
        return [b.node("Not", [b.name(x)], [_out(op)])]
    if b.opset < 18:
        raise OpUnsupported("bitwise not of integers needs opset 18 (BitwiseNot)")
    return [b.node("BitwiseNot", [b.name(x)], [_out(op)])]


def _operands(b: Builder, op: OpRecord) -> tuple[str, str, Any]:
    """Both operands of a binary op as names (a scalar side as a constant of the tensor side's dtype)."""
    lhs, rhs = op.args
    dt = b.ref(lhs if isinstance(lhs, Ref) else rhs).dtype
    return b.operand(lhs, dt), b.operand(rhs, dt), dt


def _binary_node(onnx_op: str) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        lhs, rhs, _ = _operands(b, op)
        return [b.node(onnx_op, [lhs, rhs], [_out(op)])]

    return rule


def _ne(b: Builder, op: OpRecord) -> list[str]:
    lhs, rhs, _ = _operands(b, op)
    return [b.node("Not", [b.node("Equal", [lhs, rhs])], [_out(op)])]


def _logical(kind: str) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        lhs, rhs, dt = _operands(b, op)
        if dt.is_bool:
            return [b.node(_BOOL_NODES[kind][0], [lhs, rhs], [_out(op)])]
        if b.opset < 18:
            raise OpUnsupported(f"bitwise {kind} of integers needs opset 18")
        return [b.node(_BOOL_NODES[kind][1], [lhs, rhs], [_out(op)])]

    return rule


def _floor_div(b: Builder, op: OpRecord) -> list[str]:
    lhs, rhs, dt = _operands(b, op)
    if not dt.is_float:
        raise OpUnsupported("floor_div of integers has no ONNX form (Div truncates)")
    return [b.node("Floor", [b.node("Div", [lhs, rhs])], [_out(op)])]


def _remainder(b: Builder, op: OpRecord) -> list[str]:
    lhs, rhs, dt = _operands(b, op)
    if not dt.is_float:  # Mod with fmod=0 takes the divisor's sign, as Python
        return [b.node("Mod", [lhs, rhs], [_out(op)], fmod=0)]
    floored = b.node("Floor", [b.node("Div", [lhs, rhs])])
    return [b.node("Sub", [lhs, b.node("Mul", [floored, rhs])], [_out(op)])]


def _fmod(b: Builder, op: OpRecord) -> list[str]:
    lhs, rhs, _ = _operands(b, op)
    return [b.node("Mod", [lhs, rhs], [_out(op)], fmod=1)]


def _where(b: Builder, op: OpRecord) -> list[str]:
    cond, lhs, rhs = op.args
    dt = op.outputs[0].dtype
    return [b.node("Where", [b.name(cond), b.operand(lhs, dt), b.operand(rhs, dt)], [_out(op)])]


def _clamp(b: Builder, op: OpRecord) -> list[str]:
    x, lo, hi = op.args
    dt = b.ref(x).dtype
    bounds = [b.scalar(v, dt) if v is not None else "" for v in (lo, hi)]
    return [b.node("Clip", [b.name(x), *bounds], [_out(op)])]


def _leaky_relu(b: Builder, op: OpRecord) -> list[str]:
    x, slope = op.args
    return [b.node("LeakyRelu", [b.name(x)], [_out(op)], alpha=float(slope))]


def _cast(b: Builder, op: OpRecord) -> list[str]:
    x, dtype = op.args
    return [b.node("Cast", [b.name(x)], [_out(op)], to=onnx_type(dtype))]


# ---------------------------------------------------------------- quantization
_DQ_INPUTS = ("int8", "uint8")  # DequantizeLinear's x types at every opset from 13 on


def _dq_param(b: Builder, value: Any, dtype: Any, shape: Sequence[int]) -> str:
    """A scale or zero point as an ONNX value of ``dtype`` and ``shape`` (a number becomes a constant)."""
    if not isinstance(value, Ref):
        return b.const(np.full(tuple(shape), value, dtype=NUMPY_DTYPES[dtype]))
    name = b.name(value)
    if b.ref(value).dtype != dtype:
        name = b.cast(name, dtype)
    return name if tuple(b.ref(value).shape) == tuple(shape) else b.node("Reshape", [name, b.ints(shape)])


def _dq_axis(b: Builder, q: Ref, params: Sequence[Any]) -> int | None:
    """-1 for per-tensor parameters, the axis of per-axis ones, None for other layouts (per block)."""
    shape = b.ref(q).shape
    axes: set[int] = set()
    for p in params:
        if not isinstance(p, Ref):
            continue
        pshape = b.ref(p).shape
        if len(pshape) > len(shape):
            return None
        lead = len(shape) - len(pshape)
        for d, n in enumerate(pshape):
            if n != 1:
                if n != shape[lead + d]:
                    return None
                axes.add(lead + d)
    if len(axes) > 1:
        return None
    return axes.pop() if axes else -1


def _dequantize(b: Builder, op: OpRecord) -> list[str]:
    """``(q - zero_point) * scale``: DequantizeLinear (per tensor or per axis) where ONNX takes the
    types, else the same arithmetic as Cast/Sub/Mul (per block, int16/int32/int64 values)."""
    q, scale, zp, dtype = op.args
    qdt = b.ref(q).dtype
    axis = _dq_axis(b, q, (scale, zp))
    float_ok = dtype.name == "float32" or (b.opset >= 19 and dtype.name in ("float16", "bfloat16"))
    if axis is not None and qdt.name in _DQ_INPUTS and float_ok:
        pshape = [] if axis < 0 else [b.ref(q).shape[axis]]
        inputs = [b.name(q), _dq_param(b, scale, dtype, pshape)]
        if isinstance(zp, Ref) or zp != 0:
            inputs.append(_dq_param(b, zp, qdt, pshape))
        attrs = {"axis": axis} if axis >= 0 else {}
        return [b.node("DequantizeLinear", inputs, [_out(op)], **attrs)]
    y = b.cast(b.name(q), dtype)
    if isinstance(zp, Ref) or zp != 0:
        y = b.node("Sub", [y, b.cast(b.name(zp), dtype) if isinstance(zp, Ref) else b.scalar(zp, dtype)])
    s = b.cast(b.name(scale), dtype) if isinstance(scale, Ref) else b.scalar(scale, dtype)
    return [b.node("Mul", [y, s], [_out(op)])]


# ---------------------------------------------------------------- reductions
def _reduce(onnx_op: str) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        x, dims, keepdim = op.args
        return [reduce_node(b, onnx_op, b.name(x), dims, keepdim, _out(op))]

    return rule


def _all_any(onnx_op: str) -> Rule:
    """all/any: the operand as int32 (0/1), reduced with min/max, back to bool."""

    def rule(b: Builder, op: OpRecord) -> list[str]:
        x, dims, keepdim = op.args
        as_bool = b.name(x) if b.ref(x).dtype.is_bool else b.node("Cast", [b.name(x)], to=9)
        ints = b.node("Cast", [as_bool], to=6)
        return [b.node("Cast", [reduce_node(b, onnx_op, ints, dims, keepdim)], [_out(op)], to=9)]

    return rule


def _arg_reduce(onnx_op: str) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        x, dim, keepdim = op.args
        idx = b.node(onnx_op, [b.name(x)], axis=dim, keepdims=int(keepdim), select_last_index=0)
        return [b.node("Cast", [idx], [_out(op)], to=onnx_type(op.outputs[0].dtype))]

    return rule


def _var(b: Builder, op: OpRecord) -> list[str]:
    x, dims, correction, keepdim = op.args
    ref = b.ref(x)
    mean = reduce_node(b, "ReduceMean", b.name(x), dims, True)
    diff = b.node("Sub", [b.name(x), mean])
    total = reduce_node(b, "ReduceSum", b.node("Mul", [diff, diff]), dims, keepdim)
    n = math.prod(ref.shape[d] for d in dims)
    return [b.node("Div", [total, b.scalar(float(max(n - correction, 0)), ref.dtype)], [_out(op)])]


def _softmax(onnx_op: str) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        x, dim = op.args
        return [b.node(onnx_op, [b.name(x)], [_out(op)], axis=dim)]

    return rule


def _matmul(b: Builder, op: OpRecord) -> list[str]:
    lhs, rhs = op.args
    return [b.node("MatMul", [b.name(lhs), b.name(rhs)], [_out(op)])]


RULES: dict[str, Rule] = {
    **{k: _unary_node(v) for k, v in _UNARY_NODES.items()},
    **{k: _composed(v) for k, v in _UNARY_COMPOSED.items()},
    "gelu": _gelu("none", _gelu_erf),
    "gelu_tanh": _gelu("tanh", _gelu_tanh),
    "not": _not,
    **{k: _binary_node(v) for k, v in _BINARY_NODES.items()},
    "ne": _ne,
    **{k: _logical(k) for k in _BOOL_NODES},
    "floor_div": _floor_div,
    "remainder": _remainder,
    "fmod": _fmod,
    "where": _where,
    "clamp": _clamp,
    "leaky_relu": _leaky_relu,
    "cast": _cast,
    "dequantize": _dequantize,
    **{k: _reduce(v) for k, v in _REDUCE_NODES.items()},
    "all": _all_any("ReduceMin"),
    "any": _all_any("ReduceMax"),
    "argmax": _arg_reduce("ArgMax"),
    "argmin": _arg_reduce("ArgMin"),
    "var": _var,
    "matmul": _matmul,
    "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"),
    "attention": _attention,
    **SHAPE_RULES,
}
