"""int8 x int8 -> int32 matmul for ``Backend.quantized_matmul`` on CUDA (exact integer accumulation).

Two paths, chosen per call:

* cuBLAS (``cublasGemmStridedBatchedEx`` with ``CUDA_R_8I`` operands, a ``CUDA_R_32I`` result and
  ``CUBLAS_COMPUTE_32I``: integer tensor cores on Turing and later). cuBLAS takes this path only with
  alpha/beta 1/0, 32-bit aligned operands and leading dims that are multiples of 4. Row-major
  ``C = A @ W`` is column-major ``C^T = W^T A^T``, so W's buffer goes first: W (K, N) row-major reads
  as the column-major N x K matrix (lda = N), A (M, K) as K x M (ldb = K), C with ldc = N. So K and
  N must be multiples of 4 (M is free). If cuBLAS refuses that layout (``CUBLAS_STATUS_NOT_SUPPORTED``
  on some versions for int8 "NN"), the "TN" layout is tried once (W transposed into a (N, K) copy,
  both operands contiguous along K: the layout every int8 GEMM kernel supports); the layout that
  worked is remembered per device, and a shape refused in both layouts (the H200 refuses some that
  fit the documented rules) runs on the dp4a kernel from then on.
* A dp4a kernel (``RawKernel``; PTX ``dp4a.s32.s32``, what ``__dp4a`` compiles to) for shapes cuBLAS
  refuses: a 16 x 16 block computes a 64 x 64 output tile, each thread a 4 x 4 block; each K step
  of 32 packs 4 consecutive int8 values of a row of A (or a column of W) into one int in shared
  memory, and each product of two packed words is one dp4a (four multiply-adds into an int
  accumulator). Any shape, any batch.

The int32 sums are exact while K * 128 * 128 < 2**31 (K < 131072; checked). The backend's default int
is int64, so the result is cast to int64 (a copy of M x N values, small next to the product).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from burn.backend import broadcast_shape

from ._types import Prim

_CUDA_R_8I = 3
_CUDA_R_32I = 10
_CUBLAS_COMPUTE_32I = 72  # cublasComputeType_t (cublas_api.h); read from CuPy when it exposes it
_CUBLAS_GEMM_DEFAULT = -1
_OP_N, _OP_T = 0, 1
MAX_K = (1 << 31) // (128 * 128) - 1
TILE, BK = 64, 32

_layouts: dict[int, str] = {}  # device id -> "nn" or "tn": the cuBLAS layout that worked last
_refused: set[tuple[int, int, int, int]] = set()  # (device id, M, N, K) cuBLAS refused in every layout
_scalars: list[Any] = []  # host int32 alpha = 1, beta = 0
_kernel: list[Any] = []

_DP4A_SOURCE = r"""
// dp4a as inline PTX (sm_61+): no dependence on which intrinsic headers NVRTC includes
__device__ __forceinline__ int dot4_s8(int a, int b, int c) {
    int d;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

extern "C" __global__ void __launch_bounds__(256)
quantized_matmul_dp4a(const signed char* __restrict__ a, const signed char* __restrict__ w,
                      int* __restrict__ out, const int M, const int N, const int K,
                      const long long a_batch, const long long w_batch) {
    // a: (B?, M, K) and w: (B?, K, N) contiguous, batch strides a_batch / w_batch (0 broadcasts)
    __shared__ int As[8][64];  // [packed word along K][row]
    __shared__ int Ws[8][64];  // [packed word along K][column]
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const long long b = blockIdx.z;
    const signed char* ab = a + b * a_batch;
    const signed char* wb = w + b * w_batch;
    int* ob = out + b * (long long)M * N;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    int acc[4][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0;
    }
    for (int k0 = 0; k0 < K; k0 += 32) {
        #pragma unroll
        for (int l = 0; l < 2; ++l) {
            const int e = tid + l * 256;
            // a: neighbouring threads read neighbouring 4-runs of one row (contiguous along K)
            const int am = e / 8, aq = e % 8;
            unsigned int pa = 0u;
            #pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int k = k0 + aq * 4 + c;
                const int v = (row0 + am < M && k < K) ? (int)ab[(long long)(row0 + am) * K + k] : 0;
                pa |= ((unsigned int)v & 0xFFu) << (8 * c);
            }
            As[aq][am] = (int)pa;
            // w: neighbouring threads read neighbouring columns (contiguous along N)
            const int wn = e % 64, wq = e / 64;
            unsigned int pw = 0u;
            #pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int k = k0 + wq * 4 + c;
                const int v = (col0 + wn < N && k < K) ? (int)wb[(long long)k * N + col0 + wn] : 0;
                pw |= ((unsigned int)v & 0xFFu) << (8 * c);
            }
            Ws[wq][wn] = (int)pw;
        }
        __syncthreads();
        #pragma unroll
        for (int q = 0; q < 8; ++q) {
            int x[4], y[4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) x[i] = As[q][ty + 16 * i];
            #pragma unroll
            for (int j = 0; j < 4; ++j) y[j] = Ws[q][tx + 16 * j];
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                #pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = dot4_s8(x[i], y[j], acc[i][j]);
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = row0 + ty + 16 * i;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = col0 + tx + 16 * j;
            if (r < M && c < N) ob[(long long)r * N + c] = acc[i][j];
        }
    }
}
"""


def _batched(cp: ModuleType, x: Prim, batch: tuple[int, ...]) -> tuple[Prim, int]:
    """x (..., R, C) as a contiguous int8 (B', R, C) with its batch stride in elements (0: one matrix
    broadcast over the batch)."""
    import numpy as np

    r, c = x.shape[-2:]
    lead = x.shape[:-2]
    single = int(np.prod(lead, dtype=np.int64)) == 1
    if single:
        x3 = cp.ascontiguousarray(x.reshape((1, r, c)))
    else:
        if tuple(lead) != batch:
            x = cp.broadcast_to(x, batch + (r, c))
        x3 = cp.ascontiguousarray(x).reshape((-1, r, c))
    if x3.data.ptr % 16:  # a contiguous view at an odd offset: cuBLAS wants aligned operands
        x3 = x3.copy()
    return x3, 0 if single else r * c


def _dp4a(cp: ModuleType, a3: Prim, sa: int, w3: Prim, sw: int, out: Prim) -> None:
    import numpy as np

    if not _kernel:
        _kernel.append(cp.RawKernel(_DP4A_SOURCE, "quantized_matmul_dp4a"))
    kernel = _kernel[0]
    count, m, n = out.shape
    k = a3.shape[-1]
    gx, gy = -(-n // TILE), -(-m // TILE)
    for base in range(0, count, 65535):
        z = min(65535, count - base)
        ab = a3[base : base + z] if sa else a3
        wb = w3[base : base + z] if sw else w3
        kernel(
            (gx, gy, z),
            (16, 16, 1),
            (ab, wb, out[base : base + z], np.int32(m), np.int32(n), np.int32(k), np.int64(sa), np.int64(sw)),
        )


def _cublas(cp: ModuleType, a3: Prim, sa: int, w3: Prim, sw: int, out: Prim, layout: str) -> None:
    """One strided-batched int8 GEMM in ``layout`` "nn" (W read as is) or "tn" (W transposed)."""
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    if not _scalars:
        _scalars.extend([np.array(1, dtype=np.int32), np.array(0, dtype=np.int32)])
    count, m, n = out.shape
    k = a3.shape[-1]
    if layout == "nn":
        first, op_first, ld_first, stride_first = w3, _OP_N, n, sw
    else:  # W^T (N, K) row-major is the column-major K x N matrix; op T reads it as N x K
        first = cp.ascontiguousarray(w3.transpose(0, 2, 1))
        op_first, ld_first, stride_first = _OP_T, k, (n * k if sw else 0)
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    cublas.gemmStridedBatchedEx(
        handle,
        op_first,
        _OP_N,
        n,
        m,
        k,
        _scalars[0].ctypes.data,
        first.data.ptr,
        _CUDA_R_8I,
        ld_first,
        stride_first,
        a3.data.ptr,
        _CUDA_R_8I,
        k,
        sa,
        _scalars[1].ctypes.data,
        out.data.ptr,
        _CUDA_R_32I,
        n,
        m * n,
        count,
        int(getattr(cublas, "CUBLAS_COMPUTE_32I", _CUBLAS_COMPUTE_32I)),
        _CUBLAS_GEMM_DEFAULT,
    )


def cublas_fits(m: int, n: int, k: int) -> bool:
    """Whether cuBLAS's int8 path accepts the shape (leading dims multiples of 4; aligned batches)."""
    return k % 4 == 0 and n % 4 == 0 and m >= 1


