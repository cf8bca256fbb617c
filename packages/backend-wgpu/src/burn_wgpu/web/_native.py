"""Run an exported schedule natively through wgpu-py, exactly as ``model.js`` does in a page: the same
buffers, pipelines, bind groups, dispatches and one submission per run. Used by the tests (to check a
schedule without a browser) and by benchmarks/bench_web.py (real-GPU figures for the page's schedule).
``Program`` (a schedule's buffers, pipelines and bind groups, encoded as common.js records them) is
shared with ``NativeTrainer`` (``_native_train``), which replays trainer.js the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

_STORAGE = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}
_NARROW = ("int8", "uint8", "int16")  # page dtypes stored one value per 32-bit word


class NativeSchedule:
    """An exported page's schedule on a wgpu device (``wgpu:index``, WebGPU's default limits).

    >>> import tempfile, burn_wgpu.web
    >>> x = np.arange(4, dtype=np.float32).reshape(1, 4)
    >>> page = burn_wgpu.web.export(nn.Relu(), x - 2, tempfile.mkdtemp()).out_dir
    >>> NativeSchedule(page).run({"input": x - 1.5})["output"].tolist()
    [[0.0, 0.0, 0.5, 1.5]]
    """

    def __init__(self, out_dir: str | Path, index: int = 0) -> None:
        folder = Path(out_dir)
        schedule = read_block(folder / "model.js", "SCHEDULE", "NativeSchedule")
        self._setup(schedule, (folder / schedule["weights"]["file"]).read_bytes(), index)

    @classmethod
    def _from_schedule(cls, schedule: dict[str, Any], blob: bytes, index: int = 0) -> NativeSchedule:
        """A schedule given as its JSON-ready dict and its blob (a training export's step, before
        anything is written)."""
        self = cls.__new__(cls)
        self._setup(schedule, blob, index)
        return self

    def _setup(self, schedule: dict[str, Any], blob: bytes, index: int) -> None:
        import wgpu

        from ._record import portable_context

        self.schedule: dict[str, Any] = schedule
        ctx = portable_context(index)
        self.device = dev = ctx.device
        self.adapter = ctx.label  # the adapter's name, backend and type
        self._program = program = Program(dev, schedule, blob)
        self.buffers, self.meta = program.buffers, program.meta
        slots, total = [], 0
        for o in schedule["outputs"]:
            slots.append(total)
            total += -(-o["size"] // 8) * 8
        self._slots, self._total = slots, max(total, 8)
        self.staging = dev.create_buffer(
            size=self._total, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name for inputs by name (numpy arrays of the declared shapes)."""
        dev, sch = self.device, self.schedule
        for info, arr in zip(sch["inputs"], check_feeds("NativeSchedule.run", sch["inputs"], feeds)):
            if arr.nbytes:
                dev.queue.write_buffer(self.buffers[info["buffer"]], 0, arr.tobytes())
        enc = self._program.encode()
        for o, slot in zip(sch["outputs"], self._slots):
            if o["size"]:
                enc.copy_buffer_to_buffer(
                    self.buffers[o["buffer"]], o["offset"], self.staging, slot, -(-o["size"] // 4) * 4
                )
        dev.queue.submit([enc.finish()])
        data = read_staging(self.staging, self._total)
        out = {}
        for o, slot in zip(sch["outputs"], self._slots):
            arr = np.frombuffer(data[slot : slot + o["size"]], dtype=_STORAGE[o["storage"]]).reshape(
                o["shape"]
            )
            narrow = o["dtype"] == "bool" or o["dtype"] in _NARROW
            out[o["name"]] = arr.astype(o["dtype"]) if narrow else arr.copy()
        return out


class Program:
    """One exported schedule instantiated on ``device`` as the page's runtime does it (common.js's
    ``createPipelines``, ``bindOps``, ``recordOps``): its buffers (those in ``shared``, by buffer index,
    are the caller's: a trainer's persistent params and state), the meta buffer and constants from
    ``blob`` (the schedule's own bytes, its ``base`` already applied), one pipeline per kernel with
    layouts shared between kernels that bind alike, and every bind group made once."""

    def __init__(
        self,
        device: Any,
        schedule: dict[str, Any],
        blob: bytes | memoryview,
        shared: Mapping[int, Any] | None = None,
    ) -> None:
        import wgpu

        self.device, self.schedule = dev, sch = device, schedule
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        shared = shared or {}
        self.buffers = [
            shared[i] if i in shared else dev.create_buffer(size=b["size"], usage=usage)
            for i, b in enumerate(sch["buffers"])
        ]
        meta_size = sch["weights"]["meta"]
        self.meta = dev.create_buffer(size=meta_size, usage=usage)
        dev.queue.write_buffer(self.meta, 0, blob[:meta_size])
        self.reloads: list[tuple[Any, bytes]] = []
        for c in sch["constants"]:
            data = bytes(blob[c["offset"] : c["offset"] + c["size"]])
            dev.queue.write_buffer(self.buffers[c["buffer"]], 0, data)
            if c["reload"]:
                self.reloads.append((self.buffers[c["buffer"]], data))
        kinds = {"read": wgpu.BufferBindingType.read_only_storage, "rw": wgpu.BufferBindingType.storage}
        layouts: dict[tuple[str, ...], Any] = {}
        pipelines = []
        for k in sch["kernels"]:
            key = tuple(k["bindings"])
            if key not in layouts:
                entries = [
                    {"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": kinds[a]}}
                    for i, a in enumerate(("read", *key))
                ]
                layouts[key] = dev.create_bind_group_layout(entries=entries)
            module = dev.create_shader_module(label=k["name"], code=k["source"])
            pipe = dev.create_compute_pipeline(
                label=k["name"],
                layout=dev.create_pipeline_layout(bind_group_layouts=[layouts[key]]),
                compute={"module": module, "entry_point": "main"},
            )
            pipelines.append((pipe, layouts[key]))
        self.ops: list[tuple[Any, ...]] = []
        for op in sch["ops"]:
            if op[0] == 0:
                _, k, off, size, bufs, gx, gy, gz = op
                pipe, layout = pipelines[k]
                entries = [{"binding": 0, "resource": {"buffer": self.meta, "offset": off, "size": size}}]
                entries += [
                    {
                        "binding": i + 1,
                        "resource": {"buffer": self.buffers[b], "offset": 0, "size": self.buffers[b].size},
                    }
                    for i, b in enumerate(bufs)
                ]
                group = dev.create_bind_group(layout=layout, entries=entries)
                self.ops.append((0, pipe, group, (gx, gy, gz)))
            else:
                _, src, so, dst, do, size = op
                self.ops.append((1, self.buffers[src], so, self.buffers[dst], do, size))

    def encode(self) -> Any:
        """A command encoder holding every op (the constants to reload written first): consecutive
        dispatches share one compute pass, a copy ends it. The caller adds its copies and submits."""
        dev = self.device
        for buf, data in self.reloads:
            dev.queue.write_buffer(buf, 0, data)
        enc = dev.create_command_encoder()
        cpass = None
        for op in self.ops:
            if op[0] == 0:
                if cpass is None:
                    cpass = enc.begin_compute_pass()
                cpass.set_pipeline(op[1])
                cpass.set_bind_group(0, op[2])
                cpass.dispatch_workgroups(*op[3])
            else:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                enc.copy_buffer_to_buffer(op[1], op[2], op[3], op[4], op[5])
        if cpass is not None:
            cpass.end()
        return enc


