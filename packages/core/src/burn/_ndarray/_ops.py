"""numpy formulations of the element-wise and reduction tables (``burn.backend._optable``)."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import cast

import numpy as np

# A primitive: a numpy array. ufuncs on 0-d arrays return numpy scalars, which count as primitives too
# (``_ARRAY``): they have the same shape/dtype/astype interface.
Prim = np.ndarray
Scalar = float | int | bool
UnaryFn = Callable[[Prim], Prim]
BinaryFn = Callable[[Prim | Scalar, Prim | Scalar], Prim]
# reduce(x, axis, keepdims); ``...``: numpy's stubs have no ufunc.reduce overload for a non-literal keepdims
ReduceFn = Callable[..., Prim]


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
    except ImportError:  # exact but slower: math.erf per element
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return erf(x).astype(x.dtype, copy=False)


def _sigmoid(x: Prim) -> Prim:
    # tanh form: no overflow for large |x|, unlike 1 / (1 + exp(-x))
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softplus(x: Prim) -> Prim:
    return np.logaddexp(x.dtype.type(0), x)


def _gelu(x: Prim) -> Prim:
    return 0.5 * x * (1.0 + _erf(x * x.dtype.type(1.0 / math.sqrt(2.0))))


def _gelu_tanh(x: Prim) -> Prim:
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x * x * x)))


def _round(x: Prim) -> Prim:
    return np.round(x)  # half to even, as PyTorch and Burn


def _not(x: Prim) -> Prim:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _relu(x: Prim) -> Prim:
    return np.maximum(x, x.dtype.type(0))


UNARY: dict[str, UnaryFn] = {
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "square": np.square,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round,
    "trunc": np.trunc,
    "reciprocal": lambda x: 1.0 / x,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "not": _not,
    "relu": _relu,
    "sigmoid": _sigmoid,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": lambda x: x * _sigmoid(x),
    "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "hard_sigmoid": lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0).astype(x.dtype, copy=False),
}


def _int_div(a: Prim | Scalar, b: Prim | Scalar) -> Prim:
    """Integer division truncating toward zero (C and Burn semantics)."""
    return (a - np.fmod(a, b)) // b


# ufuncs on 0-d arrays return numpy scalars; both count as primitives (each has shape and dtype)
_ARRAY = (np.ndarray, np.generic)


def _div(a: Prim | Scalar, b: Prim | Scalar) -> Prim:
    ref = cast(Prim, a if isinstance(a, _ARRAY) else b)  # one side is an array (the contract)
    if ref.dtype.kind in "iu":
        return _int_div(a, b)
    return a / b  # type: ignore[return-value]  # with an array operand, an array


def _logical(np_bool: BinaryFn, np_bits: BinaryFn) -> BinaryFn:
    def fn(a: Prim | Scalar, b: Prim | Scalar) -> Prim:
        ref = cast(Prim, a if isinstance(a, _ARRAY) else b)  # one side is an array (the contract)
        return np_bool(a, b) if ref.dtype == np.bool_ else np_bits(a, b)

    return fn


# Python's operators where they mean the same ufunc: ``a + b`` dispatches through the C number slots and
# costs half of ``np.add(a, b)`` on small arrays (keyword parsing), which is most of burn's small-op cost
BINARY: dict[str, BinaryFn] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": _div,
    "floor_div": operator.floordiv,
    "remainder": operator.mod,
    "fmod": np.fmod,
    "pow": operator.pow,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "atan2": np.arctan2,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "and": _logical(np.logical_and, np.bitwise_and),
    "or": _logical(np.logical_or, np.bitwise_or),
    "xor": _logical(np.logical_xor, np.bitwise_xor),
}


def _mean(x: Prim, axis: tuple[int, ...], keepdims: bool) -> Prim:
    # float16 accumulates in float32 (a float16 running sum loses digits after ~2048 terms)
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    n = 1
    for d in axis:
        n *= x.shape[d]
    total = np.add.reduce(x, axis=axis, dtype=acc, keepdims=keepdims)  # type: ignore[call-overload]  # numpy's stubs: keepdims must be a literal
    return np.true_divide(total, n, dtype=acc).astype(x.dtype, copy=False)


# ufunc.reduce directly: np.sum & co. add ~1 us of Python dispatch per call on small arrays
REDUCE: dict[str, ReduceFn] = {
    "sum": lambda x, axis, keepdims: np.add.reduce(x, axis=axis, dtype=x.dtype, keepdims=keepdims),
    "prod": lambda x, axis, keepdims: np.multiply.reduce(x, axis=axis, dtype=x.dtype, keepdims=keepdims),
    "mean": _mean,
    "max": lambda x, axis, keepdims: np.maximum.reduce(x, axis=axis, keepdims=keepdims),
    "min": lambda x, axis, keepdims: np.minimum.reduce(x, axis=axis, keepdims=keepdims),
    "all": lambda x, axis, keepdims: np.logical_and.reduce(x, axis=axis, keepdims=keepdims),
    "any": lambda x, axis, keepdims: np.logical_or.reduce(x, axis=axis, keepdims=keepdims),
}
