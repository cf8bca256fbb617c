"""The inputs of a captured CUDA graph (``_graphs``): filling the buffers it reads before a launch, the
feed kernel that copies lent buffers into them, and writing a step's updates over the input buffers
their old values were read from (aliasing).

* ``_fill`` copies each input the graph does not read in place into its own buffer: those another
  launch lent (a weight the last launch wrote, or a buffer another captured program lends) through
  the feed kernel (``_feed``, ``_multicopy``), the others one by one; an input that is its buffer
  already (an aliased one) not at all.
* ``_alias_plan`` picks, at a capture, the written values to write over the graph's own input
  buffers: a value seen to become an input at the next run (the replay before the capture records
  which position wrote each value a tensor got; launches add what they see), where no step after
  the one writing it reads that input and no call reads it at all. ``_settled`` asks for one more
  capture when launches find pairs the capture did not know (with buffers of its own: the last
  graph's may still be held by the tensors it lent them to).
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ._bf16 import bits
from ._dtypes import param_dtype
from ._multicopy import MultiCopy

if TYPE_CHECKING:
    from ._graphs import CudaGraphProgram

# a graph's launch that finds inputs that are its own written values it did not write over their buffers
# declines, and the program is captured again, at most this many times; the graph hints key counting
# them (the other keys are positions: ``_settled``)
RECAPTURES, DECLINES = 2, -1
FEED_CAPTURES = 4  # feed graphs captured per program at most (the pairs settle at the first launches)

# captured programs still alive, whatever holds them: burn.memory_stats adds their private pools
LIVE_GRAPHS: weakref.WeakSet[CudaGraphProgram] = weakref.WeakSet()


def _lent_by_others(graph: GraphInputs) -> dict[int, tuple[CudaGraphProgram, int]]:
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


class GraphInputs:
    """The input side of ``CudaGraphProgram`` (its state is set there)."""

    runtime: Any
    program: Any
    backend: Any
    inputs: list[Any]
    direct: list[bool]
    values: dict[int, Any]
    tables: dict[Any, Any]
    slots: dict[Any, list[int]]
    lent_ids: dict[int, int]
    lent: list[tuple[Any, int]]
    readers: list[tuple[weakref.ref[CudaGraphProgram], dict[int, int]]]
    refs: dict[int, int]
    aliased: dict[int, int]
    own_inputs: frozenset[int]
    _called_inputs: frozenset[int]
    feed: Any
    feed_pairs: tuple[tuple[int, int], ...]
    feed_srcs: list[tuple[int, int | None, Any]]
    feed_reads: list[tuple[weakref.ref[CudaGraphProgram], dict[int, int]]]
    feeds: int

    def _note(self, what: str) -> None:  # ``CudaGraphProgram._note``
        raise NotImplementedError

    def _ready(self, leaves: list[Any]) -> bool:
        """Whether every input the graph reads in place is still the same array (else the graph cannot
        serve this stream). The inputs that changed are remembered for the program
        (``CudaFusion.graph_copied``): its next capture copies them in instead, so programs that read
        each other's buffers in a cycle (a step cut into several graphs: each capture gives its values
        new buffers, dropping the graphs that read the old ones) settle after one drop per input
        instead of dropping each other at every step."""
        changed = {
            k
            for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct))
            if direct and leaf.value is not buf
        }
        if changed:
            self.runtime.graph_copied.setdefault(id(self.program), set()).update(changed)
        return not changed

    def _fill(
        self, cp: Any, leaves: list[Any], scalars: list[Any], later: list[tuple[int, Any]] | None = None
    ) -> None:
        """Copy the stream's inputs and scalars into the buffers the graph reads: the inputs the last
        launch lent through the feed graph (``_feed``), the others one by one after it; an input that
        is its buffer already (an aliased one, ``aliased``) not at all. ``later``: where the copies
        into aliased buffers go instead (the buffer may hold a value the last launch lent, which
        ``_reclaim`` copies out first)."""
        s = self.backend.stream
        fed = self._feed(leaves)
        own = self.own_inputs
        for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct)):
            if direct or k in fed or leaf.value is buf:
                continue
            if later is not None and k in own:
                later.append((k, leaf.value))  # the index: a reference to the buffer would count
            else:
                _copy_into(cp, buf, leaf.value, s)
        for dt, idx in self.slots.items():
            host = np.array([scalars[i] for i in idx], dtype=dt)
            self.tables[dt].set(host.view(param_dtype(dt)))  # bfloat16: its bits

    def _feed(self, leaves: list[Any]) -> set[int]:
        """Launch the feed kernel and return the input indices it served this time: each input that is
        the buffer its pair names, a buffer this graph lent at its last launch or one another
        captured program lends (the weights an optimizer's graph wrote, read by a forward graph
        captured before it). Inputs that are such buffers but not in the kernel's pairs (the first
        launches; a model that swapped a weight) make a new feed over the pairs seen now, at most
        ``FEED_CAPTURES`` times per program (past that, they are copied one by one)."""
        values, ids, own = self.values, self.lent_ids, self.own_inputs
        others: dict[int, tuple[CudaGraphProgram, int]] | None = None
        pairs: list[tuple[int, int | None, Any]] = []
        for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct)):
            v = leaf.value
            if direct or buf is v or k in own or not _same_layout(buf, v):
                continue  # an aliased buffer is filled after ``_reclaim`` (``_fill``'s ``later``)
            p = ids.get(id(v))
            if p is not None and values[p] is v:
                pairs.append((k, p, v))
                continue
            if others is None:
                others = _lent_by_others(self)
            owner = others.get(id(v))
            if owner is not None and owner[0].values.get(owner[1]) is v:
                pairs.append((k, None, v))
        found = tuple((k, id(v)) for k, _, v in pairs)
        if found != self.feed_pairs and self.feeds < FEED_CAPTURES and found:
            self._capture_feed(pairs, others or {})
            self.feed_pairs = found
            self.feeds += 1
        if self.feed is None:
            return set()
        self.feed.launch()  # before the single copies: they may overwrite its inputs
        return {k for k, p, src in self.feed_srcs if leaves[k].value is (values[p] if p is not None else src)}

    def _capture_feed(
        self, pairs: list[tuple[int, int | None, Any]], others: dict[int, tuple[CudaGraphProgram, int]]
    ) -> None:
        """The device-to-device copies of each pair's source into ``inputs[k]``, as one kernel
        (``_multicopy``: hundreds of weights and moments in one launch, not one copy node each). The
        kernel reads its sources by address, so it holds them; a source another program lends makes
        this graph a reader of it there (an expected holder: ``_reclaim``); its own lent buffers (pair
        position ``p``) live as long as the graph and are not held twice."""
        self.backend._on()
        for ref, per in self.feed_reads:  # the last feed's registrations
            g = ref()
            if g is not None:
                g.readers = [(r, d) for r, d in g.readers if d is not per]
        self.feed_reads = []
        by_owner: dict[CudaGraphProgram, dict[int, int]] = {}
        for _, p, src in pairs:
            if p is not None:
                continue
            owner = others.get(id(src))
            if owner is not None:
                per = by_owner.setdefault(owner[0], {})
                per[owner[1]] = per.get(owner[1], 0) + 1
        for g, per in by_owner.items():
            g.readers.append((weakref.ref(self), per))  # type: ignore[arg-type]  # self is a CudaGraphProgram
            self.feed_reads.append((weakref.ref(g), per))
        self.feed_srcs = [(k, p, None if p is not None else src) for k, p, src in pairs]
        self.feed = MultiCopy(self.backend.xp, [(self.inputs[k], src) for k, _, src in pairs])

    def _alias_plan(self, hint: dict[int, int]) -> dict[int, dict[int, int]]:
        """Kernel step number -> {output index: input index} for the (position -> input) pairs of
        ``hint`` that may share a buffer: the input is the graph's own buffer (not read in place), no
        call reads it (its result could be a view of it), no step after the one writing the position
        reads it, and each input and position is taken once."""
        steps = self.program.steps
        last: dict[int, int] = {}  # input index -> the last step reading it
        called: set[int] = set()
        for s_no, step in enumerate(steps):
            if step[0] == 0:
                for r in step[2]:
                    if r < 0:
                        last[-1 - r] = s_no
            else:
                called.add(s_no)
        plan: dict[int, dict[int, int]] = {}
        taken: set[int] = set()
        ki = 0
        for s_no, step in enumerate(steps):
            if step[0] != 0:
                continue
            for j, p in enumerate(step[4]):
                k = hint.get(p)
                if k is None or k in taken or self.direct[k] or k in self._called_inputs:
                    continue
                if last.get(k, -1) > s_no:
                    continue
                plan.setdefault(ki, {})[j] = k
                taken.add(k)
            ki += 1
        return plan

    def _settled(self, leaves: list[Any]) -> bool:
        """False (at most ``RECAPTURES`` times per program) when this launch shows that a capture now
        would copy less: inputs that are this graph's own written values its capture did not write over
        their buffers (it had not seen them become inputs: ``_alias_plan``). The program is then
        captured again (the pairs kept on the runtime). An
        aliased input holding another of this graph's buffers (weights swapped by the user) declines
        too: the copies into aliased buffers run after ``_reclaim`` and could overwrite each other."""
        hint = self.runtime.graph_hints.setdefault(id(self.program), {})
        ids, values = self.lent_ids, self.values
        mine = {id(b) for b in self.inputs}
        pairs: dict[int, int] = {}
        for k, (buf, leaf, direct) in enumerate(zip(self.inputs, leaves, self.direct)):
            v = leaf.value
            if direct or v is buf:
                continue
            if k in self.own_inputs and (id(v) in ids or id(v) in mine):
                hint[DECLINES] = hint.get(DECLINES, 0) + 1
                if hint[DECLINES] >= RECAPTURES:  # the pairs keep changing: capture without aliasing
                    hint.clear()
                    hint[DECLINES] = RECAPTURES
                self._note("an input written over holds another of its buffers: dropped")
                return False
            p = ids.get(id(v))
            if p is not None and values[p] is v and p not in hint and _same_layout(buf, v):
                pairs[p] = k
        if not pairs or hint.get(DECLINES, 0) >= RECAPTURES:
            return True
        hint.update(pairs)
        hint[DECLINES] = hint.get(DECLINES, 0) + 1
        self._note(f"{len(pairs)} inputs are its own written values: captured again")
        return False


def _lendable(values: dict[int, Any], inputs: list[Any], aliased: dict[int, int]) -> frozenset[int]:
    """Positions whose value is a buffer of the graph's own that nothing else is: it owns its memory
    and nothing inside the graph views it, or it is the one whole C-contiguous view of such a buffer
    (a reshape); no other position has it, and it is not one of the graph's input buffers (but for the
    input buffer the position was written over: ``aliased``)."""
    seen: dict[int, int] = {}
    for v in values.values():
        seen[id(v)] = seen.get(id(v), 0) + 1
    taken = {id(v) for v in inputs}
    bases: dict[int, int] = {}
    for v in values.values():
        if v.base is not None:
            bases[id(v.base)] = bases.get(id(v.base), 0) + 1
    return frozenset(
        p
        for p, v in values.items()
        if seen[id(v)] == 1
        and (id(v) not in taken or p in aliased)
        and (
            (v.base is None and id(v) not in bases)
            or (  # a reshape of a buffer of the graph's own that nothing else views (a bias gradient)
                v.base is not None
                and v.base.base is None
                and bases[id(v.base)] == 1
                and id(v.base) not in seen
                and id(v.base) not in taken
                and v.nbytes == v.base.nbytes
                and v.flags.c_contiguous
            )
        )
    )


def _call_inputs(program: Any, stream: list[Any], leaves: list[Any]) -> frozenset[int]:
    """The stream inputs (indices into ``leaves``) that a call step of ``program`` reads."""
    index = {id(n): k for k, n in enumerate(leaves)}
    found: set[int] = set()

    def walk(args: Any) -> None:
        for a in args:
            if isinstance(a, (list, tuple)):
                walk(a)
            elif id(a) in index:
                found.add(index[id(a)])

    for step in program.steps:
        if step[0] != 0:
            walk(stream[step[1]].args)
    return frozenset(found)


def _refs(values: dict[int, Any], p: int) -> int:
    """The reference count of ``values[p]`` as seen from here (one function, so always counted alike:
    ``values``, views of it inside the graph's values, ``arr`` and getrefcount's argument), plus its
    base's where it is a view."""
    arr = values[p]
    base = arr.base
    if base is None:
        return sys.getrefcount(arr)
    # a lent reshape: a view of it made outside holds the base (CuPy views keep the root array), so the
    # base's count shows it
    return sys.getrefcount(arr) + sys.getrefcount(base)
