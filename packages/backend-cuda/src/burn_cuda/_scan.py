"""cumsum / cumprod as one CUDA thread per row scanning in order.

CuPy's own scan gave wrong sums on the H200 for some inputs reached through burn's non-blocking stream
(broadcast views scanned along the last axis), so burn_cuda runs its own kernel: the scanned dim is
moved last and made contiguous, and each thread accumulates one row left to right, in the dtype itself
(float16 accumulates in float32, then rounds once).
"""

from __future__ import annotations

from types import ModuleType

from ._types import Kernel, Prim

_SOURCE = r"""
template<typename T>
__global__ void scan_rows(const T* x, T* y, long long rows, long long n, int product) {
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T acc = product ? (T)1 : (T)0;
    for (long long i = 0; i < n; ++i) {
        acc = product ? (T)(acc * xr[i]) : (T)(acc + xr[i]);
        yr[i] = acc;
    }
}
"""

_CTYPES = {
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short",
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
}
_module: dict[str, Kernel] = {}


def _kernel(cupy: ModuleType, dtype_name: str) -> Kernel:
    if "module" not in _module:
        names = [f"scan_rows<{c}>" for c in _CTYPES.values()]
        _module["module"] = cupy.RawModule(code=_SOURCE, options=("-std=c++14",), name_expressions=names)
    return _module["module"].get_function(f"scan_rows<{_CTYPES[dtype_name]}>")


def scan(cupy: ModuleType, x: Prim, dim: int, product: bool) -> Prim:
    """Inclusive cumsum (``product=False``) or cumprod of ``x`` along ``dim``, in x's dtype."""
    if x.dtype.name == "float16":
        return scan(cupy, x.astype(cupy.float32), dim, product).astype(cupy.float16)
    if x.dtype.name == "bool":
        raise TypeError("scan: bool tensors are cast to int by the frontend first")
    moved = cupy.ascontiguousarray(cupy.moveaxis(x, dim, -1))
    out = cupy.empty_like(moved)
    n = moved.shape[-1] if moved.ndim else 1
    rows = moved.size // n if n else 0
    if rows:
        threads = 128
        blocks = (rows + threads - 1) // threads
        _kernel(cupy, x.dtype.name)(
            (blocks,), (threads,), (moved, out, cupy.int64(rows), cupy.int64(n), cupy.int32(product))
        )
    return cupy.moveaxis(out, -1, dim)
