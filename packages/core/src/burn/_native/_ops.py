"""Compiled kernels for the plain cpu device's ops (``burn.device("cpu")``, no fusion): where numpy spends
its time on copies and per-op passes, not on BLAS. One C library per family of ops, each source in its
own module (``_ops_conv``: direct and grouped/depthwise 2-d convolution; ``_ops_pool``: max and avg
pooling, the max pool's backward scatter; ``_ops_rows``: softmax, log-softmax and layer-norm rows),
built by the system compiler (``_toolchain``) the first time an op of the family takes the native path,
cached on disk by source hash like the fusion kernels.

Each op asks ``wanted(op, work)``: True where a compiler works (not ``BURN_CPU_NATIVE=0``, not under
Pyodide), the family's library built, and ``work`` (the op's size in its own unit: multiply-adds,
window taps, elements) reaches ``THRESHOLDS[op]``, measured on this machine (2 cores, numpy with
OpenBLAS) and stated beside each entry. Below it, or where a build fails (one warning), the numpy path
runs. The kernels compute what numpy computes in the same order where the numpy path is exact (pools)
and within float32 rounding elsewhere (sums in another order).
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._toolchain import MVEC_DECLARATIONS, Toolchain, build, toolchain

# the op's work from which the compiled kernel runs instead of numpy (benchmarks/bench_cpu_native.py
# --ops measures both sides; figures for float32 on 2 cores):
THRESHOLDS: dict[str, int] = {
    # grouped and depthwise conv (1 < groups): numpy runs one im2col GEMM per group, a batched matmul
    # of thin matrices over a copied window matrix; the direct kernel ran a (8, 96, 56, 56) depthwise
    # 3x3 conv in 10.5 ms against 38 ms, 8 groups of 8 channels in 16 ms against 24 ms, and lost only
    # on tiny convs (a (1, 32, 16, 16) depthwise 3x3, 74k multiply-adds: 0.27 ms against 0.12 ms, the
    # call and thread wake-up): multiply-adds. groups == 1 stays on numpy's BLAS-based rows: the
    # direct kernel lost there even on an RGB stem (a (8, 3, 224, 224) 3x3/2 conv to 32 channels: 72 ms
    # against 33 ms; im2col depth 27 still feeds BLAS well)
    "conv_grouped": 1 << 18,
    # max pool: numpy takes a max and a compare-and-count per tap over the output (or an argmax over
    # copied window rows); the kernel one pass: output elements times taps
    "max_pool": 1 << 10,
    # avg pool: numpy adds one strided tap view at a time: output elements times taps
    "avg_pool": 1 << 12,
    # scatter-add along the last dim (a max pool's backward): numpy's bincount of float64 weights
    # plus index arithmetic; the kernel one add per source element: source elements
    "scatter_rows": 1 << 12,
    # softmax / log-softmax over the last dim: numpy makes four passes and three temporaries, the
    # kernel two passes per row (in cache): elements
    "softmax": 1 << 12,
    # layer-norm rows (used by the fused path and ONNX's LayerNormalization): elements
    "layer_norm": 1 << 12,
}
# elements of work from which a kernel's outer loop runs on OpenMP threads (a smaller one loses more
# waking the threads than they save)
PARALLEL_MIN = 1 << 16

FLOAT_TYPES = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}
_FAILED = "failed"
_lock = threading.Lock()
_libraries: dict[tuple[str, Toolchain], Any] = {}
_warned: set[str] = set()


def header() -> str:
    """What every family's source starts with: the C headers and the vector math declarations."""
    return (
        "#include <stdint.h>\n#include <stddef.h>\n"
        + MVEC_DECLARATIONS
        + f"#include <math.h>\n#define BURN_PARALLEL_MIN {PARALLEL_MIN}\n"
    )


def typed(template: str) -> str:
    """``template`` once per float type: ``scalar_t`` spelled ``float``/``double`` and ``_SUF`` the
    function names' suffix ``_f32``/``_f64``."""
    return "".join(template.replace("scalar_t", c).replace("_SUF", "_" + s) for c, s in FLOAT_TYPES.values())


def library(family: str, source: Callable[[], str]) -> Any:
    """The compiled library of ``family`` (its C from ``source()``), or None where there is no compiler
    or its build failed (warned once per family; numpy runs from then on)."""
    tc = _current()
    if not tc.available:
        return None
    key = (family, tc)
    lib = _libraries.get(key)
    if lib is None:
        with _lock:
            lib = _libraries.get(key)
            if lib is None:
                try:
                    lib = build(tc, source())
                except (RuntimeError, OSError) as e:
                    lib = _FAILED
                    if family not in _warned:
                        _warned.add(family)
                        warnings.warn(f"{e}; the cpu {family} ops run on numpy", RuntimeWarning, stacklevel=3)
                _libraries[key] = lib
    return None if lib is _FAILED else lib


def function(lib: Any, name: str, dtype: np.dtype, nargs: int) -> Any:
    """``lib``'s kernel ``name`` for ``dtype`` (float32 or float64), all arguments pointers."""
    fn = getattr(lib, f"{name}_{FLOAT_TYPES[dtype][1]}")
    if fn.argtypes is None:
        fn.argtypes = [ctypes.c_void_p] * nargs
        fn.restype = ctypes.c_int
    return fn


def wanted(op: str, work: int) -> bool:
    """Whether ``op`` of this much ``work`` takes the compiled kernel (see ``THRESHOLDS``); False
    where no compiler works. Cheap: the toolchain is probed once per process."""
    return work >= THRESHOLDS[op] and _current().available


_memo: dict[tuple[str | None, ...], Toolchain] = {}


def _current() -> Toolchain:
    """``toolchain()`` kept per setting of the variables that choose it (an op asks on every call,
    and finding the compiler looks along ``PATH``)."""
    key = tuple(os.environ.get(v) for v in ("BURN_CPU_NATIVE", "CC", "BURN_CACHE_DIR"))
    tc = _memo.get(key)
    if tc is None:
        tc = _memo[key] = toolchain()
    return tc


def enabled() -> bool:
    """Whether the plain cpu device runs its compiled kernels at all (a C compiler works and
    ``BURN_CPU_NATIVE`` is not ``0``)."""
    return _current().available


def ptr(a: np.ndarray | None) -> int:
    """The address of ``a``'s first element (0 for None), for a ``void*`` argument."""
    return 0 if a is None else int(a.__array_interface__["data"][0])


def params(*values: int | float) -> np.ndarray:
    """A kernel's integer parameters as an int64 array (its address is the ``const int64_t* p``)."""
    return np.array(values, dtype=np.int64)


def dense(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` as a C-contiguous array of ``dtype`` (itself where it already is one)."""
    return np.ascontiguousarray(a, dtype=dtype)