def read_staging(staging: Any, size: int) -> bytes:
    """The first ``size`` bytes of a MAP_READ buffer, once the queue has written them."""
    import wgpu

    staging.map_sync(wgpu.MapMode.READ, 0, size)
    try:
        return bytes(staging.read_mapped(0, size))
    finally:
        staging.unmap()


def read_block(path: Path, marker: str, what: str) -> dict[str, Any]:
    """The JSON an export inlined between ``/*MARKER*/`` and ``/*END*/`` in ``path`` (``model.js``:
    SCHEDULE, ``trainer.js``: TRAINER); a file that holds none is named."""
    text = path.read_text(encoding="utf-8")  # a missing file: FileNotFoundError names it
    start, end = text.find(f"/*{marker}*/"), text.find("/*END*/")
    if start < 0 or end < start:
        raise ValueError(f"{what}: {path}: not a page of burn web export (no /*{marker}*/ block)")
    try:
        block = json.loads(text[start + len(marker) + 4 : end])
    except ValueError as exc:
        raise ValueError(f"{what}: {path}: the {marker.lower()} block is not JSON ({exc})") from None
    if not isinstance(block, dict):
        raise ValueError(f"{what}: {path}: the {marker.lower()} block is not a JSON object")
    return block


def check_feeds(what: str, inputs: list[dict[str, Any]], feeds: Any) -> list[np.ndarray]:
    """One contiguous array per declared input, in order; what is missing, unknown or misshapen is named
    with what the schedule expects (``'x' float32[1, 4]``), each message starting with ``what``."""

    def declared(info: dict[str, Any]) -> str:
        return f"{info['name']!r} {info['dtype']}{info['shape']}"

    expected = ", ".join(declared(i) for i in inputs)
    if not isinstance(feeds, Mapping):
        raise TypeError(
            f"{what}: feeds must be a dict of input name -> array ({expected}), got {type(feeds).__name__}"
        )
    names = {i["name"] for i in inputs}
    missing = [declared(i) for i in inputs if i["name"] not in feeds]
    unknown = [repr(k) for k in feeds if k not in names]
    if missing or unknown:
        problems = [f"feeds lack the input(s) {', '.join(missing)}"] if missing else []
        problems += [f"no input named {', '.join(unknown)}"] if unknown else []
        raise ValueError(f"{what}: {'; '.join(problems)} (the page's inputs: {expected})")
    arrays = []
    for info in inputs:
        value = np.asarray(feeds[info["name"]])
        integral = info["storage"] != "f32"
        if value.dtype.kind not in ("biu" if integral else "biuf"):
            raise TypeError(
                f"{what}: input {declared(info)}: got an array of {value.dtype}, expected "
                + ("integers" if integral else "numbers")
            )
        if list(value.shape) != info["shape"]:
            raise ValueError(
                f"{what}: input {declared(info)}: expected shape {info['shape']}, got {list(value.shape)}"
            )
        if info["dtype"] in _NARROW:  # into the declared dtype (NumPy's wrap), then widened as stored
            value = value.astype(info["dtype"])
        arrays.append(np.ascontiguousarray(value, dtype=_STORAGE[info["storage"]]))
    return arrays
