"""What the tuned wgpu op families (``_matmul``, ``_conv``, ``_reduce``, ``_pool``) share: the
backend's tuner, the candidate builder that checks a kernel's workgroup against the device's limits,
the tolerance every candidate is checked with, and the metadata packing of their dispatches.

Limits default to WebGPU's portable ones (16 KiB of workgroup memory, 256 invocations), so
browser-portable mode keeps every candidate within them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from burn.autotune import Autotuner, Candidate, tuner_for

from ._timer import timer_for

Ints = tuple[int, ...]

TUNE_MIN_FLOPS = 1 << 24  # below this a matmul or conv runs untuned: tuning costs more than it saves


def pack(*words: int) -> bytes:
    """A dispatch's metadata: little-endian u32 words."""
    return struct.pack(f"<{len(words)}I", *words)


def aligned(*values: int) -> bool:
    return all(v % 4 == 0 for v in values)


def fits(backend: Any, threads: int = 0, storage: int = 0) -> bool:
    """Whether a workgroup of ``threads`` invocations and ``storage`` bytes of workgroup memory fits
    the device's limits."""
    limits = backend.ctx.limits
    return storage <= limits.get("max-compute-workgroup-storage-size", 16384) and threads <= limits.get(
        "max-compute-invocations-per-workgroup", 256
    )


def candidate(
    name: str,
    fn: Callable[..., Any],
    fast: bool = True,
    threads: int = 0,
    storage: int = 0,
    when: Callable[..., bool] | None = None,
) -> Candidate:
    """A candidate that applies where its workgroup (``threads``, ``storage``: see ``fits``) fits the
    device and ``when(backend, *args)`` holds; with neither to check it always applies."""
    if not threads and not storage and when is None:
        return Candidate(name, fn, fast=fast)

    def applies(backend: Any, *args: Any) -> bool:
        return fits(backend, threads, storage) and (when is None or when(backend, *args))

    return Candidate(name, fn, fast=fast, applies=applies)


def close(out: Any, ref: Any) -> bool:
    """float32: allclose(rtol=1e-3, atol=1e-3); float16 (f16 accumulators round every partial sum):
    within 2% of the result's largest magnitude. A wrong kernel misses either by far."""
    import numpy as np

    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape:
        return False
    atol = 1e-3
    if ref.dtype == np.float16 and ref.size:
        atol = max(atol, 0.02 * float(np.abs(ref.astype(np.float64)).max()))
    return bool(
        np.allclose(out.astype(np.float64), ref.astype(np.float64), rtol=1e-3, atol=atol, equal_nan=True)
    )


def geometry_key(kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> str:
    """The window geometry part of a 2-d conv's or pool's tuning key."""
    return (
        f"k{kernel[0]}x{kernel[1]} s{stride[0]}x{stride[1]} p{padding[0]}x{padding[1]} "
        f"d{dilation[0]}x{dilation[1]}"
    )


def tuner(backend: Any) -> Autotuner:
    """The backend's tuner: its cache is keyed by the adapter, driver and versions."""
    from ._version import __version__

    info = backend.ctx.adapter.info
    parts = (
        str(info.get("device", "") or backend.ctx.label),
        f"{info.get('backend_type', '')} {info.get('driver', '')} {info.get('driver_description', '')}".strip(),
        f"burn-wgpu {__version__}",
        "portable" if backend.ctx.portable else "native",
    )
    return tuner_for(backend, parts, timer_for(backend, warmup=1, reps=5))
