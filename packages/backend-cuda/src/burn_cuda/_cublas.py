"""cuBLAS GEMMs a CUDA graph can capture.

cuBLAS itself supports stream capture, but CuPy's wrapper refuses every cuBLAS call while a stream is
capturing (``NotImplementedError``). So a program captured as a CUDA graph (``_graphs``) had to end its
graph at each matmul, run the matmul from Python at every launch and copy its result into the next
graph's input: a training step was a graph per stretch between matmuls. This module calls
``cublasGemmStridedBatchedEx`` through ctypes on the library CuPy has already loaded, with a handle of
its own per device and thread; the handle has a workspace of its own (cuBLAS must not allocate one
while capturing, as its documentation for CUDA graphs advises), and its stream is set before every
call. Only calls made while capturing come here (``capturing()``): CuPy's compiled wrapper is the
cheaper call everywhere else, and both run the same GEMM.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

WORKSPACE_BYTES = 32 << 20  # cuBLAS's recommended workspace on Hopper
_local = threading.local()
_lib: list[Any] = []  # the loaded library (one item), found on first use


def capturing_now() -> bool:
    """Whether this thread is capturing a CUDA graph (inside ``capturing()``)."""
    return getattr(_local, "capturing", False)


@contextmanager
def capturing() -> Iterator[None]:
    """While this block captures a graph on this thread, GEMMs go through this module."""
    before = capturing_now()
    _local.capturing = True
    try:
        yield
    finally:
        _local.capturing = before


def _library() -> Any:
    """The cuBLAS library CuPy loaded (found in this process's mappings), with the signatures used."""
    if _lib:
        return _lib[0]
    from cupy_backends.cuda.libs import cublas  # noqa: F401  # loads libcublas into the process

    path = None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = line.rsplit(" ", 1)[-1].strip()
                if "/libcublas.so" in name:
                    path = name
                    break
    except OSError:
        pass
    if path is None:
        path = ctypes.util.find_library("cublas")
    if path is None:
        raise RuntimeError("burn-cuda: cannot find the cuBLAS library CuPy uses")
    lib = ctypes.CDLL(path)
    vp, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
    lib.cublasSetStream_v2.argtypes = [vp, vp]
    lib.cublasSetWorkspace_v2.argtypes = [vp, vp, ctypes.c_size_t]
    lib.cublasGemmStridedBatchedEx.argtypes = [
        vp, i32, i32, i32, i32, i32,  # handle, op(B), op(A), n, m, k (column-major view)
        vp, vp, i32, i32, i64,  # alpha, B, its type, ldb, stride
        vp, i32, i32, i64,  # A, its type, lda, stride
        vp, vp, i32, i32, i64,  # beta, C, its type, ldc, stride
        i32, i32, i32,  # batch count, compute type, algorithm
    ]  # fmt: skip
    for fn in (
        "cublasCreate_v2",
        "cublasSetStream_v2",
        "cublasSetWorkspace_v2",
        "cublasGemmStridedBatchedEx",
    ):
        getattr(lib, fn).restype = i32
    _lib.append(lib)
    return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"burn-cuda: {what} failed with cuBLAS status {status}")


def _handle(cupy: Any) -> Any:
    """This thread's handle for the current device, with its workspace (made outside capture: the
    uncaptured run before each capture makes it)."""
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    dev = cupy.cuda.runtime.getDevice()
    entry = handles.get(dev)
    if entry is None:
        lib = _library()
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
        workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
        _check(lib.cublasSetWorkspace_v2(h, workspace.data.ptr, WORKSPACE_BYTES), "cublasSetWorkspace")
        entry = handles[dev] = (h, workspace)
    return entry[0]


def prepare(cupy: Any) -> None:
    """Load the library and make this thread's handle for the current device (before a capture)."""
    _handle(cupy)


def gemm_strided_batched(cupy: Any, stream_ptr: int, *args: Any) -> None:
    """``cublasGemmStridedBatchedEx(handle, *args)`` on ``stream_ptr`` with this thread's handle; the
    arguments as CuPy's wrapper takes them after the handle."""
    lib = _library()
    h = _handle(cupy)
    _check(lib.cublasSetStream_v2(h, stream_ptr), "cublasSetStream")
    _check(lib.cublasGemmStridedBatchedEx(h, *args), "cublasGemmStridedBatchedEx")
