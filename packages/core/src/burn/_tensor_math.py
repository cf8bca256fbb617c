"""Named element-wise ops, reductions and matmul of ``burn.Tensor`` (a mixin of the Tensor class).

Dtype rules: float-only ops (``exp``, ``sqrt``, ``sigmoid``, ...) compute int and bool inputs in the
default float; reductions keep the dtype (``sum``/``prod`` of bool give the default int, ``mean`` of
ints the default float, ``all``/``any`` give bool). ``%``/``remainder`` follow Python (the result has
the sign of the divisor), ``fmod`` follows C (the sign of the dividend).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _dtype as D
from . import _tensor as _T
from ._amp_state import HALVES as _HALVES
from ._amp_state import STATE as _AMP
from ._amp_state import to_float32, to_half
from ._checks import norm_dim, norm_dims
from ._errors import DeviceError, DTypeError, ShapeError
from .backend._optable import ACTIVATION_OPS
from .backend._shapes import broadcast_shapes, reduced_shape
from .backend._vocabulary import ROWS

if TYPE_CHECKING:
    from ._tensor import Tensor

_ALL_DIMS = tuple(tuple(range(n)) for n in range(65))  # dim=None without building a tuple per call
_NON_BOOL = frozenset(d for d in D.ALL_DTYPES if not d.is_bool)
_SUM_FAST = _NON_BOOL - _HALVES  # half sums take _reduce, where autocast can widen them
# reductions that run in float32 on half inputs under burn.amp.autocast (max/min/all/any are exact)
_AMP_FP32_REDUCTIONS = frozenset({"sum", "mean", "prod"})
_MATMUL_FAST = frozenset(d for d in D.ALL_DTYPES if not d.is_bool)
_IDENTITY_ON_INT = frozenset({"floor", "ceil", "round", "trunc"})


# The method factories below build each generated method's docstring from its table row: what it does,
# the shape rule of its kind, and a runnable example (``burn.tensor(data).<name>(...).tolist()`` printing
# ``out``), so every row carries an example the doctests check.
_ELEMENTWISE = "Shapes: (...) -> (...), element-wise."
_BROADCAST = (
    "Shapes: (...a) and (...b) broadcast as in NumPy -> the broadcast shape; numbers work on either side."
)
_REDUCED = (
    "Shapes: the dims in ``dim`` (an int or a tuple) are dropped, or kept as size 1 with ``keepdim=True``;\n"
    "``dim=None`` reduces every dim to a 0-d tensor."
)


def _doc(line: str, shapes: str, call: str, out: str) -> str:
    """A generated method's docstring: one line, the shapes, and an example printing ``out``."""
    return f"{line}\n\n{shapes}\n\n>>> {call}\n{out}\n"


def _un(op: str, doc: str, data: str, out: str) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        return self._unary(op)

    method.__name__ = op
    method.__doc__ = _doc(doc, _ELEMENTWISE, f"burn.tensor({data}).{op}().tolist()", out)
    return method


def _bin(
    op: str, doc: str, data: str, other: str, out: str, name: str | None = None
) -> Callable[[Tensor, Any], Tensor]:
    """``name``: the method's name where it differs from the op's (``floor_divide`` runs ``floor_div``)."""

    def method(self: Tensor, other: Any) -> Tensor:
        return self._binary(op, other)

    method.__name__ = op
    method.__doc__ = _doc(doc, _BROADCAST, f"burn.tensor({data}).{name or op}({other}).tolist()", out)
    return method


def _red(op: str, doc: str, data: str, dim: str, out: str) -> Callable[..., Tensor]:
    def method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce(op, dim, keepdim)

    method.__name__ = op
    method.__doc__ = _doc(doc, _REDUCED, f"burn.tensor({data}).{op}({dim}).tolist()", out)
    return method


