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
import platform
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._toolchain import MVEC_DECLARATIONS, Toolchain, build, toolchain

# the op's work from which the compiled kernel runs instead of numpy. Measured on this machine (2 shared
# cores, float32, medians of 31 calls, one thread each side: numpy's time / the kernel's, in us); a
# call costs the kernel 30-40 us of Python (shapes, ctypes), which sets the small end.
# ``benchmarks/bench_cpu_native.py --ops`` measures the large end against numpy and PyTorch.
THRESHOLDS: dict[str, int] = {
    # grouped and depthwise conv (1 < groups; shallow groups only, see GROUPED_MAX_DEPTH): numpy runs
    # one im2col GEMM per group over a copied window matrix. Depthwise 3x3 over 32 channels: 91/54 at
    # 4.6k multiply-adds, 257/190 at 295k; (8, 96, 56, 56): 57/32 ms. groups == 1 stays on numpy's
    # BLAS-based rows: the direct kernel lost even on an RGB stem (a (8, 3, 224, 224) 3x3/2 conv to 32
    # channels: 72 ms against 33 ms). Unit: multiply-adds
    "conv_grouped": 1 << 12,
    # max pool: numpy takes a max and a compare-and-count per tap over the output (or an argmax over
    # copied window rows), the kernel one pass: 115/41 at 256 taps, 187/88 at 16k; at parity on one
    # thread for large pools ((8, 64, 112, 112) 3x3/2: 35 ms each side), where its OpenMP threads split
    # the planes. Unit: output elements times kernel taps
    "max_pool": 1 << 8,
    # avg pool: numpy adds one strided tap view at a time: 105/103 at 256 taps, 99/123 at 1k, 138/100
    # at 4k, 61/24 ms at (8, 64, 56, 56) 3x3. Unit: output elements times kernel taps
    "avg_pool": 1 << 12,
    # scatter-add along the last dim (a max pool's backward): numpy's bincount of float64 weights plus
    # index arithmetic, the kernel one add per source element: 76/41 at 512, 258/58 at 32k. Unit:
    # elements of x plus of the source
    "scatter_rows": 1 << 9,
    # softmax / log-softmax over the last dim: numpy makes four passes and three temporaries, the
    # kernel two passes per row (in cache): 24/28 at 256, 29/29 at 1k, 57/39 at 4k. Unit: elements
    "softmax": 1 << 12,
    # layer-norm rows (no plain-cpu op: F.layer_norm composes basic ops; for fused and ONNX callers):
    # numpy's formula 68 ms / 25 ms at (4096, 1024). Unit: elements
    "layer_norm": 1 << 12,
}
# grouped convs whose group window (C_in/groups * KH * KW) is deeper than this stay on numpy unless
# depthwise (C_in/groups == 1, any kernel): one thread each side, (8, C, 28, 28) 3x3 convs, native over
# numpy: 0.66 at C_in/groups 1, 0.58 at 2 (depth 18), 1.13 at 4 (36), 1.09 at 8, 2.15 at 32 (BLAS's
# blocking wins once a group's GEMM is deep)
GROUPED_MAX_DEPTH = 27
# work (the kernel's own unit) from which a kernel's outer loop runs on OpenMP threads: below it, waking
# the threads on a loaded machine cost more than they saved (a depthwise conv of 295k multiply-adds:
# 190 us on one thread, 306 us on two at 2^16)
PARALLEL_MIN = 1 << 20

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


_memo: dict[tuple[Any, ...], Toolchain] = {}
_ENV_VARS = ("BURN_CPU_NATIVE", "CC", "BURN_CACHE_DIR")
# os.environ's own store (CPython: bytes keys on POSIX, kept in step by os.environ's setters): read
# directly, the three variables cost 0.2 us instead of 4 us through the Mapping (an op asks per call)
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEYS = tuple(v.encode() for v in _ENV_VARS) if os.name == "posix" else ()


def _env_key() -> tuple[Any, ...]:
    data = _ENV_DATA
    if _ENV_KEYS and isinstance(data, dict):
        return (data.get(_ENV_KEYS[0]), data.get(_ENV_KEYS[1]), data.get(_ENV_KEYS[2]))
    return tuple(os.environ.get(v) for v in _ENV_VARS)


def _current() -> Toolchain:
    """``toolchain()`` kept per setting of the variables that choose it (an op asks on every call,
    and finding the compiler looks along ``PATH``)."""
    key = _env_key()
    tc = _memo.get(key)
    if tc is None:
        tc = _memo[key] = toolchain()
    return tc


def enabled() -> bool:
    """Whether the plain cpu device runs its compiled kernels at all (a C compiler works and
    ``BURN_CPU_NATIVE`` is not ``0``)."""
    return _current().available


def _data_offset() -> int | None:
    """Where an ndarray object keeps its data pointer (CPython: ``PyArrayObject``'s first field after
    the object header), checked against ``__array_interface__`` on a few arrays; None where it does
    not match (another interpreter or layout: ``ptr`` asks ``__array_interface__``)."""
    if platform.python_implementation() != "CPython":
        return None
    probes = [np.zeros(3, np.float32), np.arange(7.0)[2:], np.empty((2, 3), np.int64).T]
    for offset in (16,):
        try:
            if all(
                ctypes.c_void_p.from_address(id(a) + offset).value == a.__array_interface__["data"][0]
                for a in probes
            ):
                return offset
        except (ValueError, OSError):  # pragma: no cover - an unreadable address
            return None
    return None


# reading the pointer field directly: 0.2 us, where ``__array_interface__`` builds a dict (2-4 us; a
# depthwise conv passes six pointers, and at batch 1 a MobileNet makes 50 such calls per forward)
_DATA_OFFSET = _data_offset()


def ptr(a: np.ndarray | None) -> int:
    """The address of ``a``'s first element (0 for None), for a ``void*`` argument."""
    if a is None:
        return 0
    if _DATA_OFFSET is not None and type(a) is np.ndarray:
        return ctypes.c_void_p.from_address(id(a) + _DATA_OFFSET).value or 0
    return int(a.__array_interface__["data"][0])


def params(*values: int | float) -> np.ndarray:
    """A kernel's integer parameters as an int64 array (its address is the ``const int64_t* p``)."""
    return np.array(values, dtype=np.int64)


def dense(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` as a C-contiguous array of ``dtype`` (itself where it already is one)."""
    return np.ascontiguousarray(a, dtype=dtype)
