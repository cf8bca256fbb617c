"""Record what burn-wgpu does on the device while it runs a captured graph once.

The graph (``burn.ir``) is replayed op by op on a private ``WgpuBackend`` built with WebGPU's default
limits (the browser-portable mode), whose executor and buffer pool are swapped for recording ones:

* every buffer the pool hands out is a fresh one, never recycled, so each buffer has one meaning
  (an input, a constant, an intermediate); the schedule assigns shared slots itself afterwards;
* every upload (``Executor.write``), compute dispatch (WGSL source, bindings, metadata words,
  workgroup counts) and buffer copy is logged in order, and still runs, so the export can check
  its own results natively;
* a read back to the host while recording (a data-dependent shape, a host sync inside the forward)
  is refused with ``WebExportError``: a static schedule cannot express it.

Autotuning is off while recording: candidates would be timed on this machine's adapter, not on the
browser's, and timing needs host syncs. The default kernels are the ones exported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import burn

from .._buffer import BufferPool, GPUBuffer, GPUDevice, Storage, size_class
from .._executor import Executor, Kernel

if TYPE_CHECKING:
    import numpy as np

    from .._backend import WgpuBackend


class WebExportError(burn.BurnError, ValueError):
    """A model that cannot become a static WebGPU page (a host read inside the forward, an
    unsupported input dtype, a shape left open)."""


@dataclass
class BufferRecord:
    """One device buffer seen while recording. ``kind``: ``"input"``, ``"constant"`` (uploaded once
    with bytes known at export), ``"temp"`` (written by kernels only) or ``"scratch"`` (made outside
    the pool, e.g. the index-check record)."""

    size: int
    kind: str = "temp"
    data: bytes = b""
    written: bool = False  # some kernel or copy writes it


@dataclass(frozen=True)
class Dispatch:
    kernel: Kernel
    buffers: tuple[int, ...]
    meta: bytes
    groups: tuple[int, int, int]


@dataclass(frozen=True)
class Copy:
    src: int
    src_offset: int
    dst: int
    dst_offset: int
    size: int


@dataclass
class Trace:
    """Everything the device did, buffers numbered in order of first sight."""

    buffers: list[BufferRecord] = field(default_factory=list)
    events: list[Dispatch | Copy] = field(default_factory=list)


class RecordingPool(BufferPool):
    """A pool that never recycles: each request gets a new buffer, kept alive until the export ends."""

    def __init__(self, device: GPUDevice, max_binding: int, max_buffer: int) -> None:
        super().__init__(device, max_binding, max_buffer)
        # a browser binds whole buffers: no tensor over one binding (``_windows`` is native only)
        self.tensor_limit = min(max_binding, max_buffer)
        self.keep: list[GPUBuffer] = []
        self.ids: set[int] = set()

    def storage(
        self, nbytes: int, op: str = "alloc", shape: tuple[int, ...] = (), upload: bool = False
    ) -> Storage:
        self.check_size(op, nbytes, shape)
        cls = size_class(max(nbytes, 4), min(self.max_binding, self.max_buffer))
        buf = self._device.create_buffer(size=cls, usage=self._usage)
        self.keep.append(buf)
        self.ids.add(id(buf))
        self.stats["allocated"] += 1
        self.stats["bytes_allocated"] += cls
        return Storage(buf, cls)


class RecordingExecutor(Executor):
    """An executor that logs uploads, dispatches and copies into a ``Trace`` while ``tracing``."""

    def __init__(self, device: GPUDevice, pool: RecordingPool) -> None:
        super().__init__(device, pool, batch_size=256)
        self._pool_ids = pool.ids
        self.trace = Trace()
        self.tracing = True  # not "recording": the base Executor records programs under that name
        self.phase = "constant"  # "input" while the graph inputs are uploaded
        self._ids: dict[int, int] = {}
        self._keep: list[GPUBuffer] = []

    def ref(self, buffer: GPUBuffer) -> int:
        """The number of ``buffer`` in the trace (registered at first sight: a pool buffer as a temp,
        any other as scratch)."""
        key = id(buffer)
        n = self._ids.get(key)
        if n is None:
            n = self._ids[key] = len(self.trace.buffers)
            kind = "temp" if key in self._pool_ids else "scratch"
            self.trace.buffers.append(BufferRecord(int(buffer.size), kind))
            self._keep.append(buffer)
        return n

    def dispatch(
        self, kernel: Kernel, buffers: list[GPUBuffer], meta: bytes, groups: tuple[int, int, int]
    ) -> None:
        if self.tracing:
            self._traceable("a dispatch appended to a recorded command list")
            refs = tuple(self.ref(b) for b in buffers)
            for n, access in zip(refs, kernel.bindings):
                if access == "rw":
                    self.trace.buffers[n].written = True
            self.trace.events.append(Dispatch(kernel, refs, bytes(meta), tuple(groups)))  # type: ignore[arg-type]
        super().dispatch(kernel, buffers, meta, groups)

    def copy(self, src: GPUBuffer, src_offset: int, dst: GPUBuffer, dst_offset: int, size: int) -> None:
        if self.tracing:
            self._traceable("a copy appended to a recorded command list")
            s, d = self.ref(src), self.ref(dst)
            self.trace.buffers[d].written = True
            self.trace.events.append(Copy(s, src_offset, d, dst_offset, size))
        super().copy(src, src_offset, dst, dst_offset, size)

    def _traceable(self, what: str) -> None:
        """Refuse what the trace cannot follow: a command list captured now (``_graphs``) runs later
        as a replay that bypasses ``dispatch``, so its launches would be logged where they were
        captured, not where they ran (a fused transformer's second layer norm read buffers that
        were written after it in the schedule)."""
        if self.recording is not None:
            raise WebExportError(f"web export: {what} cannot be traced (device graphs must be off)")

    def replay(self, commands: list[tuple[Any, ...]]) -> None:
        if self.tracing:
            raise WebExportError("web export: a replayed command list cannot be traced")
        super().replay(commands)

    def replay_raw(self, commands: list[tuple[Any, ...]], raw: list[tuple[Any, ...] | None]) -> None:
        if self.tracing:
            raise WebExportError("web export: a replayed command list cannot be traced")
        super().replay_raw(commands, raw)

    def write(self, buffer: GPUBuffer, data: bytes) -> None:
        if self.tracing:
            rec = self.trace.buffers[self.ref(buffer)]
            if rec.kind == "temp" and not rec.data:
                rec.kind = "input" if self.phase == "input" else "constant"
                rec.data = bytes(data)
            else:  # a second upload into one buffer: never done by the pool, refuse rather than guess
                raise WebExportError("web export: a buffer was uploaded twice while recording")
        super().write(buffer, data)

    def read(self, ranges: list[tuple[GPUBuffer, int, int]]) -> list[bytes]:
        if self.tracing:
            raise WebExportError(
                "web export: the forward reads device data back to the host in the middle of the graph "
                "(a data-dependent shape or a host sync); a static WebGPU schedule cannot do that"
            )
        return super().read(ranges)


_PORTABLE: dict[int, Any] = {}


def portable_context(index: int = 0) -> Any:
    """A wgpu device with WebGPU's default limits and no optional features (built once per adapter)."""
    ctx = _PORTABLE.get(index)
    if ctx is None:
        from .._device import PORTABLE_LIMITS, GpuContext, pick_adapter

        adapter = pick_adapter(index)
        have = dict(adapter.limits)
        limits = {k: min(v, have.get(k, v)) for k, v in PORTABLE_LIMITS.items()}
        device = adapter.request_device_sync(required_features=[], required_limits=dict(limits))
        ctx = _PORTABLE[index] = GpuContext(adapter, device, limits, frozenset(), True)
    return ctx


