"""Fusion programs replayed as CUDA graphs: a repeated stream (a training step) costs one graph launch.

``burn.fusion`` keeps what planning a stream ran as a program (kernel launches and backend calls over
stream positions) and replays it when the same stream comes again. After a few replays it asks the
runtime to capture the program (``CudaFusion.capture_program``); this module does it:

* the stream's inputs are copied into buffers the graph owns (their addresses are baked into it), and
  copied again before every launch; an input that stayed the same array over the last replays (a
  weight in an inference loop), or that is a buffer another captured program lends (the activations
  a forward graph wrote, read by the backward's graph), is read in place instead, and a launch where
  it changed is declined (the program then replays step by step and is captured again later);
* an input that is a buffer the last launch lent, or that another captured program lends but was not
  captured before this one (a forward graph reading the weights the optimizer's graph wrote), is
  copied by a *feed* instead: one kernel copying every such buffer into its input buffer
  (``_multicopy``), built once the pairs are known (at the first launches) and launched before the
  program's graph; an input that is not the buffer its pair names this time is copied on its own
  after the feed;
* a written value that becomes an input at the next run (a weight and its update, each Adam moment
  and its update: the replay before the capture records which position wrote each value a tensor
  got) is written over that input's buffer in the captured program, where the kernel writing it runs
  element-wise (each thread reads its elements before it stores) and nothing later reads the input
  (``_graph_inputs``). A training step then copies nothing into those inputs, and its weights and
  moments exist once, not twice (the input buffer and the lent result). A launch that finds pairs
  the capture did not know captures the program once more (``RECAPTURE``). Values computed at the
  capture are handed out in the graph's own buffers, so a program captured after this one in the
  same step reads them in place;
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
  overwritten under a reader. Values that are views (but for the one whole reshape of a buffer of
  the graph's own, a bias gradient), or that are input buffers not written over, are copied out at
  once as before. ``CudaFusion.graph_events`` records captures and why graphs were dropped.

A program whose capture fails (an op that synchronises with the host, an API call capture refuses)
keeps replaying step by step; the failure is not an error.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from burn.fusion import LATER, RECAPTURE, FusedKernel

from . import _cublas
from ._bf16 import bits
from ._dtypes import TO_NP, param_dtype
from ._graph_inputs import (
    LIVE_GRAPHS,
    GraphInputs,
    _call_inputs,
    _copy_into,
    _lendable,
    _lent_by_others,
    _refs,
)

if TYPE_CHECKING:
    from ._fusion import CudaFusion

_RELAXED = 2  # cudaStreamCaptureModeRelaxed, when CuPy does not name it
GRAPH, CALL = 0, 1  # segments of a captured program: a graph, or a call run between graphs


def _scalars_as_inputs(plan: FusedKernel) -> FusedKernel:
    """The plan with its scalars read from (0-d) tensor inputs: value numbers stay the same, since
    inputs come first and scalars right after them."""
    cached = plan.cache.get("graph")
    if cached is None:
        cached = plan.cache["graph"] = FusedKernel(
            plan.shape, plan.inputs + plan.scalars, (), plan.ops, plan.outputs, plan.reduce, plan.matmul
        )
    return cached


class CudaGraphProgram(GraphInputs):
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
        self.feed_pairs: tuple[tuple[int, int], ...] = ()  # its (input index, id of the source) pairs
        # its (input index, own lent position or None, another program's buffer or None) pairs
        self.feed_srcs: list[tuple[int, int | None, Any]] = []
        # (program, {position: count}) for each program whose lent buffers the feed reads
        self.feed_reads: list[tuple[weakref.ref[CudaGraphProgram], dict[int, int]]] = []
        self.feeds = 0  # feed graphs captured so far
        # written positions whose values are the graph's own input buffers (position -> input index):
        # the launch after this one finds them as its inputs already (``_alias_plan``)
        self.aliased: dict[int, int] = {}
        self.own_inputs: frozenset[int] = frozenset()  # the input indices in ``aliased``
        self._called_inputs: frozenset[int] = frozenset()  # inputs a call step reads (never aliased)
        # later programs reading this one's lent buffers in place: (weak reference, {position: how
        # many of its input buffers are that value}); their references are expected holders
        self.readers: list[tuple[weakref.ref[CudaGraphProgram], dict[int, int]]] = []

    def _kernel(self, i: int, plan: FusedKernel, inputs: list[Any], sidx: tuple[int, ...]) -> list[Any]:
        return self.runtime.execute(_scalars_as_inputs(plan), inputs + self.views[i], [])

    def _note(self, what: str) -> None:
        """Record what happened to this program's graph (``CudaFusion.graph_events``: the last 64)."""
        events = self.runtime.graph_events
        events.append(f"program {id(self.program) % 100000}: {what}")
        del events[:-64]

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
        hints = self.runtime.graph_hints.setdefault(id(program), {})
        lent = _lent_by_others(self)
        copied = self.runtime.graph_copied.get(id(program), ())  # read in place once, then changed
        self.direct = [
            i not in copied and ((last is not None and leaf.value is last[i]) or id(leaf.value) in lent)
            for i, leaf in enumerate(leaves)
        ]
        # the inputs read in place that another program lends: id -> (that program, its position)
        owners: dict[int, tuple[CudaGraphProgram, int]] = {}
        for leaf, direct in zip(leaves, self.direct):
            owner = lent.get(id(leaf.value)) if direct else None
            if owner is not None:
                owners[id(leaf.value)] = owner
        # buffers of the graph's own for the others (not the last graph's: tensors it lent them to may
        # still hold them, and this capture's fill would write over them)
        self.inputs = [
            leaf.value if direct else cp.empty(leaf.value.shape, dtype=leaf.value.dtype)
            for leaf, direct in zip(leaves, self.direct)
        ]
        self._fill(cp, leaves, scalars)
        vals = program.run_values(self.fusion, stream, leaves, [leaf.value for leaf in leaves], self._kernel)
        # the written values that become inputs next time (seen at the replay before this capture, or
        # at earlier launches), written over those inputs' buffers in the captured run (``_alias_plan``)
        self._called_inputs = _call_inputs(program, stream, leaves)
        hint = {p: k for p, k in hints.items() if p >= 0}
        seen = program.written_ids or {}
        for k, leaf in enumerate(leaves):
            p = seen.get(id(leaf.value))
            if p is not None:
                hint.setdefault(p, k)
        alias = self._alias_plan(hint) if hint else {}
        outs_of = [step[4] for step in program.steps if step[0] == 0]
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
            into = alias.get(i)
            if into:
                bufs = {j: self.inputs[k] for j, k in into.items()}
                out = self.runtime.execute_into(_scalars_as_inputs(plan), inputs + self.views[i], [], bufs)
                if out is not None:
                    for j, k in into.items():
                        self.aliased[outs_of[i][j]] = k
                    return out
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
            self.aliased = {p: k for p, k in self.aliased.items() if values.get(p) is self.inputs[k]}
            # every pair considered (aliased or not, ``_alias_plan``): a launch does not capture again
            # for those, and a later capture of this program writes over the same inputs
            hints.update(hint)
            self.own_inputs = frozenset(self.aliased.values())
            self.lendable = _lendable(values, self.inputs, self.aliased)
            self.refs = {p: _refs(values, p) for p in self.lendable}  # views inside the graph count
            self.lent_ids = {id(values[p]): p for p in self.lendable}
            self._register_reads(owners)
            captured = any(seg[0] == GRAPH for seg in segments)
        except Exception as exc:  # not capturable (a host sync, an API call capture refuses): step by step
            failures = self.runtime.capture_failures
            failures.append(f"{type(exc).__name__}: {exc}")
            del failures[:-8]
        if captured:
            own = sum(1 for d in self.direct if not d) - len(self.own_inputs)
            self._note(
                f"captured {len(program.steps)} steps; {len(self.aliased)} outputs written over their "
                f"inputs, {sum(self.direct)} inputs read in place, {own} copied in"
            )
            self._lend_first(cp, stream, vals)
        program.deliver(stream, vals)  # after the capture, which reads the nodes' operands
        return captured

    def _lend_first(self, cp: Any, stream: list[Any], vals: dict[int, Any]) -> None:
        """Hand the values this capture's uncaptured run computed to their nodes in the graph's own
        buffers (one copy each, this once), as a launch would: the next launch then finds them as its
        inputs (aliased ones: no copy), and a program captured after this one in the same step reads
        them in place. Not where a buffer kept from the graph this one replaces has a holder no
        node accounts for (``_reclaim``): then the nodes get the run's own arrays."""
        if not self._reclaim(cp):
            return
        s = self.backend.stream
        values = self.values
        for p in self.lendable:
            n = stream[p]
            src = vals.get(p)
            if src is None or not wanted(n) or src.shape != values[p].shape or src.dtype != values[p].dtype:
                continue
            vals[p] = _copy_into(cp, values[p], src, s)
            self.lent.append((weakref.ref(n), p))

    def launch(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool | str:
        """Run the program again: its graphs, and between them the calls capture refused (their results
        copied into the buffers the later graphs read); then lend what tensors hold (``_lend``). False
        (nothing run) when an input the graph reads in place changed; ``RECAPTURE`` (nothing run) when
        a capture now would copy less (``_settled``); ``LATER`` (nothing run, the
        graph stays) when a buffer the last launch lent has a holder the launch would overwrite
        (``_reclaim``: a checkpoint thread reading a weight, a view of one), so this replay runs step
        by step and the next one tries again."""
        cp = self.backend._on()
        if not self._ready(leaves):
            self._note("an input read in place changed: dropped")
            return False
        if not self._settled(leaves):
            return RECAPTURE
        later: list[tuple[int, Any]] = []
        self._fill(cp, leaves, scalars, later)  # before _reclaim, which drops values no tensor holds
        if not self._reclaim(cp):
            return LATER  # what _fill wrote is the graph's own input buffers: nothing else changed
        s = self.backend.stream
        for k, value in later:  # aliased buffers: after _reclaim copied out what they held
            _copy_into(cp, self.inputs[k], value, s)
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


def wanted(node: Any) -> bool:
    """Whether a tensor holds fusion's ``node`` (its handle, which the node watches weakly, is alive)."""
    h = node.handle
    return h is not None and h() is not None
