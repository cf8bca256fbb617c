"""Recording, the first stage of fusion: every op builds a lazy ``Node`` and appends it to the *stream*
with its part of the stream's *signature*; nothing runs until the stream is flushed.

Element-wise ops (unary, binary, where, clamp, cast) are recorded as expressions (``Recording._defer``);
every other op the inner backend runs whole is recorded as a *call* (``Recording._defer_call``) with
its result's shapes and dtypes known at once from ``burn.ir``'s rules. Ops that cannot wait run at
once (``_forward``: creation, random draws, data-dependent ops), creation ops whose results are kept
and handed out again (``_constant``) among them.

The signature is flat: per node its op, compute dtype, dtype and shape, then its operands (a stream
node by its position, an input of the stream by its number, a scalar as None: the scalars themselves
are kept apart, in stream order, since kernels take them as arguments). Two streams with equal
signatures plan alike, which the programs stage (``_program.py``) uses to replay.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .._dtype import DType, bool_
from ..backend import ELEMENTWISE_BOOL_RESULT, Backend, Failed
from ..backend._vocabulary import OPS
from ..ir._capture import result_types
from ._graph import FPrim, Node, lazy_handle
from ._plan import FusionRuntime
from ._reference import ReferenceRuntime

if TYPE_CHECKING:
    from ._program import _Program

Scalar = bool | int | float
PENDING_LIMIT = 4096  # ops recorded before the stream is flushed without a read
TYPE_CACHE_LIMIT = 65536
KERNEL_CALL = "kernel"  # the call name of a node recorded by ``Fusion.launch`` (a FusedKernel of its own)
_NAMED = frozenset({"reduce", "arg_reduce"})  # methods whose first argument names the op
_MULTI_OUTPUT = frozenset(d.method for d in OPS.values() if d.outputs > 1)
# the results of creation ops ``_constant`` keeps (``full``, ``arange`` on device backends: ``_ops.py``)
CONSTANTS_KEPT = 64  # kept constants per device, the oldest dropped past this ...
CONSTANTS_MAX_BYTES = 1 << 26  # ... or past this many bytes in all (a max pool's backward zeros: 3 MiB)
CONSTANT_MAX_BYTES = 1 << 24  # larger results are made anew each time


def elementwise_dtype(op: str, dtype: DType) -> DType:
    """The result dtype of element-wise ``op`` over operands of ``dtype``: the vocabulary row's rule."""
    return bool_ if op in ELEMENTWISE_BOOL_RESULT else dtype


