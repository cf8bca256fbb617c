"""Records dispatches into one command encoder and submits them in batches.

* Pipelines are cached by WGSL source (``stats["pipeline_hits"]``/``["pipeline_misses"]``) and created
  on a thread pool (``_compiler``): a dispatch whose pipeline is not there yet is kept, with every command
  after it, in ``_deferred`` until the batch is encoded (at a flush, a copy, a timestamp or a replay),
  so the kernels of a batch compile side by side while the next ones are planned and recorded.
* Each dispatch's parameters (shapes, strides, offsets, scalars) go into a per-batch metadata arena,
  one 256-byte-aligned slot per dispatch, written with ONE ``queue.write_buffer`` right before the
  batch is submitted; no buffer is created per op. Binding 0 (the metadata) takes its slot as a
  dynamic offset, so a bind group depends on the tensors' buffers only and is reused across slots.
* The batch is submitted when ``batch_size`` dispatches are pending, when the arena is full, and on
  every read or sync (``flush``): submit counts depend on the ops alone, never on timing.
* ``read`` copies many buffer ranges into one staging buffer and maps it once (Burn's transactions).
* While ``recording`` is a list, dispatches and copies are appended to it instead of being encoded
  (``_graphs`` captures a fusion program that way); a read cannot be recorded and raises
  ``NotRecordable``, and an upload runs at once into a buffer the recording pool keeps for good.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from burn import ShapeError

from ._buffer import GPUBuffer, GPUDevice
from ._compiler import Compiler
from ._windows import BufferRange

if TYPE_CHECKING:
    from ._buffer import BufferPool

_META_ALIGN = 256  # WebGPU's default minStorageBufferOffsetAlignment
_ARENA_BYTES = 1 << 20
_META_WINDOW = 1 << 16  # bytes of the arena binding 0 sees from its dynamic offset (a dispatch's meta cap)
_BIND_GROUP_CACHE = 8192
DISPATCH, COPY = 0, 1  # recorded commands


@functools.cache
def _native() -> tuple[Any, Any] | None:
    """wgpu-native's cffi ``lib`` and ``ffi`` as wgpu-py 0.32 exposes them, or None (looked up once:
    every replayed launch asks)."""
    try:
        from wgpu.backends.wgpu_native import _ffi

        lib = _ffi.lib
        for name in (
            "wgpuComputePassEncoderSetPipeline",
            "wgpuComputePassEncoderSetBindGroup",
            "wgpuComputePassEncoderDispatchWorkgroups",
        ):
            getattr(lib, name)
        return lib, _ffi.ffi
    except (ImportError, AttributeError):
        return None


def _buffer_key(b: GPUBuffer | BufferRange) -> Any:
    return (id(b.buffer), b.offset, b.size) if isinstance(b, BufferRange) else id(b)


class NotRecordable(RuntimeError):
    """A command that cannot be part of a recorded program (a read back to the host)."""


@dataclass(frozen=True)
class Kernel:
    """A WGSL compute shader. Binding 0 is always the u32 metadata array; ``bindings`` lists the
    access of bindings 1.. (``"read"`` or ``"rw"``)."""

    name: str
    source: str
    bindings: tuple[str, ...]


class Executor:
    def __init__(self, device: GPUDevice, pool: BufferPool, batch_size: int) -> None:
        import wgpu

        self._wgpu = wgpu
        self.device = device
        self.queue = device.queue
        self.pool = pool
        self.batch_size = batch_size
        self.compiler = Compiler(device, "wgpu")
        self._deferred: list[tuple[Kernel, Any, Any, int, tuple[int, int, int]]] = []
        self._layouts: dict[tuple[str, ...], Any] = {}
        self._staging: dict[int, list[GPUBuffer]] = {}
        self._bind_groups: dict[tuple, Any] = {}
        self._encoder: Any = None
        self._pass: Any = None
        self._pending = 0
        self.recording: list[tuple[Any, ...]] | None = None
        self._meta = bytearray()
        self._arena = device.create_buffer(
            size=_ARENA_BYTES + _META_WINDOW,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC,
        )
        self.stats = {
            "dispatches": 0,
            "submits": 0,
            "maps": 0,
            "pipeline_hits": 0,
            "pipeline_misses": 0,
        }

    @property
    def label(self) -> str:
        """The device name compile events carry (the backend sets it)."""
        return self.compiler.label

    @label.setter
    def label(self, value: str) -> None:
        self.compiler.label = value

    # ------------------------------------------------------------------ pipelines
    def _layout(self, bindings: tuple[str, ...]) -> Any:
        layout = self._layouts.get(bindings)
        if layout is None:
            wgpu = self._wgpu
            kinds = {"read": wgpu.BufferBindingType.read_only_storage, "rw": wgpu.BufferBindingType.storage}
            meta = {"type": kinds["read"], "has_dynamic_offset": True}
            entries = [{"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": meta}]
            entries += [
                {"binding": i + 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kinds[k]}}
                for i, k in enumerate(bindings)
            ]
            layout = self._layouts[bindings] = self.device.create_bind_group_layout(entries=entries)
        return layout

    @property
    def _pipelines(self) -> dict[str, tuple[Any, Any]]:
        """The pipelines created so far, by WGSL source."""
        return self.compiler._done

    def pipeline(self, kernel: Kernel) -> tuple[Any, Any]:
        """``kernel``'s (pipeline, bind group layout), created now or waited for."""
        self._count(kernel)
        return self.compiler.get(kernel, self._layout(kernel.bindings))

    def _count(self, kernel: Kernel) -> None:
        self.stats["pipeline_hits" if self.compiler.known(kernel.source) else "pipeline_misses"] += 1

    # ------------------------------------------------------------------ recording
    def _encoder_now(self) -> Any:
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _settle(self) -> None:
        """Encode the dispatches kept while their pipelines were created, in their order (waiting for the
        pipelines that are not there yet). A kernel that fails to compile is left out and its error
        raised once the others are encoded, so the batch stays whole."""
        deferred, self._deferred = self._deferred, []
        error: Exception | None = None
        for kernel, layout, bind_group, offset, groups in deferred:
            try:
                pipeline, _ = self.compiler.get(kernel, layout)
            except Exception as exc:
                error = error or exc
                continue
            if self._pass is None:
                self._pass = self._encoder_now().begin_compute_pass()
            self._pass.set_pipeline(pipeline)
            self._pass.set_bind_group(0, bind_group, (offset,))
            self._pass.dispatch_workgroups(*groups)
        if error is not None:
            raise error

    def _end_pass(self) -> None:
        if self._deferred:
            self._settle()
        if self._pass is not None:
            self._pass.end()
            self._pass = None

    def dispatch(
        self, kernel: Kernel, buffers: list[GPUBuffer], meta: bytes, groups: tuple[int, int, int]
    ) -> None:
        """Record one dispatch of ``kernel`` over ``groups`` workgroups with ``buffers`` at bindings 1..."""
        if len(buffers) != len(kernel.bindings):
            raise RuntimeError(f"{kernel.name}: {len(buffers)} buffers for {len(kernel.bindings)} bindings")
        slot = -(-max(len(meta), 4) // _META_ALIGN) * _META_ALIGN
        if slot > _META_WINDOW:
            raise RuntimeError(f"{kernel.name}: {len(meta)} bytes of metadata, over {_META_WINDOW}")
        if self.recording is not None:
            pipeline, layout = self.pipeline(kernel)
            self.recording.append((DISPATCH, pipeline, layout, list(buffers), bytes(meta), tuple(groups)))
            return
        if len(self._meta) + slot > _ARENA_BYTES:
            self.flush()
        self._count(kernel)
        layout = self._layout(kernel.bindings)
        hit = self.compiler.ready(kernel.source)
        offset = len(self._meta)
        self._meta += meta
        self._meta += bytes(offset + slot - len(self._meta))
        bind_group = self.bind_group(layout, buffers)
        if hit is None or self._deferred:  # encoded once its pipeline exists, after those kept before it
            self.compiler.start(kernel, layout)
            self._deferred.append((kernel, layout, bind_group, offset, groups))
        else:
            if self._pass is None:
                self._pass = self._encoder_now().begin_compute_pass()
            self._pass.set_pipeline(hit[0])
            self._pass.set_bind_group(0, bind_group, (offset,))
            self._pass.dispatch_workgroups(*groups)
        self.stats["dispatches"] += 1
        self._pending += 1
        if self._pending >= self.batch_size:
            self.flush()

    def bind_group(self, layout: Any, buffers: list[GPUBuffer], arena: GPUBuffer | None = None) -> Any:
        """The bind group of ``buffers`` at bindings 1.. with ``arena`` (default: the executor's metadata
        arena) at binding 0, its window placed by a dynamic offset. Cached by buffer identity: training
        loops replay the same pooled buffers."""
        arena = self._arena if arena is None else arena
        key = (id(layout), id(arena), *(_buffer_key(b) for b in buffers))
        bind_group = self._bind_groups.get(key)
        if bind_group is None:
            if len(self._bind_groups) >= _BIND_GROUP_CACHE:
                self._bind_groups.clear()
            bind_group = self._bind_groups[key] = self.new_bind_group(layout, buffers, arena)
        return bind_group

    def new_bind_group(self, layout: Any, buffers: list[GPUBuffer], arena: GPUBuffer) -> Any:
        """A bind group (uncached): ``arena``'s metadata window at binding 0, ``buffers`` at 1..."""
        entries = [{"binding": 0, "resource": {"buffer": arena, "offset": 0, "size": _META_WINDOW}}]
        limit = self.pool.max_binding
        for i, b in enumerate(buffers):
            if isinstance(b, BufferRange):
                resource = {"buffer": b.buffer, "offset": b.offset, "size": b.size}
            elif b.size > limit:
                raise ShapeError(
                    f"a tensor's buffer of {b.size} bytes is over this wgpu device's max storage binding of "
                    f"{limit} bytes: element-wise ops, matmul, conv2d and reductions split such tensors, "
                    "this op does not (narrow or chunk the tensor first)"
                )
            else:
                resource = {"buffer": b, "offset": 0, "size": b.size}
            entries.append({"binding": i + 1, "resource": resource})
        return self.device.create_bind_group(layout=layout, entries=entries)

    def replay(self, commands: list[tuple[Any, ...]]) -> None:
        """Encode recorded commands: ``(DISPATCH, pipeline, bind group, metadata offset, groups)`` and
        ``(COPY, src, src offset, dst, dst offset, size)`` (``_graphs``), through wgpu-py's methods,
        which raise on a validation error."""
        if self._deferred:
            self._settle()
        for cmd in commands:
            if cmd[0] == DISPATCH:
                if self._pass is None:
                    self._pass = self._encoder_now().begin_compute_pass()
                cpass = self._pass
                cpass.set_pipeline(cmd[1])
                cpass.set_bind_group(0, cmd[2], (cmd[3],))
                cpass.dispatch_workgroups(*cmd[4])
            else:
                self.copy(*cmd[1:])
        self.stats["dispatches"] += sum(cmd[0] == DISPATCH for cmd in commands)
        self._pending += len(commands)

    def replay_raw(self, commands: list[tuple[Any, ...]], raw: list[tuple[Any, ...] | None]) -> None:
        """``replay`` for commands already encoded once through it (so validated): straight into
        wgpu-native's functions, without wgpu-py's per-call error capture (three calls per dispatch
        make it a large share of a replayed step). ``raw``: ``fast_commands(commands)``."""
        native = _native()
        assert native is not None  # fast_commands gave the handles
        if self._deferred:
            self._settle()
        lib = native[0]
        set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        dispatches = 0
        for cmd, fast in zip(commands, raw):
            if fast is None:
                self.copy(*cmd[1:])
                continue
            if self._pass is None:
                self._pass = self._encoder_now().begin_compute_pass()
            handle = self._pass._internal
            set_pipeline(handle, fast[0])
            set_bind_group(handle, 0, fast[1], 1, fast[2])
            dispatch(handle, *fast[3])
            dispatches += 1
        self.stats["dispatches"] += dispatches
        self._pending += len(commands)

    @staticmethod
    def fast_commands(commands: list[tuple[Any, ...]]) -> list[tuple[Any, ...] | None] | None:
        """wgpu-native handles of recorded dispatches (None for copies), or None when this wgpu-py does
        not expose them (then ``replay`` is used throughout). The commands keep the objects alive."""
        native = _native()
        if native is None:
            return None
        ffi = native[1]
        try:
            return [
                (cmd[1]._internal, cmd[2]._internal, ffi.new("uint32_t[1]", [cmd[3]]), tuple(cmd[4]))
                if cmd[0] == DISPATCH
                else None
                for cmd in commands
            ]
        except AttributeError:
            return None

    def copy(self, src: GPUBuffer, src_offset: int, dst: GPUBuffer, dst_offset: int, size: int) -> None:
        """Record a buffer-to-buffer copy (offsets and size multiples of 4)."""
        if self.recording is not None:
            self.recording.append((COPY, src, src_offset, dst, dst_offset, size))
            return
        self._end_pass()
        self._encoder_now().copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size)
        self._pending += 1

    def timestamp(self, query_set: Any, index: int) -> None:
        """Record a GPU timestamp between the work recorded before and after: an empty compute pass
        that writes query ``index`` of ``query_set`` as it begins (``_timer.GpuTimer``)."""
        self._not_recording("a GPU timestamp")
        self._end_pass()
        writes = {"query_set": query_set, "beginning_of_pass_write_index": index}
        self._encoder_now().begin_compute_pass(timestamp_writes=writes).end()
        self._pending += 1

    def resolve_queries(self, query_set: Any, count: int, buffer: GPUBuffer) -> None:
        """Record the resolve of queries ``0..count`` of ``query_set`` into ``buffer`` (u64 each)."""
        self._end_pass()
        self._encoder_now().resolve_query_set(query_set, 0, count, buffer, 0)
        self._pending += 1

    def flush(self) -> None:
        """Submit everything recorded so far (no-op when nothing is pending or while ``recording``)."""
        if (self._encoder is None and not self._deferred) or self.recording is not None:
            return
        self._end_pass()
        if self._meta:
            self.queue.write_buffer(self._arena, 0, bytes(self._meta))
            self._meta = bytearray()
        self.queue.submit([self._encoder.finish()])
        self._encoder = None
        self._pending = 0
        self.stats["submits"] += 1
        self.pool.on_submit()

    def sync(self) -> None:
        """Wait for all submitted work: a 4-byte read in a new submission completes after every
        earlier one (wgpu-py 0.32's ``on_submitted_work_done_sync`` fails on a binding mismatch)."""
        self.read([(self._arena, 0, 4)])

    def trim(self) -> None:
        """Free pooled device memory (and the bind groups that reference it)."""
        self.flush()
        if self._encoder is None and self.recording is None:
            # nothing recorded is waiting: buffers released since the last submit are free too
            self.pool.on_submit()
        self._bind_groups.clear()
        self.pool.trim()

    def _not_recording(self, what: str) -> None:
        if self.recording is not None:
            raise NotRecordable(f"{what} cannot be part of a recorded program")

    # ------------------------------------------------------------------ reads
    def _staging_buffer(self, size: int) -> tuple[int, GPUBuffer]:
        cls = 256
        while cls < size:
            cls *= 2
        free = self._staging.get(cls)
        if free:
            return cls, free.pop()
        wgpu = self._wgpu
        return cls, self.device.create_buffer(
            size=cls, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )

    def read(self, ranges: list[tuple[GPUBuffer, int, int]]) -> list[bytes]:
        """Bytes of each (buffer, byte offset, byte size) range: one staging copy, one submit, one map.
        Offsets must be multiples of 4; sizes are rounded up to 4 inside the staging buffer."""
        self._not_recording("a read back to the host")
        slots, total = [], 0
        for _, _, size in ranges:
            slots.append(total)
            total += -(-size // 8) * 8
        if total == 0:
            return [b"" for _ in ranges]
        cls, staging = self._staging_buffer(total)
        for (buf, off, size), dst in zip(ranges, slots):
            if size:
                self.copy(buf, off, staging, dst, -(-size // 4) * 4)
        self.flush()
        staging.map_sync(self._wgpu.MapMode.READ, 0, total)
        try:
            data = staging.read_mapped(0, total)
        finally:
            staging.unmap()
        self.stats["maps"] += 1
        self._staging.setdefault(cls, []).append(staging)
        view = memoryview(data)
        return [bytes(view[dst : dst + size]) for (_, _, size), dst in zip(ranges, slots)]

    def write(self, buffer: GPUBuffer, data: bytes) -> None:
        """Upload host bytes into ``buffer`` (queue-ordered before the next submit). While recording,
        the upload runs now and the recording pool keeps the buffer for good (its ``pin``)."""
        if self.recording is not None:
            pin = getattr(self.pool, "pin", None)
            if pin is None:
                raise NotRecordable("an upload cannot be recorded without a recording pool")
            pin(buffer)
        if len(data) % 4:
            data = bytes(data) + bytes(4 - len(data) % 4)
        if data:
            self.queue.write_buffer(buffer, 0, data)
