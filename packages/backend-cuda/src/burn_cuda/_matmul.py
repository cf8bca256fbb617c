"""cuBLAS matmul with a selectable precision for float32 operands.

Modes (``set_matmul_precision``): ``"fp32"`` exact fp32 products, ``"tf32"`` tensor cores with TF32
inputs, ``"bf16"`` / ``"fp16"`` tensor cores with inputs rounded to bfloat16 / float16; every mode
accumulates in fp32 and reads and writes fp32 arrays (cuBLAS's ``CUBLAS_COMPUTE_32F_FAST_*`` compute
types do the down-conversion inside the GEMM, so no half copies are made). Float32 matmuls go straight
to ``cublasGemmStridedBatchedEx`` (CuPy's batched path ignores its own TF32 setting); transposed views
are passed as transpose flags instead of being copied. float16 and bfloat16 tensors go to the same GEMM
with ``CUDA_R_16F`` / ``CUDA_R_16BF`` operands and result and ``CUBLAS_COMPUTE_32F`` (tensor cores,
float32 accumulation, one rounding of the result: PyTorch's default for half); bfloat16 arrays are
handed over as their bits (uint16 views: ``_bf16``). Other dtypes use ``cupy.matmul``.
"""

from __future__ import annotations

import functools
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

from burn.backend import broadcast_shape

from . import _cublas
from ._types import Prim

if TYPE_CHECKING:
    import numpy as np

# numpy is imported inside the functions: the entry point imports this module (for the precision
# settings), and it must load where numpy does not (Pyodide lists the backend as unavailable there)

# cublasComputeType_t values (cublas_api.h); read from CuPy when it exposes them
_COMPUTE_FALLBACK = {
    "fp32": ("CUBLAS_COMPUTE_32F", 68),
    "tf32": ("CUBLAS_COMPUTE_32F_FAST_TF32", 77),
    "bf16": ("CUBLAS_COMPUTE_32F_FAST_16BF", 75),
    "fp16": ("CUBLAS_COMPUTE_32F_FAST_16F", 74),
}
PRECISIONS = tuple(_COMPUTE_FALLBACK)
_CUDA_R_32F = 0
_CUDA_R_16F = 2
_CUDA_R_16BF = 14  # cudaDataType_t (library_types.h)
_GEMM_DEFAULT_TENSOR_OP = 99

_state: dict[str, str] = {"precision": "fp32"}
_local = threading.local()
_scalars: list[np.ndarray] = []  # host alpha/beta (1.0, 0.0) for cuBLAS, made on first use


def _check(mode: str) -> str:
    if mode not in _COMPUTE_FALLBACK:
        raise ValueError(f"matmul precision: expected one of {', '.join(PRECISIONS)}, got {mode!r}")
    return mode


def set_matmul_precision(mode: str) -> None:
    """Pick how float32 matmuls run on every CUDA device: ``"fp32"`` (default, exact), ``"tf32"``,
    ``"bf16"`` or ``"fp16"`` (tensor cores, inputs rounded, fp32 accumulation and output).

    >>> import burn_cuda
    >>> burn_cuda.set_matmul_precision("tf32")
    >>> burn_cuda.get_matmul_precision()
    'tf32'
    >>> burn_cuda.set_matmul_precision("fp32")   # back to the default
    """
    _state["precision"] = _check(mode)


def get_matmul_precision() -> str:
    """The precision float32 matmuls use now (a ``matmul_precision`` block overrides the global)."""
    return getattr(_local, "precision", None) or _state["precision"]


class matmul_precision:
    """Context manager: ``with burn_cuda.matmul_precision("bf16"): y = a @ b`` (this thread only)."""

    def __init__(self, mode: str) -> None:
        self.mode = _check(mode)
        self._prev: str | None = None

    def __enter__(self) -> matmul_precision:
        self._prev = getattr(_local, "precision", None)
        _local.precision = self.mode
        return self

    def __exit__(self, *exc: object) -> None:
        _local.precision = self._prev


_compute_types: dict[str, int] = {}


def compute_type(mode: str) -> int:
    """The cublasComputeType_t of a precision mode (cached: this sits on every matmul's path)."""
    ct = _compute_types.get(mode)
    if ct is None:
        from cupy_backends.cuda.libs import cublas

        name, fallback = _COMPUTE_FALLBACK[mode]
        ct = _compute_types[mode] = int(getattr(cublas, name, fallback))
    return ct


def _batched(cupy: ModuleType, x: Prim, batch: tuple[int, ...]) -> Prim:
    """x (..., R, C) as (B, R, C) with B = prod(batch), or (1, R, C) when one matrix serves the batch."""
    import numpy as np

    r, c = x.shape[-2:]
    lead = x.shape[:-2]
    if lead != batch:
        if int(np.prod(lead, dtype=np.int64)) == 1:
            return x.reshape((1, r, c))
        x = cupy.ascontiguousarray(cupy.broadcast_to(x, batch + (r, c)))
    x3 = x.reshape((-1, r, c))
    if x3.shape[0] > 1 and (x3.strides[0] <= 0 or x3.strides[0] % x3.itemsize):
        x3 = cupy.ascontiguousarray(x3)
    return x3