def recording_backend(index: int = 0) -> WgpuBackend:
    """A fresh portable ``WgpuBackend`` whose executor and pool record (one per export)."""
    from .._backend import WgpuBackend
    from .._index_check import IndexChecker

    b = WgpuBackend(index, context=portable_context(index))
    limits = b.ctx.limits
    b.pool = RecordingPool(b.ctx.device, limits["max-storage-buffer-binding-size"], limits["max-buffer-size"])
    b.ex = RecordingExecutor(b.ctx.device, b.pool)
    b.ex.label = f"wgpu:{index} (web export)"
    b.index_checks = IndexChecker(b)
    return b


@contextmanager
def autotune_off() -> Iterator[None]:
    old = os.environ.get("BURN_AUTOTUNE")
    os.environ["BURN_AUTOTUNE"] = "off"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("BURN_AUTOTUNE", None)
        else:
            os.environ["BURN_AUTOTUNE"] = old


@dataclass
class Recorded:
    """A recorded forward: the trace, where inputs and outputs live, and the outputs computed natively."""

    trace: Trace
    inputs: list[int]  # buffer of each graph input, in graph order
    outputs: list[tuple[int, int, int]]  # (buffer, byte offset, byte size) of each output
    values: list[np.ndarray]  # the outputs as computed here while recording


