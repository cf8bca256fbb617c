"""Turn a recorded forward into a replayable schedule: physical buffers allocated once, a weight blob,
one metadata arena, and the ordered dispatches and copies.

Buffers are classified from the trace: inputs (written by ``run`` each time), constants (uploaded once
from the weight blob; re-uploaded each run when some kernel writes them), scratch (made outside the
pool, kept) and temps. Temps share physical slots by liveness: a temp lives from the first to the last
event that binds it (outputs until the end of the run), and a slot is reused only by a temp whose life
starts strictly after the previous one ended, so no two live temps ever alias, not even within one
dispatch (where WebGPU forbids a buffer bound both read-only and writable).
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any

from ._record import Copy, Dispatch, Recorded, WebExportError

META_ALIGN = 256  # WebGPU's default minStorageBufferOffsetAlignment
WEIGHT_ALIGN = 16
FORMAT = 1


@dataclass(frozen=True)
class TensorInfo:
    """A page input or output: its name, fixed shape, the dtype the page reports (``"float32"``,
    ``"int32"``, ``"int64"``, ``"bool"``, ``"uint32"``, ``"int8"``, ``"uint8"``, ``"int16"``) and how it is
    stored on the device (the last three one value per 32-bit word)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    storage: str  # "f32" | "i32" | "u32" (bool and uint8 are stored as u32, int8 and int16 as i32)


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def _liveness(rec: Recorded) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for i, ev in enumerate(rec.trace.events):
        used = ev.buffers if isinstance(ev, Dispatch) else (ev.src, ev.dst)
        for n in used:
            first, _ = spans.get(n, (i, i))
            spans[n] = (first, i)
    end = len(rec.trace.events)
    for n, _, _ in rec.outputs:
        first, _ = spans.get(n, (end, end))
        spans[n] = (first, end)
    return spans


def check_order(rec: Recorded) -> None:
    """Refuse a trace in which a dispatch or copy reads a buffer that nothing earlier in the run wrote
    (an input or constant excepted): the page would read zeros on its first run and the previous run's
    data after that. Commands logged where they did not run leave exactly this trace (issue 32: a
    fusion program captured as a command list was logged where it was captured, its layer norm reading
    input buffers that only its later launches fill, and those launches' kernels were not logged at
    all). A buffer bound read-write counts as written (a kernel may also read it in place)."""
    ready = {n for n, b in enumerate(rec.trace.buffers) if b.kind in ("input", "constant")}
    for i, ev in enumerate(rec.trace.events):
        if isinstance(ev, Dispatch):
            reads = [(n, "read") for n, a in zip(ev.buffers, ev.kernel.bindings) if a == "read"]
            what = f"dispatch {i} ({ev.kernel.name})"
            writes = [n for n, a in zip(ev.buffers, ev.kernel.bindings) if a == "rw"]
        else:
            reads, what, writes = [(ev.src, "copy source")], f"copy {i}", [ev.dst]
        for n, how in reads:
            if n not in ready:
                raise WebExportError(
                    f"web export: the recorded schedule is out of order: {what} reads buffer {n} "
                    f"({rec.trace.buffers[n].kind}, {how}) before anything in the run writes it (a "
                    "launch ran on the device without being recorded); nothing was written"
                )
        ready.update(writes)


def _assign_slots(
    temps: list[tuple[int, int, int, int]],
) -> tuple[dict[int, int], list[int]]:
    """(buffer, first, last, size) intervals -> buffer -> slot, and each slot's size."""
    slot_of: dict[int, int] = {}
    sizes: list[int] = []
    active: list[tuple[int, int]] = []  # (last use, slot)
    free: list[int] = []
    for n, first, last, size in sorted(temps, key=lambda t: (t[1], t[2])):
        while active and active[0][0] < first:
            free.append(heapq.heappop(active)[1])
        fits = [s for s in free if sizes[s] >= size]
        if fits:
            slot = min(fits, key=lambda s: sizes[s])
        elif free:
            slot = max(free, key=lambda s: sizes[s])
            sizes[slot] = size
        else:
            slot = len(sizes)
            sizes.append(size)
        if slot in free:
            free.remove(slot)
        slot_of[n] = slot
        heapq.heappush(active, (last, slot))
    return slot_of, sizes