class Recording(Backend):
    """The stream being recorded and the op recording shared by every op of ``Fusion``.

    ``flush`` (the programs stage) runs the stream; ``_programs`` and ``_lengths`` (filled there) tell
    recording where the stream equals one already planned (the *cut*, see ``_recorded``)."""

    inner: Backend
    runtime: FusionRuntime
    _programs: dict[tuple[Any, ...], list[_Program]]  # by stream signature (``Replaying``)
    _lengths: set[int]  # the stream lengths of the programs

    def __init__(self, inner: Backend, runtime: FusionRuntime | None) -> None:
        self.inner = inner
        self.name = inner.name  # transparent: messages name the backend users picked
        self.dtypes = inner.dtypes
        self.default_float = inner.default_float
        self.default_int = inner.default_int
        self.runtime = runtime or inner.fusion_runtime() or ReferenceRuntime(inner)
        self.stats = {
            "kernels": 0,
            "fused": 0,
            "ops": 0,
            "calls": 0,
            "flushes": 0,
            "replays": 0,
            "plans": 0,
            "replans": 0,  # times the kept programs were dropped: a tuned op switched kernels
            "graphs": 0,
            "graph_launches": 0,
            "in_place": 0,  # outputs a replayed kernel wrote into a dead input (``execute_reusing``)
        }
        # host seconds in planning flushes (planning, first launches, compiling, blocking tuning) and
        # in capturing programs as device graphs: a cold start's costs, apart from the replayed steps
        self.seconds = {"plan": 0.0, "capture": 0.0}
        self._fusable: dict[tuple[str, str, DType, DType], bool] = {}
        self._types: dict[tuple[Any, ...], list[tuple[tuple[int, ...], DType]]] = {}
        self._calls: dict[str, Callable[..., Any]] = {}  # method name -> the inner backend's bound method
        self._constants: dict[tuple[Any, ...], Any] = {}  # (name, arguments) -> an inner result
        # the ambient settings calls run under (e.g. a matmul precision) are recorded with each call
        self._stateful = type(inner).call_state is not Backend.call_state
        # step boundaries for loops that mark none (``backward_begins``): whether a backward pass was
        # seen, and whether a boundary (a flush that is not only for length) came since it
        self._backward_seen = False
        self._boundary = False
        self._open()

    def flush(self) -> None:
        """Run the recorded stream (``Replaying.flush``)."""
        raise NotImplementedError

    def backward_begins(self) -> None:
        """Autodiff is about to run a backward pass over this backend. A loop that ends its steps
        (an optimizer's ``mark_step``) or reads a value each step (``loss.item()``) has cut its
        streams since the last backward; one that does neither (a hand-written SGD update with no
        read) would record steps into one long stream, cut only by length, that never repeats, so
        here the stream is run instead: every step is then the same stream (the update, the next
        forward, this backward), planned once and replayed like an optimizer's."""
        if self._backward_seen and not self._boundary:
            self.flush()
        self._backward_seen, self._boundary = True, False

    # ------------------------------------------------------------------ the stream being recorded
    def _open(self) -> None:
        self._stream: list[Node] = []  # lazy nodes in creation order
        self._sig: list[Any] = []  # the stream's signature, flat (see _defer)
        self._leaves: dict[Node, int] = {}  # computed nodes the stream reads, numbered by first read
        self._scalars: list[Any] = []  # scalar operands of element-wise nodes, in stream order
        self._cut = 0  # a stream length where the stream equals a planned one (see _recorded)

    def _recorded(self, n: int) -> None:
        """After an op joined the stream, now ``n`` nodes long: flush a long stream (longer than the
        runtime's ``stream_segment`` where it has one: a GPU runtime launching each flushed program
        without waiting runs a step's first part while the host records the rest); and where the
        stream now equals one already planned, mark the cut, so the next op first runs it (a step of a
        loop that reads nothing ends where the same step ended before, and replays)."""
        if n > (getattr(self.runtime, "stream_segment", None) or PENDING_LIMIT):
            boundary = self._boundary
            self.flush()
            self._boundary = boundary  # a flush for length is no step boundary
        elif n in self._lengths and tuple(self._sig) in self._programs:
            self._cut = n

    def _operand(self, a: Node, sig: list[Any]) -> None:
        """Append tensor operand ``a`` to the signature: a stream node by its position (>= 0), a computed
        node as -1-k, the k-th input of the stream (with its shape and dtype the first time)."""
        if a.op is not None:
            sig.append(a.pos)
            return
        leaves = self._leaves
        k = leaves.get(a)
        if k is None:
            if type(a.value) is _Failed:
                a.value.throw()
            k = leaves[a] = len(leaves)
            sig.append(-1 - k)
            sig.append(a.shape)
            sig.append(a.dtype)
        else:
            sig.append(-1 - k)

    # ------------------------------------------------------------------ element-wise ops (deferred)
    def _can(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        """Whether the runtime renders element-wise op ``name`` (cached)."""
        key = (kind, name, compute, out)
        ok = self._fusable.get(key)
        if ok is None:
            ok = self._fusable[key] = bool(self.runtime.fusable(kind, name, compute, out))
        return ok

    def _defer(
        self,
        kind: str,
        name: str,
        operands: tuple[Any, ...],
        shape: tuple[int, ...],
        dtype: DType,
        compute: DType,
    ) -> FPrim:
        """Record element-wise op ``name`` of ``kind`` over ``operands`` (the nodes of the caller's
        handles, and scalars) and return a tensor's handle on it: the hot path of every element-wise
        op (``_operand`` inlined for stream nodes)."""
        if self._cut and len(self._stream) == self._cut:
            self.flush()
        node = Node(shape, dtype, None, (kind, name), operands, compute)
        rt = self.runtime
        if node.size > rt.max_ops or node.nleaves >= rt.max_tensors:
            self.flush()  # its operands are held (by the caller's handles), so they are computed now
            node = Node(shape, dtype, None, (kind, name), operands, compute)
        self.stats["ops"] += 1
        stream = self._stream
        n = node.pos = len(stream)
        stream.append(node)
        sig = self._sig
        sig += node.op  # type: ignore[arg-type]  # lazy
        sig.append(node.compute)
        sig.append(node.dtype)
        sig.append(node.shape)
        scalars = self._scalars
        node.sbase = len(scalars)
        for a in operands:
            if type(a) is Node:
                if a.op is not None:
                    sig.append(a.pos)
                else:
                    self._operand(a, sig)
            else:
                scalars.append(a)
                sig.append(None)
        p = FPrim(node)
        node.handle = weakref.ref(p)
        self._recorded(n + 1)
        return p

    # ------------------------------------------------------------------ calls (deferred)
    def _signature_args(self, args: Any) -> tuple[Any, ...]:
        """A call's arguments (tensors as nodes) for the signature: tensors as operand numbers, lists as
        tuples."""
        out: list[Any] = []
        for a in args:
            if type(a) is Node:
                mark: list[Any] = []
                self._operand(a, mark)
                out.append(tuple(mark))
            elif isinstance(a, (list, tuple)):
                out.append(self._signature_args(a))
            else:
                out.append(a)
        return tuple(out)

    def _call_args(
        self, name: str, args: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...] | None]:
        """A call's arguments with tensor handles replaced by their nodes, the same arguments for the
        signature (``_signature_args``) and the key of its result types (``_result_types``: the
        tensors' shapes and dtypes and the other arguments; None when an argument is a list). One
        pass for the common case of tensors, scalars and tuples of numbers, the general walk for
        sequences holding tensors."""
        operands: list[Any] = []
        marks: list[Any] = []
        key: list[Any] | None = [name]
        for a in args:
            t = type(a)
            if t is FPrim:
                n = a.node
                operands.append(n)
                if key is not None:
                    key.append((n.shape, n.dtype))
                if n.op is not None:
                    marks.append((n.pos,))
                else:
                    mark: list[Any] = []
                    self._operand(n, mark)
                    marks.append(tuple(mark))
            elif t is tuple and _PLAIN.issuperset(map(type, a)):  # shapes, strides, dims
                operands.append(a)
                marks.append(a)
                if key is not None:
                    key.append(a)
            elif (t is tuple or t is list) and any(
                type(v) is FPrim or isinstance(v, (list, tuple)) for v in a
            ):
                m = _mapped([a], FPrim, _node_of)[0]
                operands.append(m)
                marks.append(self._signature_args((m,))[0])
                if t is list:
                    key = None
                elif key is not None:
                    key.append(_type_key(m))
            else:
                operands.append(a)
                marks.append(tuple(a) if t is list else a)
                if t is list:
                    key = None
                elif key is not None:
                    key.append(a)
        return tuple(operands), tuple(marks), None if key is None else tuple(key)

    def _result_types(
        self, name: str, operands: tuple[Any, ...], key: tuple[Any, ...] | None
    ) -> list[tuple[tuple[int, ...], DType]]:
        """The results' shapes and dtypes of a call (``burn.ir``'s rules), on a miss of the cache
        ``_types``, where they are kept by ``key`` (from ``_call_args``; None or unhashable: not kept)."""
        if name in _NAMED:  # reduce(op, x, ...): the rules take the op apart from the arguments
            types = result_types(self, operands[0], name, operands[1:], _node_meta)
        else:
            types = result_types(self, name, name, operands, _node_meta)
        if key is not None and len(self._types) < TYPE_CACHE_LIMIT:
            try:
                self._types[key] = types
            except TypeError:  # an unhashable argument
                pass
        return types

    def _defer_call(self, name: str, args: tuple[Any, ...]) -> Any:
        """Record a call of the inner backend's ``name`` over ``args`` in the stream: a handle on its
        result (a pair of handles for an op of two results)."""
        if self._cut and len(self._stream) == self._cut:
            self.flush()
        operands, marks, key = self._call_args(name, args)
        try:
            types = self._types[key]  # type: ignore[index]  # None: a KeyError
        except (KeyError, TypeError):  # a new key, None (not kept) or an unhashable argument
            types = self._result_types(name, operands, key)
        (shape, dtype) = types[0]
        node = _call_node(shape, dtype, name, operands)
        if self._stateful:  # the ambient settings the op is called under (e.g. a matmul precision)
            node.compute = self.inner.call_state()
            self._sig.append(node.compute)
        stream = self._stream
        node.pos = len(stream)
        stream.append(node)
        sig = self._sig
        sig += (name, marks, shape, dtype)
        self.stats["calls"] += 1
        p = FPrim(node)  # lazy_handle, inlined
        node.handle = weakref.ref(p)
        out: Any = p
        if len(types) > 1:
            handles = [p]
            last = node
            for shape2, dtype2 in types[1:]:
                twin = _call_node(shape2, dtype2, name, (node,))
                twin.pos = len(stream)
                stream.append(twin)
                last.twin = last = twin
                sig.append(dtype2)
                handles.append(lazy_handle(twin))
            out = tuple(handles)
        self._recorded(len(stream))
        return out

    # ------------------------------------------------------------------ ops run at once
    def _wrap(self, value: Any) -> FPrim:
        inner = self.inner
        return FPrim(Node(tuple(inner.shape_of(value)), inner.dtype_of(value), value))

    def _values(self, prims: Sequence[FPrim]) -> list[Any]:
        """The inner primitives of ``prims``, flushing the stream first when one is lazy."""
        for p in prims:
            if p.node.op is not None:
                self.flush()
                break
        values = [p.node.value for p in prims]
        for v in values:
            if type(v) is _Failed:
                v.throw()
        return values

    def _forward(self, name: str, args: tuple[Any, ...]) -> Any:
        """Run the inner backend's ``name`` over ``args`` at once (its tensor inputs computed first)."""
        prims = list(_flat(args, FPrim))
        if prims:
            self._values(prims)
        out = self._calls[name](*_mapped(args, FPrim, _prim_value))
        if name in _MULTI_OUTPUT:
            return tuple(self._wrap(o) for o in out)
        return self._wrap(out)

    def _constant(self, name: str, args: tuple[Any, ...]) -> FPrim:
        """Run the inner backend's creation op ``name`` once per arguments (floats told apart by their
        bits, so 0.0 and -0.0 or NaNs never mix) and hand its result out again after; on a backend
        whose primitives live in host memory, every time."""
        inner = self.inner
        if inner.host_memory:
            return self._wrap(self._calls[name](*args))  # ``_forward`` of arguments without tensors
        constants = self._constants  # key -> (value, bytes)
        key = (name, *map(_constant_key, args))
        kept = constants.get(key)
        if kept is not None:
            return self._wrap(kept[0])
        value = self._calls[name](*args)
        size = math.prod(inner.shape_of(value)) * inner.dtype_of(value).itemsize
        if size <= CONSTANT_MAX_BYTES:
            total = sum(b for _, b in constants.values()) + size
            while constants and (len(constants) >= CONSTANTS_KEPT or total > CONSTANTS_MAX_BYTES):
                total -= constants.pop(next(iter(constants)))[1]
            constants[key] = (value, size)
        return self._wrap(value)