def record(graph: Any, feeds: list[np.ndarray], index: int = 0, *, fusion: bool = True) -> Recorded:
    """Run ``graph`` (a ``burn.ir.Graph``) once on a recording portable backend with ``feeds`` (numpy
    arrays in graph input order, already of the graph's input dtypes).

    ``fusion``: replay through ``burn.fusion.Fusion`` over the recording backend, as burn-wgpu runs
    natively: element-wise chains become one generated WGSL kernel each (within the portable binding
    limit, which fusion's runtime takes from the backend) and intermediates that only feed them are
    never written. A value is dropped after its last read, so fusion keeps it in registers, except a
    value read by several ops with a call (matmul, reduction, ...) between them: that one is held
    until the stream is flushed, so fusion writes it once instead of computing it again in the
    kernels on each side (in a recurrent cell the state would otherwise be recomputed from every
    earlier step). The stream is also flushed after each call that launched kernels, where no
    element-wise value waits for a reader. These are choices of the export's own stream, made from
    the whole graph, which fusion's online planner cannot see.
    """
    from burn.ir import op_def

    graph = fold_constants(graph)
    b = recording_backend(index)
    ex = b.ex
    assert isinstance(ex, RecordingExecutor)
    if fusion:
        from burn.fusion import Fusion

        # no device graphs: a captured program replays as one command list that bypasses the
        # executor's dispatch, so the trace would miss its launches
        runner: Any = Fusion(b, graphs=False)
    else:
        runner = b
    out_ids = {ref.id for ref in graph.outputs}
    last_use: dict[int, int] = {}
    readers: dict[int, int] = {}
    made: dict[int, int] = {}  # value -> the op that produces it
    lazy: set[int] = set()  # values of element-wise ops (lazy under fusion until something reads them)
    # breaks[i]: ops before op i that fusion runs whole on a lazy operand, which launches the kernels
    # computing that operand (a slice of a matmul's result launches nothing: it is a view)
    breaks = [0]
    flush_after: set[int] = set()
    lazy_ops: set[int] = set()  # element-wise ops
    for i, op in enumerate(graph.ops):
        read = {ref.id for ref in _refs(op.args)}
        for rid in read:
            last_use[rid] = i
            readers[rid] = readers.get(rid, 0) + 1
        elementwise = op_def(op.kind).method in _ELEMENTWISE
        if elementwise:
            lazy_ops.add(i)
        for ref in op.outputs:
            made[ref.id] = i
            if elementwise:
                lazy.add(ref.id)
        launches = not elementwise and not read.isdisjoint(lazy)
        breaks.append(breaks[-1] + launches)
        if launches:
            lazy -= read  # computed now: later reads launch nothing
            flush_after.add(i)
    # held until the flush: values read by several ops with a kernel launch between them (a kernel
    # cannot span it, so each side would compute the value again); values whose readers all come
    # before the next launch fuse into one kernel with them and are never written
    keep = out_ids | {
        rid
        for rid, n in readers.items()
        if n > 1 and rid in made and breaks[last_use[rid]] > breaks[made[rid] + 1]
    }
    env: dict[int, Any] = {}
    waiting: set[int] = set()  # element-wise results not yet read by all their readers
    inputs = []
    with autotune_off():
        ex.phase = "input"
        for (_, ref), arr in zip(graph.inputs.items(), feeds):
            prim = runner.from_numpy(arr, ref.dtype)
            env[ref.id] = prim
            inputs.append(ex.ref(_inner(runner, prim).buffer))
        ex.phase = "constant"
        for cid, arr in graph.constants.items():
            env[cid] = runner.from_numpy(arr, burn.dtype(arr.dtype.name))

        for i, op in enumerate(graph.ops):
            for prim, ref in zip(op.run(runner, env), op.outputs):
                if ref.id in keep or last_use.get(ref.id, -1) > i:
                    env[ref.id] = prim  # an unused result is dropped at once
            del prim
            for ref in _refs(op.args):  # values read for the last time: fusion may keep them in registers
                if last_use.get(ref.id) == i and ref.id not in keep:
                    env.pop(ref.id, None)
            # a call that launched kernels: flush, so the element-wise ops after it see its result as
            # computed (fusion counts a deferred call's inputs into every expression reading it and
            # would flush in mid-expression instead), unless an element-wise value waits for its
            # reader (a flush would write it rather than keep it in registers)
            waiting = {rid for rid in waiting if rid in env and env[rid].node.op is not None}
            if fusion and i in flush_after and not waiting:
                runner.flush()
            if fusion and i in lazy_ops:
                waiting.update(r.id for r in op.outputs if r.id in env and r.id not in keep)
        if fusion:
            runner.flush()
        from .._dtypes import ELEM_BYTES

        dense = [b._readable(_inner(runner, env[ref.id])) for ref in graph.outputs]
        outputs = [(ex.ref(d.buffer), d.byte_offset, d.numel * ELEM_BYTES[d.dtype]) for d in dense]
        ex.tracing = False
        values = b.read_many(dense)
    return Recorded(ex.trace, inputs, outputs, values)


