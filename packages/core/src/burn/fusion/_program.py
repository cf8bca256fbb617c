"""Programs, the last stage of fusion: a flush replays what was planned for an equal stream before, or
plans the stream and keeps what ran as a *program*.

A program is kernel launches and calls over stream positions (``_Program``), collected while the stream
is planned (``_Recorder``). A stream whose signature (ops, shapes, dtypes, static arguments, which
operand is which; not the scalar values, which kernels take as arguments) equals one already planned
runs that program: no closure walks, no grouping, no plan lookups. A program is used only if every
value it leaves unwritten is wanted by no tensor, and it frees each intermediate after its last read.

A program is planned under the autotuner's choices of the time (whether a matmul takes an epilogue, and
with which kernel): when background tuning switches a key to its winner (``burn.autotune.generation``
grows), every kept program, with the graph captured from it, is dropped and its stream planned again;
and a program whose run calls a kernel still tuning is not captured until that tuning has settled.

Where the runtime can (``capture_program``: CUDA graphs; ``graphs=False`` or ``BURN_FUSION_GRAPHS=0``
turn it off), a program replayed ``GRAPH_AFTER`` times is captured as a device graph and launched as
one (``Replaying._replay``).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import autotune
from ..autotune._background import stand_ins, tuning_calls
from ..backend import Backend
from ._graph import Node, results, wanted
from ._launch import Launching
from ._plan import FusedKernel, FusionRuntime
from ._stream import _Failed, _flat, _mapped

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
# ... and RECAPTURE when it cannot serve the stream but a capture now would do better (its inputs are
# buffers another captured program lends, or values it wrote itself that it may write in place): it is
# dropped and the program is captured again at this replay
RECAPTURE = "recapture"


def compile_ahead_enabled() -> bool:
    """Whether a runtime's ``compile_ahead`` is used (``BURN_COMPILE_AHEAD=1``; off by default until
    its planning pass, which runs a first step's calls twice, has been through the GPU suites)."""
    return os.environ.get("BURN_COMPILE_AHEAD", "0") == "1"


