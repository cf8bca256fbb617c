"""The ``trace`` backend: the required core of ``burn.backend.Backend`` on numpy, counting every op.

Primitives are plain ``numpy.ndarray`` values that are never mutated in place. The frontend
(``burn.Tensor``) has already checked shapes, dtypes and dims before any method here runs, so the
methods only compute. Everything not written here (softmax, pad, topk, conv, pooling, ...) comes from
``Backend``'s defaults, built on these methods; override one where your library has something faster.

To port this to your own library, replace each numpy call with yours and keep the semantics in the
docstrings of ``burn.backend.Backend``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import burn
import numpy as np
from burn.backend import Backend

# the dtypes this backend supports; asking burn for another gives a clear DTypeError
_NP = {
    burn.float32: np.dtype(np.float32),
    burn.float64: np.dtype(np.float64),
    burn.int64: np.dtype(np.int64),
    burn.bool: np.dtype(np.bool_),
}
_BURN = {v: k for k, v in _NP.items()}


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no exp overflow for large |x|


def _softplus(x):
    return np.logaddexp(x.dtype.type(0), x)


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _truncating_div(a, b):
    """Integer division rounding toward zero (Burn's int division), true division for floats."""
    ref = a if isinstance(a, np.ndarray) else np.asarray(b)
    if ref.dtype.kind in "iu":
        return (a - np.fmod(a, b)) // b
    return np.true_divide(a, b)


def _bitwise(logical, bits):
    def op(a, b):
        ref = a if isinstance(a, np.ndarray) else np.asarray(b)
        return logical(a, b) if ref.dtype == np.bool_ else bits(a, b)

    return op


# one row per name in burn.backend.UNARY_OPS / BINARY_OPS / REDUCE_OPS (a test checks the coverage)
UNARY = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "square": np.square,
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "reciprocal": lambda x: 1.0 / x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "erf": _erf,
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
    "isnan": np.isnan, "isinf": np.isinf,
    "not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    "relu": lambda x: np.maximum(x, x.dtype.type(0)),
    "sigmoid": _sigmoid,
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / x.dtype.type(math.sqrt(2.0)))),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * _sigmoid(x),
    "softplus": _softplus,
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "hard_sigmoid": lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
}  # fmt: skip

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _truncating_div,
    "floor_div": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "and": _bitwise(np.logical_and, np.bitwise_and),
    "or": _bitwise(np.logical_or, np.bitwise_or),
    "xor": _bitwise(np.logical_xor, np.bitwise_xor),
}  # fmt: skip

REDUCE = {
    "sum": lambda x, axis, keep: np.sum(x, axis=axis, keepdims=keep, dtype=x.dtype),
    "prod": lambda x, axis, keep: np.prod(x, axis=axis, keepdims=keep, dtype=x.dtype),
    "mean": lambda x, axis, keep: np.mean(x, axis=axis, keepdims=keep, dtype=x.dtype),
    "max": lambda x, axis, keep: np.max(x, axis=axis, keepdims=keep),
    "min": lambda x, axis, keep: np.min(x, axis=axis, keepdims=keep),
    "all": lambda x, axis, keep: np.all(x, axis=axis, keepdims=keep),
    "any": lambda x, axis, keep: np.any(x, axis=axis, keepdims=keep),
}


def _same_dtype(out, like):
    """numpy may widen (float32 * python float stays float32, but some ufuncs return float64)."""
    if isinstance(like, np.ndarray) and out.dtype != like.dtype and out.dtype != np.bool_:
        return out.astype(like.dtype)
    return out


