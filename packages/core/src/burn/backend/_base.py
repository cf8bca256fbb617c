"""The backend contract: Burn's ``Backend`` trait in Python.

A backend works on opaque *primitives* (its own array type). Methods take and return primitives plus
plain Python values; the frontend ``burn.Tensor`` has already checked shapes, dtypes, dims and devices
and normalised arguments (dims non-negative, slices with positive steps inside bounds, binary operands
of one dtype), so backends never repeat those checks.

The *required core* is the set of methods marked ``@required`` below. Everything else has a default
written in terms of the core (softmax from exp/sum/div, pad from full/slice_assign, topk from sort,
conv from padded strided slices and matmul, ...). A backend overrides defaults where it can be faster.

Method groups follow Burn: creation and data, element-wise (float/int/bool ops through the tables in
``_optable``), shape ops, indexing ops, reductions, module ops (``_module_ops``), activation ops and
transaction ops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from .._dtype import DType, bool_, float32, int64
from . import _module_ops
from ._random import HostRandom

if TYPE_CHECKING:
    import numpy as np

    from .._device import Device
    from .._gradients import Gradients
    from .._memory import MemoryStats

Prim = Any  # a backend's own array type: each backend names its own (np.ndarray, WgpuTensor, ...)
Slices = tuple[tuple[int, int, int], ...]  # (start, stop, step) per dim, 0 <= start <= stop, step >= 1


_F = TypeVar("_F", bound=Callable[..., Any])


def dtype_note(backend: Any, dt: DType) -> str:
    """``backend.dtype_notes[dt]``, looking through decorators (``inner``) too: '' when none."""
    seen = 0
    while backend is not None and seen < 8:
        note = getattr(backend, "dtype_notes", {}).get(dt)
        if note:
            return str(note)
        backend, seen = getattr(backend, "inner", None), seen + 1
    return ""


def required(fn: _F) -> _F:
    """Mark a method as part of the required core (documentation and ``Backend.missing_core()``)."""
    fn.__burn_required__ = True  # type: ignore[attr-defined]  # a marker on the function object
    return fn


class Backend(_module_ops.ModuleOps, HostRandom):
    """Base class of every backend. Subclass it, implement the ``@required`` core, override the rest
    where it pays.

    Class attributes a backend sets: ``name`` (registry name), ``dtypes`` (the dtypes it supports),
    ``default_float`` and ``default_int``. ``device`` is attached by ``burn.device()``.
    """

    name: str = "backend"
    dtypes: frozenset[DType] = frozenset()
    default_float: DType = float32
    default_int: DType = int64
    # the burn.Device this instance serves: attached by burn.device() (None only on a backend built by hand)
    device: Device = None  # type: ignore[assignment]
    is_autodiff: bool = False
    # Optional table op -> callable(a, b) for BINARY_OPS on same-dtype primitives that broadcasts like
    # NumPy and raises ValueError on shapes that don't: the frontend's operators then call it directly
    # (no method call, no shape check), which is most of the cost of a small op.
    binary_fns: dict[str, Callable[[Prim, Prim], Prim]] | None = None
    # Primitives live in host memory (numpy): reading one costs no device sync.
    host_memory: bool = False
    # ``check_index`` queues its check on the device and reports a bad index at a later read or sync,
    # also when it runs inside a captured device graph (burn-cuda): fusion then records it in streams
    # like any op (elsewhere it runs at once, so a host check raises where the op was called).
    deferred_index_checks: bool = False
    # Activations ``unary`` runs with its own kernels; the others use ``activation``'s core compositions.
    native_activations: frozenset[str] = frozenset()
    # Why a dtype outside ``dtypes`` is missing here, where it depends on the install (bfloat16 on an old
    # CuPy): appended to the DTypeError of a request for it.
    dtype_notes: Mapping[DType, str] = MappingProxyType({})

    if TYPE_CHECKING:
        # The autodiff decorator's surface: present only where ``is_autodiff`` is True (burn_autodiff's
        # Autodiff), which callers check first. ``inner`` is the backend it wraps.
        inner: Backend

        def from_inner(self, p: Prim) -> Prim: ...

        def inner_prim(self, p: Prim) -> Prim: ...

        def require_grad(self, p: Prim) -> Prim: ...

        def is_require_grad(self, p: Prim) -> bool: ...

        def detach(self, p: Prim) -> Prim: ...

        def node_id(self, p: Prim) -> int | None: ...

        def grad(self, p: Prim, grads: Gradients) -> Prim | None: ...

        def backward(self, p: Prim, seed: Prim | None = None) -> Gradients: ...

    @classmethod
    def missing_core(cls) -> list[str]:
        """Names of required methods this backend class has not implemented."""
        missing = []
        for name in dir(Backend):
            base_fn = getattr(Backend, name, None)
            if getattr(base_fn, "__burn_required__", False) and getattr(cls, name) is base_fn:
                missing.append(name)
        return missing

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device}>"

    # ---------------------------------------------------------------- creation and data (required)
    @required
    def from_numpy(self, array: np.ndarray, dtype: DType) -> Prim:
        """Copy a numpy array onto this backend's device as ``dtype``."""
        raise NotImplementedError

    @required
    def to_numpy(self, x: Prim) -> np.ndarray:
        """Copy a primitive to a host numpy array (this is a sync point)."""
        raise NotImplementedError

    @required
    def shape_of(self, x: Prim) -> tuple[int, ...]:
        raise NotImplementedError

    @required
    def dtype_of(self, x: Prim) -> DType:
        raise NotImplementedError

    @required
    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> Prim:
        raise NotImplementedError

    @required
    def cast(self, x: Prim, dtype: DType) -> Prim:
        raise NotImplementedError

    def arange(self, start: int | float, stop: int | float, step: int | float, dtype: DType) -> Prim:
        import numpy as np

        return self.from_numpy(np.arange(start, stop, step), dtype)

    def sync(self) -> None:
        """Wait until queued work is done. Eager backends have nothing to wait for."""

    def fusion_runtime(self) -> Any:
        """The kernel generator of the fusion decorator on this backend (a ``burn.fusion.FusionRuntime``),
        or None: fusion then runs its plans op by op on this backend (``ReferenceRuntime``)."""
        return None

    def custom(self, name: str, xs: Sequence[Prim], attrs: tuple[tuple[str, Any], ...]) -> Prim:
        """Run the ``burn.custom`` op ``name`` on ``xs`` with its attributes ``attrs`` (sorted ``(key,
        value)`` pairs): its numpy function here on numpy primitives, else its composition of burn ops,
        else its numpy function through a host round trip (noted once). A backend that launches source
        kernels overrides it with ``burn.custom.dispatch(self, ..., launch=...)``."""
        from ..custom._run import dispatch  # burn.custom imports this package: bind at call time

        return dispatch(self, name, xs, attrs)

    def call_state(self) -> Any:
        """The ambient settings that change what this backend's ops compute (burn-cuda's matmul
        precision), as a hashable token; None (the default) when there are none. A decorator that runs
        an op later than it was called (fusion) records the token with the op and runs it inside
        ``call_state_scope(token)``."""
        return None

    def call_state_scope(self, state: Any) -> AbstractContextManager[Any]:
        """A context in which ops run as they would under ``state`` (a ``call_state()`` token)."""
        return nullcontext()

    def counters(self) -> dict[str, int]:
        """Cumulative activity counts ``burn.profile`` reads: ``kernels``, ``submits``, ``syncs``,
        ``fused``. The default counts nothing (all zero)."""
        return {}

    def memory_stats(self) -> MemoryStats | None:
        """This backend's memory figures for ``burn.memory_stats`` (a ``burn.backend.MemoryStats``), or
        None (the default: it reports none). A decorator returns the answer of the backend it wraps."""
        return None

    def reset_peak_memory(self) -> None:
        """Restart the peaks ``memory_stats`` reports from the current values (``burn.reset_peak_memory_stats``)."""

    def empty_cache(self) -> None:
        """Release cached memory no tensor holds (``burn.empty_cache``); the default keeps nothing."""

    # ---------------------------------------------------------------- element-wise (required)
    @required
    def unary(self, op: str, x: Prim) -> Prim:
        """Apply a ``UNARY_OPS`` op; result dtype is x's (bool for isnan/isinf). Activations
        (``ACTIVATION_OPS``) reach it only when listed in ``native_activations``."""
        raise NotImplementedError

    def activation(self, op: str, x: Prim) -> Prim:
        """Apply an ``ACTIVATION_OPS`` op (relu, sigmoid, gelu, ...): ``unary`` when the backend lists
        it in ``native_activations``, else its composition from the core (Burn's ActivationOps)."""
        if op in self.native_activations:
            return self.unary(op, x)
        from ._activation_defaults import ACTIVATION_DEFAULTS

        return ACTIVATION_DEFAULTS[op](self, x)

    @required
    def binary(self, op: str, a: Prim | float | int | bool, b: Prim | float | int | bool) -> Prim:
        """Apply a ``BINARY_OPS`` op with NumPy broadcasting. One side may be a Python scalar; tensor
        operands share one dtype. Comparisons give bool. ``remainder`` follows Python's sign rule (sign
        of the divisor), ``fmod`` C's (sign of the dividend); ``floor_div`` floors."""
        raise NotImplementedError

    @required
    def where(self, cond: Prim, a: Prim | float | int | bool, b: Prim | float | int | bool) -> Prim:
        """Element-wise select with broadcasting; a and b share one dtype (or are scalars)."""
        raise NotImplementedError

    def clamp(self, x: Prim, lo: float | int | None, hi: float | int | None) -> Prim:
        if lo is not None:
            x = self.binary("maximum", x, lo)
        if hi is not None:
            x = self.binary("minimum", x, hi)
        return x

    def leaky_relu(self, x: Prim, slope: float) -> Prim:
        return self.where(self.binary("ge", x, 0), x, self.binary("mul", x, slope))

    # ---------------------------------------------------------------- reductions
    @required
    def reduce(self, op: str, x: Prim, dims: tuple[int, ...], keepdim: bool) -> Prim:
        """Reduce over ``dims`` (non-empty, sorted, unique) with a ``REDUCE_OPS`` op."""
        raise NotImplementedError

    @required
    def arg_reduce(self, op: str, x: Prim, dim: int, keepdim: bool) -> Prim:
        """``argmax``/``argmin`` along ``dim``, first occurrence on ties, default-int result."""
        raise NotImplementedError

    def var(self, x: Prim, dims: tuple[int, ...], correction: int, keepdim: bool) -> Prim:
        mean = self.reduce("mean", x, dims, True)
        diff = self.binary("sub", x, mean)
        sq = self.reduce("sum", self.binary("mul", diff, diff), dims, keepdim)
        shape = self.shape_of(x)
        n = 1
        for d in dims:
            n *= shape[d]
        return self.binary("div", sq, float(max(n - correction, 0)))

    # ---------------------------------------------------------------- linear algebra
    @required
    def matmul(self, a: Prim, b: Prim) -> Prim:
        """Batched matmul with broadcast batch dims; both operands at least 2-d and of one dtype."""
        raise NotImplementedError

    # ---------------------------------------------------------------- shape ops
    @required
    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        raise NotImplementedError

    @required
    def permute(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        raise NotImplementedError

    @required
    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        """Broadcast to ``shape`` (same rank as x; size-1 dims stretched)."""
        raise NotImplementedError

    @required
    def slice(self, x: Prim, index: Slices) -> Prim:
        """Take ``x[start:stop:step, ...]`` with one normalised triple per dim."""
        raise NotImplementedError

    @required
    def slice_assign(self, x: Prim, index: Slices, value: Prim) -> Prim:
        """A copy of x with the region ``index`` replaced by ``value`` (of the region's shape)."""
        raise NotImplementedError

    @required
    def cat(self, xs: Sequence[Prim], dim: int) -> Prim:
        raise NotImplementedError

    def stack(self, xs: Sequence[Prim], dim: int) -> Prim:
        parts = []
        for x in xs:
            shape = list(self.shape_of(x))
            shape.insert(dim, 1)
            parts.append(self.reshape(x, tuple(shape)))
        return self.cat(parts, dim)

    def flip(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        shape = self.shape_of(x)
        for d in dims:
            idx = self.arange(shape[d] - 1, -1, -1, self.default_int)
            x = self.select(x, d, idx)
        return x

    def repeat(self, x: Prim, reps: tuple[int, ...]) -> Prim:
        """Tile x ``reps[d]`` times along each dim (len(reps) == x's rank)."""
        shape = self.shape_of(x)
        inter, expanded, final = [], [], []
        for size, r in zip(shape, reps):
            inter += [1, size]
            expanded += [r, size]
            final.append(size * r)
        y = self.expand(self.reshape(x, tuple(inter)), tuple(expanded))
        return self.reshape(y, tuple(final))

    # ---------------------------------------------------------------- indexing ops
    @required
    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        """``out[i][j] = x[index[i][j]][j]`` along ``dim``; index has x's rank."""
        raise NotImplementedError

    @required
    def scatter_add(self, x: Prim, dim: int, index: Prim, src: Prim) -> Prim:
        """A copy of x with ``src`` added at ``index`` along ``dim`` (duplicates accumulate)."""
        raise NotImplementedError

    @required
    def select(self, x: Prim, dim: int, indices: Prim) -> Prim:
        """Pick entries along ``dim`` by a 1-d int primitive (index_select)."""
        raise NotImplementedError

    @required
    def select_add(self, x: Prim, dim: int, indices: Prim, values: Prim) -> Prim:
        """A copy of x with ``values`` added at ``indices`` along ``dim`` (duplicates accumulate)."""
        raise NotImplementedError

    def check_index(self, index: Prim, size: int, negative: bool, message: str) -> Prim:
        """``index`` (an int primitive) with its values checked against ``[-size, size)``, or
        ``[0, size)`` when not ``negative``, and negative values wrapped to ``value + size``.

        ``message`` is the error text, with ``{value}`` where the bad value goes. This default reads the
        index to the host and raises ``IndexOutOfRangeError`` at once. Device backends override it to
        check on the device instead: the check is queued with the op, an out-of-range entry is replaced
        by 0 so the op never touches memory outside the tensor, and the error is raised by the next
        read or sync of that device (as an asynchronous CUDA error would be, but recoverable).
        """
        import numpy as np

        from .._errors import IndexOutOfRangeError

        arr = np.asarray(self.to_numpy(index))
        if arr.size == 0:
            return index
        lo, hi = int(arr.min()), int(arr.max())
        low = -size if negative else 0
        if lo < low or hi >= size:
            raise IndexOutOfRangeError(message.format(value=lo if lo < low else hi))
        if lo >= 0:
            return index
        return self.from_numpy(np.where(arr < 0, arr + size, arr), self.dtype_of(index))

    def mask_fill(self, x: Prim, mask: Prim, value: float | int | bool) -> Prim:
        return self.where(mask, value, x)

    def _index_grid(self, n: int, m: int, k: int) -> Prim:
        """Bool (n, m) mask of ``col - row <= k`` (tril); built from two aranges."""
        rows = self.reshape(self.arange(0, n, 1, self.default_int), (n, 1))
        cols = self.reshape(self.arange(0, m, 1, self.default_int), (1, m))
        return self.binary("le", self.binary("sub", cols, rows), k)

    def tril(self, x: Prim, k: int) -> Prim:
        shape = self.shape_of(x)
        mask = self._index_grid(shape[-2], shape[-1], k)
        return self.where(mask, x, self._zero_like_scalar(x))

    def triu(self, x: Prim, k: int) -> Prim:
        shape = self.shape_of(x)
        mask = self._index_grid(shape[-2], shape[-1], k - 1)
        return self.where(mask, self._zero_like_scalar(x), x)

    def _zero_like_scalar(self, x: Prim) -> float | int | bool:
        dt = self.dtype_of(x)
        return False if dt is bool_ else (0.0 if dt.is_float else 0)

    def one_hot(self, x: Prim, num_classes: int, dtype: DType) -> Prim:
        shape = self.shape_of(x)
        classes = self.reshape(self.arange(0, num_classes, 1, self.dtype_of(x)), (1,) * len(shape) + (-1,))
        eq = self.binary("eq", self.reshape(x, shape + (1,)), classes)
        return self.cast(eq, dtype)

    # ---------------------------------------------------------------- sorting and scans
    @required
    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        """Stable sort along ``dim``: (values, default-int indices)."""
        raise NotImplementedError

    def argsort(self, x: Prim, dim: int, descending: bool) -> Prim:
        return self.sort(x, dim, descending)[1]

    def topk(self, x: Prim, k: int, dim: int) -> tuple[Prim, Prim]:
        values, indices = self.sort(x, dim, True)
        shape = self.shape_of(x)
        index = tuple((0, k if d == dim else n, 1) for d, n in enumerate(shape))
        return self.slice(values, index), self.slice(indices, index)

    @required
    def cumsum(self, x: Prim, dim: int) -> Prim:
        raise NotImplementedError

    @required
    def cumprod(self, x: Prim, dim: int) -> Prim:
        raise NotImplementedError

    # ---------------------------------------------------------------- padding
    def pad(self, x: Prim, pads: tuple[tuple[int, int], ...], mode: str, value: float) -> Prim:
        """Pad each dim by ``pads[d] = (before, after)`` (one pair per dim, in dim order).

        ``constant`` fills with ``value``; ``reflect`` mirrors without repeating the edge; ``edge``
        repeats the edge value. The frontend checks reflect pads are smaller than the dim.
        """
        if mode == "constant":
            shape = self.shape_of(x)
            out_shape = tuple(n + a + b for n, (a, b) in zip(shape, pads))
            out = self.full(out_shape, value, self.dtype_of(x))
            index = tuple((a, a + n, 1) for n, (a, _) in zip(shape, pads))
            return self.slice_assign(out, index, x)
        for dim, (before, after) in enumerate(pads):
            if before == 0 and after == 0:
                continue
            shape = self.shape_of(x)
            n = shape[dim]

            def part(
                start: int, stop: int, x: Prim = x, shape: tuple[int, ...] = shape, dim: int = dim
            ) -> Prim:
                return self.slice(
                    x, tuple((start, stop, 1) if d == dim else (0, s, 1) for d, s in enumerate(shape))
                )

            pieces = []
            if mode == "reflect":
                if before:
                    pieces.append(self.flip(part(1, before + 1), (dim,)))
                pieces.append(x)
                if after:
                    pieces.append(self.flip(part(n - after - 1, n - 1), (dim,)))
            else:  # edge
                if before:
                    first = part(0, 1)
                    pieces.append(
                        self.expand(first, tuple(before if d == dim else s for d, s in enumerate(shape)))
                    )
                pieces.append(x)
                if after:
                    last = part(n - 1, n)
                    pieces.append(
                        self.expand(last, tuple(after if d == dim else s for d, s in enumerate(shape)))
                    )
            x = self.cat(pieces, dim)
        return x

    # ---------------------------------------------------------------- activations
    def softmax(self, x: Prim, dim: int) -> Prim:
        shifted = self.binary("sub", x, self.reduce("max", x, (dim,), True))
        e = self.unary("exp", shifted)
        return self.binary("div", e, self.reduce("sum", e, (dim,), True))

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        shifted = self.binary("sub", x, self.reduce("max", x, (dim,), True))
        lse = self.unary("log", self.reduce("sum", self.unary("exp", shifted), (dim,), True))
        return self.binary("sub", shifted, lse)

    # ---------------------------------------------------------------- transaction ops
    def read_many(self, xs: Sequence[Prim]) -> list[np.ndarray]:
        """Read several primitives to numpy with one sync. The default reads them in turn."""
        return [self.to_numpy(x) for x in xs]
