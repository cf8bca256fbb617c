"""Batch-parallel conv runs: a small persistent thread pool (``_Parallel``) that splits a batch into
slices (``_batch_slices``), holding numpy's BLAS at one thread (through threadpoolctl) meanwhile.

``_parallel`` is replaced in a forked child: read it as ``_threads._parallel``, never import the name.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

# Batch-parallel runs. numpy's BLAS threads split each GEMM, but the window copies, padding and
# epilogues around it run on the calling thread; numpy releases the GIL in those copies, ufuncs and
# BLAS, so with T > 1 BLAS threads a batch of n >= 2 images is split into up to min(T, n) slices, each run
# whole (copies, GEMMs, epilogue) on one thread of a small persistent pool (the caller takes the
# first), every thread with its own run and workspaces (``_workspace``'s thread-local caches), writing
# its slice of one output. BLAS is held at one thread for the parallel region (process-wide, through
# threadpoolctl: its own threads would fight the pool's for the cores), restored after. The BLAS thread
# count is read on every call (a ctypes call), so ``threadpool_limits(1)`` around a call, or
# OPENBLAS_NUM_THREADS=1, keeps today's one-thread path exactly. Without threadpoolctl (burn-core's
# dependency, but not imported until a batch asks: a missing one is no error) or without threads
# (emscripten) everything runs on the caller. A batch splits into _PARALLEL_MAX_SLICES at most.
# A batch too small to split still runs with BLAS at one thread: OpenBLAS's threads spin for a while
# after each multithreaded call, and split convs next to BLAS-threaded ones fight those spinning
# threads for the cores (the benchmark at batch 32 on 2 cores: 43 ms all split, 54 ms none, 85 ms
# with the small convs left to BLAS's threads). One image keeps BLAS's threads, at most
# _ONE_IMAGE_BLAS_THREADS of them (below): its GEMMs are too small to split by hand (split by
# rows, each thread packs the whole weight matrix: measured slower).
# Measured again with the best split of one image (bands of output rows, each thread copying and
# packing only its band's windows in workspaces of that size; output channels for channels-last runs;
# a two-lock hand-off, 12 us a region against the executor's 27): the ResNet-like benchmark's
# 32x32x32 3x3 conv 316-328 us against 227-232 on BLAS's 2 threads, the stem with its pool 257 against
# 204, every other conv slower too. Two threads' element-wise numpy work (window copies, epilogue, pool)
# hardly overlaps on the 2-core machine (np.add over 200K values: 17 us alone, 42 us two at once; a
# 256^3 GEMM: 374 alone, 405 two at once), so only the GEMM halves gain, and OpenBLAS splits those
# better itself (148 us against 169 for the conv's three GEMMs).
# Measured on a 16-core host (the H200 machine, OpenBLAS 0.3.34, the ResNet-like benchmark, ms per
# forward at 1/2/4/8/16 BLAS threads): batch 32 74/54/32/26/43, so more than 8 slices lose to the
# GIL the slices' Python shares (cpu time 118 -> 145 ms); batch 1 3.75/3.27/2.99/3.04/4.06, its small
# GEMMs slower on OpenBLAS's 16 threads than on 4 (whose spinning threads also cost 60 ms of cpu).
# A GEMM below _SMALL_GEMM_MACS multiply-adds runs with BLAS at one thread (``small_gemm``): OpenBLAS
# splits even tiny GEMMs over its threads, and on cores other work keeps busy each call then waits for
# a thread that lost its core (2 shared cores, medians: a (144, 24) @ (24, 784) GEMM 94 us on one
# thread, 16 ms on two; (1280, 320) @ (320, 16) 0.29 ms against 8 ms), where on idle cores it gains
# little (the H200 host's 16 cores: the ResNet-like benchmark at batch 1, 3.75 ms on 1 thread, 2.99 on 4).
# bench_onnx_models --threads all (2 busy cores, burn / onnxruntime): MobileNetV2 batch 1 31.7x uncapped,
# 5.7x below 2^23, 3.5x below 2^25; batch 32 12.1x, 1.9x, 1.8x; the ResNet-like batch 1 4.4x, 4.8x, 1.9x
_SMALL_GEMM_MACS = 1 << 25
_PARALLEL_MIN_MACS = 1 << 22  # multiply-adds per slice at least (about 0.1 ms of GEMM: pays a hand-off)
_PARALLEL_MAX_SLICES = 8  # slices of one batch at most
_ONE_IMAGE_BLAS_THREADS = 4  # BLAS threads at most for one image's convs


class _Parallel:
    """The BLAS libraries' controllers (threadpoolctl), a pool of worker threads and the count of
    parallel regions open (BLAS is held at one thread while any is)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blas: list[Any] | None = None  # None: not looked up yet
        self.pool: Any = None
        self.workers = 0
        self.open = 0
        self.saved: list[int] = []
        self.local = threading.local()  # .inside: this thread runs a slice (no nested regions)

    def threads(self) -> int:
        """numpy's BLAS thread count now (1 without threadpoolctl, or inside a parallel region)."""
        if getattr(self.local, "inside", False):
            return 1
        blas = self.blas
        if blas is None:
            blas = self._lookup()
        if not blas:
            return 1
        with self.lock:
            if self.open:  # another thread's region holds BLAS at one thread: share its count
                return max(self.saved, default=1)
            return max(lib.get_num_threads() or 1 for lib in blas)

    def _lookup(self) -> list[Any]:
        found: list[Any] = []
        try:
            import sys

            if sys.platform != "emscripten":
                from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped,import-not-found,unused-ignore]

                found = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        except Exception:  # not installed, or a library it cannot drive: no parallel regions
            found = []
        self.blas = found
        return found

    def map(self, tasks: list[Any]) -> None:
        """Run the callables ``tasks`` at once: the first on this thread, the rest on the pool; BLAS
        at one thread meanwhile. Waits for all; the first exception raised is raised here."""
        import concurrent.futures

        with self.lock:
            if len(tasks) > 1 and (self.pool is None or self.workers < len(tasks) - 1):
                old = self.pool
                self.workers = max(len(tasks) - 1, self.workers)
                self.pool = concurrent.futures.ThreadPoolExecutor(
                    self.workers, thread_name_prefix="burn-conv"
                )
                if old is not None:
                    old.shutdown(wait=False)
            pool = self.pool
        with self.held(1):
            futures = [pool.submit(self._inside, task) for task in tasks[1:]]
            error: BaseException | None = None
            try:
                self._inside(tasks[0])
            except BaseException as exc:  # wait for the others before raising: they write the output
                error = exc
            for future in futures:
                failed = future.exception()
                if error is None:
                    error = failed
            if error is not None:
                raise error

    @contextlib.contextmanager
    def held(self, count: int) -> Iterator[None]:
        """BLAS at ``count`` threads at most while the block runs (process-wide; regions nest and
        overlap across threads: the first sets the count, the last out restores it)."""
        with self.lock:
            if not self.open:
                self.saved = [lib.get_num_threads() or 1 for lib in self.blas or ()]
                for lib, now in zip(self.blas or (), self.saved):
                    lib.set_num_threads(min(now, count))
            self.open += 1
        try:
            yield
        finally:
            with self.lock:
                self.open -= 1
                if not self.open:
                    for lib, saved in zip(self.blas or (), self.saved):
                        lib.set_num_threads(saved)

    def _inside(self, task: Any) -> None:
        local = self.local
        before = getattr(local, "inside", False)
        local.inside = True
        try:
            task()
        finally:
            local.inside = before


_parallel = _Parallel()


def _after_fork() -> None:
    """A forked child has none of the parent's threads: a new pool (made on first use) and lock."""
    global _parallel
    _parallel = _Parallel()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork)


def _batch_slices(n: int, macs: int, threads: int) -> list[tuple[int, int]]:
    """The (start, stop) batch slices of a conv of ``macs`` multiply-adds per image: up to
    ``threads`` of them, each of ``_PARALLEL_MIN_MACS`` at least, as even as the batch allows."""
    parts = min(threads, n, _PARALLEL_MAX_SLICES, max(1, n * macs // max(1, _PARALLEL_MIN_MACS)))
    bounds = [n * i // parts for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def small_gemm(macs: int) -> contextlib.AbstractContextManager[None]:
    """BLAS held at one thread for a block whose GEMMs (each) take fewer than ``_SMALL_GEMM_MACS``
    multiply-adds, where BLAS has more threads (see above); else nothing. Costs a few microseconds
    (BLAS's thread count read through threadpoolctl; set and restored only where it caps)."""
    if macs >= _SMALL_GEMM_MACS or _parallel.threads() <= 1:
        return contextlib.nullcontext()
    return _parallel.held(1)