class TraceBackend(Backend):
    """numpy on the CPU that counts the ops it runs in ``self.ops`` (a ``collections.Counter``).

    Supports float32, float64, int64 and bool.
    """

    name = "trace"
    dtypes = frozenset(_NP)
    default_float = burn.float32
    default_int = burn.int64
    host_memory = True  # primitives are host arrays: burn may read index tensors for bounds checks

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()

    # ---- creation and data
    def from_numpy(self, array, dtype):
        self.ops["from_numpy"] += 1
        return np.array(array, dtype=_NP[dtype], copy=True)

    def to_numpy(self, x):
        self.ops["to_numpy"] += 1
        return np.array(x, copy=True)

    def shape_of(self, x):
        return tuple(x.shape)

    def dtype_of(self, x):
        return _BURN[x.dtype]

    def full(self, shape, value, dtype):
        self.ops["full"] += 1
        return np.full(shape, value, dtype=_NP[dtype])

    def cast(self, x, dtype):
        self.ops["cast"] += 1
        return x.astype(_NP[dtype])

    # ---- element-wise
    def unary(self, op, x):
        self.ops[op] += 1
        return _same_dtype(np.asarray(UNARY[op](x)), x)

    def binary(self, op, a, b):
        self.ops[op] += 1
        out = np.asarray(BINARY[op](a, b))
        return _same_dtype(out, a if isinstance(a, np.ndarray) else b)

    def where(self, cond, a, b):
        self.ops["where"] += 1
        return _same_dtype(np.where(cond, a, b), a if isinstance(a, np.ndarray) else b)

    # ---- reductions and matmul
    def reduce(self, op, x, dims, keepdim):
        self.ops[op] += 1
        return np.asarray(REDUCE[op](x, tuple(dims), keepdim))

    def arg_reduce(self, op, x, dim, keepdim):
        self.ops[op] += 1
        fn = np.argmax if op == "argmax" else np.argmin
        return fn(x, axis=dim, keepdims=keepdim).astype(np.int64)

    def matmul(self, a, b):
        self.ops["matmul"] += 1
        return np.matmul(a, b)

    # ---- shape
    def reshape(self, x, shape):
        self.ops["reshape"] += 1
        return x.reshape(shape)

    def permute(self, x, dims):
        self.ops["permute"] += 1
        return x.transpose(dims)

    def expand(self, x, shape):
        self.ops["expand"] += 1
        return np.broadcast_to(x, shape)

    def slice(self, x, index):
        self.ops["slice"] += 1
        return x[tuple(slice(start, stop, step) for start, stop, step in index)]

    def slice_assign(self, x, index, value):
        self.ops["slice_assign"] += 1
        out = x.copy()
        out[tuple(slice(start, stop, step) for start, stop, step in index)] = value
        return out

    def cat(self, xs: Sequence[np.ndarray], dim):
        self.ops["cat"] += 1
        return np.concatenate(list(xs), axis=dim)

    # ---- indexing
    def gather(self, x, dim, index):
        self.ops["gather"] += 1
        return np.take_along_axis(x, index, axis=dim)

    def scatter_add(self, x, dim, index, src):
        self.ops["scatter_add"] += 1
        out = x.copy()
        where = list(np.indices(index.shape, sparse=True))
        where[dim] = index
        np.add.at(out, tuple(where), src)
        return out

    def select(self, x, dim, indices):
        self.ops["select"] += 1
        return np.take(x, indices, axis=dim)

    def select_add(self, x, dim, indices, values):
        self.ops["select_add"] += 1
        out = x.copy()
        np.add.at(out, (slice(None),) * dim + (indices,), values)
        return out

    # ---- sort and scans
    def sort(self, x, dim, descending):
        self.ops["sort"] += 1
        if descending:  # stable descending: ascending stable sort of the reversed axis, mapped back
            n = x.shape[dim]
            idx = (n - 1) - np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
        else:
            idx = np.argsort(x, axis=dim, kind="stable")
        return np.take_along_axis(x, idx, axis=dim), idx.astype(np.int64)

    def cumsum(self, x, dim):
        self.ops["cumsum"] += 1
        return np.cumsum(x, axis=dim, dtype=x.dtype)

    def cumprod(self, x, dim):
        self.ops["cumprod"] += 1
        return np.cumprod(x, axis=dim, dtype=x.dtype)