def quantized_matmul(cp: ModuleType, a: Prim, w: Prim, path: str | None = None) -> Prim:
    """``a @ w`` of int8-valued arrays a (..., M, K), w (..., K, N) (batch dims broadcast) as int64,
    accumulated exactly in int32. ``path``: force "cublas" (raises where cuBLAS refuses) or "dp4a";
    default: cuBLAS where the shape fits it and it worked on this device, else the dp4a kernel."""
    import numpy as np

    m, k = a.shape[-2:]
    n = w.shape[-1]
    if k > MAX_K:
        raise ValueError(
            f"quantized_matmul: a contraction of {k} int8 products may overflow int32 (at most {MAX_K})"
        )
    batch = broadcast_shape(a.shape[:-2], w.shape[:-2])
    count = int(np.prod(batch, dtype=np.int64))
    if count == 0 or m == 0 or n == 0 or k == 0:
        return cp.zeros(batch + (m, n), dtype=np.int64)
    a3, sa = _batched(cp, a.astype(np.int8, copy=False), batch)
    w3, sw = _batched(cp, w.astype(np.int8, copy=False), batch)
    out = cp.empty((count, m, n), dtype=np.int32)
    dev = cp.cuda.Device().id
    if path == "cublas" and not cublas_fits(m, n, k):
        raise ValueError(f"quantized_matmul: cuBLAS int8 needs K and N multiples of 4, got K={k}, N={n}")
    shape_key = (dev, m, n, k)
    if path == "cublas" or (path is None and cublas_fits(m, n, k) and shape_key not in _refused):
        from cupy_backends.cuda.libs import cublas

        known = _layouts.get(dev)
        error: Exception | None = None
        for layout in (known, *(x for x in ("nn", "tn") if x != known)) if known else ("nn", "tn"):
            try:
                _cublas(cp, a3, sa, w3, sw, out, layout)
            except cublas.CUBLASError as exc:  # NOT_SUPPORTED for this layout: the next, then the kernel
                error = exc
                continue
            _layouts[dev] = layout
            break
        else:
            if path == "cublas":
                assert error is not None
                raise error
            # this shape only: the H200's cuBLAS refuses some shapes that fit the documented rules
            # (M = 37; K = 8), while taking others on the same device
            _refused.add(shape_key)
            _dp4a(cp, a3, sa, w3, sw, out)
    else:
        _dp4a(cp, a3, sa, w3, sw, out)
    return out.reshape(batch + (m, n)).astype(np.int64)


def last_layout(cp: ModuleType) -> str | None:
    """The cuBLAS layout that last worked on the current device ("nn" or "tn"), or None if none has."""
    return _layouts.get(cp.cuda.Device().id)