class _Failed(Failed):
    """The value of a lazy node whose flush raised: reading it raises again, naming the first error."""

    __slots__ = ()

    def throw(self) -> None:
        raise RuntimeError(
            f"fusion: this value was never computed: a deferred op failed when the stream ran "
            f"({type(self.error).__name__}: {self.error})"
        ) from self.error


def _call_node(shape: tuple[int, ...], dtype: DType, name: str, operands: tuple[Any, ...]) -> Node:
    """A lazy node for a call of the inner backend's ``name``: a kernel boundary, so element-wise nodes
    reading it count it as one input (as a computed node)."""
    node = Node(shape, dtype)  # made computed-looking (no walk of the operands), then made lazy
    node.op = ("call", name)
    node.args = operands
    node.nleaves = 1
    return node


def _constant_key(a: Any) -> Any:
    """An argument of a creation op as part of a cache key: floats by their bits (0.0 and -0.0, or
    NaNs, are not equal keys otherwise), every value with its type (True and 1 are equal in Python)."""
    if getattr(a, "ndim", None) == 0 and hasattr(a, "item"):  # a numpy scalar
        a = a.item()
    if isinstance(a, float):
        return float, a.hex()
    return type(a), a


_PLAIN = frozenset({int, float, bool, str, type(None)})  # tuple items that hold no tensor


