"""``Fusion(inner)``: a backend decorator that records the op stream lazily, runs chains of element-wise
ops as one generated kernel and replays a repeated stream without planning it again (Burn's
burn-fusion).

Every op builds a lazy ``Node`` and launches nothing: element-wise ops (unary, activations, binary with
broadcasting and scalars, where, clamp, casts) as expressions, every other op (matmul, reductions, conv,
indexing, shape ops, ...) as a *call* the inner backend runs whole, with its result's shape and dtype
known at once from ``burn.ir``'s shape rules. A read, a sync or a long stream *flushes* the stream:

- planning (the first time a stream is seen): calls run in order; before each, the element-wise nodes it
  reads are computed; at the end, every node a tensor still holds. Element-wise work is planned as
  kernels: only values a tensor holds (or a call reads) are written, intermediates stay in registers,
  writes are grouped by shape within the runtime's binding and size limits, and each kernel's plan goes
  to the inner backend's ``FusionRuntime`` (a WGSL or CUDA renderer; backends without one run plans op by
  op). What planning ran is kept as a *program*: kernel launches and calls over stream positions.
  Where the runtime offers them (``fuse_reduce``, ``fuse_matmul``; ``BURN_FUSION_ANCHORS=0`` turns them
  off), a sum/mean/max/min over trailing dims of a lazy chain no tensor holds and no other call reads
  runs as one *reduce kernel* computing the chain (the reduce prologue; a later reader of the chain
  computes it again in its own kernel), a mean of a computed value as a reduce kernel of no ops, and a
  matmul whose product is read only by element-wise ops of its shape runs them before its store (the
  matmul epilogue: bias, activation, ...).
- replay: a stream whose signature (ops, shapes, dtypes, static arguments, which operand is which;
  not the scalar values, which kernels take as arguments) equals one already planned runs that program:
  no closure walks, no grouping, no plan lookups. A program is used only if every value it leaves
  unwritten is wanted by no tensor, and it frees each intermediate after its last read.

Creation and random ops run at once (random draws keep their order with other host draws), and so do
ops whose result depends on the data (``nms``, ``check_index``); their results enter streams as inputs.
Contract defaults made mostly of element-wise ops (softmax, leaky_relu, var, ...) run composed here
where the inner backend has no kernel of its own, so their element-wise parts fuse.

Like the GPU backends it wraps, a fusion backend takes its ops from one thread at a time.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .._dtype import DType, bool_
from ..backend import ACTIVATION_OPS, BINARY_OPS, COMPARISON_OPS, UNARY_BOOL_RESULT, Backend, broadcast_shape
from ..backend._vocabulary import OPS
from ..ir._capture import result_types
from ._graph import FPrim, Node, lazy_handle, wanted
from ._plan import FusedKernel, FusedOp, FusedReduce, FusionRuntime
from ._reference import ReferenceRuntime

if TYPE_CHECKING:
    import numpy as np

    from .._device import Device
    from .._tensor import Tensor

Scalar = bool | int | float
PENDING_LIMIT = 4096  # ops recorded before the stream is flushed without a read
PROGRAMS_PER_SIGNATURE = 4
# stream signatures whose programs are kept, the least recently run dropped past this: a loop whose
# static arguments change every step (a slice at a moving offset) would otherwise keep one per step,
# each with its plans and, on cuda, maybe a graph and its memory pool
SIGNATURES_KEPT = 256
GRAPH_AFTER = 2  # replays of a program before the runtime captures it as a graph (where it can)
# a captured graph's ``launch`` returns False when it cannot serve the stream (dropped, captured again
# later) and LATER when it cannot run now but may next time (a buffer it lent still has a reader: this
# replay runs step by step and the graph stays), at most LATER_LIMIT times in a row
LATER = "later"
LATER_LIMIT = 8
TYPE_CACHE_LIMIT = 65536

# methods with their own code here; every other op method is forwarded or composed (see __init__)
_OWN = frozenset(
    {
        "unary",
        "activation",
        "binary",
        "where",
        "clamp",
        "cast",
        "from_numpy",
        "to_numpy",
        "read_many",
        "shape_of",
        "dtype_of",
        "sync",
        "counters",
    }
)
_OP_METHODS = sorted({d.method for d in OPS.values()} - _OWN)
# contract defaults made mostly of element-wise ops: where the inner backend has no kernel of its own,
# they run composed here so their element-wise parts fuse; every other op runs on the inner backend
# (a composition of shape and index ops gains nothing here and would pay the deferral per op)
_COMPOSED_HERE = frozenset(
    {"softmax", "log_softmax", "leaky_relu", "var", "mask_fill", "tril", "triu", "one_hot"}
)
_TWO_OUTPUTS = frozenset(d.method for d in OPS.values() if d.outputs == 2)
# forwarded ops that run at once instead of joining the stream: creation and random draws (host draws
# keep their order), and ops whose result depends on the data
_EAGER = frozenset(
    {
        "full",
        "arange",
        "random_uniform",
        "random_normal",
        "random_int",
        "random_bernoulli",
        "nms",
        "check_index",
    }
)
# creation ops whose results are kept and handed out again for the same arguments on device backends
# (not ``host_memory``): a training step's seed gradient and one-hot class row are then the same array
# every step, so a captured graph reads them in place instead of copying them in, and no kernel runs
# to make them again. burn never writes a primitive in place, and the zero-copy exports
# (``burn_cuda.as_cupy``) say not to write to them.
_CONSTANTS = frozenset({"full", "arange"})
CONSTANTS_KEPT = 64  # kept constants per device, the oldest dropped past this ...
CONSTANTS_MAX_BYTES = 1 << 26  # ... or past this many bytes in all (a max pool's backward zeros: 3 MiB)
CONSTANT_MAX_BYTES = 1 << 24  # larger results are made anew each time
KERNEL_CALL = "kernel"  # the call name of a node recorded by ``Fusion.launch`` (a FusedKernel of its own)
_NAMED = frozenset({"reduce", "arg_reduce"})  # methods whose first argument names the op
_REDUCE_PROLOGUE = frozenset({"sum", "mean", "max", "min"})  # reductions a reduce kernel may run


class Fusion(Backend):
    """The fusion decorator over ``inner``; ``burn.device(name, fusion=True)`` builds one (on by
    default on GPU backends; ``fusion=False`` or ``BURN_FUSION=0`` turns it off).

    ``runtime``: the kernel generator (default: ``inner.fusion_runtime()``, else the reference
    runtime, which runs plans op by op). ``graphs``: capture repeated programs as device graphs where
    the runtime can (default: unless ``BURN_FUSION_GRAPHS=0``); False always replays step by step, each
    kernel through the inner backend (a web export records those launches). ``stats`` counts ``kernels`` launched from plans, ``fused``
    (those of two ops or more), ``ops`` (element-wise ops deferred), ``calls`` (other ops deferred),
    ``flushes``, ``replays`` (flushes that ran a program planned before) and ``plans`` (flushes that
    planned).

    >>> dev = burn.device("cpu", fusion=True)
    >>> ((burn.ones(3, device=dev) * 2).exp() + 1).shape
    (3,)
    """

    is_autodiff = False
    native_activations = ACTIVATION_OPS  # every activation reaches unary(), which fuses or forwards it

    def __init__(
        self,
        inner: Backend,
        device: Device | None = None,
        runtime: FusionRuntime | None = None,
        *,
        graphs: bool | None = None,
    ) -> None:
        if getattr(inner, "is_autodiff", False):
            raise TypeError(
                f"Fusion: the inner backend {inner!r} is an autodiff backend; autodiff wraps fusion"
            )
        self.inner = inner
        if device is not None:
            self.device = device
        self.name = inner.name  # transparent: messages name the backend users picked
        self.dtypes = inner.dtypes
        self.default_float = inner.default_float
        self.default_int = inner.default_int
        self.runtime: FusionRuntime = runtime or inner.fusion_runtime() or ReferenceRuntime(inner)
        self.stats = {
            "kernels": 0,
            "fused": 0,
            "ops": 0,
            "calls": 0,
            "flushes": 0,
            "replays": 0,
            "plans": 0,
            "graphs": 0,
            "graph_launches": 0,
            "in_place": 0,  # outputs a replayed kernel wrote into a dead input (``execute_reusing``)
        }
        self._fusable: dict[tuple[str, str, DType, DType], bool] = {}
        self._plans: dict[tuple[Any, ...], FusedKernel] = {}
        self._programs: dict[tuple[Any, ...], list[_Program]] = {}  # by stream signature
        self._lengths: set[int] = set()  # the stream lengths of the programs
        self._broadcasts: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
        self._types: dict[tuple[Any, ...], list[tuple[tuple[int, ...], DType]]] = {}
        self.replay = os.environ.get("BURN_FUSION_REPLAY", "1") != "0"
        # a runtime that captures programs as device graphs (CUDA graphs) offers capture_program
        if graphs is None:
            graphs = os.environ.get("BURN_FUSION_GRAPHS", "1") != "0"
        self._capture: Callable[..., Any] | None = (
            getattr(self.runtime, "capture_program", None) if graphs else None
        )
        # reduce kernels and matmul epilogues, where the runtime offers them (``FusionRuntime``;
        # ``BURN_FUSION_ANCHORS=0``: element-wise kernels only); looked up when a stream is planned
        self.anchors = os.environ.get("BURN_FUSION_ANCHORS", "1") != "0"
        self._fuse_reduce: Callable[..., bool] | None = None
        self._fuse_matmul: Callable[..., bool] | None = None
        self._calls: dict[str, Callable[..., Any]] = {}  # method name -> the inner backend's bound method
        self._kernels: list[FusedKernel] = []  # plans ``launch`` recorded, by their signature number
        self._rec: _Recorder | None = None  # set while a flush plans
        self._constants: dict[tuple[Any, ...], Any] = {}  # (name, arguments) -> an inner result
        self._open()
        self.binary_fns = {op: functools.partial(self.binary, op) for op in BINARY_OPS}
        base = type(inner)
        for name in _OP_METHODS:
            if name not in _COMPOSED_HERE or getattr(base, name, None) is not getattr(Backend, name, None):
                self._calls[name] = getattr(inner, name)
                eager = name in _EAGER and not (name == "check_index" and inner.deferred_index_checks)
                if name in _CONSTANTS and not inner.host_memory:
                    fn = self._constant(name)
                else:
                    fn = self._forwarder(name) if eager else self._deferrer(name)
                setattr(self, name, fn)

    def __repr__(self) -> str:
        return f"<Fusion({type(self.inner).__name__}) {self.device}>"

    # ------------------------------------------------------------------ the stream being recorded
    def _open(self) -> None:
        self._stream: list[Node] = []  # lazy nodes in creation order
        self._sig: list[Any] = []  # the stream's signature, flat (see _record)
        self._leaves: dict[Node, int] = {}  # computed nodes the stream reads, numbered by first read
        self._scalars: list[Any] = []  # scalar operands of element-wise nodes, in stream order
        self._cut = 0  # a stream length where the stream equals a planned one (see _recorded)

    def _recorded(self) -> None:
        """After an op joined the stream: flush a long stream; and where the stream now equals one
        already planned, mark the cut, so the next op first runs it (a step of a loop that reads
        nothing ends where the same step ended before, and replays)."""
        n = len(self._stream)
        if n > PENDING_LIMIT:
            self.flush()
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

    def _record(self, node: Node) -> FPrim:
        """Add lazy element-wise ``node`` to the stream and return a tensor's handle on it (the hot
        path of every element-wise op: ``_operand`` and ``_recorded`` inlined)."""
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
        for a in node.args:
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
        n += 1
        if n > PENDING_LIMIT:
            self.flush()
        elif n in self._lengths and tuple(sig) in self._programs:
            self._cut = n
        return p

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
        self, name: str, operands: tuple[Any, ...], named: bool, key: tuple[Any, ...] | None
    ) -> list[tuple[tuple[int, ...], DType]]:
        """The results' shapes and dtypes of a call (``burn.ir``'s rules), cached by ``key`` (from
        ``_call_args``; None: not cached)."""
        if key is not None:
            try:
                return self._types[key]
            except KeyError:
                pass
            except TypeError:  # an unhashable argument
                key = None
        if named:  # reduce(op, x, ...): the rules take the op apart from the arguments
            types = result_types(self, operands[0], name, operands[1:], _node_meta)
        else:
            types = result_types(self, name, name, operands, _node_meta)
        if key is not None and len(self._types) < TYPE_CACHE_LIMIT:
            self._types[key] = types
        return types

    def _deferrer(self, name: str) -> Callable[..., Any]:
        """The method recording a call of the inner backend's ``name`` in the stream."""
        named = name in _NAMED
        stateful = type(self.inner).call_state is not Backend.call_state

        def defer(*args: Any) -> Any:
            if self._cut and len(self._stream) == self._cut:
                self.flush()
            operands, marks, key = self._call_args(name, args)
            types = self._result_types(name, operands, named, key)
            (shape, dtype) = types[0]
            node = _call_node(shape, dtype, name, operands)
            if stateful:  # the ambient settings the op is called under (e.g. a matmul precision)
                node.compute = self.inner.call_state()
                self._sig.append(node.compute)
            stream = self._stream
            node.pos = len(stream)
            stream.append(node)
            sig = self._sig
            sig += (name, marks, shape, dtype)
            self.stats["calls"] += 1
            p = lazy_handle(node)
            out: Any = p
            if len(types) == 2:
                shape2, dtype2 = types[1]
                twin = _call_node(shape2, dtype2, name, (node,))
                twin.pos = len(stream)
                stream.append(twin)
                node.twin = twin
                sig.append(dtype2)
                out = (p, lazy_handle(twin))
            n = len(stream)  # _recorded, inlined (the hot path of every call)
            if n > PENDING_LIMIT:
                self.flush()
            elif n in self._lengths and tuple(sig) in self._programs:
                self._cut = n
            return out

        defer.__name__ = name
        return defer

    # ------------------------------------------------------------------ values in and out
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

    def _forwarder(self, name: str) -> Callable[..., Any]:
        """The method running the inner backend's ``name`` at once (its tensor inputs computed first)."""
        method = self._calls[name]
        pair = name in _TWO_OUTPUTS

        def forward(*args: Any) -> Any:
            prims = list(_flat(args, FPrim))
            if prims:
                self._values(prims)
            out = method(*_mapped(args, FPrim, _prim_value))
            if pair:
                return self._wrap(out[0]), self._wrap(out[1])
            return self._wrap(out)

        forward.__name__ = name
        return forward

    def _constant(self, name: str) -> Callable[..., Any]:
        """The method running the inner backend's creation op ``name`` once per arguments (see
        ``_CONSTANTS``; floats told apart by their bits, so 0.0 and -0.0 or NaNs never mix)."""
        method = self._calls[name]
        constants = self._constants  # key -> (value, bytes)
        inner = self.inner

        def create(*args: Any) -> Any:
            key = (name, *map(_constant_key, args))
            kept = constants.get(key)
            if kept is not None:
                return self._wrap(kept[0])
            value = method(*args)
            size = math.prod(inner.shape_of(value)) * inner.dtype_of(value).itemsize
            if size <= CONSTANT_MAX_BYTES:
                total = sum(b for _, b in constants.values()) + size
                while constants and (len(constants) >= CONSTANTS_KEPT or total > CONSTANTS_MAX_BYTES):
                    total -= constants.pop(next(iter(constants)))[1]
                constants[key] = (value, size)
            return self._wrap(value)

        create.__name__ = name
        return create

    def from_numpy(self, array: np.ndarray, dtype: DType) -> FPrim:
        return self._wrap(self.inner.from_numpy(array, dtype))

    def to_numpy(self, x: FPrim) -> np.ndarray:
        return self.inner.to_numpy(self._values([x])[0])

    def read_many(self, xs: Sequence[FPrim]) -> list[np.ndarray]:
        return self.inner.read_many(self._values(xs))

    def shape_of(self, x: FPrim) -> tuple[int, ...]:
        return x.node.shape

    def dtype_of(self, x: FPrim) -> DType:
        return x.node.dtype

    def call_state(self) -> Any:
        return self.inner.call_state()

    def call_state_scope(self, state: Any) -> AbstractContextManager[Any]:
        return self.inner.call_state_scope(state)

    def sync(self) -> None:
        self.flush()
        self.inner.sync()

    def counters(self) -> dict[str, int]:
        counts = dict(self.inner.counters())
        counts["fused"] = counts.get("fused", 0) + self.stats["fused"]
        return counts

    def inner_prim(self, p: FPrim) -> Any:
        """The inner backend's primitive of ``p`` (computed first when it is lazy)."""
        return self._values([p])[0]

    def from_inner(self, value: Any) -> FPrim:
        """A handle on an inner primitive (interop: arrays another library made)."""
        return self._wrap(value)

    def fusion_runtime(self) -> FusionRuntime | None:
        return None  # fusion does not stack on itself

    # ------------------------------------------------------------------ flush: replay or plan
    def flush(self) -> None:
        """Run the recorded stream: every call, and every element-wise op whose value a tensor holds."""
        stream = self._stream
        if not stream:
            return
        sig, leaves, scalars = self._sig, list(self._leaves), self._scalars
        self._open()
        self.stats["flushes"] += 1
        try:
            key: tuple[Any, ...] | None = tuple(sig) if self.replay else None
            try:
                programs = self._programs.get(key)  # type: ignore[arg-type]  # a tuple
            except TypeError:  # an unhashable static argument: plan, and keep no program
                programs, key = None, None
            for program in programs or ():  # none without a key
                if program.usable(stream):
                    self.stats["replays"] += 1
                    program.used = self.stats["flushes"]
                    self._replay(program, stream, leaves, scalars)
                    return
            self.stats["plans"] += 1
            rec = self._rec = _Recorder(stream, leaves, scalars) if key is not None else None
            try:
                self._plan_stream(stream)
            finally:
                self._rec = None
            if rec is not None and key is not None:
                # a few programs per signature: the same ops with different values held afterwards
                kept = self._programs.setdefault(key, [])
                program = rec.program()
                program.used = self.stats["flushes"]
                kept.insert(0, program)
                del kept[PROGRAMS_PER_SIGNATURE:]
                self._lengths.add(len(stream))
                if len(self._programs) > SIGNATURES_KEPT:
                    self._forget_oldest()
        except BaseException as error:
            failed = _Failed(error)
            for n in stream:
                if n.op is not None:
                    n.done(failed)
            raise

    def _forget_oldest(self) -> None:
        """Drop the programs of the signature run least recently (``SIGNATURES_KEPT``)."""
        programs = self._programs
        oldest = min(programs, key=lambda k: max(p.used for p in programs[k]))
        del programs[oldest]
        self._lengths = {p.length for kept in programs.values() for p in kept}

    def _replay(self, program: _Program, stream: list[Node], leaves: list[Node], scalars: list[Any]) -> None:
        """Run ``program`` again: as a graph the runtime captured (one launch), when it can capture
        programs and this one has repeated; else step by step. A graph whose launch declines (an
        input it reads in place changed) is dropped, and the program is captured again later; one
        that cannot run now (``LATER``) stays, and this replay runs step by step."""
        capture = self._capture
        if capture is None or program.graph is False:
            program.run(self, stream, leaves, scalars)
            return
        if program.graph is not None:
            launched = program.graph.launch(stream, leaves, scalars)
            if launched is LATER and program.later < LATER_LIMIT:
                program.later += 1
                program.run(self, stream, leaves, scalars)
                return
            if launched is not False and launched is not LATER:
                program.later = 0
                self.stats["graph_launches"] += 1
                return
            program.graph, program.runs, program.later = None, 0, 0
        program.runs += 1
        if program.runs < GRAPH_AFTER:
            program.run(self, stream, leaves, scalars)
            # the inputs of the replay just before the capture, held until the capture: one that is the
            # same value then (a weight in inference) may be read in place (ids could be reused)
            program.leaf_values = [leaf.value for leaf in leaves] if program.runs + 1 == GRAPH_AFTER else None
            return
        # the runtime runs this stream and captures the program (None: it cannot be captured)
        program.graph = capture(self, program, stream, leaves, scalars) or False
        program.leaf_values = None
        self.stats["graphs"] += program.graph is not False

    def _plan_stream(self, stream: list[Node]) -> None:
        """Plan and run ``stream`` (the first time its signature is seen), recording what ran."""
        rec = self._rec
        rt = self.runtime
        self._fuse_reduce = getattr(rt, "fuse_reduce", None) if self.anchors else None
        self._fuse_matmul = getattr(rt, "fuse_matmul", None) if self.anchors else None
        readers = _users(stream)
        users = readers if self._fuse_reduce or self._fuse_matmul else None
        for n in stream:
            if n.op is None or n.op[0] != "call":
                continue  # computed by now, or element-wise (planned when something reads it)
            if users is not None:
                name = n.op[1]
                if name == "reduce" and self._fused_reduce(n, users, stream):
                    continue
            lazy = [a for a in _flat(n.args, Node) if a.op is not None]
            if lazy:
                self._execute(lazy)
            if n.op[1] == KERNEL_CALL:
                self._run_kernel_call(n, stream)
                continue
            if users is not None and n.op[1] == "matmul" and self._fused_matmul(n, users, stream):
                continue
            if rec is not None:
                rec.call(n)  # before it runs: running drops its operands
            self._run_call(n)
            # a result nothing in the stream reads and no tensor holds (a call run for its time alone)
            # goes now, not with the stream: a long stream of them held every one (a benchmark's
            # 4,096 unread 2048^2 products, 86 GB)
            for out in (n, n.twin):
                if out is not None and out not in readers and not wanted(out):
                    out.done(None)
        targets = [n for n in stream if n.op is not None and wanted(n)]
        if targets:
            self._execute(targets)

    def _run_call(self, n: Node) -> None:
        """Run lazy call ``n`` (its operands computed) under the settings it was called in."""
        method = self._calls[n.op[1]]  # type: ignore[index]  # a lazy call
        if n.compute is None:
            out = method(*_values_of(n.args))
        else:
            with self.inner.call_state_scope(n.compute):
                out = method(*_values_of(n.args))
        twin = n.twin
        if twin is None:
            n.done(out)
        else:
            n.done(out[0])
            twin.done(out[1])

    def _called_now(self, n: Node) -> bool:
        """Whether call ``n`` was recorded under the ambient settings in force now (``call_state``),
        so a kernel run now may stand in for it."""
        return n.compute is None or n.compute == self.inner.call_state()

    def _fused_reduce(self, n: Node, users: dict[Node, list[Node]], stream: list[Node]) -> bool:
        """Run reduce call ``n`` as a reduce kernel computing the element-wise chain it reads (the
        reduce prologue), where the chain is lazy, no tensor holds its result, no other call reads
        that and the runtime has the kernel; False (nothing run) otherwise. The element-wise chain
        reading the result (the reduce epilogue, ``_post_chain``) runs in the same kernel. A
        reduction called under ambient settings other than the ones in force now (``call_state``:
        burn-cuda's matmul precision, recorded with every call) runs as recorded, under them."""
        fuse = self._fuse_reduce
        args: tuple[Any, ...] = n.args
        op, x, dims, keepdim = args
        if (
            fuse is None
            or not self._called_now(n)
            or op not in _REDUCE_PROLOGUE
            or type(x) is not Node
            or not x.dtype.is_float
            or n.dtype is not x.dtype
        ):
            return False
        if x.op is None:  # computed: a reduce kernel of no ops still saves a mean's divide
            if op != "mean" or type(x.value) is _Failed:
                return False
        elif (
            x.op[0] == "call"
            or wanted(x)
            or any(u.op is not None and u.op[0] == "call" and u is not n for u in users.get(x, ()))
        ):
            return False
        rank = len(x.shape)
        dims = tuple(dims)
        if not dims or dims != tuple(range(rank - len(dims), rank)) or not fuse(op, n.dtype, x.shape, dims):
            return False
        order = _closure([x]) if x.op is not None else []
        held = [m for m in order if wanted(m)]
        if held:  # values a tensor holds are written anyway: by a kernel of their own, first
            self._execute(held)
            order = _closure([x])
        if len(order) > self.runtime.max_ops:
            return False
        red = FusedReduce(op, dims, bool(keepdim))
        chain = self._post_chain(n, users, stream) if getattr(self.runtime, "reduce_epilogues", False) else []
        while chain:  # too many bindings or ops: a shorter prefix of the epilogue
            part = set(chain)
            stores = [v for v in (n, *chain) if wanted(v) or any(u not in part for u in users.get(v, ()))]
            if len(order) + len(chain) <= self.runtime.max_ops and self._launch(
                [x], order, reduce=(n, red), post=(chain, stores or [n])
            ):
                if n not in stores:
                    n.done(None)  # never written: every reader is in the epilogue
                return True
            chain.pop()
        return self._launch([x], order, reduce=(n, red))

    def _post_chain(self, n: Node, users: dict[Node, list[Node]], stream: list[Node]) -> list[Node]:
        """The element-wise nodes after reduce call ``n`` that a reduce kernel can run on each result:
        of the result's shape, dtype and compute dtype (float), reading ``n``, each other, scalars
        and computed values only (in stream order)."""
        if not users.get(n):
            return []
        chain: list[Node] = []
        inside = {n}
        for u in stream[n.pos + 1 :]:
            if (
                u.op is None
                or u.op[0] == "call"
                or u.shape != n.shape
                or u.dtype is not n.dtype
                or u.compute is not n.dtype
            ):
                continue
            args = [a for a in u.args if type(a) is Node]
            if any(a in inside for a in args) and all(
                a in inside or (a.op is None and a.dtype is n.dtype and type(a.value) is not _Failed)
                for a in args
            ):
                chain.append(u)
                inside.add(u)
        return chain

    def _fused_matmul(self, m: Node, users: dict[Node, list[Node]], stream: list[Node]) -> bool:
        """Run matmul call ``m`` (its operands computed) with the element-wise chain that consumes its
        product applied before the store (the matmul epilogue: a bias, an activation, an optimizer's
        update of a weight gradient), where the runtime has the kernel; False (nothing run)
        otherwise. The chain is the product's readers of its shape whose other operands are computed
        or element-wise over computed values (and their readers of the same kind); the product is
        written too only where a tensor holds it or something outside the chain reads it. Too many
        bindings or ops: a shorter prefix of the chain. A matmul called under ambient settings other
        than the ones in force now (``call_state``) runs as recorded, so ``fuse_matmul`` judges under
        the settings of the call (a replay has the same ones: they are part of the signature)."""
        fuse = self._fuse_matmul
        readers = users.get(m)
        if fuse is None or not readers or m.twin is not None or not self._called_now(m):
            return False
        chain: list[Node] = []
        inside = {m}
        ready: dict[Node, bool] = {}
        for u in stream[m.pos + 1 :]:
            if u.op is None or u.op[0] == "call" or u.shape != m.shape:
                continue
            args = [a for a in u.args if type(a) is Node]
            if any(a in inside for a in args) and all(a in inside or _ready(a, ready) for a in args):
                chain.append(u)
                inside.add(u)
        if not chain:
            return False
        lhs, rhs = m.args
        if not fuse(lhs.value, rhs.value):  # type: ignore[union-attr]  # computed operands
            return False
        limit = self.runtime.max_ops
        while chain:
            part = set(chain)
            outs = [u for u in chain if wanted(u) or any(v not in part for v in users.get(u, ()))]
            if outs:
                product = wanted(m) or any(v not in part for v in readers)
                if product:  # written by the kernel too
                    outs.insert(0, m)
                order = [o for o in _closure(outs) if o is not m]
                if len(order) <= limit and self._launch(outs, order, matmul=m):
                    if not product:
                        m.done(None)  # never written: every reader is computed
                    return True
            chain.pop()
        return False

    # ------------------------------------------------------------------ element-wise (deferred)
    def _can(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        key = (kind, name, compute, out)
        ok = self._fusable.get(key)
        if ok is None:
            ok = self._fusable[key] = bool(self.runtime.fusable(kind, name, compute, out))
        return ok

    def _defer(
        self,
        kind: str,
        name: str,
        args: tuple[Any, ...],
        shape: tuple[int, ...],
        dtype: DType,
        compute: DType,
    ) -> FPrim:
        if self._cut and len(self._stream) == self._cut:
            self.flush()
        operands = tuple([a.node if type(a) is FPrim else a for a in args])
        node = Node(shape, dtype, None, (kind, name), operands, compute)
        rt = self.runtime
        if node.size > rt.max_ops or node.nleaves >= rt.max_tensors:
            self.flush()  # its operands are held (by ``args``), so they are computed now
            node = Node(shape, dtype, None, (kind, name), operands, compute)
        self.stats["ops"] += 1
        return self._record(node)

    def unary(self, op: str, x: FPrim) -> FPrim:
        dt = x.node.dtype
        out = bool_ if op in UNARY_BOOL_RESULT else dt
        if self._can("unary", op, dt, out):
            return self._defer("unary", op, (x,), x.node.shape, out, dt)
        inner = self.inner
        if op in ACTIVATION_OPS and op not in inner.native_activations:
            from ..backend._activation_defaults import ACTIVATION_DEFAULTS

            return ACTIVATION_DEFAULTS[op](self, x)  # its pieces may fuse
        return self._wrap(inner.unary(op, self._values([x])[0]))

    def binary(self, op: str, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        if type(a) is FPrim:
            dt = a.node.dtype
            shape = a.node.shape
            if type(b) is FPrim and b.node.shape != shape:
                key = (shape, b.node.shape)
                shape = self._broadcasts.get(key)  # type: ignore[assignment]  # filled just below
                if shape is None:
                    shape = broadcast_shape(*key)
                    if len(self._broadcasts) < TYPE_CACHE_LIMIT:
                        self._broadcasts[key] = shape
        else:
            assert type(b) is FPrim, "binary: one operand is a tensor (the frontend's contract)"
            dt, shape = b.node.dtype, b.node.shape
        out = bool_ if op in COMPARISON_OPS else dt
        if self._can("binary", op, dt, out):
            return self._defer("binary", op, (a, b), shape, out, dt)
        return self._wrap(self.inner.binary(op, *_eager(self, (a, b))))

    def where(self, cond: FPrim, a: FPrim | Scalar, b: FPrim | Scalar) -> FPrim:
        tensors = [t for t in (a, b) if type(t) is FPrim]
        if tensors:
            dt = tensors[0].node.dtype
            shape = broadcast_shape(cond.node.shape, *(t.node.shape for t in tensors))
            if self._can("where", "where", dt, dt):
                return self._defer("where", "where", (cond, a, b), shape, dt, dt)
        return self._wrap(self.inner.where(*_eager(self, (cond, a, b))))

    def clamp(self, x: FPrim, lo: float | int | None, hi: float | int | None) -> FPrim:
        dt = x.node.dtype
        if lo is None or hi is None or not self._can("clamp", "clamp", dt, dt):
            return super().clamp(x, lo, hi)  # maximum/minimum: deferred where they can be
        return self._defer("clamp", "clamp", (x, lo, hi), x.node.shape, dt, dt)

    def cast(self, x: FPrim, dtype: DType) -> FPrim:
        src = x.node.dtype
        if dtype is src:
            return x
        if self._can("cast", dtype.name, src, dtype):
            return self._defer("cast", dtype.name, (x,), x.node.shape, dtype, src)
        return self._wrap(self.inner.cast(self._values([x])[0], dtype))

    # ------------------------------------------------------------------ whole kernels
    def launch(self, plan: FusedKernel, inputs: Sequence[FPrim], scalars: Sequence[Scalar]) -> list[FPrim]:
        """Record ``plan`` (an element-wise kernel with one output or several) over ``inputs`` as one
        node of the stream: it runs as one kernel of its own when the stream is planned, and replays
        like any other (its scalars are arguments, not part of the signature). Code that knows a whole
        update (an optimizer's step of one param) records it here at the cost of one op instead of a
        dozen. Where the runtime cannot render an op of the plan, or the plan needs more bindings or
        ops than a kernel may have, the plan's ops are recorded one by one instead (and may fuse with
        their neighbours)."""
        ok = plan.cache.get(self)
        if ok is None:
            rt = self.runtime
            ok = (
                plan.reduce is None
                and not plan.matmul
                and len(plan.inputs) + len(plan.outputs) <= rt.max_tensors
                and len(plan.ops) <= rt.max_ops
                and all(self._can(o.kind, o.name, o.compute, o.out) for o in plan.ops)
            )
            plan.cache[self] = ok
            if ok:
                self._kernels.append(plan)  # numbered for the signature; kept, so the number stays its own
                plan.cache[(self, "number")] = len(self._kernels) - 1
        if len(inputs) != len(plan.inputs) or len(scalars) != len(plan.scalars):
            raise ValueError(
                f"Fusion.launch: the plan takes {len(plan.inputs)} tensors and {len(plan.scalars)} "
                f"scalars, got {len(inputs)} and {len(scalars)}"
            )
        shape = plan.shape
        for i, (p, dt) in enumerate(zip(inputs, plan.inputs)):
            n = p.node
            if n.dtype is not dt or (n.shape != shape and not _broadcasts_to(n.shape, shape)):
                raise ValueError(
                    f"Fusion.launch: input {i} is {n.dtype.name}{list(n.shape)}, the plan expects "
                    f"{dt.name} broadcasting to {list(shape)}"
                )
        if not ok:
            return ReferenceRuntime(self).execute(plan, list(inputs), list(scalars))
        if self._cut and len(self._stream) == self._cut:
            self.flush()
        operands = [p.node for p in inputs]
        dtypes = plan.out_dtypes()
        first = _call_node(shape, dtypes[0], KERNEL_CALL, (*operands, *scalars))
        first.compute = plan
        stream, sig = self._stream, self._sig
        sig.append(KERNEL_CALL)
        sig.append(plan.cache[(self, "number")])
        for a in operands:
            self._operand(a, sig)
        first.sbase = len(self._scalars)
        self._scalars += scalars
        first.pos = len(stream)
        stream.append(first)
        out = [lazy_handle(first)]
        for dt in dtypes[1:]:  # the other outputs follow it in the stream; it computes them
            n = _call_node(shape, dt, KERNEL_CALL, (first,))
            n.pos = len(stream)
            stream.append(n)
            out.append(lazy_handle(n))
        self.stats["calls"] += 1
        self._recorded()
        return out

    def _run_kernel_call(self, n: Node, stream: list[Node]) -> None:
        """Run a node ``launch`` recorded (its inputs computed): the plan's kernel, writing its outputs
        (the node and the ones after it in the stream)."""
        plan: FusedKernel = n.compute
        k = len(plan.inputs)
        operands: list[Node] = n.args[:k]  # type: ignore[assignment]  # nodes, then the scalars
        values = self.runtime.execute(plan, [a.value for a in operands], list(n.args[k:]))
        outs = stream[n.pos : n.pos + len(values)]
        if self._rec is not None:
            self._rec.kernel(plan, operands, [n], outs)
        for node, value in zip(outs, values):
            node.done(value)
        self.stats["kernels"] += 1
        if plan.fused:
            self.stats["fused"] += 1

    # ------------------------------------------------------------------ planning
    def _execute(self, targets: list[Node]) -> None:
        """Compute ``targets`` (lazy nodes) and every lazy node behind them that a tensor still holds."""
        order = _closure(targets)
        outs = set(targets)
        outs.update(n for n in order if wanted(n))
        groups: dict[tuple[int, ...], list[Node]] = {}
        for n in order:
            if n in outs:
                groups.setdefault(n.shape, []).append(n)
        if len(groups) == 1:  # the targets are in the one group, so its closure is ``order``
            (group,) = groups.values()
            if not self._launch(group, order):
                self._run_group(group)
            return
        # an element-wise op's shape never has fewer elements or dims than its operands': this order
        # runs every group after the groups its inputs come from
        for shape in sorted(groups, key=lambda s: (math.prod(s), len(s))):
            self._run_group(groups[shape])

    def _run_group(self, outs: list[Node]) -> None:
        """Launch kernels writing ``outs`` (lazy nodes of one shape, in creation order): one kernel when
        the runtime's binding limit allows, else greedy chunks."""
        outs = [o for o in outs if o.op is not None]  # a split below may have computed some
        if not outs:
            return
        if self._launch(outs):
            return
        limit = self.runtime.max_tensors
        chunk: list[Node] = []
        reads: set[Node] = set()
        for o in outs:
            if o.op is None:
                continue
            mine = _reads([o])
            while len(mine) + 1 > limit:  # too many inputs for one kernel: compute a part first
                self._execute([max(_lazy_args(o), key=lambda a: len(_reads([a])))])
                mine = _reads([o])
            if chunk and len(reads | mine) + len(chunk) + 1 > limit:
                self._launch(chunk)
                chunk, reads = [], set()
                mine = _reads([o])
            chunk.append(o)
            reads |= mine
        if chunk:
            self._launch(chunk)

    def _launch(
        self,
        outs: list[Node],
        order: list[Node] | None = None,
        reduce: tuple[Node, FusedReduce] | None = None,
        matmul: Node | None = None,
        post: tuple[list[Node], list[Node]] | None = None,
    ) -> bool:
        """Run one kernel writing ``outs``; False (nothing run) when it would need too many bindings.
        ``order``: the closure of ``outs`` when the caller has it. ``reduce``: (the reduce call, its
        reduction): a reduce kernel whose one output ``outs[0]`` is reduced into the call's node.
        ``matmul``: a matmul call (its operands computed) whose product the ops read as input 0.
        ``post``: with ``reduce``, (the epilogue's nodes, the nodes it stores: the call's and theirs)."""
        if order is None:
            order = _closure(outs)
        # one walk builds the plan's signature: inputs as -1-k, ops by position, scalars as None in
        # order (each kind has a fixed arity); equal signatures share one FusedKernel and so the
        # runtime's compiled kernel: a repeated step plans nothing beyond this walk
        inputs: dict[Node, int] = {}
        scalars: list[Scalar] = []
        scalar_dtypes: list[DType] = []
        number: dict[Node, int] = {}
        sig: list[Any] = [outs[0].shape]
        if matmul is not None:
            inputs[matmul] = 0
            sig.append("matmul")
        elif reduce is not None:
            sig.append(reduce[1])
            if outs[0].op is None:  # a reduce kernel of no ops: it reduces its input
                inputs[outs[0]] = 0
        for j, n in enumerate(order):
            number[n] = j
            sig += n.op  # type: ignore[arg-type]  # lazy
            sig.append(n.compute)
            sig.append(n.dtype)
            for a in n.args:
                if type(a) is Node:
                    if a.op is None or a is matmul:
                        k = inputs.get(a)
                        if k is None:
                            k = inputs[a] = len(inputs)
                        sig.append(-1 - k)
                    else:
                        sig.append(number[a])
                else:
                    scalars.append(a)  # type: ignore[arg-type]  # not a Node: a scalar
                    scalar_dtypes.append(n.compute)
                    sig.append(None)
        stored = len(outs)
        if post is not None:  # the epilogue: the reduced value "R", its ops by position, scalars
            chain, stores = post
            sig.append("post")
            place = {n: j for j, n in enumerate(chain)}
            for u in chain:
                sig += u.op  # type: ignore[arg-type]  # lazy
                for a in u.args:
                    if type(a) is Node:
                        if a in place:
                            sig.append(("p", place[a]))
                        elif a.op is not None:
                            sig.append("R")  # the reduce call
                        else:
                            k = inputs.get(a)
                            if k is None:
                                k = inputs[a] = len(inputs)
                            sig.append(-1 - k)
                    else:
                        scalars.append(a)  # type: ignore[arg-type]  # not a Node: a scalar
                        scalar_dtypes.append(u.compute)
                        sig.append(None)
            sig += ["R" if v not in place else place[v] for v in stores]
            stored = len(stores)
        if len(inputs) + stored + (matmul is not None) > self.runtime.max_tensors:
            return False
        sig += [i.dtype for i in inputs]
        sig += [number[o] if o in number else -1 - inputs[o] for o in outs]
        key = tuple(sig)
        plan = self._plans.get(key)
        if plan is None:
            red = None if reduce is None else reduce[1]
            if post is not None and red is not None:
                red = _post_reduce(red, order, inputs, len(scalar_dtypes), post)
            plan = self._plans[key] = _make_plan(order, inputs, scalar_dtypes, outs, red, matmul is not None)
        operands = list(inputs)
        if matmul is not None:
            operands[:1] = [a for a in matmul.args if type(a) is Node]  # the product's operands
        values = self.runtime.execute(plan, [i.value for i in operands], scalars)
        written = outs if reduce is None else [reduce[0]] if post is None else post[1]
        if self._rec is not None:
            self._rec.kernel(plan, operands, order if post is None else [*order, *post[0]], written)
        for node, value in zip(written, values):
            node.done(value)
        self.stats["kernels"] += 1
        if plan.fused:
            self.stats["fused"] += 1
        return True


def _make_plan(
    order: list[Node],
    inputs: dict[Node, int],
    scalar_dtypes: list[DType],
    outs: list[Node],
    reduce: FusedReduce | None = None,
    matmul: bool = False,
) -> FusedKernel:
    """The FusedKernel of one launch: values numbered inputs, scalars, then ops (``_plan``)."""
    first = len(inputs) + len(scalar_dtypes)
    number = {n: first + j for j, n in enumerate(order)}
    ops = _fused_ops(order, lambda a: inputs[a] if a in inputs else number[a], len(inputs))
    return FusedKernel(
        outs[0].shape,
        tuple(i.dtype for i in inputs),
        tuple(scalar_dtypes),
        tuple(ops),
        tuple(number[o] if o in number else inputs[o] for o in outs),
        reduce,
        matmul,
    )


def _fused_ops(nodes: list[Node], value: Callable[[Node], int], scalar: int) -> list[FusedOp]:
    """The ``FusedOp`` of each lazy element-wise node: node operands numbered by ``value``, scalar
    operands numbered in order from ``scalar``."""
    ops = []
    for n in nodes:
        args = []
        for a in n.args:
            if type(a) is Node:
                args.append(value(a))
            else:
                args.append(scalar)
                scalar += 1
        kind, name = n.op  # type: ignore[misc]  # lazy
        ops.append(FusedOp(kind, name, n.compute, n.dtype, tuple(args)))
    return ops


def _post_reduce(
    red: FusedReduce,
    order: list[Node],
    inputs: dict[Node, int],
    n_scalars: int,
    post: tuple[list[Node], list[Node]],
) -> FusedReduce:
    """``red`` with its epilogue (``FusedReduce.post``): value numbers as ``_make_plan`` gives the
    plan (inputs, scalars, the ops of ``order``), then the reduced value, then the chain's ops; the
    chain's scalars are the last of the plan's."""
    chain, stores = post
    reduced = len(inputs) + n_scalars + len(order)
    number = {n: reduced + 1 + j for j, n in enumerate(chain)}
    first_scalar = len(inputs) + n_scalars - sum(1 for u in chain for a in u.args if type(a) is not Node)
    ops = _fused_ops(
        chain, lambda a: number[a] if a in number else inputs[a] if a.op is None else reduced, first_scalar
    )
    written = tuple(number.get(v, reduced) for v in stores)
    return FusedReduce(red.op, red.dims, red.keepdim, tuple(ops), written)


def _users(stream: list[Node]) -> dict[Node, list[Node]]:
    """The readers of each lazy node of ``stream`` (element-wise nodes and calls), in stream order."""
    users: dict[Node, list[Node]] = {}
    for u in stream:
        if u.op is None:
            continue
        for a in u.args if u.op[0] != "call" else _flat(u.args, Node):
            if type(a) is Node and a.op is not None:
                users.setdefault(a, []).append(u)
    return users


def _ready(a: Node, memo: dict[Node, bool]) -> bool:
    """Whether ``a`` is computed, or element-wise over computed values only (so a kernel can compute
    it from its inputs)."""
    if a.op is None:
        return True
    ok = memo.get(a)
    if ok is None:
        ok = a.op[0] != "call" and all(_ready(b, memo) for b in a.args if type(b) is Node)
        memo[a] = ok
    return ok


def _seq(n: Node) -> int:
    return n.seq


def _closure(roots: Sequence[Node]) -> list[Node]:
    """The lazy nodes behind ``roots`` (lazy themselves), in creation order: each after its operands."""
    seen: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for a in n.args:
            if type(a) is Node and a.op is not None and a not in seen:
                stack.append(a)
    return sorted(seen, key=_seq)


def _reads(roots: Sequence[Node]) -> set[Node]:
    """The computed nodes the expressions of ``roots`` read."""
    reads: set[Node] = set()
    for n in _closure(roots):
        for a in n.args:
            if type(a) is Node and a.op is None:
                reads.add(a)
    return reads


def _lazy_args(n: Node) -> list[Node]:
    return [a for a in n.args if type(a) is Node and a.op is not None]


def launch(plan: FusedKernel, inputs: Sequence[Tensor], scalars: Sequence[Scalar] = ()) -> list[Tensor]:
    """Run ``plan`` (an element-wise kernel with one output or several; see ``FusedKernel``) over
    ``inputs`` (tensors of one device, in the plan's input order, each broadcasting to its shape) and
    ``scalars``; one tensor per output. On a fusion device the whole plan is one node of the stream
    and runs as one kernel (``Fusion.launch``); elsewhere, and on autodiff devices (so gradients
    flow), its ops run one by one. The optimizers run each param's update through it.

    >>> f32 = burn.float32
    >>> ops = (FusedOp("binary", "mul", f32, f32, (0, 2)), FusedOp("binary", "add", f32, f32, (3, 1)))
    >>> plan = FusedKernel((2,), (f32, f32), (f32,), ops, (4, 3))   # (a * s + b, a * s)
    >>> dev = burn.device("cpu", fusion=True)
    >>> a, b = burn.tensor([1.0, 2.0], device=dev), burn.tensor([10.0, 20.0], device=dev)
    >>> [t.tolist() for t in burn.fusion.launch(plan, [a, b], [3.0])]
    [[13.0, 26.0], [3.0, 6.0]]
    """
    from .._tensor import Tensor, _wrap

    if not inputs or any(type(t) is not Tensor for t in inputs):
        raise TypeError("burn.fusion.launch: inputs must be a non-empty sequence of burn Tensors")
    b = inputs[0]._b
    if any(t._b is not b for t in inputs):
        raise ValueError(
            f"burn.fusion.launch: inputs must share one device, got {sorted({str(t.device) for t in inputs})}"
        )
    prims = [t._p for t in inputs]
    if isinstance(b, Fusion):
        outs = b.launch(plan, prims, scalars)
    else:
        runtime = _REFERENCE.get(b)
        if runtime is None:
            runtime = _REFERENCE[b] = ReferenceRuntime(b)
        if len(prims) != len(plan.inputs) or len(scalars) != len(plan.scalars):
            raise ValueError(
                f"burn.fusion.launch: the plan takes {len(plan.inputs)} tensors and {len(plan.scalars)} "
                f"scalars, got {len(prims)} and {len(scalars)}"
            )
        outs = runtime.execute(plan, prims, list(scalars))
    return [_wrap(p, b, dt) for p, dt in zip(outs, plan.out_dtypes())]


_REFERENCE: weakref.WeakKeyDictionary[Backend, ReferenceRuntime] = weakref.WeakKeyDictionary()


def mark_step(device: Any) -> None:
    """End a step of a loop on ``device`` (a device or its name): the op stream fusion recorded so far
    is launched now, without waiting for the device, so every step is one stream, planned once and then
    replayed. The optimizers call it after each update, so training loops need nothing; an inference
    loop that reads nothing may call it after each batch. A device without fusion ignores it.

    >>> dev = burn.device("cpu", fusion=True)
    >>> y = burn.ones(3, device=dev) * 2
    >>> burn.fusion.mark_step(dev)  # launched; reading y now waits for nothing more
    """
    from .._device import device as as_device

    b: Any = as_device(device).backend
    while b is not None:
        if isinstance(b, Fusion):
            b.flush()
            return
        mark = getattr(b, "mark_step", None)
        if mark is not None:  # a backend that passes the mark on (burn-remote: to the server's device)
            mark()
            return
        b = getattr(b, "inner", None)


class _Failed:
    """The value of a lazy node whose flush raised: reading it raises again, naming the first error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def throw(self) -> None:
        raise RuntimeError(
            f"fusion: this value was never computed: a deferred op failed when the stream ran "
            f"({type(self.error).__name__}: {self.error})"
        ) from self.error


# program steps: (KERNEL, plan, input refs (stream positions >= 0, inputs of the stream -1-k), scalar
# indices, written positions, positions freed after it, inputs it may write into (``_Recorder._donors``))
# and (CALL, position, positions freed after it)
KERNEL, CALL = 0, 1


class _Program:
    """What planning a stream ran, over stream positions, to run again for an equal signature.

    ``unwritten``: positions no step writes (computed in registers) or that a step frees; the program
    is usable only while no tensor holds one of them."""

    __slots__ = ("steps", "unwritten", "written", "length", "runs", "used", "later", "graph", "leaf_values")

    def __init__(
        self,
        steps: list[tuple[Any, ...]],
        unwritten: tuple[int, ...],
        written: tuple[int, ...],
        length: int,
    ) -> None:
        self.steps = steps
        self.unwritten = unwritten
        self.written = written  # every position a step writes (kernel outputs, call results)
        self.length = length  # the stream's length
        self.runs = 0  # replays so far
        self.used = 0  # the flush that last planned or replayed it (``Fusion._forget_oldest``)
        self.later = 0  # launches of its graph in a row that said LATER
        self.graph: Any = None  # the runtime's captured graph of the program; False: it cannot be captured
        # the stream's input values at the step-by-step replay before the capture: a runtime capturing
        # the program may read inputs that stayed the same object (weights in inference) in place
        self.leaf_values: list[Any] | None = None

    def usable(self, stream: list[Node]) -> bool:
        for p in self.unwritten:
            h = stream[p].handle
            if h is not None and h() is not None:
                return False
        return True

    def run_values(
        self,
        b: Fusion,
        stream: list[Node],
        leaves: list[Node],
        leaf_values: Sequence[Any],
        kernel: Callable[[int, FusedKernel, list[Any], tuple[int, ...]], list[Any]],
        call: Callable[[Node, Callable[[], Any]], Any] | None = None,
    ) -> dict[int, Any]:
        """Run the steps over values, leaving the nodes as they are (for a runtime capturing the
        program as a graph): the stream's inputs are ``leaf_values`` (in ``leaves``' order),
        ``kernel(i, plan, inputs, scalar_indices)`` runs the i-th kernel step and ``call(node, run)``
        a call step (default: ``run()``). Returns the value of every position a step writes."""
        index = {n: k for k, n in enumerate(leaves)}
        vals: dict[int, Any] = {}
        ki = 0
        for step in self.steps:
            if step[0] == KERNEL:
                _, plan, refs, sidx, outs, _free, _donors = step
                ins = [vals[r] if r >= 0 else leaf_values[-1 - r] for r in refs]
                for p, v in zip(outs, kernel(ki, plan, ins, sidx)):
                    vals[p] = v
                ki += 1
            else:
                n = stream[step[1]]
                run = functools.partial(self.run_call, b, n, index, vals, leaf_values)
                out = run() if call is None else call(n, run)
                if n.twin is None:
                    vals[n.pos] = out
                else:
                    vals[n.pos], vals[n.twin.pos] = out
        return vals

    @staticmethod
    def run_call(
        b: Fusion, n: Node, index: dict[Node, int], vals: dict[int, Any], leaf_values: Sequence[Any]
    ) -> Any:
        """Run call node ``n`` (lazy) over values: stream positions from ``vals``, the stream's
        inputs (numbered by ``index``) from ``leaf_values``; under the settings it was called in."""

        def value(a: Node) -> Any:
            k = index.get(a)
            return vals[a.pos] if k is None else leaf_values[k]

        def resolve(args: Any) -> list[Any]:
            return _mapped(args, Node, value)

        method = b._calls[n.op[1]]  # type: ignore[index]  # a lazy call
        if n.compute is None:
            return method(*resolve(n.args))
        with b.inner.call_state_scope(n.compute):
            return method(*resolve(n.args))

    def deliver(
        self, stream: list[Node], vals: dict[int, Any], copy: Callable[[Any], Any] | None = None
    ) -> None:
        """Hand the written values a tensor holds to their nodes (``copy``: through a copy, when the
        values belong to a graph that the next launch overwrites)."""
        for p in self.written:
            n = stream[p]
            if wanted(n):
                n.done(vals[p] if copy is None else copy(vals[p]))

    def run(self, b: Fusion, stream: list[Node], leaves: list[Node], scalars: list[Any]) -> None:
        execute, run_call = b.runtime.execute, b._run_call
        reusing = getattr(b.runtime, "execute_reusing", None)
        kernels = fused = reused = 0
        for step in self.steps:
            if step[0] == KERNEL:
                _, plan, refs, sidx, outs, free, donors = step
                ins = [stream[r].value if r >= 0 else leaves[-1 - r].value for r in refs]
                if donors and reusing is not None:
                    values = reusing(plan, ins, [scalars[i] for i in sidx], donors)
                    reused += sum(1 for v in values for i in donors if v is ins[i])
                else:
                    values = execute(plan, ins, [scalars[i] for i in sidx])
                for p, v in zip(outs, values):
                    stream[p].done(v)
                kernels += 1
                if plan.fused:
                    fused += 1
            else:
                _, p, free = step
                run_call(stream[p])
            for p in free:
                stream[p].done(None)
        b.stats["kernels"] += kernels
        b.stats["fused"] += fused
        b.stats["in_place"] += reused


class _Recorder:
    """Collects a program while a stream is planned (``Fusion._plan_stream``)."""

    def __init__(self, stream: list[Node], leaves: list[Node], scalars: list[Any]) -> None:
        self.stream = stream
        self.leaf_index = {n: k for k, n in enumerate(leaves)}
        self.steps: list[list[Any]] = []
        self.reads: list[list[int]] = []  # per step, the stream positions it reads
        self.written: set[int] = set()
        self.by_kernels: set[int] = set()  # positions a kernel writes (fresh buffers of the runtime)
        self.by_calls: set[int] = set()  # positions a call reads (its result may be a view of them)

    def kernel(self, plan: FusedKernel, inputs: list[Node], order: list[Node], outs: list[Node]) -> None:
        refs = []
        for node in inputs:  # the tensors execute() gets, in order
            k = self.leaf_index.get(node)
            refs.append(node.pos if k is None else -1 - k)
        sidx = []
        for n in order:
            j = n.sbase
            for a in n.args:
                if type(a) is not Node:
                    sidx.append(j)
                    j += 1
        positions = tuple(o.pos for o in outs)
        self.steps.append([KERNEL, plan, tuple(refs), tuple(sidx), positions])
        self.reads.append([r for r in refs if r >= 0])
        self.written.update(positions)
        self.by_kernels.update(positions)

    def call(self, n: Node) -> None:
        self.steps.append([CALL, n.pos])
        reads = [a.pos for a in _flat(n.args, Node) if a.pos >= 0 and a not in self.leaf_index]
        self.reads.append(reads)
        self.by_calls.update(reads)
        self.written.add(n.pos)
        if n.twin is not None:
            self.written.add(n.twin.pos)

    def program(self) -> _Program:
        """The program; each written value no tensor holds is freed after its last read."""
        stream = self.stream
        last: dict[int, int] = {}
        for s, reads in enumerate(self.reads):
            for p in reads:
                last[p] = s
        free: list[list[int]] = [[] for _ in self.steps]
        for s, step in enumerate(self.steps):
            made = step[4] if step[0] == KERNEL else (step[1],)
            for p in made:
                if not wanted(stream[p]):
                    free[max(s, last.get(p, s))].append(p)
        freed = {p for f in free for p in f}
        unwritten = tuple(n.pos for n in stream if n.pos not in self.written or n.pos in freed)
        steps = [
            (*step, tuple(f), self._donors(step, f)) if step[0] == KERNEL else (*step, tuple(f))
            for step, f in zip(self.steps, free)
        ]
        return _Program(steps, unwritten, tuple(sorted(self.written)), len(stream))

    def _donors(self, step: list[Any], freed: list[int]) -> tuple[int, ...]:
        """The inputs (indices into the tensors ``execute`` gets) kernel ``step`` may write its outputs
        into: values no step reads after it (freed after it, read once by it) that a kernel wrote,
        so they are buffers of their own, and that no call read, so no view of them lives on. A reduce
        kernel writes another shape, and a matmul epilogue's operands are read by every output."""
        plan: FusedKernel = step[1]
        if plan.reduce is not None:
            return ()
        refs: tuple[int, ...] = step[2]
        first = 2 if plan.matmul else 0
        return tuple(
            i
            for i, r in enumerate(refs)
            if i >= first
            and r >= 0
            and r in freed
            and r in self.by_kernels
            and r not in self.by_calls
            and refs.count(r) == 1
        )


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


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return broadcast_shape(shape, target) == target
    except ValueError:
        return False


def _call_node(shape: tuple[int, ...], dtype: DType, name: str, operands: tuple[Any, ...]) -> Node:
    """A lazy node for a call of the inner backend's ``name``: a kernel boundary, so element-wise nodes
    reading it count it as one input (as a computed node)."""
    node = Node(shape, dtype)  # made computed-looking (no walk of the operands), then made lazy
    node.op = ("call", name)
    node.args = operands
    node.nleaves = 1
    return node


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


def _eager(b: Fusion, args: tuple[Any, ...]) -> list[Any]:
    """``args`` with their tensors computed, for an op the runtime cannot render."""
    prims = [a for a in args if type(a) is FPrim]
    values = iter(b._values(prims))
    return [next(values) if type(a) is FPrim else a for a in args]
