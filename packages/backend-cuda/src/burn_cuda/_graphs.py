"""Fusion programs replayed as CUDA graphs: a repeated stream (a training step) costs one graph launch.

``burn.fusion`` keeps what planning a stream ran as a program (kernel launches and backend calls over
stream positions) and replays it when the same stream comes again. After a few replays it asks the
runtime to capture the program (``CudaFusion.capture_program``); this module does it:

* the stream's inputs are copied into buffers the graph owns (their addresses are baked into it), and
  copied again before every launch; an input that stayed the same array over the last replays (a
  weight in an inference loop), or that is a buffer another captured program lends (the activations
  a forward graph wrote, read by the backward's graph), is read in place instead, and a launch where
  it changed is declined (the program then replays step by step and is captured again later);
* an input that is a buffer the last launch lent (a training step's weights and moments: each step
  reads what the step before wrote) is copied by a *feed* instead: one kernel copying every lent
  buffer into its input buffer (``_multicopy``), built once the pairs are known (at the first
  launches) and launched before the program's graph. A training step's hundreds of copies become one
  launch at memory bandwidth; an input that is not the buffer its pair names this time is copied on
  its own after the feed;
* a fused kernel's scalars (a learning rate, Adam's bias corrections: they change from step to step)
  are read from small device tables instead of kernel arguments; the tables are rewritten from the
  stream's scalars before every launch;
* the program runs once uncaptured (warming kernels, cuBLAS and the memory pool; these are this
  stream's results) and once under relaxed stream capture into a private memory pool, which the graph
  keeps: no buffer it uses is ever handed to other code;
* burn-cuda's GEMMs are captured too (through ``_cublas``: CuPy's own wrapper refuses cuBLAS calls
  while capturing). A call that still cannot be captured (CuPy's other cuBLAS users, a conv that
  uploads its index tables: CuPy refuses host-to-device copies under capture) ends the current graph
  and runs as a plain call between two graphs at each launch, its result copied into the buffer the
  next graph reads;
* after a launch, the values tensors hold are *lent*: their nodes hold the graph's own buffers, with no
  copy. Before the next launch overwrites them, every lent value still held (a loss kept for later,
  a weight an autodiff graph saved) is copied out and its node re-pointed at the copy; values nobody
  holds any more (the last step's weights and moments, once the optimizer replaced them) cost
  nothing. A lent buffer that something else references directly (a view of it, an exported
  array: its reference count says so) makes the launch decline, so graph memory is never
  overwritten under a reader. Values that are views, or that are input buffers, are copied out at
  once as before.

A program whose capture fails (an op that synchronises with the host, an API call capture refuses)
keeps replaying step by step; the failure is not an error.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
from burn.fusion import LATER, FusedKernel

from . import _cublas
from ._bf16 import bits
from ._dtypes import TO_NP, param_dtype
from ._multicopy import MultiCopy

if TYPE_CHECKING:
    from ._fusion import CudaFusion

_RELAXED = 2  # cudaStreamCaptureModeRelaxed, when CuPy does not name it
GRAPH, CALL = 0, 1  # segments of a captured program: a graph, or a call run between graphs
FEED_CAPTURES = 4  # feed graphs captured per program at most (the pairs settle at the first launches)
# captured programs still alive, whatever holds them: burn.memory_stats adds their private pools
LIVE_GRAPHS: weakref.WeakSet[CudaGraphProgram] = weakref.WeakSet()


def _scalars_as_inputs(plan: FusedKernel) -> FusedKernel:
    """The plan with its scalars read from (0-d) tensor inputs: value numbers stay the same, since
    inputs come first and scalars right after them."""
    cached = plan.cache.get("graph")
    if cached is None:
        cached = plan.cache["graph"] = FusedKernel(
            plan.shape, plan.inputs + plan.scalars, (), plan.ops, plan.outputs, plan.reduce, plan.matmul
        )
    return cached


def _lent_by_others(graph: CudaGraphProgram) -> dict[int, tuple[CudaGraphProgram, int]]:
    """The buffers the other live captured programs of ``graph``'s runtime may lend: id -> (that
    program, the position it lends the buffer at)."""
    return {
        i: (g, p)
        for g in list(LIVE_GRAPHS)
        if g is not graph and g.runtime is graph.runtime
        for i, p in g.lent_ids.items()
    }


def _same_layout(dst: Any, src: Any) -> bool:
    """Whether ``src``'s bytes copied as they are make ``dst`` equal it: one shape and dtype, both
    C-contiguous."""
    return (
        dst.flags.c_contiguous
        and src.flags.c_contiguous
        and dst.dtype == src.dtype
        and dst.shape == src.shape
    )


def _copy_into(cp: Any, dst: Any, src: Any, stream: Any) -> Any:
    """``dst[...] = src`` for arrays of one shape and dtype: one cudaMemcpyAsync on ``stream`` when
    both are C-contiguous (a launch copies dozens of arrays: ``copyto``'s general machinery costs
    several times more host time per call), else ``copyto``. Returns ``dst``."""
    if _same_layout(dst, src):
        if dst.nbytes:
            dst.data.copy_from_device_async(src.data, dst.nbytes, stream)
    else:
        cp.copyto(bits(dst), bits(src))  # bfloat16 as its bits: CuPy copies those everywhere
    return dst


class CudaGraphProgram:
    """One captured program: its input buffers, scalar tables, graph and private memory pool."""

    def __init__(self, runtime: CudaFusion, fusion: Any, program: Any) -> None:
        self.runtime, self.fusion, self.program = runtime, fusion, program
        self.backend = runtime.backend
        # scalar tables: one device array per numpy dtype; each kernel step reads its scalars from
        # 0-d views of them, in the order of its plan's scalars
        slots: dict[Any, list[int]] = {}
        self.step_slots: list[list[tuple[Any, int]]] = []
        for step in program.steps:
            if step[0] == 0:  # a kernel step: (KERNEL, plan, refs, scalar indices, outputs, freed)
                plan, sidx = step[1], step[3]
                mine = []
                for dt, i in zip(plan.scalars, sidx):
                    table = slots.setdefault(TO_NP[dt], [])
                    mine.append((TO_NP[dt], len(table)))
                    table.append(i)
                self.step_slots.append(mine)
        self.slots = slots
        self.segments: list[tuple[Any, ...]] = []
        self.pool: Any = None
        self.inputs: list[Any] = []
        self.direct: list[bool] = []
        self.tables: dict[Any, Any] = {}
        self.views: list[list[Any]] = []
        self.values: dict[int, Any] = {}
        self.lendable: frozenset[int] = frozenset()  # positions whose buffers may be lent (``_lend``)
        self.lent: list[tuple[Any, int]] = []  # (weak reference to the node, position) of the last launch
        self.refs: dict[int, int] = {}  # a lendable buffer's references when nothing outside holds it
        self.lent_ids: dict[int, int] = {}  # id of a lendable buffer -> its position
        self.feed: Any = None  # the graph copying lent buffers into input buffers (``_feed``)
        self.feed_pairs: tuple[tuple[int, int], ...] = ()  # its (input index, position) pairs
        self.feeds = 0  # feed graphs captured so far
        # later programs reading this one's lent buffers in place: (weak reference, {position: how
        # many of its input buffers are that value}); their references are expected holders
        self.readers: list[tuple[weakref.ref[CudaGraphProgram], dict[int, int]]] = []

    # ------------------------------------------------------------------ the tables and inputs
    def _ready(self, leaves: list[Any]) -> bool:
        """Whether every input the graph reads in place is still the same array (else the graph cannot
        serve this stream)."""
        return all(
            not direct or leaf.value is buf for buf, leaf, direct in zip(self.inputs, leaves, self.direct)
        )

    def _fill(self, cp: Any, leaves: list[Any], scalars: list[Any]) -> None:
        """Copy the stream's inputs and scalars into the buffers the graph reads: the inputs the last
        launch lent through the feed graph (``_feed``), the others one by one after it."""
        s = self.backend.stream
        fed = self._feed(leaves)
        for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct)):
            if not direct and k not in fed:
                _copy_into(cp, buf, leaf.value, s)
        for dt, idx in self.slots.items():
            host = np.array([scalars[i] for i in idx], dtype=dt)
            self.tables[dt].set(host.view(param_dtype(dt)))  # bfloat16: its bits

    def _feed(self, leaves: list[Any]) -> set[int]:
        """Launch the feed graph and return the input indices it served this time: each input that is
        the lent buffer its pair names. Inputs that are lent buffers but not in the graph's pairs (the
        first launches; a model that swapped a weight) make a new feed graph over the pairs seen now,
        at most ``FEED_CAPTURES`` times per program (past that, they are copied one by one)."""
        values, ids = self.values, self.lent_ids
        pairs = []
        for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct)):
            if direct:
                continue
            p = ids.get(id(leaf.value))
            if p is not None and values[p] is leaf.value and _same_layout(buf, leaf.value):
                pairs.append((k, p))
        found = tuple(pairs)
        if found != self.feed_pairs and self.feeds < FEED_CAPTURES and found:
            self.feed, self.feed_pairs = self._capture_feed(found), found
            self.feeds += 1
        if self.feed is None:
            return set()
        self.feed.launch()  # before the single copies: they may overwrite its inputs
        return {k for k, p in self.feed_pairs if leaves[k].value is values[p]}

    def _capture_feed(self, pairs: tuple[tuple[int, int], ...]) -> Any:
        """The device-to-device copies ``values[p]`` into ``inputs[k]`` for each pair, as one kernel
        (``_multicopy``: hundreds of weights and moments in one launch, not one copy node each)."""
        self.backend._on()
        return MultiCopy(self.backend.xp, [(self.inputs[k], self.values[p]) for k, p in pairs])

    def _kernel(self, i: int, plan: FusedKernel, inputs: list[Any], sidx: tuple[int, ...]) -> list[Any]:
        return self.runtime.execute(_scalars_as_inputs(plan), inputs + self.views[i], [])

    def _register_reads(self, owners: dict[int, tuple[CudaGraphProgram, int]]) -> None:
        """Tell each program whose lent buffers this one reads in place how many references to each
        this one keeps (its input list and views of them among its values): those are expected
        holders, not readers its launch would overwrite unseen (``_reclaim``)."""
        held: dict[int, int] = {}
        for arr in (*self.inputs, *(v.base for v in self.values.values() if v.base is not None)):
            if id(arr) in owners:
                held[id(arr)] = held.get(id(arr), 0) + 1
        per_owner: dict[CudaGraphProgram, dict[int, int]] = {}
        for i, k in held.items():
            g, p = owners[i]
            per_owner.setdefault(g, {})[p] = k
        for g, per in per_owner.items():
            g.readers.append((weakref.ref(self), per))

    # ------------------------------------------------------------------ capture and launch
    def capture(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool:
        """Run the stream (its values delivered) and capture the program; False if capture failed."""
        cp = self.backend._on()
        program = self.program
        # this stream's results come from an uncaptured run over the inputs themselves (a result that
        # is a view of an input then aliases the input, as it would unfused, never graph memory)
        self.tables = {dt: cp.empty(len(idx), dtype=param_dtype(dt)) for dt, idx in self.slots.items()}
        self.views = [[self.tables[dt][k : k + 1].reshape(()) for dt, k in mine] for mine in self.step_slots]
        # an input that was the same array at the last two replays (a weight in inference) is read in
        # place, held by the graph (burn's arrays are never written); the others get buffers of the
        # graph's own, refilled before each launch
        # so is an input that is a buffer another captured program of this runtime lends (a backward
        # step reading the activations the forward's graph wrote): its graph rewrites that buffer in
        # place at each launch, before this one runs, so no copy (and no second buffer) is needed; a
        # launch where it is not that buffer any more is declined like any other changed input
        last = program.leaf_values
        lent = _lent_by_others(self)
        self.direct = [
            (last is not None and leaf.value is last[i]) or id(leaf.value) in lent
            for i, leaf in enumerate(leaves)
        ]
        # the inputs read in place that another program lends: id -> (that program, its position)
        owners: dict[int, tuple[CudaGraphProgram, int]] = {}
        for leaf, direct in zip(leaves, self.direct):
            owner = lent.get(id(leaf.value)) if direct else None
            if owner is not None:
                owners[id(leaf.value)] = owner
        self.inputs = [
            leaf.value if direct else cp.empty(leaf.value.shape, dtype=leaf.value.dtype)
            for leaf, direct in zip(leaves, self.direct)
        ]
        self._fill(cp, leaves, scalars)
        vals = program.run_values(self.fusion, stream, leaves, [leaf.value for leaf in leaves], self._kernel)
        s = self.backend.stream
        pool = cp.cuda.MemoryPool()
        mode = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", _RELAXED)
        segments: list[tuple[Any, ...]] = []
        pinned: set[int] = set()
        state = {"open": False, "steps": 0}

        def begin() -> None:
            s.begin_capture(mode)
            state["open"], state["steps"] = True, 0

        def close() -> None:
            graph = s.end_capture()
            state["open"] = False
            if state["steps"]:
                segments.append((GRAPH, graph))

        def kernel(i: int, plan: FusedKernel, inputs: list[Any], sidx: tuple[int, ...]) -> list[Any]:
            state["steps"] += 1
            return self._kernel(i, plan, inputs, sidx)

        def call(n: Any, run: Any) -> Any:
            try:
                out = run()
            except RuntimeError as exc:  # NotImplementedError (cuBLAS) is one too
                # CuPy refuses cuBLAS and host-to-device copies under capture (before issuing anything):
                # this call runs between graphs
                if not isinstance(exc, NotImplementedError) and "capturing" not in str(exc):
                    raise
                close()
                out = run()  # uncaptured, over buffers not computed yet: only to allocate its results
                segments.append((CALL, n.pos))
                pinned.add(n.pos)  # launches copy its result into this buffer: kept for the graph's life
                twin = n.twin
                while twin is not None:  # every further result of a multi-result call
                    pinned.add(twin.pos)
                    twin = twin.twin
                between = self.runtime.calls_between_graphs
                name = getattr(self.fusion._calls[n.op[1]], "__name__", "call")
                between.append(f"{name}: {exc}"[:160])
                del between[:-8]
                begin()
                return out
            state["steps"] += 1
            return out

        captured = False
        try:
            _cublas.prepare(cp)  # its handle and workspace exist before the capture, outside its pool
            with cp.cuda.using_allocator(pool.malloc), _cublas.capturing():
                begin()
                try:
                    values = program.run_values(
                        self.fusion, stream, leaves, self.inputs, kernel, call, pinned
                    )
                finally:
                    if state["open"]:
                        close()
            self.segments, self.pool, self.values = segments, pool, values
            LIVE_GRAPHS.add(self)  # its private pool counts in burn.memory_stats
            self.lendable = _lendable(values, self.inputs)
            self.refs = {p: _refs(values, p) for p in self.lendable}  # views inside the graph count
            self.lent_ids = {id(values[p]): p for p in self.lendable}
            self._register_reads(owners)
            captured = any(seg[0] == GRAPH for seg in segments)
        except Exception as exc:  # not capturable (a host sync, an API call capture refuses): step by step
            failures = self.runtime.capture_failures
            failures.append(f"{type(exc).__name__}: {exc}")
            del failures[:-8]
        program.deliver(stream, vals)  # after the capture, which reads the nodes' operands
        return captured

    def launch(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool | str:
        """Run the program again: its graphs, and between them the calls capture refused (their results
        copied into the buffers the later graphs read); then lend what tensors hold (``_lend``). False
        (nothing run) when an input the graph reads in place changed; ``LATER`` (nothing run, the
        graph stays) when a buffer the last launch lent has a holder the launch would overwrite
        (``_reclaim``: a checkpoint thread reading a weight, a view of one), so this replay runs step
        by step and the next one tries again."""
        cp = self.backend._on()
        if not self._ready(leaves):
            return False
        self._fill(cp, leaves, scalars)  # before _reclaim, which drops values no tensor holds
        if not self._reclaim(cp):
            return LATER  # what _fill wrote is the graph's own input buffers: nothing else changed
        s = self.backend.stream
        program, values = self.program, self.values
        index = {n: k for k, n in enumerate(leaves)}
        for seg in self.segments:
            if seg[0] == GRAPH:
                seg[1].launch(s)
                continue
            n = stream[seg[1]]
            out = program.run_call(self.fusion, n, index, values, self.inputs)
            if n.twin is None:
                cp.copyto(bits(values[n.pos]), bits(out))
            else:  # a multi-output call: its outputs' nodes chain through ``twin``
                node = n
                for value in out:
                    cp.copyto(bits(values[node.pos]), bits(value))
                    node = node.twin
        self._lend(cp, stream, values)
        return True

    # ------------------------------------------------------------------ lending the results
    def _lend(self, cp: Any, stream: list[Any], values: dict[int, Any]) -> None:
        """Hand the values tensors hold to their nodes: lendable buffers as they are (remembered in
        ``lent``), the others through a copy."""
        s = self.backend.stream
        lendable, lent = self.lendable, self.lent
        for p in self.program.written:
            n = stream[p]
            if not wanted(n):
                continue
            if p in lendable:
                n.done(values[p])
                lent.append((weakref.ref(n), p))
            else:
                n.done(_copy_into(cp, cp.empty_like(values[p]), values[p], s))

    def _reclaim(self, cp: Any) -> bool:
        """Before a launch overwrites the buffers the last one lent (after ``_fill`` read this stream's
        inputs): copy out each one a tensor still holds, re-pointing its node, and drop it from the
        nodes no tensor holds (nothing reads them again: an input of this stream was read by
        ``_fill``, and no later stream can reach a node without a tensor). False, changing nothing,
        when a buffer has a holder no node accounts for: a view of it or an array handed out of burn,
        which the launch would overwrite."""
        values, refs = self.values, self.refs
        readers: dict[int, int] = {}  # references of the programs that read lent buffers in place
        alive = []
        for ref, per in self.readers:
            if ref() is not None:
                alive.append((ref, per))
                for p, k in per.items():
                    readers[p] = readers.get(p, 0) + k
        self.readers = alive
        holders = []
        for ref, p in self.lent:
            node = ref()
            held = node is not None and node.value is values[p]
            if _refs(values, p) > refs[p] + held + readers.get(p, 0):
                return False
            if held:
                holders.append((node, p))
        s = self.backend.stream
        for node, p in holders:
            node.value = _copy_into(cp, cp.empty_like(values[p]), values[p], s) if wanted(node) else None
        self.lent = []
        return True


def _lendable(values: dict[int, Any], inputs: list[Any]) -> frozenset[int]:
    """Positions whose value is a buffer of the graph's own that nothing else is: it owns its memory
    (not a view), no other position has it, and it is not one of the graph's input buffers."""
    seen: dict[int, int] = {}
    for v in values.values():
        seen[id(v)] = seen.get(id(v), 0) + 1
    taken = {id(v) for v in inputs}
    return frozenset(
        p for p, v in values.items() if v.base is None and seen[id(v)] == 1 and id(v) not in taken
    )


def wanted(node: Any) -> bool:
    """Whether a tensor holds fusion's ``node`` (its handle, which the node watches weakly, is alive)."""
    h = node.handle
    return h is not None and h() is not None


def _refs(values: dict[int, Any], p: int) -> int:
    """The reference count of ``values[p]`` as seen from here (one function, so always counted alike:
    ``values``, views of it inside the graph's values, ``arr`` and getrefcount's argument)."""
    arr = values[p]
    return sys.getrefcount(arr)