def _type_key(args: Any) -> Any:
    """A mapped argument (sequences holding nodes) as part of a result-type key: nodes as their shape
    and dtype, sequences as tuples."""
    if type(args) is Node:
        return (args.shape, args.dtype)
    if isinstance(args, (list, tuple)):
        return tuple(_type_key(a) for a in args)
    return args


def _mapped(args: Any, kind: type, fn: Callable[[Any], Any]) -> list[Any]:
    """``args`` with every item of type ``kind`` replaced by ``fn(item)``, inside lists and tuples too
    (a sequence is rebuilt only where it may hold one)."""
    out: list[Any] = []
    for a in args:
        if type(a) is kind:
            out.append(fn(a))
        elif isinstance(a, (list, tuple)) and any(type(v) is kind or isinstance(v, (list, tuple)) for v in a):
            out.append(type(a)(_mapped(a, kind, fn)))
        else:
            out.append(a)
    return out


def _flat(args: Any, kind: type) -> Iterator[Any]:
    """The items of type ``kind`` in ``args``, inside lists and tuples too."""
    for a in args:
        if type(a) is kind:
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _flat(a, kind)


_node_of = operator.attrgetter("node")
_value_of = operator.attrgetter("value")
_prim_value = operator.attrgetter("node.value")


def _values_of(args: Any) -> list[Any]:
    """A call's arguments with every node replaced by its computed value."""
    return _mapped(args, Node, _value_of)


def _node_meta(a: Any) -> tuple[tuple[int, ...], DType] | None:
    return (a.shape, a.dtype) if type(a) is Node else None
