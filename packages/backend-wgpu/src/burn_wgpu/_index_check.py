"""Index checks on the device, reported at the next read or sync.

One dispatch per index op (gather, select, scatter, embedding, tensor indexing) wraps negative values,
replaces an out-of-range value by 0 (so the op never reads or writes outside its tensor: WebGPU's robust
buffer access only clamps to the *buffer*, which a pooled tensor may not fill) and records the first
failure in a small storage buffer ``[check id, bad value]``. Dispatches run in recording order, so the
first failing op wins. A read or sync copies the record along with its results (the same staging map)
and raises ``IndexOutOfRangeError`` with that op's message, then clears it: the device stays usable.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import TYPE_CHECKING

import burn

from ._dtypes import WIDE
from ._executor import Kernel
from ._kernels.elementwise import WG, grid
from ._primitive import WgpuTensor

if TYPE_CHECKING:
    from ._backend import WgpuBackend
    from ._buffer import GPUBuffer

_MAX_PENDING = 4096  # then the next check reads the record at once (bounded host-side table)


@lru_cache(maxsize=4)
def _render(signed: bool) -> Kernel:
    """Metadata: numel, size, negative (0/1), check id, input offset."""
    load = "let v = idx[info[4] + i];"
    if signed:
        wrap = "var w = v; if (info[2] != 0u && w < 0) { w = w + i32(info[1]); }"
        bad = "w < 0 || u32(w) >= info[1]"
        value, zero, store = "bitcast<u32>(v)", "0", "out[i] = w;"
    else:
        wrap = "let w = v;"
        bad = "w >= info[1]"
        value, zero, store = "v", "0u", "out[i] = w;"
    ty = "i32" if signed else "u32"
    src = f"""@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{ty}>;
@group(0) @binding(2) var<storage, read> idx: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> err: array<atomic<u32>>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * (nwg.x * {WG}u);
    if (i >= info[0]) {{ return; }}
    {load}
    {wrap}
    if ({bad}) {{
        loop {{
            let r = atomicCompareExchangeWeak(&err[0], 0u, info[3]);
            if (r.exchanged) {{ atomicStore(&err[1], {value}); break; }}
            if (r.old_value != 0u) {{ break; }}
        }}
        out[i] = {zero};
        return;
    }}
    {store}
}}
"""
    return Kernel(f"check_index_{ty}", src, ("rw", "read", "rw"))


class IndexChecker:
    """The pending index checks of one wgpu device."""

    def __init__(self, backend: WgpuBackend) -> None:
        import wgpu

        self._backend = backend
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.buffer = backend.ctx.device.create_buffer(size=256, usage=usage)  # zero-initialised
        self._messages: dict[int, tuple[str, bool]] = {}  # check id -> (message, index is signed)
        self._next_id = 1

    @property
    def pending(self) -> bool:
        return bool(self._messages)

    def check(self, index: WgpuTensor, size: int, negative: bool, message: str) -> WgpuTensor:
        """Queue the check of ``index`` (an int tensor: every one is stored in 32-bit words) against ``size``; returns the in-range index."""
        b = self._backend
        if len(self._messages) >= _MAX_PENDING:
            b.sync()
        check_id = self._next_id
        self._next_id = self._next_id + 1 if self._next_id < 0xFFFFFFFF else 1
        if index.dtype in WIDE:  # checked as int32, saturated so an out-of-range value stays out of range
            narrow = b.cast(b.clamp(index, -(1 << 31), (1 << 31) - 1), burn.int32)
            return b.cast(self.check(narrow, size, negative, message), index.dtype)
        signed = index.dtype.kind == "i"  # uint8 and uint32 indices are unsigned words
        self._messages[check_id] = (message, signed)
        dense = b.contiguous(index)
        out = b.empty(index.shape, index.dtype)
        n = dense.numel
        meta = struct.pack("<5I", n, size, int(bool(negative)), check_id, dense.offset)
        kernel = _render(signed)
        b.ex.dispatch(kernel, [out.buffer, dense.buffer, self.buffer], meta, grid(n))
        return out

    def range(self) -> tuple[GPUBuffer, int, int]:
        """The (buffer, offset, size) of the failure record, for the executor's read."""
        return self.buffer, 0, 8

    def report(self, record: bytes) -> None:
        """Raise for a failure in ``record`` (read after every pending check ran); clear the table."""
        check_id, raw = struct.unpack("<II", record[:8])
        messages, self._messages = self._messages, {}
        if not check_id:
            return
        self._backend.ex.write(self.buffer, bytes(8))
        message, signed = messages.get(check_id, ("index: value {value} out of range", True))
        value = raw - (1 << 32) if signed and raw >= 1 << 31 else raw
        from burn import IndexOutOfRangeError

        raise IndexOutOfRangeError(
            f"{message.format(value=value)} (checked on the GPU, reported at the first read or sync "
            "after the op; the op used index 0 for that entry)"
        )