_FOLD_GROWTH = 4  # a folded value may be at most this many times its largest operand (or small)
_FOLD_SMALL = 1 << 16  # elements


def fold_constants(graph: Any) -> Any:
    """``graph`` with the ops that read only constants computed once now, on burn's numpy backend,
    their results becoming constants of the page: the weights' transforms of an imported model (a
    batch norm folded into the conv before it: ``w * gamma / sqrt(var + eps)``, ``beta - mean *
    ...``) would otherwise run as dispatches on every call. Ops that read no tensor, outputs of the
    graph, and results much larger than their operands (a broadcast constant would bloat the
    weights) stay in the schedule. Returns ``graph`` itself when nothing folds."""
    import numpy as np

    cpu = burn.device("cpu").backend
    out_ids = {ref.id for ref in graph.outputs}
    known = dict(graph.constants)
    env: dict[int, Any] = {}
    kept = []
    for op in graph.ops:
        refs = list(_refs(op.args))
        foldable = (
            refs
            and all(r.id in known for r in refs)
            and not any(ref.id in out_ids for ref in op.outputs)
            and max(int(np.prod(ref.shape)) for ref in op.outputs)
            <= max(_FOLD_SMALL, _FOLD_GROWTH * max(int(np.asarray(known[r.id]).size) for r in refs))
        )
        if not foldable:
            kept.append(op)
            continue
        for r in refs:
            if r.id not in env:
                arr = np.asarray(known[r.id])
                env[r.id] = cpu.from_numpy(arr, burn.dtype(arr.dtype.name))
        try:
            results = op.run(cpu, env)
        except Exception:  # an op the numpy backend cannot run on its own: leave it to the device
            kept.append(op)
            continue
        for prim, ref in zip(results, op.outputs):
            value = np.asarray(cpu.to_numpy(prim))
            if value.dtype.name != ref.dtype.name:
                value = value.astype(ref.dtype.name)
            known[ref.id] = value
            env[ref.id] = prim
    if len(kept) == len(graph.ops):
        return graph
    used = {r.id for op in kept for r in _refs(op.args)} | out_ids
    constants = {cid: arr for cid, arr in known.items() if cid in used}
    return type(graph)(dict(graph.inputs), constants, kept, list(graph.outputs))


# the backend methods whose ops fusion defers as element-wise expressions
_ELEMENTWISE = frozenset({"unary", "activation", "binary", "where", "clamp", "cast"})


def _refs(args: Any) -> Iterator[Any]:
    """The ``burn.ir.Ref`` operands in an op's (possibly nested) arguments."""
    from burn.ir import Ref

    for a in args:
        if isinstance(a, Ref):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _refs(a)


def _inner(runner: Any, prim: Any) -> Any:
    """The recording backend's primitive behind ``prim`` (computed first under fusion)."""
    inner_prim = getattr(runner, "inner_prim", None)
    return prim if inner_prim is None else inner_prim(prim)
