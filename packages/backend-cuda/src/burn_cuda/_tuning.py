"""What burn-cuda's tuned op families (``_conv.CONV``, ``_pool.POOL``, ``_reduce.REDUCE``, the matmul
epilogues of ``_epilogue``) share: the device's tuner, its CUDA-event timer, and the tolerance every
candidate is checked with against the family's reference."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from burn.autotune import Autotuner, tuner_for

Ints = tuple[int, ...]


def event_timer(backend: Any, warmup: int = 1, reps: int = 5) -> Callable[[Callable[[], Any]], float]:
    """Seconds per call of ``fn``: the median of ``reps`` runs timed by CUDA events on the backend's
    stream, after ``warmup`` runs."""
    import cupy

    def timer(fn: Callable[[], Any]) -> float:
        backend._on()
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(backend.stream)
            fn()
            end.record(backend.stream)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        return statistics.median(times)

    return timer


def tuner(backend: Any) -> Autotuner:
    """The backend's tuner: its cache is keyed by the GPU, the driver and CUDA runtime, and versions
    (built once per backend: reading the device's properties takes about a millisecond)."""
    made = getattr(backend, "_autotuner", None)
    if made is not None:
        return made
    import cupy

    from ._version import __version__

    props = cupy.cuda.runtime.getDeviceProperties(backend.index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    parts = (
        name,
        f"driver {cupy.cuda.runtime.driverGetVersion()} runtime {cupy.cuda.runtime.runtimeGetVersion()}",
        f"burn-cuda {__version__} cupy {cupy.__version__}",
    )
    return tuner_for(backend, parts, event_timer(backend))


def close(out: Any, ref: Any) -> bool:
    """Equal up to summation order: within 1e-3 of the result's largest magnitude (1e-2 for float16)."""
    import numpy as np

    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return False
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    tol = 1e-2 if np.asarray(out).dtype == np.float16 else 1e-3
    return bool(np.allclose(out, ref, rtol=tol, atol=tol * max(scale, 1.0), equal_nan=True))
