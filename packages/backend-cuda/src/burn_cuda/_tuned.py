"""burn-cuda's tuned kernel families (``burn.autotune``): the device's tuner and the conv2d family.

conv (1-d and 2-d, float): ``columns`` gathers each image's columns (C*K, H_out*W_out) with a
generated kernel and multiplies W into them as one batched GEMM whose result is already NCHW (best for
large planes); ``rows`` gathers a strided window view into one (N*L, C*K) matrix and runs one large
GEMM, then transposes to NCHW (best when the planes are small and the batch and channels large).
``rows`` is the reference (the older, general path), ``columns`` the default when tuning is off. Small
convolutions are not tuned: they run ``columns`` for planes of 1024 outputs or more, else ``rows``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from burn.autotune import Autotuner, Candidate, Family, bucket, tuner_for

_TUNE_MIN_FLOPS = 1 << 24  # below this a conv is not tuned: tuning would cost more than it saves


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


Ints = tuple[int, ...]


def _conv_key(
    backend: Any, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int
) -> str:
    n, c, *sp = x.shape
    co, _, *k = weight.shape
    spatial = "x".join(str(bucket(s)) for s in sp)
    kernel = "x".join(map(str, k))
    return (
        f"{x.dtype.name} n{bucket(n)} c{bucket(c)} {spatial} co{bucket(co)} k{kernel} s{stride} p{padding} "
        f"d{dilation} g{groups}"
    )


def _close(out: Any, ref: Any) -> bool:
    """Equal up to summation order: within 1e-3 of the result's largest magnitude (1e-2 for float16)."""
    import numpy as np

    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return False
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    tol = 1e-2 if np.asarray(out).dtype == np.float16 else 1e-3
    return bool(np.allclose(out, ref, rtol=tol, atol=tol * max(scale, 1.0), equal_nan=True))


CONV = Family(
    "conv2d",
    (
        Candidate("columns", lambda b, *a: b._conv_columns(*a), applies=lambda b, *a: b._columns_fit(*a)),
        Candidate("rows", lambda b, *a: b._conv_rows(*a)),
    ),
    key=_conv_key,
    reference="rows",
    default="columns",
    close=_close,
)


def should_tune(x: Any, weight: Any, out_len: int) -> bool:
    """Whether a conv is large enough to tune: ``out_len`` output positions per image and channel."""
    k = 1
    for s in weight.shape[1:]:
        k *= s  # C_in/G * kernel: the products per output
    return 2 * x.shape[0] * weight.shape[0] * out_len * k >= _TUNE_MIN_FLOPS