def build(
    rec: Recorded, inputs: list[TensorInfo], outputs: list[TensorInfo], name: str
) -> tuple[dict[str, Any], bytes]:
    """The schedule (JSON-ready) and the weight blob (metadata arena first, then constants); raises
    ``WebExportError`` for a trace that reads a buffer before the run writes it (``check_order``)."""
    check_order(rec)
    trace = rec.trace
    spans = _liveness(rec)
    phys: dict[int, int] = {}  # trace buffer -> physical buffer
    buffers: list[dict[str, Any]] = []
    consts: list[dict[str, Any]] = []

    # the metadata arena: one aligned slot per dispatch, at the start of the blob
    meta = bytearray()
    meta_at: list[tuple[int, int]] = []
    for ev in trace.events:
        if isinstance(ev, Dispatch):
            slot = _align(max(len(ev.meta), 4), META_ALIGN)
            meta_at.append((len(meta), slot))
            meta += ev.meta + bytes(slot - len(ev.meta))
    blob = bytearray(meta)
    if not blob:
        blob += bytes(META_ALIGN)
    meta_size = len(blob)

    def new_buffer(size: int, kind: str) -> int:
        buffers.append({"size": size, "kind": kind})
        return len(buffers) - 1

    for n in rec.inputs:
        phys[n] = new_buffer(trace.buffers[n].size, "input")
    for n, b in enumerate(trace.buffers):
        if n in phys:
            continue
        if b.kind in ("constant", "input"):  # an upload that is not a graph input: data known now
            phys[n] = new_buffer(b.size, "constant")
            blob += bytes(_align(len(blob), WEIGHT_ALIGN) - len(blob))
            data = b.data + bytes(_align(len(b.data), 4) - len(b.data))
            consts.append({"buffer": phys[n], "offset": len(blob), "size": len(data), "reload": b.written})
            blob += data
        elif b.kind == "scratch":
            phys[n] = new_buffer(b.size, "scratch")
    temps = [
        (n, *spans[n], b.size)
        for n, b in enumerate(trace.buffers)
        if n not in phys and n in spans and b.kind == "temp"
    ]
    slot_of, slot_sizes = _assign_slots(temps)
    slot_phys = [new_buffer(size, "temp") for size in slot_sizes]
    for n, slot in slot_of.items():
        phys[n] = slot_phys[slot]

    kernels: list[dict[str, Any]] = []
    kernel_index: dict[str, int] = {}
    ops: list[list[Any]] = []
    k = 0
    for ev in trace.events:
        if isinstance(ev, Dispatch):
            idx = kernel_index.get(ev.kernel.source)
            if idx is None:
                idx = kernel_index[ev.kernel.source] = len(kernels)
                kernels.append(
                    {
                        "name": ev.kernel.name,
                        "bindings": list(ev.kernel.bindings),
                        "source": ev.kernel.source,
                    }
                )
            off, size = meta_at[k]
            k += 1
            ops.append([0, idx, off, size, [phys[b] for b in ev.buffers], *ev.groups])
        else:
            assert isinstance(ev, Copy)
            ops.append([1, phys[ev.src], ev.src_offset, phys[ev.dst], ev.dst_offset, ev.size])

    def io(info: TensorInfo, **where: Any) -> dict[str, Any]:
        return {
            "name": info.name,
            "shape": list(info.shape),
            "dtype": info.dtype,
            "storage": info.storage,
            **where,
        }

    schedule = {
        "format": FORMAT,
        "name": name,
        "weights": {"file": "weights.bin", "size": len(blob), "meta": meta_size},
        "inputs": [
            io(info, buffer=phys[n], size=trace.buffers[n].size) for info, n in zip(inputs, rec.inputs)
        ],
        "outputs": [
            io(info, buffer=phys[n], offset=off, size=size)
            for info, (n, off, size) in zip(outputs, rec.outputs)
        ],
        "buffers": buffers,
        "constants": consts,
        "kernels": kernels,
        "ops": ops,
        "counts": {
            "dispatches": sum(1 for op in ops if op[0] == 0),
            "copies": sum(1 for op in ops if op[0] == 1),
            "submits": 1,
            "pipelines": len(kernels),
            "buffers": len(buffers),
            "buffer_bytes": sum(b["size"] for b in buffers),
            "temp_bytes": sum(slot_sizes),  # intermediates in their shared slots
            "temp_bytes_unshared": sum(t[3] for t in temps),
        },
    }
    return schedule, bytes(blob)


def to_json(schedule: dict[str, Any]) -> str:
    return json.dumps(schedule, separators=(",", ":"))
