"""The capture backend: runs burn code on symbolic tensors and records every op as an ``OpRecord``.

``capture(fn, inputs, like=device)`` calls ``fn`` with symbolic tensors of the given shapes and dtypes on a
``CaptureBackend`` that mirrors ``like``'s dtypes and defaults, and returns the ``Graph`` of what ``fn``
did: nothing is computed, each op only derives its output shapes and dtypes (its vocabulary row's rules,
``result_types``). Host data
the code brings in (a module's weights, literals) becomes the graph's constants. Reading a value during
capture (``.item()``, ``.numpy()``, data-dependent control flow) is an ``IrError``: a graph cannot hold it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _dtype as D
from .._device import Device
from ..backend import ACTIVATION_OPS, Backend
from ..backend._shapes import SHAPE_RULES
from ..backend._vocabulary import OpKind, op_def
from ._graph import Graph, IrError, OpRecord, Ref, TensorRef

Ints = tuple[int, ...]


class Sym:
    """A symbolic tensor: an id in the graph being recorded, a shape and a dtype."""

    __slots__ = ("ref",)

    def __init__(self, ref: TensorRef) -> None:
        self.ref = ref

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ref.shape

    def __repr__(self) -> str:
        return f"Sym(%{self.ref.id}, {self.ref.dtype.name}{list(self.ref.shape)})"


_active = threading.local()


class CaptureBackend(Backend):
    """A backend whose primitives are ``Sym``s: every op appends an ``OpRecord`` to the graph being
    captured and returns symbolic outputs. Its dtypes and defaults are those of ``like``."""

    name = "capture"
    host_memory = False
    native_activations = ACTIVATION_OPS  # each recorded as one op

    def __init__(self, like: Backend) -> None:
        inner = like.inner if like.is_autodiff else like
        self.like = inner
        self.dtypes = inner.dtypes
        self.default_float = inner.default_float
        self.default_int = inner.default_int
        self.graph = Graph()
        self._next = 0

    def __repr__(self) -> str:
        return f"<CaptureBackend like {self.like.name}>"

    # ---- recording
    def _new(self, shape: tuple[int, ...], dtype: D.DType) -> Sym:
        ref = TensorRef(self._next, tuple(int(s) for s in shape), dtype)
        self._next += 1
        return Sym(ref)

    def input(self, name: str, shape: tuple[int, ...], dtype: D.DType) -> Sym:
        """A graph input named ``name``."""
        sym = self._new(shape, dtype)
        self.graph.inputs[name] = sym.ref
        return sym

    def _emit(self, kind: str, method: str, args: tuple) -> Any:
        record_args = tuple(_as_refs(a) for a in args)
        outs = [self._new(shape, dt) for shape, dt in result_types(self, kind, method, args, _sym_meta)]
        self.graph.ops.append(OpRecord(OpKind(kind), record_args, tuple(o.ref for o in outs)))
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- data
    def from_numpy(self, array: Any, dtype: D.DType) -> Sym:
        import numpy as np

        from ..backend._numpy_dtypes import NUMPY_DTYPES

        if dtype not in NUMPY_DTYPES:
            raise IrError(
                f"capture: a constant of dtype {dtype.name} cannot be stored (numpy has no such type)"
            )
        arr = np.array(array, dtype=NUMPY_DTYPES[dtype], copy=True)
        sym = self._new(arr.shape, dtype)
        self.graph.constants[sym.ref.id] = arr
        return sym

    def to_numpy(self, x: Sym) -> Any:
        raise IrError(
            f"capture: {x!r} has no value: code under capture cannot read tensors (.item(), .numpy(), "
            "a Python branch on a tensor); move the read out of the captured function"
        )

    def read_many(self, xs: Sequence[Sym]) -> list[Any]:
        return [self.to_numpy(x) for x in xs]

    def shape_of(self, x: Sym) -> tuple[int, ...]:
        return x.ref.shape

    def dtype_of(self, x: Sym) -> D.DType:
        return x.ref.dtype


def _recorder(method: str) -> Callable[..., Any]:
    """The ``CaptureBackend`` method recording ``method`` (unary/binary/reduce/arg_reduce take the kind)."""
    fn: Callable[..., Any]
    if method in _NAMED:

        def named(self: CaptureBackend, kind: str, *args: Any) -> Any:
            return self._emit(kind, method, args)

        fn = named
    else:

        def plain(self: CaptureBackend, *args: Any) -> Any:
            return self._emit(method, method, args)

        fn = plain
    fn.__name__ = fn.__qualname__ = method
    fn.__doc__ = f"Record a ``{method}`` op."
    return fn


_NAMED = ("unary", "binary", "reduce", "arg_reduce")
for _method in SHAPE_RULES.keys() - {"activation", "from_numpy"}:  # activations record as unary ops
    setattr(CaptureBackend, _method, _recorder(_method))


def _as_refs(a: Any) -> Any:
    if isinstance(a, Sym):
        return Ref(a.ref.id)
    if isinstance(a, (list, tuple)):
        return type(a)(_as_refs(v) for v in a)
    if hasattr(a, "item") and hasattr(a, "dtype") and getattr(a, "shape", None) == ():
        return a.item()  # a numpy scalar argument
    return a


Meta = Callable[[Any], "tuple[tuple[int, ...], D.DType] | None"]


def _sym_meta(a: Any) -> tuple[tuple[int, ...], D.DType] | None:
    return (a.ref.shape, a.ref.dtype) if isinstance(a, Sym) else None


def _as_shapes(a: Any, meta: Meta) -> Any:
    m = meta(a)
    if m is not None:
        return m[0]
    if isinstance(a, list) and a and all(meta(v) is not None for v in a):
        return [meta(v)[0] for v in a]  # type: ignore[index]  # checked just above
    return a


def _first_dtype(args: Any, meta: Meta) -> D.DType | None:
    for a in args:
        m = meta(a)
        if m is not None:
            return m[1]
        if isinstance(a, (list, tuple)):
            dt = _first_dtype(a, meta)
            if dt is not None:
                return dt
    return None


def result_types(
    b: Backend, kind: str, method: str, args: tuple, meta: Meta
) -> list[tuple[tuple[int, ...], D.DType]]:
    """The shape and dtype of each result of the backend call ``method(*args)`` (``kind``: the op, which
    differs from ``method`` for unary/binary/reduce/arg_reduce), without running it: ``meta`` gives a
    tensor argument's ``(shape, dtype)`` and None for anything else. ``b`` supplies the default dtypes.
    The capture backend records by it, and the fusion decorator defers calls by it."""
    spec = op_def(kind)
    shapes = spec.out_shapes(*(_as_shapes(a, meta) for a in args))
    if spec.result == "custom":  # a burn.custom op: custom(name, tensors, attrs), its own dtype rule
        from ..custom._registry import lookup

        name, xs, attrs = args
        dtypes_in = [m[1] for m in map(meta, xs) if m is not None]
        return [(tuple(int(s) for s in shapes[0]), lookup(name).out_dtype(dtypes_in, attrs))]
    attr = next((a for a in args if isinstance(a, D.DType)), None)
    operand: D.DType | None
    if spec.result == "value":  # where: the value operands' dtype (the condition is bool)
        value = _first_dtype(args[1:], meta)
        operand = value if value is not None else _scalar_dtype(args[1], b)
    else:
        operand = _first_dtype(args, meta)
    dtypes = spec.result_dtypes(operand, b.default_int, attr)
    out = []
    for shape, dt in zip(shapes, dtypes):
        if dt is None:
            raise IrError(f"capture: {kind}: no operand gives the dtype of its result")
        out.append((tuple(int(s) for s in shape), dt))
    return out


def _scalar_dtype(value: Any, b: Backend) -> D.DType:
    if isinstance(value, bool):
        return D.bool_
    return b.default_int if isinstance(value, int) else b.default_float


def capture(
    fn: Callable[..., Any],
    inputs: Mapping[str, tuple[Sequence[int], Any]] | Sequence[tuple[Sequence[int], Any]],
    like: Any = None,
) -> Graph:
    """Record what ``fn`` does to symbolic inputs, without computing anything.

    ``inputs``: ``{name: (shape, dtype)}`` (or a list of ``(shape, dtype)``, named ``input0``...);
    ``like``: the device whose dtypes and defaults the capture mirrors (default: the default device).
    ``fn`` returns a tensor or a tuple/list of tensors: the graph's outputs. A ``burn.nn.Module`` is
    captured as its inference copy (``module.valid()``), with its weights as the graph's constants.

    >>> g = burn.ir.capture(lambda x: (x * 2).relu().sum(1), {"x": ((2, 3), "float32")})
    >>> [str(op.kind) for op in g.ops]
    ['mul', 'relu', 'sum']
    """
    from .. import _tensor as T
    from .._device import default_device
    from .._device import device as make_device

    like_dev = default_device() if like is None else (like if hasattr(like, "backend") else make_device(like))
    backend = CaptureBackend(like_dev.backend)
    backend.device = _CaptureDevice(backend, like_dev)
    if getattr(_active, "backend", None) is not None:
        raise IrError("capture: a capture is already running in this thread (captures do not nest)")
    from ..nn import Module

    if isinstance(fn, Module):  # its inference copy, its weights as the graph's constants
        fn = fn.valid().to(backend.device)
    named = (
        inputs.items() if isinstance(inputs, Mapping) else ((f"input{i}", s) for i, s in enumerate(inputs))
    )
    args = []
    for name, (shape, dtype) in named:
        dt = D.dtype(dtype)
        T._check_supported("capture", backend, dt)
        args.append(T._wrap(backend.input(name, tuple(shape), dt), backend, dt))
    _active.backend = backend
    try:
        out = fn(*args)
    finally:
        _active.backend = None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, T.Tensor) or o._b is not backend:
            raise IrError(f"capture: fn must return tensors computed from its inputs, got {type(o).__name__}")
    backend.graph.outputs = [o._p.ref for o in outs]
    backend.graph.check()
    return backend.graph


def capture_device() -> Device:
    """The device of the capture running in this thread (to create tensors on it inside the captured
    function, as graph constants); ``IrError`` when no capture runs."""
    backend = getattr(_active, "backend", None)
    if backend is None:
        raise IrError("capture_device: no capture is running in this thread")
    return backend.device


class _CaptureDevice(Device):
    """The device of captured tensors: tensors created on it (literals, ``.to(x.device)``) become
    constants of the graph. Each capture has its own; it equals only itself."""

    def __init__(self, backend: CaptureBackend, like: Device) -> None:
        super().__init__("capture")
        object.__setattr__(self, "_capture_backend", backend)
        object.__setattr__(self, "like", like)

    @property
    def backend(self) -> CaptureBackend:
        return self._capture_backend  # type: ignore[attr-defined]

    @property
    def inner(self) -> Device:
        return self

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __str__(self) -> str:
        return f"capture(like {self.like})"  # type: ignore[attr-defined]

    __repr__ = __str__
