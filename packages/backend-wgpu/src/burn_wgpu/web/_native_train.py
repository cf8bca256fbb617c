"""Replay an exported training step (``export_training``'s ``trainer.js``) natively through wgpu-py,
exactly as trainer.js does in a page: the persistent params, running statistics and optimizer state
created and filled from ``weights.bin`` the same way, both schedules ("step", "evaluate") binding them,
the learning rate, Adam's bias corrections and the seed fed per step as the page feeds them, the new
values copied over the persistent buffers in the step's own submission (one per step), and the
metrics read back from 4 bytes each. Used by the tests (the page's losses without a browser) and by
benchmarks/bench_web_train.py ``--native`` (the page's schedule timed on a real GPU)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._native import Program, check_feeds, read_block, read_staging


class NativeTrainer:
    """An exported trainer (``out_dir/trainer.js`` + ``weights.bin``) on a wgpu device (``wgpu:index``,
    WebGPU's default limits); ``step`` and ``evaluate`` as the page's ``t.step`` and ``t.evaluate``.

    >>> import tempfile, burn_wgpu.web
    >>> from burn.nn import functional as F
    >>> burn.seed(0)
    >>> batch = {"x": np.ones((3, 4), np.float32), "y": np.array([0, 1, 1], np.int32)}
    >>> out = burn_wgpu.web.export_training(
    ...     nn.LinearConfig(4, 2).init(), lambda m, x, y: F.cross_entropy(m(x), y),
    ...     burn.optim.AdamConfig().init(), batch, tempfile.mkdtemp())
    >>> trainer = NativeTrainer(out.out_dir)
    >>> first, second = trainer.step(batch, lr=0.01)["loss"], trainer.step(batch, lr=0.01)["loss"]
    >>> second < first, trainer.step_count
    (True, 2)
    """

    def __init__(self, out_dir: str | Path, index: int = 0, seed: int = 0) -> None:
        import wgpu

        from ._record import portable_context

        folder = Path(out_dir)
        spec = read_block(folder / "trainer.js", "TRAINER", "NativeTrainer")
        blob = memoryview((folder / spec["weights"]["file"]).read_bytes())
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"NativeTrainer: seed must be an integer >= 0, got {seed!r}")
        self.spec: dict[str, Any] = spec
        ctx = portable_context(index)
        self.device = dev = ctx.device
        self.adapter = ctx.label  # the adapter's name, backend and type
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.persistent: dict[str, Any] = {}
        for p in spec["persistent"]:
            buf = dev.create_buffer(size=p["size"], usage=usage)  # zeros: fresh optimizer state
            if p["role"] != "state":
                dev.queue.write_buffer(buf, 0, blob[p["offset"] : p["offset"] + p["bytes"]])
            self.persistent[p["name"]] = buf
        self._step = self._instantiate(spec["step"], blob)
        self._evaluate = self._instantiate(spec["evaluate"], blob)
        self.metrics: list[str] = list(spec["metrics"])
        self.step_count = 0
        self._seed = seed

    def _instantiate(
        self, sch: dict[str, Any], blob: memoryview
    ) -> tuple[Program, list[dict[str, Any]], Any]:
        """trainer.js's ``instantiate``: the schedule's program with its param/state inputs bound to the
        persistent buffers, its metric outputs and their staging buffer (8 bytes apart)."""
        import wgpu

        shared = {
            i["buffer"]: self.persistent[i["name"]] for i in sch["inputs"] if i["name"] in self.persistent
        }
        program = Program(self.device, sch, blob[sch["base"] :], shared)
        metrics = [o for o in sch["outputs"] if o["role"] == "metric"]
        staging = self.device.create_buffer(
            size=max(8, 8 * len(metrics)), usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )
        return program, metrics, staging

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """The batch inputs (name, shape, dtype), fixed at export."""
        return [i for i in self.spec["step"]["inputs"] if i["role"] == "batch"]

    def step(
        self, batch: Mapping[str, Any], lr: float | None = None, seed: int | None = None, read: bool = True
    ) -> dict[str, float] | None:
        """One training step on ``batch`` (name -> array of the exported shape) at learning rate ``lr``
        (default: the export's), as one submission; the metrics (``loss`` first) as numbers, or None
        with ``read=False`` (nothing read back: steps pipeline on the queue). The step's seed (where it
        draws random numbers) is the trainer's ``seed + step`` unless ``seed`` is given."""
        opt = self.spec["optimizer"]
        lr = opt["lr"] if lr is None else lr
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not np.isfinite(lr) or lr < 0:
            raise ValueError(f"NativeTrainer.step: lr must be a finite number >= 0, got {lr!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"NativeTrainer.step: seed must be an integer >= 0, got {seed!r}")
        feeds = self._feeds("NativeTrainer.step", self._step[0], batch)
        self.step_count += 1
        t = self.step_count
        scalars = {
            "lr": np.float32(lr),
            "seed": np.uint32(self._seed + t if seed is None else seed),
            "bias1": np.float32(1 - opt["beta1"] ** t),
            "bias2": np.float32(1 - opt["beta2"] ** t),
        }
        program = self._step[0]
        for buf, data in feeds:
            self.device.queue.write_buffer(buf, 0, data)
        for info in program.schedule["inputs"]:
            if info["role"] == "hyper":
                self.device.queue.write_buffer(
                    program.buffers[info["buffer"]], 0, scalars[info["name"]].tobytes()
                )
        enc = program.encode()
        for o in program.schedule["outputs"]:
            if o["role"] != "metric" and not o["same"]:
                enc.copy_buffer_to_buffer(
                    program.buffers[o["buffer"]], o["offset"], self.persistent[o["name"]], 0, o["size"]
                )
        return self._finish(self._step, enc, read)

    def evaluate(self, batch: Mapping[str, Any]) -> dict[str, float]:
        """The forward only, on the current weights: the metrics as numbers."""
        program = self._evaluate[0]
        for buf, data in self._feeds("NativeTrainer.evaluate", program, batch):
            self.device.queue.write_buffer(buf, 0, data)
        out = self._finish(self._evaluate, program.encode(), True)
        assert out is not None
        return out

    def tensors(self) -> dict[str, np.ndarray]:
        """The persistent tensors as they are now, by their trainer.js names (``param:NAME``,
        ``running:NAME``, ``state:NAME:KEY``), float32 (one read back)."""
        import wgpu

        entries = self.spec["persistent"]
        sizes = [int(np.prod(p["shape"], dtype=np.int64)) * 4 for p in entries]
        total = max(sum(sizes), 4)
        staging = self.device.create_buffer(
            size=total, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        )
        enc = self.device.create_command_encoder()
        at = 0
        for p, size in zip(entries, sizes):
            if size:
                enc.copy_buffer_to_buffer(self.persistent[p["name"]], 0, staging, at, size)
            at += size
        self.device.queue.submit([enc.finish()])
        data = read_staging(staging, total)
        staging.destroy()
        out, at = {}, 0
        for p, size in zip(entries, sizes):
            out[p["name"]] = np.frombuffer(data[at : at + size], np.float32).reshape(p["shape"]).copy()
            at += size
        return out

    def _feeds(self, what: str, program: Program, batch: Mapping[str, Any]) -> list[tuple[Any, bytes]]:
        """(buffer, bytes) of each batch input, every one checked before anything is queued."""
        infos = [i for i in program.schedule["inputs"] if i["role"] == "batch"]
        arrays = check_feeds(what, infos, batch)
        return [(program.buffers[i["buffer"]], a.tobytes()) for i, a in zip(infos, arrays)]

    def _finish(
        self, run: tuple[Program, list[dict[str, Any]], Any], enc: Any, read: bool
    ) -> dict[str, float] | None:
        """Copy the metrics' first 4 bytes each to staging, submit ``enc`` (the one submission) and read
        them back: trainer.js's ``readMetrics``."""
        program, metrics, staging = run
        if read:
            for i, o in enumerate(metrics):
                enc.copy_buffer_to_buffer(program.buffers[o["buffer"]], o["offset"], staging, i * 8, 4)
        self.device.queue.submit([enc.finish()])
        if not read:
            return None
        data = read_staging(staging, max(8, 8 * len(metrics)))
        return {
            o["name"]: float(
                np.frombuffer(data[i * 8 : i * 8 + 4], np.float32 if o["storage"] == "f32" else np.int32)[0]
            )
            for i, o in enumerate(metrics)
        }