class MathOps:
    __slots__ = ()

    # ------------------------------------------------------------------ element-wise
    def _unary(self: Tensor, op: str) -> Tensor:
        dt = self.dtype
        if dt.is_int and op in _IDENTITY_ON_INT:
            return self
        row = ROWS[op]
        b, x = self._b, self._p
        if dt in row.as_is:
            cdt = dt
        elif row.bool_result:  # isnan/isinf: no int or bool is NaN or infinite
            return _T._wrap(b.full(tuple(b.shape_of(x)), False, D.bool_), b, D.bool_)
        else:
            cdt = row.operand_dtype(dt, b.default_float, b.default_int)
            x = b.cast(x, cdt)
        y = b.activation(op, x) if op in ACTIVATION_OPS else b.unary(op, x)
        return _T._wrap(y, b, row.result_dtype(cdt))

    # name = _un(op, what it does, example input, example output)
    abs = _un("abs", "Absolute value.", "[-1, 2]", "[1, 2]")
    neg = _un("neg", "Negation.", "[1, -2]", "[-1, 2]")
    exp = _un("exp", "e ** x.", "[0.0]", "[1.0]")
    expm1 = _un("expm1", "e ** x - 1, accurate near 0.", "[0.0]", "[0.0]")
    log = _un("log", "Natural logarithm.", "[1.0]", "[0.0]")
    log1p = _un("log1p", "log(1 + x), accurate near 0.", "[0.0]", "[0.0]")
    sqrt = _un("sqrt", "Square root.", "[4.0, 9.0]", "[2.0, 3.0]")
    rsqrt = _un("rsqrt", "1 / sqrt(x).", "[4.0, 0.25]", "[0.5, 2.0]")
    square = _un("square", "x * x.", "[-3, 2]", "[9, 4]")
    sin = _un("sin", "Sine.", "[0.0]", "[0.0]")
    cos = _un("cos", "Cosine.", "[0.0]", "[1.0]")
    tan = _un("tan", "Tangent.", "[0.0]", "[0.0]")
    asin = _un("asin", "Arcsine.", "[0.0]", "[0.0]")
    acos = _un("acos", "Arccosine.", "[1.0]", "[0.0]")
    atan = _un("atan", "Arctangent.", "[0.0]", "[0.0]")
    sinh = _un("sinh", "Hyperbolic sine.", "[0.0]", "[0.0]")
    cosh = _un("cosh", "Hyperbolic cosine.", "[0.0]", "[1.0]")
    tanh = _un("tanh", "Hyperbolic tangent.", "[0.0]", "[0.0]")
    sigmoid = _un("sigmoid", "1 / (1 + e ** -x).", "[0.0]", "[0.5]")
    relu = _un("relu", "max(x, 0).", "[-1.0, 2.0]", "[0.0, 2.0]")
    erf = _un("erf", "The error function.", "[0.0]", "[0.0]")
    floor = _un("floor", "Round down (ints unchanged).", "[-1.5, 1.5]", "[-2.0, 1.0]")
    ceil = _un("ceil", "Round up (ints unchanged).", "[-1.5, 1.5]", "[-1.0, 2.0]")
    round = _un(
        "round",
        "Round half to even, as PyTorch and Burn (ints unchanged).",
        "[0.5, 1.5, 2.5]",
        "[0.0, 2.0, 2.0]",
    )
    trunc = _un("trunc", "Round toward zero (ints unchanged).", "[-1.5, 1.5]", "[-1.0, 1.0]")
    sign = _un("sign", "-1, 0 or 1 by the sign of x.", "[-2.0, 0.0, 3.0]", "[-1.0, 0.0, 1.0]")
    reciprocal = _un("reciprocal", "1 / x (ints compute in the default float).", "[2, 4]", "[0.5, 0.25]")
    isnan = _un("isnan", "Bool tensor: x is NaN.", '[1.0, float("nan")]', "[False, True]")
    isinf = _un("isinf", "Bool tensor: x is +-inf.", '[1.0, float("-inf")]', "[False, True]")

    def logical_not(self: Tensor) -> Tensor:
        """Bool tensor: not x (x != 0 for numbers). Shapes: (...) -> (...).

        >>> burn.tensor([0, 2]).logical_not().tolist()
        [True, False]
        """
        return self.bool()._unary("not")

    def logical_and(self: Tensor, other: Any) -> Tensor:
        """Bool tensor: x and other, each read as ``!= 0``. Shapes: broadcast, as ``add``.

        >>> burn.tensor([0, 1, 2]).logical_and(burn.tensor([1, 1, 0])).tolist()
        [False, True, False]
        """
        return self.bool()._binary("and", _T._as_tensor_like(other, self, "logical_and").bool())

    def logical_or(self: Tensor, other: Any) -> Tensor:
        """Bool tensor: x or other, each read as ``!= 0``. Shapes: broadcast, as ``add``.

        >>> burn.tensor([0, 0, 2]).logical_or(burn.tensor([0, 1, 0])).tolist()
        [False, True, True]
        """
        return self.bool()._binary("or", _T._as_tensor_like(other, self, "logical_or").bool())

    def logical_xor(self: Tensor, other: Any) -> Tensor:
        """Bool tensor: exactly one of x and other is true (``!= 0``). Shapes: broadcast, as ``add``.

        >>> burn.tensor([True, True]).logical_xor(burn.tensor([True, False])).tolist()
        [False, True]
        """
        return self.bool()._binary("xor", _T._as_tensor_like(other, self, "logical_xor").bool())

    # name = _bin(op, what it does, example input, example other operand, example output)
    add = _bin(
        "add",
        "self + other (tensors broadcast, numbers on either side).",
        "[[1], [2]]",
        "burn.tensor([10, 20])",
        "[[11, 21], [12, 22]]",
    )
    sub = _bin("sub", "self - other.", "[5, 7]", "2", "[3, 5]")
    mul = _bin("mul", "self * other.", "[1.5, 2.0]", "2", "[3.0, 4.0]")
    floor_divide = _bin(
        "floor_div",
        "self // other: the quotient rounded down (Python's rule).",
        "[-7, 7]",
        "2",
        "[-4, 3]",
        name="floor_divide",
    )
    pow = _bin(
        "pow",
        "self ** other; a negative int exponent on an int tensor is an error.",
        "[1, 2, 3]",
        "2",
        "[1, 4, 9]",
    )
    remainder = _bin(
        "remainder",
        "Python's %: the result has the sign of the divisor (-3 % 2 == 1).",
        "[-3, 3]",
        "2",
        "[1, 1]",
    )
    fmod = _bin(
        "fmod",
        "C's fmod: the result has the sign of the dividend (fmod(-3, 2) == -1).",
        "[-3, 3]",
        "2",
        "[-1, 1]",
    )
    maximum = _bin("maximum", "Element-wise max (NaN wins).", "[1, 5]", "burn.tensor([3, 2])", "[3, 5]")
    minimum = _bin("minimum", "Element-wise min (NaN wins).", "[1, 5]", "burn.tensor([3, 2])", "[1, 2]")
    atan2 = _bin(
        "atan2", "atan(self / other) in the quadrant of (other, self).", "[0.0, 0.0]", "1.0", "[0.0, 0.0]"
    )
    eq = equal = _bin("eq", "Bool tensor: self == other.", "[1, 2, 3]", "2", "[False, True, False]")
    ne = not_equal = _bin("ne", "Bool tensor: self != other.", "[1, 2, 3]", "2", "[True, False, True]")
    lt = lower = _bin("lt", "Bool tensor: self < other.", "[1, 2, 3]", "2", "[True, False, False]")
    le = lower_equal = _bin("le", "Bool tensor: self <= other.", "[1, 2, 3]", "2", "[True, True, False]")
    gt = greater = _bin("gt", "Bool tensor: self > other.", "[1, 2, 3]", "2", "[False, False, True]")
    ge = greater_equal = _bin("ge", "Bool tensor: self >= other.", "[1, 2, 3]", "2", "[False, True, True]")

    def div(self: Tensor, other: Any) -> Tensor:
        """self / other; ints divide to the default float. Shapes: broadcast, as ``add``.

        >>> burn.tensor([1, 3]).div(2).tolist()
        [0.5, 1.5]
        """
        return self._true_div(other, False)

    def clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        """Limit values to ``[min, max]`` (either bound may be None; float bounds make ints float).

        Shapes: (...) -> (...).

        >>> burn.tensor([-2, 0, 5]).clamp(-1, 3).tolist()
        [-1, 0, 3]
        """
        if min is None and max is None:
            raise ValueError("clamp: give at least one of min and max")
        for name, v in (("min", min), ("max", max)):
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise TypeError(f"clamp: {name} must be a number or None, got {type(v).__name__}")
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min={min} is greater than max={max}")
        if self.dtype.is_bool:
            raise DTypeError("clamp: expected a numeric tensor, got bool")
        x = self
        if (isinstance(min, float) or isinstance(max, float)) and not self.dtype.is_float:
            x = self.float()
        dt = x.dtype
        lo = None if min is None else _T._scalar_for(dt, min)
        hi = None if max is None else _T._scalar_for(dt, max)
        if dt.kind == "u" and lo is not None and lo < 0:  # below every unsigned value: no bound at all
            lo = 0  # (a backend holding a negative int as unsigned bits would read a huge bound)
        return _T._wrap(x._b.clamp(x._p, lo, hi), x._b, dt)

    def clamp_min(self: Tensor, min: Any) -> Tensor:
        """Raise values below ``min`` to ``min`` (``clamp(min=min)``). Shapes: (...) -> (...).

        >>> burn.tensor([-2, 5]).clamp_min(0).tolist()
        [0, 5]
        """
        return self.clamp(min=min)

    def clamp_max(self: Tensor, max: Any) -> Tensor:
        """Lower values above ``max`` to ``max`` (``clamp(max=max)``). Shapes: (...) -> (...).

        >>> burn.tensor([-2, 5]).clamp_max(3).tolist()
        [-2, 3]
        """
        return self.clamp(max=max)

    # ------------------------------------------------------------------ reductions
    def _reduce(self: Tensor, op: str, dim: Any, keepdim: bool) -> Tensor:
        if _AMP.on and op in _AMP_FP32_REDUCTIONS:
            self = to_float32(self)
        b, x, dt = self._b, self._p, self.dtype
        shape = tuple(b.shape_of(x))
        dims = norm_dims(op, dim, len(shape))
        row = ROWS[op]
        if dt not in row.as_is:
            dt = row.operand_dtype(dt, b.default_float, b.default_int)
            x = b.cast(x, dt)
        if not dims:  # a 0-d tensor: nothing to reduce
            return _T._wrap(x, b, dt)
        if op in ("max", "min") and any(shape[d] == 0 for d in dims):
            raise ShapeError(f"{op}: cannot reduce an empty dim (shape {shape}, dim {dim})")
        return _T._wrap(b.reduce(op, x, dims, bool(keepdim)), b, row.result_dtype(dt))

    def sum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Sum over ``dim`` (None: all dims; an int or a tuple). Keeps the dtype (bool -> default int).

        Shapes: the dims in ``dim`` are dropped, or kept as size 1 with ``keepdim=True``.

        >>> burn.tensor([[1, 2], [3, 4]]).sum(0).tolist()
        [4, 6]
        >>> burn.ones((2, 3)).sum(1, keepdim=True).shape
        (2, 1)
        """
        dt = self._dt
        if dim is None and dt in _SUM_FAST:  # fast path: the whole tensor
            p = self._p
            n = len(p.shape)
            if n:
                return _T._wrap(self._b.reduce("sum", p, _ALL_DIMS[n], bool(keepdim)), self._b, dt)
        return self._reduce("sum", dim, keepdim)

    # name = _red(op, what it does, example input, example dim, example output)
    mean = _red(
        "mean", "Mean over ``dim`` (ints give the default float).", "[[1, 2], [3, 4]]", "1", "[1.5, 3.5]"
    )
    prod = _red("prod", "Product over ``dim``.", "[[1, 2], [3, 4]]", "1", "[2, 12]")
    max = _red(
        "max", "Max over ``dim`` (NaN wins); an empty dim is an error.", "[[1, 4], [3, 2]]", "0", "[3, 4]"
    )
    min = _red(
        "min", "Min over ``dim`` (NaN wins); an empty dim is an error.", "[[1, 4], [3, 2]]", "0", "[1, 2]"
    )
    all = _red(
        "all", "Bool: every value is true (non-zero) over ``dim``.", "[[1, 0], [2, 3]]", "1", "[False, True]"
    )
    any = _red(
        "any", "Bool: some value is true (non-zero) over ``dim``.", "[[0, 0], [0, 3]]", "1", "[False, True]"
    )

    def var(self: Tensor, dim: Any = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """Variance with Bessel's ``correction`` (1: sample variance, 0: population); ints compute in float.

        Shapes: the dims in ``dim`` are dropped (None: all), or kept as size 1 with ``keepdim=True``.

        >>> x = burn.tensor([[1.0, 3.0], [2.0, 2.0]])
        >>> x.var(1).tolist(), x.var(1, correction=0).tolist()
        ([2.0, 0.0], [1.0, 0.0])
        """
        if not isinstance(correction, int) or isinstance(correction, bool) or correction < 0:
            raise ValueError(f"var: correction must be a non-negative int, got {correction!r}")
        x = self if self.dtype.is_float else self.float()
        if _AMP.on:  # autocast: the variance of a half tensor in float32
            x = to_float32(x)
        dims = norm_dims("var", dim, x.ndim)
        if not dims:  # a 0-d tensor: one value, so the variance is 0 / (1 - correction)
            return _T._wrap(x._b.full((), float("nan") if correction else 0.0, x.dtype), x._b, x.dtype)
        return _T._wrap(x._b.var(x._p, dims, correction, bool(keepdim)), x._b, x.dtype)

    def std(self: Tensor, dim: Any = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """Standard deviation: ``sqrt(var(dim, correction))``; shapes as ``var``.

        >>> burn.tensor([1.0, 3.0]).std(correction=0).item()
        1.0
        """
        return self.var(dim, correction, keepdim).sqrt()

    def _arg(self: Tensor, op: str, dim: Any, keepdim: bool) -> Tensor:
        if self.dtype.is_bool:
            return self.int()._arg(op, dim, keepdim)
        if self.numel() == 0:
            raise ShapeError(f"{op}: cannot take {op} of an empty tensor (shape {self.shape})")
        b = self._b
        if isinstance(dim, int):
            d = norm_dim(op, dim, self.ndim)
            return _T._wrap(b.arg_reduce(op, self._p, d, bool(keepdim)), b, b.default_int)
        # None or a tuple: the reduced dims move last and merge into one, so the result indexes their
        # row-major flattening (NumPy's argmax of the flattened tensor for None)
        shape = self.shape
        dims = norm_dims(op, dim, len(shape))
        kept = tuple(d for d in range(len(shape)) if d not in dims)
        x = self.permute(*kept, *dims) if kept + dims != tuple(range(len(shape))) else self
        x = x.reshape(*(shape[d] for d in kept), -1)
        out = _T._wrap(b.arg_reduce(op, x._p, len(kept), False), b, b.default_int)
        return out.reshape(reduced_shape(shape, dims, True)) if keepdim else out

    def argmax(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Index of the largest value along ``dim`` (an int; None: of the flattened tensor; a tuple: of
        those dims flattened in row-major order); first on ties.

        Shapes: the dims in ``dim`` are dropped (None: a 0-d tensor), or kept as size 1 with ``keepdim``.

        >>> x = burn.tensor([[1, 5, 5], [7, 0, 2]])
        >>> x.argmax(1).tolist(), x.argmax().item()
        ([1, 0], 3)
        """
        return self._arg("argmax", dim, keepdim)

    def argmin(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Index of the smallest value along ``dim`` (int, None or tuple, as ``argmax``); first on ties.

        >>> x = burn.tensor([[1, 5, 5], [7, 0, 2]])
        >>> x.argmin(1).tolist(), x.argmin().item()
        ([0, 1], 4)
        """
        return self._arg("argmin", dim, keepdim)

    def max_dim(self: Tensor, dim: int) -> Tensor:
        """Max along ``dim`` keeping the dim (Burn's ``max_dim``): (..., n, ...) -> (..., 1, ...).

        >>> burn.tensor([[1, 5], [7, 0]]).max_dim(1).tolist()
        [[5], [7]]
        """
        return self.max(dim, keepdim=True)

    def min_dim(self: Tensor, dim: int) -> Tensor:
        """Min along ``dim`` keeping the dim (Burn's ``min_dim``): (..., n, ...) -> (..., 1, ...).

        >>> burn.tensor([[1, 5], [7, 0]]).min_dim(1).tolist()
        [[1], [0]]
        """
        return self.min(dim, keepdim=True)

    def max_dim_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """(max, argmax) along ``dim``, both keeping the dim: (..., n, ...) -> (..., 1, ...) twice.

        >>> values, indices = burn.tensor([[1, 5], [7, 0]]).max_dim_with_indices(1)
        >>> values.tolist(), indices.tolist()
        ([[5], [7]], [[1], [0]])
        """
        return self.max(dim, keepdim=True), self.argmax(dim, keepdim=True)

    def min_dim_with_indices(self: Tensor, dim: int) -> tuple[Tensor, Tensor]:
        """(min, argmin) along ``dim``, both keeping the dim: (..., n, ...) -> (..., 1, ...) twice.

        >>> values, indices = burn.tensor([[1, 5], [7, 0]]).min_dim_with_indices(1)
        >>> values.tolist(), indices.tolist()
        ([[1], [0]], [[0], [1]])
        """
        return self.min(dim, keepdim=True), self.argmin(dim, keepdim=True)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self: Tensor, other: Any) -> Tensor:
        """Matrix product with NumPy's rules: 1-d operands are promoted, batch dims broadcast.

        Shapes: (..., n, k) @ (..., k, m) -> (..., n, m); a 1-d lhs (k,) reads as (1, k) and a 1-d rhs
        (k,) as (k, 1), the added dim dropped from the result.

        >>> (burn.ones((2, 3)) @ burn.ones((3, 4))).shape
        (2, 4)
        >>> burn.ones((5, 2, 3)).matmul(burn.ones(3)).shape
        (5, 2)
        """
        if _AMP.on:  # autocast: float operands in the half dtype
            if not isinstance(other, _T.Tensor):
                other = _T._as_tensor_like(other, self, "matmul")
            self, other = to_half("matmul", self), to_half("matmul", other)
        b, dt = self._b, self._dt
        if type(other) is _T.Tensor and other._b is b and other._dt is dt and dt in _MATMUL_FAST:
            sa, sb = self._p.shape, other._p.shape
            if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:  # fast path: plain 2-d
                return _T._wrap(b.matmul(self._p, other._p), b, dt)
        return self._matmul(other)

    def _matmul(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, _T.Tensor):
            other = _T._as_tensor_like(other, self, "matmul")
        if other._b is not self._b:
            raise DeviceError(f"matmul: lhs is on {self.device} and rhs on {other.device}")
        a, b = self, other
        sa, sb = a.shape, b.shape
        if not sa or not sb:
            raise ShapeError(f"matmul: operands must be at least 1-d, got lhs {sa} and rhs {sb}")
        squeeze_l = len(sa) == 1
        squeeze_r = len(sb) == 1
        if squeeze_l:
            a = a.reshape(1, sa[0])
        if squeeze_r:
            b = b.reshape(sb[0], 1)
        ka, kb = a.shape[-1], b.shape[-2]
        if ka != kb:
            raise ShapeError(f"shape mismatch in matmul: lhs {sa} and rhs {sb}: inner dims {ka} != {kb}")
        broadcast_shapes("matmul (batch dims)", a.shape[:-2], b.shape[:-2])
        dt = D.promote_types(a.dtype, b.dtype)
        if dt.is_bool:
            dt = self._b.default_int
        a, b = a.cast(dt), b.cast(dt)
        out = _T._wrap(self._b.matmul(a._p, b._p), self._b, dt)
        if squeeze_l and squeeze_r:
            return out.reshape(())
        if squeeze_l:
            return out.squeeze(-2)
        if squeeze_r:
            return out.squeeze(-1)
        return out

    def dot(self: Tensor, other: Tensor) -> Tensor:
        """Inner product of two 1-d tensors: (n,), (n,) -> ().

        >>> burn.tensor([1, 2, 3]).dot(burn.tensor([4, 5, 6])).item()
        32
        """
        if self.ndim != 1 or getattr(other, "ndim", 0) != 1:
            raise ShapeError(
                f"dot: expects two 1-d tensors, got {self.shape} and {getattr(other, 'shape', other)}"
            )
        return self.matmul(other)
