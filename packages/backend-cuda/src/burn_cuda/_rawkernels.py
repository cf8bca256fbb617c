"""The pieces burn-cuda's hand-written ``cupy.RawKernel`` sources share (the pool kernels of
``_pool`` and the reductions of ``_reduce``; the matmul epilogues of ``_epilogue`` use the cache): a
per-process cache that compiles each kernel once, publishing the build as autotune events, and the
per-dtype load/store helpers. The element-wise kernels of ``_kernels`` are CuPy ``ElementwiseKernel``s
and have their own cache.

float16 is read and written as its 16 bits (``unsigned short``) and converted with the PTX ``cvt``
instructions (round to nearest even), so no CUDA header is needed; it computes in float. bfloat16
never reaches these kernels: the backend runs pools and reductions of bfloat16 through float32
(``_bf16.FLOAT32_METHODS``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

CVT = r"""
__device__ __forceinline__ float burn_h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short burn_f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
"""

# numpy dtype -> (storage C type, compute C type, load(p, i), store(v), lowest value, float?)
TYPES: dict[np.dtype, tuple[str, str, str, str, str, bool]] = {
    np.dtype(np.float16): (
        "unsigned short",
        "float",
        "burn_h2f(p[i])",
        "burn_f2h(v)",
        "__int_as_float(0xff800000)",
        True,
    ),
    np.dtype(np.float32): ("float", "float", "p[i]", "v", "__int_as_float(0xff800000)", True),
    np.dtype(np.float64): (
        "double",
        "double",
        "p[i]",
        "v",
        "__longlong_as_double(0xfff0000000000000LL)",
        True,
    ),
    np.dtype(np.int32): ("int", "int", "p[i]", "v", "(-2147483647 - 1)", False),
    np.dtype(np.int64): ("long long", "long long", "p[i]", "v", "(-9223372036854775807LL - 1)", False),
}

FLOAT_DTYPES = frozenset(t for t, v in TYPES.items() if v[5])

_cache: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def io(dt: np.dtype, name: str) -> str:
    """C helpers ``<name>_load(p, i)`` and ``<name>_store(p, i, v)`` for dtype ``dt``."""
    c, acc, load, store, _, _ = TYPES[dt]
    return (
        f"typedef {c} {name}_t;\n"
        f"__device__ __forceinline__ {acc} {name}_load(const {c}* p, long long i) {{ return ({acc})({load}); }}\n"
        f"__device__ __forceinline__ void {name}_store({c}* p, long long i, {acc} v) {{ p[i] = ({c})({store}); }}\n"
    )


def compiled(key: tuple[Any, ...], source: str, name: str, label: str | None = None) -> Any:
    """The kernel under ``key``, built once per process (NVRTC compiles it here, or CuPy loads it from
    its on-disk kernel cache, ``_kernel_cache``); the build is published as ``AutotuneEvent``s of kind
    "compile" (start and done, the done one with the seconds it took) for the dashboard and
    ``burn.autotune.compile_seconds``, named ``label`` (default: the key's parts)."""
    k = _cache.get(key)
    if k is None:
        import cupy
        from burn.autotune import AutotuneEvent, publish

        with _lock:
            k = _cache.get(key)
            if k is None:
                label = label or "_".join(str(part) for part in key)
                publish(AutotuneEvent(label, kind="compile", device="cuda"))
                t0 = time.perf_counter()
                try:
                    k = cupy.RawKernel(source, name)
                    k.compile()  # now rather than at the first launch, so the wait is measured here
                finally:
                    waited = time.perf_counter() - t0
                    publish(AutotuneEvent(label, kind="compile", done=True, device="cuda", waited=waited))
                _cache[key] = k
    return k