def _layout(cupy: ModuleType, x: Prim) -> tuple[Prim, bool, int]:
    """(array, is_row_major, leading dim) of the last two dims, copying only when neither layout fits."""
    r, c = x.shape[-2:]
    b1, b2 = x.strides[-2:]
    size = x.itemsize
    s1, s2 = b1 // size, b2 // size  # in elements
    if (s2 == 1 or c == 1) and s1 >= max(c, 1) and b1 % size == 0:
        return x, True, s1
    if (s1 == 1 or r == 1) and s2 >= max(r, 1) and b2 % size == 0:
        return x, False, s2
    return cupy.ascontiguousarray(x), True, max(c, 1)


def gemm_f32(cupy: ModuleType, a: Prim, b: Prim, mode: str) -> Prim:
    """float32 ``a @ b`` for a (..., M, K), b (..., K, N) with broadcast batch dims -> (..., M, N)."""
    return _gemm(cupy, a, b, compute_type(mode), _CUDA_R_32F)


def gemm_f16(cupy: ModuleType, a: Prim, b: Prim) -> Prim:
    """float16 ``a @ b`` on tensor cores with float32 accumulation (PyTorch's default for half)."""
    return _gemm(cupy, a, b, compute_type("fp32"), _CUDA_R_16F)


def gemm_bf16(cupy: ModuleType, a: Prim, b: Prim) -> Prim:
    """bfloat16 ``a @ b`` on tensor cores with float32 accumulation; a and b are bfloat16 arrays."""
    import numpy as np

    out = _gemm(cupy, a.view(np.uint16), b.view(np.uint16), compute_type("fp32"), _CUDA_R_16BF)
    return out.view(a.dtype)


def _gemm(cupy: ModuleType, a: Prim, b: Prim, compute: int, data_type: int) -> Prim:
    """``a @ b`` through cublasGemmStridedBatchedEx: operands and result of ``data_type`` (a's dtype),
    ``compute`` the cublasComputeType_t (float32 alpha and beta: every compute type used here is a
    32-bit float one)."""
    import numpy as np

    if not _scalars:
        _scalars.extend([np.array(1.0, dtype=np.float32), np.array(0.0, dtype=np.float32)])
    m, k = a.shape[-2:]
    n = b.shape[-1]
    flat = a.ndim == 2 and b.ndim == 2  # the common case: no batch bookkeeping on the host
    batch = () if flat else broadcast_shape(a.shape[:-2], b.shape[:-2])
    out = cupy.empty(batch + (m, n), dtype=a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    a3, b3, count = (a, b, 1) if flat else (_batched(cupy, a, batch), _batched(cupy, b, batch), None)
    a3, a_rows, lda = _layout(cupy, a3)
    b3, b_rows, ldb = _layout(cupy, b3)
    if flat:
        stride_a = stride_b = 0
    else:  # batch strides after any layout copy; 0 broadcasts one matrix over the batch
        count = int(np.prod(batch, dtype=np.int64))
        stride_a = a3.strides[0] // a3.itemsize if a3.shape[0] > 1 else 0
        stride_b = b3.strides[0] // b3.itemsize if b3.shape[0] > 1 else 0
    from cupy_backends.cuda.libs import cublas

    # row-major C = A @ B is column-major C^T = B^T @ A^T: B goes first. A row-major operand already
    # reads as its transpose in column-major (op N); a column-major one needs op T.
    # The handle is shared per thread and device and keeps the last stream set on it: its default is the
    # legacy null stream, which does not wait for the device's non-blocking stream. Set it every call.
    stream = cupy.cuda.get_current_stream().ptr
    if _cublas.capturing_now():  # CuPy refuses cuBLAS calls under capture: ctypes, same library
        gemm: Any = functools.partial(_cublas.gemm_strided_batched, cupy, stream)
    else:
        handle = cupy.cuda.device.get_cublas_handle()
        cublas.setStream(handle, stream)
        gemm = functools.partial(cublas.gemmStridedBatchedEx, handle)
    gemm(
        0 if b_rows else 1,
        0 if a_rows else 1,
        n,
        m,
        k,
        _scalars[0].ctypes.data,
        b3.data.ptr,
        data_type,
        ldb,
        stride_b,
        a3.data.ptr,
        data_type,
        lda,
        stride_a,
        _scalars[1].ctypes.data,
        out.data.ptr,
        data_type,
        n,
        m * n,
        count,
        compute,
        _GEMM_DEFAULT_TENSOR_OP,
    )
    return out


def matmul(cupy: ModuleType, a: Prim, b: Prim) -> Prim:
    """Batched matmul of two same-dtype arrays (both at least 2-d)."""
    import numpy as np

    if a.dtype == np.float32:
        return gemm_f32(cupy, a, b, get_matmul_precision())
    if a.dtype == np.float16:
        return gemm_f16(cupy, a, b)
    if a.dtype.kind == "V":  # bfloat16 (ml_dtypes)
        return gemm_bf16(cupy, a, b)
    return cupy.matmul(a, b)
