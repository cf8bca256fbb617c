"""Fusion programs replayed as recorded command lists: a repeated stream (a training step) costs one
pass over prebuilt bind groups and one submission.

``burn.fusion`` keeps what planning a stream ran as a program (fused kernels and backend calls over
stream positions) and, after a few replays, asks the runtime to capture it
(``WgpuFusion.capture_program``). WebGPU has no graphs for compute, so this module records the program
instead, at the executor:

* the program runs once as usual over the stream's own inputs (these are this stream's results), then
  once more with the executor ``recording``: every dispatch and copy is appended to a list instead of
  being encoded, over buffers from a pool private to the recording (no buffer the commands write is
  ever handed to other code);
* each recorded dispatch keeps its pipeline, a bind group built once over the recording's metadata
  arena (one 256-byte slot per dispatch, uploaded once) and its workgroup counts; a fused kernel's
  scalars (a learning rate, Adam's bias corrections) are the last words of its slot, rewritten before
  a launch when they changed;
* the stream's inputs are copied into buffers the recording owns at the start of each launch; an input
  that stayed the same tensor over the last replays (a weight in an inference loop) is read in place,
  and a launch where it changed is declined (the program then replays step by step and is recorded
  again later);
* after the commands, each value a tensor holds is copied out into a fresh pool buffer (the next launch
  overwrites the recording's buffers), and the whole launch is one submission;
* the first launch encodes through wgpu-py's methods (which raise on a validation error); later ones,
  encoding the same validated commands, call wgpu-native's functions directly, skipping wgpu-py's
  per-call error capture (``Executor.replay_raw``);
* an upload inside a call (an index table) runs once, at recording time, into a buffer kept for good;
  a read back to the host cannot be recorded: such a program keeps replaying step by step.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from burn.fusion import FusedKernel

from ._buffer import BufferPool, GPUBuffer, Storage
from ._dtypes import ELEM_BYTES, scalar_bits
from ._executor import _META_ALIGN, _META_WINDOW, DISPATCH
from ._primitive import WgpuTensor

if TYPE_CHECKING:
    from ._fusion import WgpuFusion


class RecordingPool(BufferPool):
    """The buffers of one recorded program: released ones return here (a later command of the same
    recording may reuse them: commands run in order), never to the backend's pool; uploaded ones are
    pinned, since their contents are set once."""

    def __init__(self, base: BufferPool) -> None:
        super().__init__(base._device, base.max_binding, base.max_buffer)
        self._pinned: set[int] = set()
        self.held: list[GPUBuffer] = []  # every buffer made, alive as long as the recording

    def storage(
        self, nbytes: int, op: str = "alloc", shape: tuple[int, ...] = (), upload: bool = False
    ) -> Storage:
        st = super().storage(nbytes, op, shape, upload)
        self.held.append(st.buffer)
        return st

    def pin(self, buffer: GPUBuffer) -> None:
        self._pinned.add(id(buffer))

    def _release(self, cls: int, buf: GPUBuffer) -> None:
        if id(buf) not in self._pinned:
            super()._release(cls, buf)


def _extent(t: WgpuTensor) -> int:
    """Bytes from the start of ``t``'s buffer to the end of its last element, rounded up to 4."""
    last = t.offset + sum((s - 1) * st for s, st in zip(t.shape, t.strides) if s > 0)
    end = (last + 1) * ELEM_BYTES[t.dtype] if all(t.shape) else 0
    return -(-end // 4) * 4


class WgpuGraphProgram:
    """One recorded program: its input buffers, commands, metadata arena and scalar slots."""

    def __init__(self, runtime: WgpuFusion, fusion: Any, program: Any) -> None:
        self.runtime, self.fusion, self.program = runtime, fusion, program
        self.backend = runtime.backend
        self.inputs: list[WgpuTensor] = []
        self.direct: list[bool] = []
        self.commands: list[tuple[Any, ...]] = []
        self.values: dict[int, Any] = {}
        self.arena: GPUBuffer = None
        self.meta = bytearray()
        # (byte offset in the arena, scalar dtypes, indices into the stream's scalars) per fused kernel
        self.slots: list[tuple[int, tuple[Any, ...], tuple[int, ...]]] = []
        self.scalars: list[Any] | None = None  # the scalars the arena holds now
        self.pool: RecordingPool | None = None
        self.sizes: list[int] = []  # bytes copied into each input buffer at a launch
        self.raw: list[tuple[Any, ...] | None] | None = None  # native handles, after a first validated launch
        self.checked = False  # a launch went through wgpu-py's checked calls
        self.out_sizes: dict[int, int] = {}  # bytes of each recorded value (by id) a launch copies out

    # ------------------------------------------------------------------ recording
    def capture(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool:
        """Run the stream (its values delivered) and record the program; False if it cannot be."""
        b, program = self.backend, self.program
        execute = self.runtime.execute
        vals = program.run_values(
            self.fusion,
            stream,
            leaves,
            [leaf.value for leaf in leaves],
            lambda _i, plan, ins, sidx: execute(plan, ins, [scalars[j] for j in sidx]),
        )
        try:
            recorded = self._record(stream, leaves, scalars)
        except Exception as exc:  # a read, an unrecordable call: the program replays step by step
            failures = self.runtime.capture_failures
            failures.append(f"{type(exc).__name__}: {exc}")
            del failures[:-8]
            recorded = False
        program.deliver(stream, vals)  # after the recording, which reads the nodes' operands
        if not recorded:
            return False
        b.ex.flush()  # before the arena upload: the queue writes it ahead of the pending encoder
        b.ex.queue.write_buffer(self.arena, 0, bytes(self.meta))
        self.scalars = list(scalars)
        return True

    def _record(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool:
        b, ex, program = self.backend, self.backend.ex, self.program
        last = program.leaf_values
        self.direct = [last is not None and leaf.value is last[i] for i, leaf in enumerate(leaves)]
        ex.flush()
        base = b.pool
        self.pool = pool = RecordingPool(base)
        self.inputs = [
            leaf.value if direct else self._static(pool, leaf.value)
            for leaf, direct in zip(leaves, self.direct)
        ]
        self.sizes = [_extent(t) for t in self.inputs]
        log: list[tuple[Any, ...]] = []
        marks: list[tuple[int, FusedKernel, tuple[int, ...]]] = []
        execute = self.runtime.execute

        def kernel(_i: int, plan: FusedKernel, ins: list[Any], sidx: tuple[int, ...]) -> list[Any]:
            at = len(log)
            outs = execute(plan, ins, [scalars[j] for j in sidx])
            if sidx and len(log) > at:
                marks.append((len(log) - 1, plan, sidx))
            return outs

        b.pool = ex.pool = pool
        ex.recording = log
        try:
            self.values = program.run_values(self.fusion, stream, leaves, self.inputs, kernel)
        finally:
            ex.recording = None
            b.pool = ex.pool = base
        self.out_sizes = {id(v): _extent(v) for v in self.values.values()}
        if not any(cmd[0] == DISPATCH for cmd in log):
            return False
        self._build(log, marks)
        return True

    def _static(self, pool: RecordingPool, t: WgpuTensor) -> WgpuTensor:
        """A buffer of the recording laid out like input ``t`` (same view over a buffer of its own)."""
        return WgpuTensor(pool.storage(max(_extent(t), 4)), t.shape, t.dtype, t.strides, t.offset)

    def _build(
        self, log: list[tuple[Any, ...]], marks: list[tuple[int, FusedKernel, tuple[int, ...]]]
    ) -> None:
        ex = self.backend.ex
        offsets: dict[int, int] = {}
        meta = bytearray()
        for k, cmd in enumerate(log):
            if cmd[0] == DISPATCH:
                offsets[k] = len(meta)
                data = cmd[4]
                meta += data
                meta += bytes(-(-max(len(data), 4) // _META_ALIGN) * _META_ALIGN - len(data))
        import wgpu

        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        self.arena = ex.device.create_buffer(size=len(meta) + _META_WINDOW, usage=usage)
        self.meta = meta
        self.commands = [
            (DISPATCH, cmd[1], ex.new_bind_group(cmd[2], cmd[3], self.arena), offsets[k], cmd[5])
            if cmd[0] == DISPATCH
            else cmd
            for k, cmd in enumerate(log)
        ]
        self.slots = [
            (offsets[k] + len(log[k][4]) - 4 * len(sidx), tuple(plan.scalars), sidx)
            for k, plan, sidx in marks
        ]

    # ------------------------------------------------------------------ launch
    def launch(self, stream: list[Any], leaves: list[Any], scalars: list[Any]) -> bool:
        """Run the recorded program over this stream's inputs and scalars and deliver what tensors hold;
        False (nothing run) when an input read in place is not the same tensor any more, or an input
        is laid out otherwise than the buffer the recording reads it from."""
        ex = self.backend.ex
        for t, leaf, direct in zip(self.inputs, leaves, self.direct):
            v = leaf.value
            if v is not t and (direct or v.offset != t.offset or v.strides != t.strides):
                return False
        if self.slots and scalars != self.scalars:
            meta = self.meta
            for at, dtypes, sidx in self.slots:
                words = [scalar_bits(dt, scalars[j]) for dt, j in zip(dtypes, sidx)]
                meta[at : at + 4 * len(words)] = struct.pack(f"<{len(words)}I", *words)
            ex.queue.write_buffer(self.arena, 0, bytes(meta))  # the last launch was submitted
            self.scalars = list(scalars)
        for t, leaf, direct, size in zip(self.inputs, leaves, self.direct, self.sizes):
            if not direct and size:
                ex.copy(leaf.value.buffer, 0, t.buffer, 0, size)
        if self.raw is not None:
            ex.replay_raw(self.commands, self.raw)
        else:
            ex.replay(self.commands)  # the first launch goes through wgpu-py's checked calls
            if not self.checked:
                self.checked = True
                self.raw = ex.fast_commands(self.commands)
        self.program.deliver(stream, self.values, copy=self._copy_out)
        ex.flush()
        return True

    def _copy_out(self, t: WgpuTensor) -> WgpuTensor:
        """``t`` (in the recording's buffers) copied into a fresh buffer of the backend's pool."""
        size = self.out_sizes[id(t)]
        out = WgpuTensor(self.backend.pool.storage(max(size, 4)), t.shape, t.dtype, t.strides, t.offset)
        if size:
            self.backend.ex.copy(t.buffer, 0, out.buffer, 0, size)
        return out
