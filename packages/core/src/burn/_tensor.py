"""``burn.Tensor``: a (backend, primitive) pair with the whole user-facing op surface.

Arguments are checked and normalised here once (dims, broadcasting, dtype promotion, devices), then
one backend call does the work. This file holds the class, its metadata, data movement and the
operators; named element-wise ops, reductions and matmul live in ``_tensor_math``, shape ops in
``_tensor_shape`` (indexing in ``_tensor_index``, sorting and scans in ``_tensor_sort``).

Hot path: a tensor caches its burn dtype (``_dt``), and each operator first tries a fast path (both
operands on one backend, one dtype the op accepts, equal shapes; or a float tensor with a Python
number) that goes straight to the backend. Everything else takes the general path, which promotes
dtypes, checks broadcasting and raises the clear errors.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from . import _dtype as D
from ._amp_state import LOCAL as _AMP_LOCAL
from ._errors import DeviceError, DTypeError, ShapeError
from ._tensor_math import MathOps
from ._tensor_quant import QuantOps
from ._tensor_shape import ShapeOps
from .backend._shapes import broadcast_shapes
from .backend._vocabulary import ROWS

if TYPE_CHECKING:
    import numpy as np

    from ._device import Device
    from ._gradients import Gradients
    from .backend import Backend

Scalar = int | float | bool
_SCALARS = (int, float, bool)
_new = object.__new__

_FLOATS = frozenset(d for d in D.ALL_DTYPES if d.is_float)
_KIND_OK = {
    "num": frozenset(d for d in D.ALL_DTYPES if not d.is_bool),
    "float": _FLOATS,
    "any": frozenset(D.ALL_DTYPES),
    "int": frozenset(d for d in D.ALL_DTYPES if not d.is_float),
}
# inclusive value range of each int dtype, for Python int scalars
_INT_RANGE = {
    d: (
        (-(2 ** (8 * d.itemsize - 1)), 2 ** (8 * d.itemsize - 1) - 1)
        if d.kind == "i"
        else (0, 2 ** (8 * d.itemsize) - 1)
    )
    for d in D.ALL_DTYPES
    if d.is_int
}


def _wrap(prim: Any, backend: Backend, dtype: D.DType | None = None) -> Tensor:
    """Build a Tensor around a primitive. ``dtype``, when the caller knows it, saves a backend query."""
    t = _new(Tensor)
    t._p = prim
    t._b = backend
    t._dt = dtype
    return t


def _scalar_for(dtype: D.DType, value: Scalar) -> Scalar:
    if dtype.is_float:
        return float(value)
    if dtype.is_bool:
        return bool(value)
    return int(value)


def _is_operand(value: Any) -> bool:
    """Values an operator turns into a tensor: numbers, numpy arrays and scalars, nested lists."""
    return isinstance(value, (*_SCALARS, list, tuple)) or hasattr(value, "__array__")


def _binop(
    op: str,
    reverse: bool = False,
    slow: Callable[[Tensor, Any, bool], Tensor] | None = None,
    ok: frozenset[D.DType] | None = None,
) -> Callable[[Tensor, Any], Tensor]:
    """An operator method: the fast paths for dtypes in ``ok`` (default: those the op accepts as they
    are), then ``slow`` (default: ``Tensor._binary``)."""
    row = ROWS[op]
    ok = _KIND_OK[row.accepts] if ok is None else ok
    out_bool = row.bool_result  # comparisons: the vocabulary's rule, read once per operator

    bool_ = D.bool_

    def method(self: Tensor, o: Any) -> Tensor:
        dt = self._dt
        if dt in ok:
            b = self._b
            if type(o) is Tensor:
                if o._b is b and o._dt is dt:
                    p, q = (o._p, self._p) if reverse else (self._p, o._p)
                    fns = b.binary_fns
                    if fns is not None:  # the backend broadcasts natively: no shape check needed here
                        try:
                            r = fns[op](p, q)
                        except ValueError:  # shapes that don't broadcast: the general path explains
                            return self._binary(op, o, reverse, True)
                    elif p.shape == q.shape:
                        r = b.binary(op, p, q)
                    else:
                        return self._binary(op, o, reverse, True) if slow is None else slow(self, o, reverse)
                    t = _new(Tensor)  # _wrap inlined: this is the hottest path of the library
                    t._p = r
                    t._b = b
                    t._dt = bool_ if out_bool else dt
                    return t
            elif dt in _FLOATS and (type(o) is float or type(o) is int):
                p, q = (float(o), self._p) if reverse else (self._p, float(o))
                return _wrap(b.binary(op, p, q), b, bool_ if out_bool else dt)
        if slow is not None:
            return slow(self, o, reverse)
        return self._binary(op, o, reverse, True)

    method.__name__ = f"__{'r' if reverse else ''}{op}__"
    return method


class Tensor(MathOps, ShapeOps, QuantOps):
    """An n-dimensional array on a device. Build one with ``burn.tensor``, ``burn.zeros``, ...

    >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x).sum().item()
    54.0

    Internally ``_p`` is the backend's primitive, ``_b`` the backend and ``_dt`` the cached dtype
    (None until first asked); build instances with ``_wrap``.
    """

    __slots__ = ("_p", "_b", "_dt")
    _p: Any  # the backend's primitive
    _b: Backend
    _dt: D.DType | None
    __hash__ = object.__hash__  # == is element-wise, so hash by identity
    __array_priority__ = 1000  # numpy defers mixed ops (ndarray + Tensor) to us

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("build tensors with burn.tensor(data), burn.zeros(shape), burn.from_numpy(arr), ...")

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dim, as a tuple of ints.

        >>> burn.zeros(2, 3).shape
        (2, 3)
        """
        return tuple(self._b.shape_of(self._p))

    @property
    def ndim(self) -> int:
        """The number of dims (``len(t.shape)``).

        >>> burn.zeros(2, 3).ndim
        2
        """
        return len(self._b.shape_of(self._p))

    @property
    def dtype(self) -> D.DType:
        """The element type (a ``burn.DType``).

        >>> burn.tensor([1, 2]).dtype, burn.tensor([1.0]).dtype
        (burn.int64, burn.float32)
        """
        dt = self._dt
        if dt is None:
            dt = self._dt = self._b.dtype_of(self._p)
        return dt

    @property
    def device(self) -> Device:
        """The ``burn.Device`` the tensor lives on.

        >>> burn.zeros(2, device="cpu").device
        Device('cpu')
        """
        return self._b.device

    @property
    def backend(self) -> Backend:
        """The backend instance holding the tensor (the device's ``backend``).

        >>> burn.zeros(2, device="cpu").backend.name
        'ndarray'
        """
        return self._b

    @property
    def primitive(self) -> Any:
        """The backend's own array (for backend authors and interop).

        >>> type(burn.zeros(2, device="cpu").primitive).__name__
        'ndarray'
        """
        return self._p

    def numel(self) -> int:
        """The number of elements (the product of the shape).

        >>> burn.zeros(2, 3).numel()
        6
        """
        n = 1
        for s in self._b.shape_of(self._p):
            n *= s
        return n

    def __len__(self) -> int:
        shape = self._b.shape_of(self._p)
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    # ------------------------------------------------------------------ data out
    def numpy(self) -> np.ndarray:
        """A host numpy copy of the values (a device sync); same shape and dtype.

        >>> burn.tensor([1.0, 2.0]).numpy()
        array([1., 2.], dtype=float32)
        """
        return self._b.to_numpy(self._inner_prim())

    def _inner_prim(self) -> Any:
        return self._b.inner_prim(self._p) if self._b.is_autodiff else self._p

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def tolist(self) -> Any:
        """The values as nested Python lists (a Python number for a 0-d tensor).

        >>> burn.tensor([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return self.numpy().tolist()

    def item(self) -> Scalar:
        """The value of a one-element tensor (any shape) as a Python number.

        >>> burn.tensor([[2.5]]).item()
        2.5
        """
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

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        import numpy as np

        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(", threshold=200, edgeitems=3)
        grad = ", require_grad=True" if self.is_require_grad else ""
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype.name}, device={self.device}{grad})"

    # ------------------------------------------------------------------ movement and casts
    def to(self, target: Device | D.DType | str) -> Tensor:
        """Move to a device (``t.to(burn.device("wgpu"))``, ``t.to("cpu")``) or cast (``t.to(burn.float16)``).

        >>> burn.tensor([1.5, -2.5]).to(burn.int64).tolist()
        [1, -2]
        >>> burn.tensor([1.0]).to("cpu").device
        Device('cpu')

        Between a device and its autodiff decorator (``burn.device("wgpu")`` and ``burn.device("wgpu",
        autodiff=True)``) the value is shared, not copied through the host (leaving autodiff detaches).
        """
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
        if dst.is_autodiff and dst.inner is self._b:  # onto the autodiff decorator of its own device
            return _wrap(dst.from_inner(self._p), dst, self.dtype)
        if self._b.is_autodiff and self._b.inner is dst:  # off it: the value, detached
            return _wrap(self._b.inner_prim(self._p), dst, self.dtype)
        dtype = _fallback_dtype(self.dtype, dst)
        return _wrap(dst.from_numpy(self.numpy(), dtype), dst, dtype)

    def cast(self, dtype: D.DTypeLike) -> Tensor:
        """A copy converted to ``dtype``: float -> int truncates toward zero, int -> narrower int wraps,
        anything -> bool is ``!= 0``. Shapes: (...) -> (...).

        >>> burn.tensor([-1.5, 2.7]).cast(burn.int32).tolist()
        [-1, 2]
        >>> burn.tensor([300]).cast("uint8").tolist(), burn.tensor([0.0, 0.5]).cast(burn.bool).tolist()
        ([44], [False, True])
        """
        dt = D.dtype(dtype)
        if dt is self.dtype:
            return self
        _check_supported("cast", self._b, dt)
        return _wrap(self._b.cast(self._p, dt), self._b, dt)

    def float(self) -> Tensor:
        """Cast to the backend's default float (float32 on cpu).

        >>> burn.tensor([1, 2]).float().tolist()
        [1.0, 2.0]
        """
        return self.cast(self._b.default_float)

    def int(self) -> Tensor:
        """Cast to the backend's default int (int64 on cpu), truncating toward zero.

        >>> burn.tensor([1.7, -1.7]).int().tolist()
        [1, -1]
        """
        return self.cast(self._b.default_int)

    def bool(self) -> Tensor:
        """Cast to bool: ``x != 0``.

        >>> burn.tensor([0, 3]).bool().tolist()
        [False, True]
        """
        return self.cast(D.bool_)

    def clone(self) -> Tensor:
        """The same values (primitives are immutable, so nothing is copied).

        >>> burn.tensor([1, 2]).clone().tolist()
        [1, 2]
        """
        return _wrap(self._p, self._b, self._dt)

    # ------------------------------------------------------------------ autodiff surface
    def require_grad(self) -> Tensor:
        """Mark this tensor as a leaf whose gradient ``backward`` computes (autodiff devices only).

        >>> x = burn.tensor([1.0], device=burn.device("cpu", autodiff=True)).require_grad()
        >>> x.is_require_grad
        True
        """
        if not self._b.is_autodiff:
            raise DeviceError(
                f"require_grad: tensor is on {self.device}, which has no autodiff; "
                "create it on burn.device(..., autodiff=True)"
            )
        if not self.dtype.is_float:
            raise DTypeError(f"require_grad: only float tensors can require grad, got {self.dtype}")
        return _wrap(self._b.require_grad(self._p), self._b, self._dt)

    @property
    def is_require_grad(self) -> builtins.bool:
        """Whether this tensor is an autodiff leaf that tracks its gradient (always False without autodiff).

        >>> burn.tensor([1.0]).is_require_grad
        False
        """
        return self._b.is_autodiff and self._b.is_require_grad(self._p)

    def backward(self, seed: Tensor | None = None) -> Gradients:
        """Gradients of this tensor with respect to every leaf that requires grad (``burn.Gradients``).

        A non-scalar output needs an explicit ``seed`` of its shape (the vector in the vector-Jacobian
        product).

        >>> x = burn.tensor([1.0, 2.0], device=burn.device("cpu", autodiff=True)).require_grad()
        >>> grads = (x * x).sum().backward()
        >>> x.grad(grads).tolist()
        [2.0, 4.0]
        >>> x.grad((x * 3.0).backward(burn.tensor([1.0, 0.5]))).tolist()
        [3.0, 1.5]
        """
        if not self._b.is_autodiff:
            raise DeviceError(f"backward: tensor is on {self.device}, which has no autodiff")
        if seed is None:
            if self.numel() != 1:
                raise ShapeError(
                    f"backward: output has shape {self.shape}; a non-scalar output needs an explicit seed "
                    "(t.backward(seed)) of the same shape"
                )
            seed_p = None
            scale = _AMP_LOCAL.loss_scale
            if scale is not None:  # inside GradScaler.scaled_backward(): d(scale * loss), in float32
                out = self.cast(D.float32) if self.dtype is D.float16 or self.dtype is D.bfloat16 else self
                inner = out._b.inner
                return out._b.backward(out._p, inner.full(tuple(out.shape), scale, out.dtype))
        else:
            seed = _as_tensor_like(seed, self)
            if seed.shape != self.shape:
                raise ShapeError(f"backward: seed shape {seed.shape} != output shape {self.shape}")
            seed_p = seed._inner_prim()
        return self._b.backward(self._p, seed_p)

    def grad(self, grads: Gradients) -> Tensor | None:
        """This tensor's gradient in ``grads`` as a tensor on the inner backend (same shape), or None.

        >>> x = burn.tensor([[1.0, 2.0]], device=burn.device("cpu", autodiff=True)).require_grad()
        >>> x.grad((x * 5.0).sum().backward()).tolist()
        [[5.0, 5.0]]
        """
        if not self._b.is_autodiff:
            raise DeviceError(f"grad: tensor is on {self.device}, which has no autodiff")
        g = self._b.grad(self._p, grads)
        return None if g is None else _wrap(g, self._b.inner)

    def detach(self) -> Tensor:
        """The same values, cut from the graph (a no-op without autodiff).

        >>> x = burn.tensor([1.0], device=burn.device("cpu", autodiff=True)).require_grad()
        >>> (x * 2.0).detach().is_require_grad, (x * 2.0).detach().tolist()
        (False, [2.0])
        """
        if not self._b.is_autodiff:
            return self
        return _wrap(self._b.detach(self._p), self._b, self._dt)

    def inner(self) -> Tensor:
        """The tensor on the inner backend (without the Autodiff decorator); a no-op without autodiff.

        >>> burn.tensor([1.0], device=burn.device("cpu", autodiff=True)).inner().device
        Device('cpu')
        """
        if not self._b.is_autodiff:
            return self
        return _wrap(self._b.inner_prim(self._p), self._b.inner, self._dt)

    # ------------------------------------------------------------------ element-wise core
    def _binary(
        self, op: str, other: Any, reverse: builtins.bool = False, dunder: builtins.bool = False
    ) -> Tensor:
        """The general path of every binary op: devices, dtype promotion, broadcasting, then one
        backend call. ``reverse``: ``other`` is the left operand."""
        b = self._b
        if isinstance(other, Tensor):
            if other._b is not b:
                where = ("lhs", "rhs") if not reverse else ("rhs", "lhs")
                raise DeviceError(
                    f"{op}: {where[0]} is on {self.device} and {where[1]} on {other.device}; "
                    "move one with .to(device)"
                )
            da, db = self.dtype, other.dtype
            sa, sb = tuple(b.shape_of(self._p)), tuple(b.shape_of(other._p))
            if sa != sb:
                if reverse:
                    broadcast_shapes(op, sb, sa)
                else:
                    broadcast_shapes(op, sa, sb)
            dt = _op_dtype(op, da if da is db else D.promote_types(da, db), b)
            if dt is not da and dt is not db:
                _check_supported(op, b, dt)
            pa = self._p if da is dt else b.cast(self._p, dt)
            pb = other._p if db is dt else b.cast(other._p, dt)
        elif isinstance(other, _SCALARS):
            dt = _scalar_dtype(op, self.dtype, other, b)
            pa = self._p if dt is self.dtype else b.cast(self._p, dt)
            pb = _scalar_for(dt, other)
            if op == "pow" and dt.is_int and pb < 0 and not reverse:
                raise ValueError(
                    f"pow: negative exponent {other} on an integer tensor ({dt.name}); cast to float first"
                )
        elif _is_operand(other):
            return self._binary(op, _as_tensor_like(other, self, op), reverse, dunder)
        elif dunder:
            return NotImplemented
        else:
            raise TypeError(
                f"{op}: other operand must be a tensor, a number or an array-like, got {type(other).__name__}"
            )
        if reverse:
            pa, pb = pb, pa
        return _wrap(b.binary(op, pa, pb), b, ROWS[op].result_dtype(dt))

    def _true_div(self, o: Any, reverse: builtins.bool) -> Tensor:
        # true division of ints gives the default float, as in PyTorch and NumPy
        x = self if self.dtype.is_float or (isinstance(o, Tensor) and o.dtype.is_float) else self.float()
        return x._binary("div", o, reverse, True)

    # operators (fast path first; see _binop)
    __add__ = _binop("add")
    __radd__ = _binop("add", True)
    __sub__ = _binop("sub")
    __rsub__ = _binop("sub", True)
    __mul__ = _binop("mul")
    __rmul__ = _binop("mul", True)
    __truediv__ = _binop("div", slow=_true_div, ok=_FLOATS)  # ints divide to float: general path
    __rtruediv__ = _binop("div", True, slow=_true_div, ok=_FLOATS)
    __floordiv__ = _binop("floor_div")
    __rfloordiv__ = _binop("floor_div", True)
    __mod__ = _binop("remainder")
    __rmod__ = _binop("remainder", True)
    __pow__ = _binop("pow")
    __rpow__ = _binop("pow", True)
    __and__ = _binop("and")
    __rand__ = _binop("and", True)
    __or__ = _binop("or")
    __ror__ = _binop("or", True)
    __xor__ = _binop("xor")
    __rxor__ = _binop("xor", True)
    __eq__ = _binop("eq")  # type: ignore[assignment]
    __ne__ = _binop("ne")  # type: ignore[assignment]
    __lt__ = _binop("lt")
    __le__ = _binop("le")
    __gt__ = _binop("gt")
    __ge__ = _binop("ge")

    def __matmul__(self, o: Any) -> Tensor:
        return self.matmul(o)

    def __rmatmul__(self, o: Any) -> Tensor:
        if not _is_operand(o):
            return NotImplemented
        return _as_tensor_like(o, self, "matmul").matmul(self)

    def __neg__(self) -> Tensor:
        return self._unary("neg")

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self._unary("abs")

    def __invert__(self) -> Tensor:
        return self._unary("not")


def _scalar_dtype(op: str, dt: D.DType, value: Scalar, b: Backend) -> D.DType:
    """The dtype of ``tensor <op> scalar``: Python numbers are weak (they keep the tensor's dtype)
    unless the tensor cannot hold them: a float with an int/bool tensor gives the default float, an
    int with a bool tensor the default int."""
    if isinstance(value, bool):
        pass
    elif isinstance(value, float):
        if not dt.is_float:
            dt = b.default_float
    elif dt.is_bool:
        dt = b.default_int
    elif dt.is_int:
        lo, hi = _INT_RANGE[dt]
        if not lo <= value <= hi:
            lo64, hi64 = _INT_RANGE[D.int64]
            if ROWS[op].bool_result and lo64 <= value <= hi64 and D.int64 in b.dtypes:
                dt = D.int64  # comparing with a number outside the dtype's range is still meaningful
            else:
                raise ValueError(
                    f"{op}: scalar {value} is out of range for the tensor's dtype {dt.name} "
                    f"(expected {lo}..{hi}); cast the tensor first"
                )
    return _op_dtype(op, dt, b)


def _op_dtype(op: str, dt: D.DType, b: Backend) -> D.DType:
    """The dtype ``op`` computes in for operands of ``dt`` (its row in the op vocabulary)."""
    row = ROWS[op]
    return dt if dt in row.as_is else row.operand_dtype(dt, b.default_float, b.default_int)


def _check_supported(op: str, b: Backend, dt: D.DType) -> None:
    if dt not in b.dtypes:
        names = ", ".join(sorted(d.name for d in b.dtypes))
        from .backend._base import dtype_note

        note = dtype_note(b, dt)
        raise DTypeError(
            f"{op}: dtype {dt.name} is not supported by backend {b.name!r} (supported: {names})"
            + (f": {note}" if note else "")
        )


def _fallback_dtype(dt: D.DType, b: Backend) -> D.DType:
    """The backend's dtype for data of ``dt`` it cannot hold: its default of the same kind. Narrowing
    (float64 -> float32, int64 -> int32) warns once per process and pair of dtypes."""
    if dt in b.dtypes:
        return dt
    if dt.is_bool:
        raise DTypeError(f"backend {b.name!r} has no bool dtype")
    out = b.default_float if dt.is_float else b.default_int
    if out.itemsize < dt.itemsize and (b.name, dt, out) not in _NARROWED:
        _NARROWED.add((b.name, dt, out))
        import warnings

        lost = "precision" if dt.is_float else "range"
        warnings.warn(
            f"backend {b.name!r} has no {dt.name}: {dt.name} data becomes {out.name} ({lost} may be lost); "
            f"pass dtype=burn.{out.name} to make the conversion explicit (this warning shows once)",
            UserWarning,
            stacklevel=3,
        )
    return out


_NARROWED: set[tuple[str, D.DType, D.DType]] = set()  # (backend, from, to) already warned about


def _as_tensor_like(value: Any, like: Tensor, op: str = "op") -> Tensor:
    """A value (numpy array, list, scalar, tensor) as a tensor on ``like``'s backend."""
    if isinstance(value, Tensor):
        return value
    from ._creation import tensor

    try:
        return tensor(value, device=like.device)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: cannot use {type(value).__name__} as a tensor operand: {exc}") from None
