"""Reductions on the GPU: sum / mean / prod / max / min over the trailing dims of a dense float tensor
(the last dim, or all dims) with tree kernels, and the tuned reduce family (``burn.autotune``) that
chooses their shape.

Candidates: "cupy" (the reference: CuPy's reduction, float16 accumulated in float32) and the tree
kernels ("tree<block>x<elements per thread>"); rows too few to fill the GPU split into chunks whose
partials (in the accumulator type) take a second pass. Small reductions are not tuned and keep
CuPy's path (``should_tune_reduce``).

The kernel (``burn_reduce``): ``out[b] = op(x[row, start:stop])`` for block ``b`` = (row, chunk), each
thread ``EPT`` elements per step (coalesced: element ``j + u * blockDim``), then a warp-shuffle and
shared-memory tree; with one chunk per row the result is final (the mean divided in), else the (rows,
chunks) partials in the accumulator type take a second pass. Compiled on first use and cached per
(op, dtypes, elements per thread); the block size is a launch parameter, so one compiled kernel
serves every block size.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from burn.autotune import Candidate, Family, bucket
from burn.backend import reduced_shape

from ._rawkernels import CVT, FLOAT_DTYPES, compiled, io
from ._tuning import close, tuner

REDUCE_OPS = ("sum", "mean", "prod", "max", "min")
REDUCE_DTYPES = FLOAT_DTYPES

# op -> (init, combine(a, b)) in the accumulator type; max/min propagate NaN (NumPy)
_REDUCE = {
    "sum": ("(ACC)0", "a + b"),
    "mean": ("(ACC)0", "a + b"),
    "prod": ("(ACC)1", "a * b"),
    "max": ("-INF", "(a > b || a != a) ? a : b"),
    "min": ("INF", "(a < b || a != a) ? a : b"),
}


def reduce_source(op: str, in_dt: np.dtype, out_dt: np.dtype, ept: int) -> str:
    """The CUDA source of ``burn_reduce``: ``op`` over row chunks of ``in_dt`` into ``out_dt``
    (the accumulator type for partials), ``ept`` elements per thread and step."""
    if op not in _REDUCE:
        raise ValueError(f"cuda reduce kernel: op must be one of {', '.join(_REDUCE)}, got {op!r}")
    if in_dt not in REDUCE_DTYPES or out_dt not in REDUCE_DTYPES:
        raise TypeError(f"cuda reduce kernel: expected float dtypes, got {in_dt} -> {out_dt}")
    if not 1 <= ept <= 16:
        raise ValueError(f"cuda reduce kernel: elements per thread must be 1..16, got {ept}")
    acc = "double" if np.dtype(np.float64) in (in_dt, out_dt) else "float"
    inf = "__longlong_as_double(0x7ff0000000000000LL)" if acc == "double" else "__int_as_float(0x7f800000)"
    init, combine = _REDUCE[op]
    head = CVT + io(in_dt, "x") + io(out_dt, "o")  # partials: out_dt's compute type is ACC
    head += f"typedef {acc} ACC;\n#define EPT {ept}\n#define INF ({inf})\n"
    head += f"__device__ __forceinline__ ACC combine(ACC a, ACC b) {{ return {combine}; }}\n"
    body = f"""extern "C" __global__ void burn_reduce(const x_t* x, o_t* out, long long n, long long chunk, int chunks,
        long long mean_n) {{
    long long blk = blockIdx.x;
    long long row = blk / chunks;
    long long start = (blk % chunks) * chunk;
    long long stop = start + chunk < n ? start + chunk : n;
    const x_t* xr = x + row * n;
    ACC acc = {init};
    const long long step = (long long)blockDim.x * EPT;
    for (long long j = start + threadIdx.x; j < stop; j += step) {{
        #pragma unroll
        for (int u = 0; u < EPT; ++u) {{
            long long jj = j + (long long)u * blockDim.x;
            if (jj < stop) acc = combine(acc, (ACC)x_load(xr, jj));
        }}
    }}
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc = combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
    __shared__ ACC sh[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sh[warp] = acc;
    __syncthreads();
    if (warp == 0) {{
        acc = lane < (int)(blockDim.x >> 5) ? sh[lane] : ({init});
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc = combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
        if (lane == 0) {{
            if (mean_n > 0) acc = acc / (ACC)mean_n;
            o_store(out, blk, acc);
        }}
    }}
}}
"""
    return head + body


def reduce_kernel(op: str, in_dt: np.dtype, out_dt: np.dtype, ept: int) -> Any:
    """The compiled reduction kernel (``cupy.RawKernel``)."""
    in_dt, out_dt = np.dtype(in_dt), np.dtype(out_dt)
    return compiled(("reduce", op, in_dt, out_dt, ept), reduce_source(op, in_dt, out_dt, ept), "burn_reduce")


_REDUCE_MIN_ELEMENTS = 1 << 22
_REDUCE_MIN_ROW = 4096
REDUCE_BLOCKS = (128, 256, 512)
REDUCE_PER_THREAD = (1, 4, 8)
_REDUCE_DEFAULT = "tree256x4"


def _reduce_cupy(backend: Any, op: str, x: Any, rows: int, n: int) -> Any:
    cp = backend._on()
    x2 = x.reshape(rows, n)
    if op in ("sum", "prod", "mean"):
        fn = {"sum": cp.sum, "prod": cp.prod, "mean": cp.mean}[op]
        if x.dtype == np.float16:  # accumulate in float32, round once
            return fn(x2, axis=1, dtype=np.float32).astype(np.float16)
        return fn(x2, axis=1, dtype=x.dtype)
    return (cp.max if op == "max" else cp.min)(x2, axis=1)


def _target_blocks(backend: Any) -> int:
    """Blocks that fill the GPU (4 per multiprocessor), read once per backend."""
    blocks = getattr(backend, "_reduce_target_blocks", None)
    if blocks is None:
        import cupy

        sms = cupy.cuda.runtime.getDeviceProperties(backend.index)["multiProcessorCount"]
        blocks = backend._reduce_target_blocks = 4 * int(sms)
    return int(blocks)


def reduce_rows(backend: Any, op: str, x: Any, rows: int, n: int, block: int = 256, ept: int = 4) -> Any:
    """``op`` over each of ``rows`` dense rows of ``n`` elements of x (float16/32/64) with the tree
    kernel: one block per row, or per row chunk (then a second pass over the partials) when there are
    too few rows to fill the GPU."""
    cp = backend._on()
    x = cp.ascontiguousarray(x)
    step = block * ept
    chunks = 1
    target = _target_blocks(backend)
    if rows < target and n > 4 * step:
        chunks = min(-(-n // (4 * step)), -(-target // max(rows, 1)))
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    mean_n = np.int64(n if op == "mean" else 0)
    if chunks == 1:
        out = cp.empty((rows,), dtype=x.dtype)
        kern = reduce_kernel(op, x.dtype, x.dtype, ept)
        kern((rows,), (block,), (x, out, np.int64(n), np.int64(chunk), np.int32(1), mean_n))
        return out
    acc = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
    part = cp.empty((rows, chunks), dtype=acc)
    first = "sum" if op == "mean" else op  # the mean divides once, in the second pass
    reduce_kernel(first, x.dtype, acc, ept)(
        (rows * chunks,), (block,), (x, part, np.int64(n), np.int64(chunk), np.int32(chunks), np.int64(0))
    )
    out = cp.empty((rows,), dtype=x.dtype)
    second = "sum" if op == "mean" else op
    reduce_kernel(second, acc, x.dtype, 1)(
        (rows,), (block,), (part, out, np.int64(chunks), np.int64(chunks), np.int32(1), mean_n)
    )
    return out


def _tree(block: int, ept: int, fast: bool) -> Candidate:
    return Candidate(f"tree{block}x{ept}", partial(reduce_rows, block=block, ept=ept), fast=fast)


def _reduce_key(backend: Any, op: str, x: Any, rows: int, n: int) -> str:
    return f"{op} {x.dtype.name} r{bucket(rows)} n{bucket(n)}"


REDUCE = Family(
    "reduce",
    (
        Candidate("cupy", _reduce_cupy),
        *(
            _tree(block, ept, fast=(block, ept) in ((256, 4), (512, 8), (128, 4)))
            for block in REDUCE_BLOCKS
            for ept in REDUCE_PER_THREAD
        ),
    ),
    key=_reduce_key,
    reference="cupy",
    default=_REDUCE_DEFAULT,
    close=close,
)


def should_tune_reduce(rows: int, n: int) -> bool:
    """Long rows of a large tensor, where the tree's shape matters; smaller ones keep CuPy's path."""
    return n >= _REDUCE_MIN_ROW and rows * n >= _REDUCE_MIN_ELEMENTS


def reduce_trailing(backend: Any, op: str, x: Any, dims: tuple[int, ...], keepdim: bool) -> Any | None:
    """``op`` over ``dims`` through the tuned family where it applies: a float16/32/64 tensor, dims
    the trailing ones (the last, or all), C-contiguous, large enough (``should_tune_reduce``); else
    None (the caller runs CuPy's reduction)."""
    nd = x.ndim
    if op not in REDUCE_OPS or x.dtype not in REDUCE_DTYPES or not dims or not x.flags.c_contiguous:
        return None
    if tuple(sorted(d % nd for d in dims)) != tuple(range(nd - len(dims), nd)):
        return None
    keep = x.shape[: nd - len(dims)]
    rows = 1
    for s in keep:
        rows *= s
    n = x.size // rows if rows else 0
    if n == 0 or not should_tune_reduce(rows, n):
        return None
    y = tuner(backend).run(REDUCE, backend, op, x, rows, n)
    return y.reshape(keep + (1,) * len(dims) if keepdim else keep)


_COLUMNS_MIN_ELEMENTS = 1 << 15  # below this CuPy's reduction costs no more than the column kernel's launch


def reduce_columns(backend: Any, op: str, x: Any, dims: tuple[int, ...], keepdim: bool) -> Any | None:
    """sum / mean over dims that do not all trail (a bias gradient's column sums, a BatchNorm's sums over
    (N, H, W)) without CuPy's generic reduction, which is 5-20x slower there: the trailing run of
    ``dims`` first (the tuned tree kernels, through ``backend.reduce``), then the remaining run of
    leading or middle dims with the column-sum kernel (``_colsum``: float32 accumulation for float16),
    which reads at memory speed and CUDA graphs capture. None where it does not apply (other ops or
    dtypes, non-contiguous input, several separate runs of dims left, small tensors): the caller runs
    CuPy's reduction."""
    from ._colsum import column_sums

    nd = x.ndim
    if op not in ("sum", "mean") or x.dtype not in (np.float32, np.float16) or not dims:
        return None
    if not x.flags.c_contiguous or x.size < _COLUMNS_MIN_ELEMENTS:
        return None
    axes = sorted({d % nd for d in dims})
    reduced, original = tuple(axes), x.shape
    if axes[-1] == nd - 1:  # the trailing run first; what is left has a smaller trailing dim
        k = len(axes) - 1
        while k > 0 and axes[k - 1] == axes[k] - 1:
            k -= 1
        trailing, axes = tuple(axes[k:]), axes[:k]
        if not axes or axes[-1] - axes[0] + 1 != len(axes):
            return None  # all trailing (not this path), or two separate runs of dims left
        x = backend.reduce(op, x, trailing, False)
    elif axes[-1] - axes[0] + 1 != len(axes):
        return None  # two separate runs of dims
    i, j = axes[0], axes[-1] + 1
    shape = x.shape
    a = int(np.prod(shape[:i], dtype=np.int64))
    r = int(np.prod(shape[i:j], dtype=np.int64))
    b = int(np.prod(shape[j:], dtype=np.int64))
    if r == 0:
        return None
    rows = backend.xp.ascontiguousarray(x).reshape(a, r, b)
    out = column_sums(backend.xp, rows, 1.0 / r if op == "mean" else 1.0)
    return out.reshape(reduced_shape(original, tuple(reduced), keepdim))