class Replaying(Launching):
    """Runs the recorded stream (``flush``): replays its program, or plans it and keeps the program."""

    def __init__(self, inner: Backend, runtime: FusionRuntime | None, graphs: bool | None) -> None:
        super().__init__(inner, runtime)
        self._programs = {}
        self._lengths = set()
        self._generation = autotune.generation()  # the tuned choices the kept programs were planned with
        self.replay = os.environ.get("BURN_FUSION_REPLAY", "1") != "0"
        # a runtime that captures programs as device graphs (CUDA graphs) offers capture_program
        if graphs is None:
            graphs = os.environ.get("BURN_FUSION_GRAPHS", "1") != "0"
        self._capture: Callable[..., Any] | None = (
            getattr(self.runtime, "capture_program", None) if graphs else None
        )

    def flush(self) -> None:
        """Run the recorded stream: every call, and every element-wise op whose value a tensor holds."""
        stream = self._stream
        self._boundary = True
        if not stream:
            return
        sig, leaves, scalars = self._sig, list(self._leaves), self._scalars
        self._open()
        self.stats["flushes"] += 1
        if self._generation != autotune.generation():  # a tuned op switched kernels: plan again
            self._generation = autotune.generation()
            if self._programs:
                self.stats["replans"] += 1
                self._programs = {}
                self._lengths = set()
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
            start = time.perf_counter()
            try:
                ahead = getattr(self.runtime, "compile_ahead", None) if rec is not None else None
                if ahead is not None and compile_ahead_enabled():
                    rec = self._plan_ahead(stream, leaves, scalars, ahead)
                else:
                    self._plan_stream(stream)
            finally:
                self._rec = None
                self.seconds["plan"] += time.perf_counter() - start
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

    def _plan_ahead(
        self, stream: list[Node], leaves: list[Node], scalars: list[Any], ahead: Callable[[], Any]
    ) -> _Recorder:
        """Plan ``stream`` with the runtime's kernels only compiled, then run what was planned: the
        planning pass runs under ``ahead()`` (``FusionRuntime.compile_ahead``), where the runtime starts
        compiling each kernel it is asked for in the background and returns zero-filled results of
        the kernel's shapes instead of running it (the calls run as usual, on those values); then the
        stream's nodes are put back as they were recorded and the program is run as a replay runs it,
        each kernel waiting for its own compilation. The kernels of a first step compile side by side
        instead of one after the other. The planning pass runs the calls on those values, so no
        autotuning runs or starts there (``autotune._background.stand_ins``). Where the planning pass
        fails (a call refusing the stand-ins), the stream is planned again the usual way. Returns the
        recorder holding the program."""
        saved = [(n.op, n.args, n.nleaves, n.size, n.value) for n in stream]
        stats = dict(self.stats)
        rec = self._rec
        assert rec is not None
        try:
            with ahead(), stand_ins():  # no tuning on the stand-in values
                self._plan_stream(stream)
        except Exception:
            rec = None
        for n, (op, args, nleaves, size, value) in zip(stream, saved):
            n.op, n.args, n.nleaves, n.size, n.value = op, args, nleaves, size, value
        self.stats.update(stats)
        if rec is None:  # plan the usual way
            rec = self._rec = _Recorder(stream, leaves, scalars)
            self._plan_stream(stream)
            return rec
        rec.program().run(self, stream, leaves, scalars, reuse=False)
        return rec

    def empty_cache(self) -> None:
        """``burn.empty_cache``: run what is recorded, then drop the kept programs (with the device graphs
        captured from them and their memory pools) and the kept constants, then empty the inner backend's
        cache. Streams that come again are planned again; tensors that hold a graph's buffers keep them."""
        self.flush()
        self._programs = {}
        self._lengths = set()
        self._constants.clear()
        self.inner.empty_cache()

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
        that cannot run now (``LATER``) stays, and this replay runs step by step; one that asks for a
        capture now (``RECAPTURE``) is dropped and the program captured again at once."""
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
            if launched is not False and launched is not LATER and launched is not RECAPTURE:
                program.later = 0
                self.stats["graph_launches"] += 1
                return
            program.graph, program.runs, program.later = None, 0, 0
            if launched is RECAPTURE:
                program.runs = GRAPH_AFTER - 1
        program.runs += 1
        if program.runs < GRAPH_AFTER or program.tuning:
            touched = tuning_calls()
            program.run(self, stream, leaves, scalars)
            # a kernel it calls is still tuning in the background: no capture yet (the job takes its
            # inputs from the calls a graph would skip, and a switch would drop the graph)
            program.tuning = tuning_calls() != touched
            if program.tuning:
                program.runs = max(0, GRAPH_AFTER - 2)
            # the inputs of the replay just before the capture, held until the capture: one that is the
            # same value then (a weight in inference) may be read in place (ids could be reused)
            before = program.runs + 1 == GRAPH_AFTER
            program.leaf_values = [leaf.value for leaf in leaves] if before else None
            # and which position wrote each value this replay handed to a tensor: at the capture, an
            # input that is one of them (a weight its update wrote) may be written over in the graph
            program.written_ids = _written_ids(program, stream) if before else None
            return
        # the runtime runs this stream and captures the program (None: it cannot be captured)
        start = time.perf_counter()
        program.graph = capture(self, program, stream, leaves, scalars) or False
        self.seconds["capture"] += time.perf_counter() - start
        program.leaf_values = program.written_ids = None
        self.stats["graphs"] += program.graph is not False


def _written_ids(program: _Program, stream: list[Node]) -> dict[int, int]:
    """id of each value a written position of ``program`` handed to a tensor -> that position."""
    found = {}
    for p in program.written:
        n = stream[p]
        if n.value is not None and wanted(n):
            found[id(n.value)] = p
    return found


# program steps: (KERNEL, plan, input refs (stream positions >= 0, inputs of the stream -1-k), scalar
# indices, written positions, positions freed after it, inputs it may write into (``_Recorder._donors``))
# and (CALL, position, positions freed after it)
KERNEL, CALL = 0, 1


class _Program:
    """What planning a stream ran, over stream positions, to run again for an equal signature.

    ``unwritten``: positions no step writes (computed in registers) or that a step frees; the program
    is usable only while no tensor holds one of them."""

    __slots__ = (
        "steps",
        "unwritten",
        "written",
        "length",
        "runs",
        "used",
        "later",
        "graph",
        "leaf_values",
        "written_ids",
        "tuning",
    )

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
        self.tuning = False  # its last run called a kernel tuning in the background: not captured yet
        self.used = 0  # the flush that last planned or replayed it (``Replaying._forget_oldest``)
        self.later = 0  # launches of its graph in a row that said LATER
        self.graph: Any = None  # the runtime's captured graph of the program; False: it cannot be captured
        # the stream's input values at the step-by-step replay before the capture: a runtime capturing
        # the program may read inputs that stayed the same object (weights in inference) in place
        self.leaf_values: list[Any] | None = None
        # at the same replay, id of each value a tensor got -> the position that wrote it (ids only:
        # a runtime uses them as hints that never change a result, so a reused id costs nothing)
        self.written_ids: dict[int, int] | None = None

    def usable(self, stream: list[Node]) -> bool:
        for p in self.unwritten:
            h = stream[p].handle
            if h is not None and h() is not None:
                return False
        return True

    def run_values(
        self,
        b: Launching,
        stream: list[Node],
        leaves: list[Node],
        leaf_values: Sequence[Any],
        kernel: Callable[[int, FusedKernel, list[Any], tuple[int, ...]], list[Any]],
        call: Callable[[Node, Callable[[], Any]], Any] | None = None,
        keep: set[int] | None = None,
    ) -> dict[int, Any]:
        """Run the steps over values, leaving the nodes as they are (for a runtime capturing the
        program as a graph): the stream's inputs are ``leaf_values`` (in ``leaves``' order),
        ``kernel(i, plan, inputs, scalar_indices)`` runs the i-th kernel step and ``call(node, run)``
        a call step (default: ``run()``). Returns the value of every position a step writes that
        outlives the program (a tensor holds it) or that is in ``keep`` (filled by the runtime as it
        goes: a call it runs between graphs, whose result it copies into that buffer at each launch);
        a value nothing reads any more is dropped after its last reader, as ``run`` does, so a
        runtime capturing into a memory pool reuses its memory for later steps instead of keeping
        every intermediate of the program."""
        index = {n: k for k, n in enumerate(leaves)}
        vals: dict[int, Any] = {}
        ki = 0
        for step in self.steps:
            if step[0] == KERNEL:
                _, plan, refs, sidx, outs, free, _donors = step
                ins = [vals[r] if r >= 0 else leaf_values[-1 - r] for r in refs]
                for p, v in zip(outs, kernel(ki, plan, ins, sidx)):
                    vals[p] = v
                ki += 1
            else:
                free = step[2]
                n = stream[step[1]]
                run = functools.partial(self.run_call, b, n, index, vals, leaf_values)
                out = run() if call is None else call(n, run)
                if n.twin is None:
                    vals[n.pos] = out
                else:
                    for node, value in zip(results(n), out):
                        vals[node.pos] = value
            for p in free:
                if keep is None or p not in keep:
                    vals.pop(p, None)
        return vals

    @staticmethod
    def run_call(
        b: Launching, n: Node, index: dict[Node, int], vals: dict[int, Any], leaf_values: Sequence[Any]
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

    def run(
        self, b: Launching, stream: list[Node], leaves: list[Node], scalars: list[Any], reuse: bool = True
    ) -> None:
        """Run the steps over ``stream``'s nodes; ``reuse``: kernels may write into dead inputs
        (``execute_reusing``), as a replay does (not the run right after compile-ahead planning, whose
        kernels were compiled for ``execute``, as a planned stream runs them)."""
        execute, run_call = b.runtime.execute, b._run_call
        reusing = getattr(b.runtime, "execute_reusing", None) if reuse else None
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
    """Collects a program while a stream is planned (``Planning._plan_stream``)."""

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
            self.written.update(t.pos for t in results(n))

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
