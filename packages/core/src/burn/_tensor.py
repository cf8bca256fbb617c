"""``burn.Tensor``: a (backend, primitive) pair with the whole user-facing op surface.

Arguments are checked and normalised here once (dims, broadcasting, dtype promotion, devices), then
one backend call does the work. Shape ops and indexing live in ``_tensor_shape``; this file holds the
element-wise, reduction and data-movement surface.
"""

from __future__ import annotations

from typing import Any

from . import _dtype as D
from ._checks import broadcast_shapes, norm_dim, norm_dims
from ._errors import DeviceError, DTypeError, ShapeError
from ._tensor_shape import ShapeOps
from .backend._optable import BINARY_OPS, UNARY_BOOL_RESULT, UNARY_OPS

Scalar = int | float | bool
_SCALARS = (int, float, bool)


def _wrap(prim: Any, backend: Any) -> Tensor:
    t = object.__new__(Tensor)
    t._p = prim
    t._b = backend
    return t


def _scalar_for(dtype: D.DType, value: Scalar) -> Scalar:
    if dtype.is_float:
        return float(value)
    if dtype.is_bool:
        return bool(value)
    return int(value)


class Tensor(ShapeOps):
    """An n-dimensional array on a device. Build one with ``burn.tensor``, ``burn.zeros``, ...

    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x).sum().item()
    54.0
    """

    __slots__ = ("_p", "_b")
    __hash__ = object.__hash__  # == is element-wise, so hash by identity
    __array_priority__ = 1000  # numpy defers mixed ops (ndarray + Tensor) to us

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("build tensors with burn.tensor(data), burn.zeros(shape), burn.from_numpy(arr), ...")

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._b.shape_of(self._p))

    @property
    def ndim(self) -> int:
        return len(self._b.shape_of(self._p))

    @property
    def dtype(self) -> D.DType:
        return self._b.dtype_of(self._p)

    @property
    def device(self) -> Any:
        return self._b.device

    @property
    def backend(self) -> Any:
        return self._b

    @property
    def primitive(self) -> Any:
        """The backend's own array (for backend authors and interop)."""
        return self._p

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    # ------------------------------------------------------------------ data out
    def numpy(self) -> Any:
        """A host numpy copy of the values (a device sync)."""
        return self._b.to_numpy(self._inner_prim())

    def _inner_prim(self) -> Any:
        return self._b.inner_prim(self._p) if self._b.is_autodiff else self._p

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Scalar:
        if self.numel() != 1:
            raise ValueError(f"item: expected a tensor with one element, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ValueError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if not self.dtype.is_int:
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        import numpy as np

        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(", threshold=200, edgeitems=3)
        grad = ", require_grad=True" if self._b.is_autodiff and self._b.is_require_grad(self._p) else ""
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype.name}, device={self.device}{grad})"

    # ------------------------------------------------------------------ movement and casts
    def to(self, target: Any) -> Tensor:
        """Move to a device (``t.to(burn.device("wgpu"))``, ``t.to("cpu")``) or cast (``t.to(burn.float16)``)."""
        from ._device import Device, device

        if isinstance(target, D.DType):
            return self.cast(target)
        if isinstance(target, str):
            try:
                return self.cast(D.dtype(target))
            except TypeError:
                target = device(target)
        if not isinstance(target, Device):
            raise TypeError(f"to: expected a device or a dtype, got {target!r}")
        if target == self.device:
            return self
        dst = target.backend
        if dst.is_autodiff and self._b.is_autodiff and dst.inner is self._b.inner:
            return self  # same inner device; autodiff state travels with the primitive
        dtype = self.dtype if self.dtype in dst.dtypes else _fallback_dtype(self.dtype, dst)
        return _wrap(dst.from_numpy(self.numpy(), dtype), dst)

    def cast(self, dtype: Any) -> Tensor:
        """A copy converted to ``dtype`` (float->int truncates toward zero)."""
        dt = D.dtype(dtype)
        if dt is self.dtype:
            return self
        _check_supported("cast", self._b, dt)
        return _wrap(self._b.cast(self._p, dt), self._b)

    def float(self) -> Tensor:
        return self.cast(self._b.default_float)

    def int(self) -> Tensor:
        return self.cast(self._b.default_int)

    def bool(self) -> Tensor:
        return self.cast(D.bool_)

    # ------------------------------------------------------------------ autodiff surface
    def require_grad(self) -> Tensor:
        """Mark this tensor as a leaf whose gradient ``backward`` computes (autodiff devices only)."""
        if not self._b.is_autodiff:
            raise DeviceError(
                f"require_grad: tensor is on {self.device}, which has no autodiff; "
                "create it on burn.device(..., autodiff=True)"
            )
        if not self.dtype.is_float:
            raise DTypeError(f"require_grad: only float tensors can require grad, got {self.dtype}")
        return _wrap(self._b.require_grad(self._p), self._b)

    @property
    def is_require_grad(self) -> bool:
        return self._b.is_autodiff and self._b.is_require_grad(self._p)

    def backward(self, seed: Tensor | None = None) -> Any:
        """Gradients of this tensor with respect to every leaf that requires grad (``burn.Gradients``).

        A non-scalar output needs an explicit ``seed`` of its shape (the vector in the vector-Jacobian
        product)."""
        if not self._b.is_autodiff:
            raise DeviceError(f"backward: tensor is on {self.device}, which has no autodiff")
        if seed is None:
            if self.numel() != 1:
                raise ShapeError(
                    f"backward: output has shape {self.shape}; a non-scalar output needs an explicit seed "
                    "(t.backward(seed)) of the same shape"
                )
            seed_p = None
        else:
            seed = _as_tensor_like(seed, self)
            if seed.shape != self.shape:
                raise ShapeError(f"backward: seed shape {seed.shape} != output shape {self.shape}")
            seed_p = seed._inner_prim()
        return self._b.backward(self._p, seed_p)

    def grad(self, grads: Any) -> Tensor | None:
        """This tensor's gradient in ``grads`` as a tensor on the inner backend, or None."""
        if not self._b.is_autodiff:
            raise DeviceError(f"grad: tensor is on {self.device}, which has no autodiff")
        g = self._b.grad(self._p, grads)
        return None if g is None else _wrap(g, self._b.inner)

    def detach(self) -> Tensor:
        """The same values, cut from the graph (a no-op without autodiff)."""
        if not self._b.is_autodiff:
            return self
        return _wrap(self._b.detach(self._p), self._b)

    def inner(self) -> Tensor:
        """The tensor on the inner backend (without the Autodiff decorator); a no-op without autodiff."""
        if not self._b.is_autodiff:
            return self
        return _wrap(self._b.inner_prim(self._p), self._b.inner)

    # ------------------------------------------------------------------ element-wise core
    def _unary(self, op: str) -> Tensor:
        kind = UNARY_OPS[op]
        x, b, dt = self._p, self._b, self.dtype
        if kind == "float" and not dt.is_float:
            x, dt = b.cast(x, b.default_float), b.default_float
        elif kind == "num" and dt.is_bool:
            raise DTypeError(f"{op}: expected a numeric tensor, got {dt}")
        elif kind == "int" and dt.is_float:
            raise DTypeError(f"{op}: expected a bool or integer tensor, got {dt}")
        if op in UNARY_BOOL_RESULT and not dt.is_float:
            return _wrap(b.full(self.shape, False, D.bool_), b)
        return _wrap(b.unary(op, x), b)

    def _binary(self, op: str, other: Any, reverse: bool = False) -> Tensor:
        b = self._b
        kind = BINARY_OPS[op]
        if isinstance(other, Tensor):
            if other._b is not b:
                raise DeviceError(
                    f"{op}: lhs is on {self.device} and rhs on {other.device}; move one with .to(device)"
                )
            da, db = self.dtype, other.dtype
            sa, sb = b.shape_of(self._p), b.shape_of(other._p)
            if sa != sb:
                broadcast_shapes(op, tuple(sa), tuple(sb)) if not reverse else broadcast_shapes(
                    op, tuple(sb), tuple(sa)
                )
            dt = da if da is db else D.promote_types(da, db)
            dt = _op_dtype(op, kind, dt, b)
            pa = self._p if da is dt else b.cast(self._p, dt)
            pb = other._p if db is dt else b.cast(other._p, dt)
        elif isinstance(other, _SCALARS):
            dt = self.dtype
            if isinstance(other, float) and not dt.is_float:
                dt = b.default_float
            elif isinstance(other, int) and not isinstance(other, bool) and dt.is_bool and kind != "any":
                dt = b.default_int
            dt = _op_dtype(op, kind, dt, b)
            pa = self._p if dt is self.dtype else b.cast(self._p, dt)
            pb = _scalar_for(dt, other)
        else:
            other = _as_tensor_like(other, self, op)
            return self._binary(op, other, reverse)
        if reverse:
            pa, pb = pb, pa
        return _wrap(b.binary(op, pa, pb), b)

    # operators
    def __add__(self, o: Any) -> Tensor:
        return self._binary("add", o)

    def __radd__(self, o: Any) -> Tensor:
        return self._binary("add", o, True)

    def __sub__(self, o: Any) -> Tensor:
        return self._binary("sub", o)

    def __rsub__(self, o: Any) -> Tensor:
        return self._binary("sub", o, True)

    def __mul__(self, o: Any) -> Tensor:
        return self._binary("mul", o)

    def __rmul__(self, o: Any) -> Tensor:
        return self._binary("mul", o, True)

    def __truediv__(self, o: Any) -> Tensor:
        return self._true_div(o, False)

    def __rtruediv__(self, o: Any) -> Tensor:
        return self._true_div(o, True)

    def _true_div(self, o: Any, reverse: bool) -> Tensor:
        # true division of ints gives the default float, as in PyTorch and NumPy
        x = self if self.dtype.is_float or (isinstance(o, Tensor) and o.dtype.is_float) else self.float()
        return x._binary("div", o, reverse)

    def __floordiv__(self, o: Any) -> Tensor:
        return self._binary("floor_div", o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        return self._binary("floor_div", o, True)

    def __mod__(self, o: Any) -> Tensor:
        return self._binary("remainder", o)

    def __rmod__(self, o: Any) -> Tensor:
        return self._binary("remainder", o, True)

    def __pow__(self, o: Any) -> Tensor:
        return self._binary("pow", o)

    def __rpow__(self, o: Any) -> Tensor:
        return self._binary("pow", o, True)

    def __matmul__(self, o: Any) -> Tensor:
        return self.matmul(o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return _as_tensor_like(o, self, "matmul").matmul(self)

    def __neg__(self) -> Tensor:
        return self._unary("neg")

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self._unary("abs")

    def __invert__(self) -> Tensor:
        return self._unary("not")

    def __and__(self, o: Any) -> Tensor:
        return self._binary("and", o)

    __rand__ = __and__

    def __or__(self, o: Any) -> Tensor:
        return self._binary("or", o)

    __ror__ = __or__

    def __xor__(self, o: Any) -> Tensor:
        return self._binary("xor", o)

    __rxor__ = __xor__

    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return self._binary("eq", o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return self._binary("ne", o)

    def __lt__(self, o: Any) -> Tensor:
        return self._binary("lt", o)

    def __le__(self, o: Any) -> Tensor:
        return self._binary("le", o)

    def __gt__(self, o: Any) -> Tensor:
        return self._binary("gt", o)

    def __ge__(self, o: Any) -> Tensor:
        return self._binary("ge", o)

    # named element-wise ops
    def add(self, o: Any) -> Tensor:
        return self._binary("add", o)

    def sub(self, o: Any) -> Tensor:
        return self._binary("sub", o)

    def mul(self, o: Any) -> Tensor:
        return self._binary("mul", o)

    def div(self, o: Any) -> Tensor:
        return self._true_div(o, False)

    def pow(self, o: Any) -> Tensor:
        """Element-wise power; ``o`` a tensor or a scalar."""
        return self._binary("pow", o)

    def remainder(self, o: Any) -> Tensor:
        """Python's ``%``: the result has the sign of the divisor (``-3 % 2 == 1``)."""
        return self._binary("remainder", o)

    def fmod(self, o: Any) -> Tensor:
        """C's fmod: the result has the sign of the dividend (``fmod(-3, 2) == -1``)."""
        return self._binary("fmod", o)

    def maximum(self, o: Any) -> Tensor:
        return self._binary("maximum", o)

    def minimum(self, o: Any) -> Tensor:
        return self._binary("minimum", o)

    def atan2(self, o: Any) -> Tensor:
        return self._binary("atan2", o)

    def equal(self, o: Any) -> Tensor:
        return self._binary("eq", o)

    def clamp(self, min: Scalar | None = None, max: Scalar | None = None) -> Tensor:
        """Limit values to ``[min, max]`` (either bound may be None)."""
        if min is None and max is None:
            raise ValueError("clamp: give at least one of min and max")
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min={min} is greater than max={max}")
        x = self
        if (isinstance(min, float) or isinstance(max, float)) and not self.dtype.is_float:
            x = self.float()
        dt = x.dtype
        lo = None if min is None else _scalar_for(dt, min)
        hi = None if max is None else _scalar_for(dt, max)
        return _wrap(x._b.clamp(x._p, lo, hi), x._b)

    def clamp_min(self, min: Scalar) -> Tensor:
        return self.clamp(min=min)

    def clamp_max(self, max: Scalar) -> Tensor:
        return self.clamp(max=max)

    def abs(self) -> Tensor:
        return self._unary("abs")

    def neg(self) -> Tensor:
        return self._unary("neg")

    def exp(self) -> Tensor:
        return self._unary("exp")

    def expm1(self) -> Tensor:
        return self._unary("expm1")

    def log(self) -> Tensor:
        return self._unary("log")

    def log1p(self) -> Tensor:
        return self._unary("log1p")

    def sqrt(self) -> Tensor:
        return self._unary("sqrt")

    def rsqrt(self) -> Tensor:
        return self._unary("rsqrt")

    def square(self) -> Tensor:
        return self._unary("square")

    def sin(self) -> Tensor:
        return self._unary("sin")

    def cos(self) -> Tensor:
        return self._unary("cos")

    def tan(self) -> Tensor:
        return self._unary("tan")

    def asin(self) -> Tensor:
        return self._unary("asin")

    def acos(self) -> Tensor:
        return self._unary("acos")

    def atan(self) -> Tensor:
        return self._unary("atan")

    def sinh(self) -> Tensor:
        return self._unary("sinh")

    def cosh(self) -> Tensor:
        return self._unary("cosh")

    def tanh(self) -> Tensor:
        return self._unary("tanh")

    def sigmoid(self) -> Tensor:
        return self._unary("sigmoid")

    def relu(self) -> Tensor:
        return self._unary("relu")

    def erf(self) -> Tensor:
        return self._unary("erf")

    def floor(self) -> Tensor:
        return self if not self.dtype.is_float else self._unary("floor")

    def ceil(self) -> Tensor:
        return self if not self.dtype.is_float else self._unary("ceil")

    def round(self) -> Tensor:
        """Round half to even (as PyTorch and Burn)."""
        return self if not self.dtype.is_float else self._unary("round")

    def trunc(self) -> Tensor:
        return self if not self.dtype.is_float else self._unary("trunc")

    def sign(self) -> Tensor:
        return self._unary("sign")

    def reciprocal(self) -> Tensor:
        return self._unary("reciprocal")

    def isnan(self) -> Tensor:
        return self._unary("isnan")

    def isinf(self) -> Tensor:
        return self._unary("isinf")

    def logical_not(self) -> Tensor:
        return self.bool()._unary("not")

    # ------------------------------------------------------------------ reductions
    def _reduce(self, op: str, dim: Any, keepdim: bool) -> Tensor:
        b, x, dt = self._b, self._p, self.dtype
        dims = norm_dims(op, dim, self.ndim)
        if op in ("all", "any"):
            if not dt.is_bool:
                x = b.cast(x, D.bool_)
        elif op == "mean" and not dt.is_float:
            x = b.cast(x, b.default_float)
        elif op in ("sum", "prod") and dt.is_bool:
            x = b.cast(x, b.default_int)
        if not dims:  # a 0-d tensor: nothing to reduce
            return _wrap(x, b)
        if op in ("max", "min") and any(self.shape[d] == 0 for d in dims):
            raise ShapeError(f"{op}: cannot reduce an empty dim (shape {self.shape}, dim {dim})")
        return _wrap(b.reduce(op, x, dims, keepdim), b)

    def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Sum over ``dim`` (None: all dims; an int or a tuple)."""
        return self._reduce("sum", dim, keepdim)

    def mean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("mean", dim, keepdim)

    def prod(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("prod", dim, keepdim)

    def max(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("max", dim, keepdim)

    def min(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("min", dim, keepdim)

    def all(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("all", dim, keepdim)

    def any(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self._reduce("any", dim, keepdim)

    def var(self, dim: Any = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        """Variance with Bessel's ``correction`` (1: sample variance, 0: population)."""
        x = self if self.dtype.is_float else self.float()
        dims = norm_dims("var", dim, self.ndim)
        if not isinstance(correction, int) or correction < 0:
            raise ValueError(f"var: correction must be a non-negative int, got {correction!r}")
        return _wrap(x._b.var(x._p, dims, correction, keepdim), x._b)

    def std(self, dim: Any = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        return self.var(dim, correction, keepdim).sqrt()

    def _arg(self, op: str, dim: int | None, keepdim: bool) -> Tensor:
        if self.dtype.is_bool:
            return self.int()._arg(op, dim, keepdim)
        if self.numel() == 0:
            raise ShapeError(f"{op}: cannot take {op} of an empty tensor (shape {self.shape})")
        if dim is None:
            flat = self.reshape(-1)
            return _wrap(self._b.arg_reduce(op, flat._p, 0, False), self._b)
        d = norm_dim(op, dim, self.ndim)
        return _wrap(self._b.arg_reduce(op, self._p, d, keepdim), self._b)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Index of the largest value along ``dim`` (None: of the flattened tensor); first on ties."""
        return self._arg("argmax", dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._arg("argmin", dim, keepdim)

    def max_dim(self, dim: int) -> Tensor:
        """Max along ``dim`` keeping the dim (Burn's ``max_dim``)."""
        return self.max(dim, keepdim=True)

    def min_dim(self, dim: int) -> Tensor:
        return self.min(dim, keepdim=True)

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        return self.max(dim, keepdim=True), self.argmax(dim, keepdim=True)

    def min_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        return self.min(dim, keepdim=True), self.argmin(dim, keepdim=True)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, other: Any) -> Tensor:
        """Matrix product with NumPy's rules: 1-d operands are promoted, batch dims broadcast.

        >>> burn.ones((2, 3)) @ burn.ones((3, 4))   # shape (2, 4)
        """
        other = other if isinstance(other, Tensor) else _as_tensor_like(other, self, "matmul")
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
        out = _wrap(self._b.matmul(a._p, b._p), self._b)
        if squeeze_l and squeeze_r:
            return out.reshape(())
        if squeeze_l:
            return out.squeeze(-2)
        if squeeze_r:
            return out.squeeze(-1)
        return out

    def dot(self, other: Tensor) -> Tensor:
        if self.ndim != 1 or getattr(other, "ndim", 0) != 1:
            raise ShapeError(
                f"dot: expects two 1-d tensors, got {self.shape} and {getattr(other, 'shape', other)}"
            )
        return self.matmul(other)


def _op_dtype(op: str, kind: str, dt: D.DType, b: Any) -> D.DType:
    if kind == "float" and not dt.is_float:
        return b.default_float
    if kind == "num" and dt.is_bool:
        if op in ("maximum", "minimum", "mul"):
            return dt  # well defined on bool (or/and)
        return b.default_int
    if kind == "int" and dt.is_float:
        raise DTypeError(f"{op}: expected bool or integer tensors, got {dt}")
    return dt


def _check_supported(op: str, b: Any, dt: D.DType) -> None:
    if dt not in b.dtypes:
        names = ", ".join(sorted(d.name for d in b.dtypes))
        raise DTypeError(f"{op}: dtype {dt.name} is not supported by backend {b.name!r} (supported: {names})")


def _fallback_dtype(dt: D.DType, b: Any) -> D.DType:
    """The backend's dtype for data of ``dt`` it cannot hold: its default of the same kind."""
    if dt in b.dtypes:
        return dt
    if dt.is_float:
        return b.default_float
    if dt.is_bool:
        raise DTypeError(f"backend {b.name!r} has no bool dtype")
    return b.default_int


def _as_tensor_like(value: Any, like: Tensor, op: str = "op") -> Tensor:
    """A value (numpy array, list, scalar, tensor) as a tensor on ``like``'s backend."""
    if isinstance(value, Tensor):
        return value
    from ._creation import tensor

    try:
        return tensor(value, device=like.device)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: cannot use {type(value).__name__} as a tensor operand: {exc}") from None
