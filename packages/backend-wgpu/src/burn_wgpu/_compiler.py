"""Compute pipelines, one per distinct WGSL source per process, created on a small thread pool.

wgpu-py 0.32's ``create_compute_pipeline_async`` blocks (wgpu-native does not implement it), but device
calls may come from any thread: wgpu-native's objects are thread-safe, cffi releases the GIL around its
calls, and wgpu-py keeps the error scope it raises from per thread. So the executor asks for a pipeline
with ``start`` when a dispatch first needs it, records the dispatch, and takes the pipeline (``get``)
only when the batch is encoded: the kernels of a batch (a fused program's, a first training step's)
compile side by side while the main thread plans and records the next ones.

``BURN_WGPU_COMPILE_THREADS`` sets the pool's size (default: the CPU count, at most 4); ``0`` creates
every pipeline on the calling thread, as before. ``waited_s`` is what the calling thread spent blocked on
compiles (the compile share of a step); each pipeline's ``done`` compile event carries its own share
(``AutotuneEvent.waited``), which ``burn.autotune.compile_seconds`` adds up.

Drivers compile at different points: NVIDIA's Vulkan driver in ``vkCreateComputePipelines`` (that is
what the pool runs in parallel); Mesa's lavapipe only translates to NIR there and JIT-compiles with LLVM
at the first dispatch on its queue thread, which no pool of ours reaches.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from burn.autotune import AutotuneEvent, publish

if TYPE_CHECKING:
    from ._executor import Kernel

Pipeline = tuple[Any, Any]  # (GPUComputePipeline, its bind group layout)


def compile_threads() -> int:
    """``BURN_WGPU_COMPILE_THREADS`` (default: the CPU count, at most 4; 0: compile on the caller)."""
    raw = os.environ.get("BURN_WGPU_COMPILE_THREADS", "").strip()
    if not raw:
        return min(4, os.cpu_count() or 1)
    if not raw.isdigit():
        raise ValueError(f"BURN_WGPU_COMPILE_THREADS: expected a number of threads >= 0, got {raw!r}")
    return int(raw)


class Compiler:
    """The pipelines of one wgpu device by WGSL source: ``start`` begins one's creation (on the pool),
    ``ready`` says whether it is there, ``get`` returns it (waiting for it, or creating it at once)."""

    def __init__(self, device: Any, label: str, threads: int | None = None) -> None:
        self.device = device
        self.label = label  # the device name compile events carry
        self.threads = compile_threads() if threads is None else threads
        self._pool: ThreadPoolExecutor | None = None
        self._done: dict[str, Pipeline] = {}
        self._running: dict[str, Future[Pipeline]] = {}
        self.waited_s = 0.0  # seconds the calling thread was blocked on compiles
        self.compiled = 0  # pipelines created

    def ready(self, source: str) -> Pipeline | None:
        return self._done.get(source)

    def known(self, source: str) -> bool:
        """Whether ``source``'s pipeline exists or is being created (a second ask is no compile)."""
        return source in self._done or source in self._running

    def start(self, kernel: Kernel, layout: Any) -> None:
        """Begin creating ``kernel``'s pipeline (no-op when it exists or is under way)."""
        if self.known(kernel.source):
            return
        publish(AutotuneEvent(kernel.name, kind="compile", device=self.label))
        if self.threads > 0:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="burn-wgpu-compile")
            try:
                self._running[kernel.source] = self._pool.submit(self._create, kernel, layout)
                return
            except RuntimeError:  # the interpreter is shutting down: no new threads, compile here
                pass
        t0 = time.perf_counter()
        try:
            self._done[kernel.source] = self._create(kernel, layout)
        finally:
            self._finished(kernel, time.perf_counter() - t0)

    def get(self, kernel: Kernel, layout: Any) -> Pipeline:
        """``kernel``'s pipeline; waits for it when it is being created (a compile error raises here)."""
        hit = self._done.get(kernel.source)
        if hit is not None:
            return hit
        self.start(kernel, layout)
        future = self._running.pop(kernel.source, None)
        if future is None:  # created on this thread by ``start``
            return self._done[kernel.source]
        t0 = time.perf_counter()
        try:
            hit = future.result()
        finally:  # a failed compile ends its event too (the dashboard would show it forever)
            self._finished(kernel, time.perf_counter() - t0)
        self._done[kernel.source] = hit
        return hit

    def _finished(self, kernel: Kernel, waited: float) -> None:
        self.waited_s += waited
        self.compiled += 1
        publish(AutotuneEvent(kernel.name, kind="compile", done=True, device=self.label, waited=waited))

    def _create(self, kernel: Kernel, layout: Any) -> Pipeline:
        device = self.device
        module = device.create_shader_module(label=kernel.name, code=kernel.source)
        pipeline = device.create_compute_pipeline(
            label=kernel.name,
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"},
        )
        return pipeline, layout

    def close(self) -> None:
        """Wait for the compiles under way and stop the pool's threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
