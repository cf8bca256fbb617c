"""Column sums: ``out[a, j] = scale * sum_r x[a, r, j]`` for a C-contiguous (a, r, b) float tensor (a
bias gradient's sum over the batch rows, a BatchNorm's sums over N after the trailing (H, W) run).

cuBLAS's gemv with a vector of ones (the path before this one) reaches about a quarter of the memory
bandwidth on these shapes (4096 x 768 fp32: ~23 us on an H200); this kernel reads at close to full
speed. A block of 32 x 16 threads covers 32 columns: each thread sums its column over every 16th row of
the block's row range (a warp reads 128 contiguous bytes per row), then the 16 partial sums meet in
shared memory. Where the column tiles alone do not fill the GPU, the rows are split over ``splits``
blocks whose partials (float32) take a second, tiny pass: always in the same order, so the result is
deterministic. float16 accumulates in float32; float64 in double.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._rawkernels import CVT, compiled, io

COLUMNS, ROWS = 32, 16  # the block: 32 columns wide, 16 row lanes
_MIN_ROWS_PER_SPLIT = 64  # fewer rows per block than this and the second pass costs more than it saves
_TARGET_BLOCKS = 512  # enough blocks in flight to keep every SM's loads busy (132 SMs on an H200)


def _source(dt: np.dtype, partial: bool) -> str:
    acc = "double" if dt == np.float64 else "float"
    out_dt = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    head = CVT + io(dt, "x") + io(out_dt if partial else dt, "o") + f"typedef {acc} ACC;\n"
    return (
        head
        + f"""extern "C" __global__ void __launch_bounds__({COLUMNS * ROWS}) burn_colsum(
    const x_t* x, o_t* out, long long r, long long b, long long per, int splits, ACC scale) {{
  __shared__ ACC part[{ROWS}][{COLUMNS + 1}];
  const long long col = (long long)blockIdx.x * {COLUMNS} + threadIdx.x;
  const int split = blockIdx.y;
  const long long a = blockIdx.z;
  const long long r0 = (long long)split * per;
  const long long r1 = min(r, r0 + per);
  ACC acc = (ACC)0;
  if (col < b) {{
    const x_t* base = x + a * r * b + col;
    for (long long row = r0 + threadIdx.y; row < r1; row += {ROWS}) acc += x_load(base, row * b);
  }}
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < b) {{
    ACC s = (ACC)0;
    for (int k = 0; k < {ROWS}; ++k) s += part[k][threadIdx.x];
    o_store(out, (a * splits + split) * b + col, s * scale);
  }}
}}
"""
    )


def _finish_source(dt: np.dtype) -> str:
    acc = "double" if dt == np.float64 else "float"
    part_dt = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    head = CVT + io(part_dt, "p") + io(dt, "o") + f"typedef {acc} ACC;\n"
    return (
        head
        + """extern "C" __global__ void burn_colsum_finish(const p_t* part, o_t* out, long long b, int splits,
    long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long a = i / b, col = i - a * b;
  const p_t* p = part + a * splits * b + col;
  ACC s = (ACC)0;
  for (int k = 0; k < splits; ++k) s += p_load(p, (long long)k * b);
  o_store(out, i, s);
}
"""
    )


def splits_for(a: int, r: int, b: int) -> int:
    """How many blocks share one column tile's rows: enough blocks for the GPU, at least
    ``_MIN_ROWS_PER_SPLIT`` rows each."""
    tiles = -(-b // COLUMNS) * a
    if tiles >= _TARGET_BLOCKS:
        return 1
    return max(1, min(-(-_TARGET_BLOCKS // tiles), r // _MIN_ROWS_PER_SPLIT))


def column_sums(cp: Any, x: Any, scale: float = 1.0) -> Any:
    """``scale * x.sum(axis=-2)`` of a C-contiguous (a, r, b) or (r, b) float16/32/64 array, in its
    dtype (shape (a, b) or (b,))."""
    dt = np.dtype(x.dtype)
    if dt not in (np.float16, np.float32, np.float64):
        raise TypeError(f"column_sums: x must be float16, float32 or float64, got {dt}")
    if not x.flags.c_contiguous or x.ndim not in (2, 3):
        raise ValueError(f"column_sums: x must be a C-contiguous 2-d or 3-d array, got shape {x.shape}")
    a, r, b = (1, *x.shape) if x.ndim == 2 else x.shape
    out_shape = (b,) if x.ndim == 2 else (a, b)
    if r == 0 or b == 0 or a == 0:
        return cp.full(out_shape, 0, dtype=dt) if b and a else cp.empty(out_shape, dtype=dt)
    splits = splits_for(a, r, b)
    per = -(-r // splits)
    splits = -(-r // per)  # no empty split
    acc = np.float64 if dt == np.float64 else np.float32
    grid = (-(-b // COLUMNS), splits, a)
    block = (COLUMNS, ROWS, 1)
    out = cp.empty(out_shape, dtype=dt)
    if splits == 1:
        kern = compiled(("colsum", dt.str, False), _source(dt, False), "burn_colsum", f"colsum_{dt.name}")
        kern(grid, block, (x, out, np.int64(r), np.int64(b), np.int64(per), np.int32(1), acc(scale)))
        return out
    part = cp.empty((a, splits, b), dtype=acc)
    kern = compiled(("colsum", dt.str, True), _source(dt, True), "burn_colsum", f"colsum_{dt.name}")
    kern(grid, block, (x, part, np.int64(r), np.int64(b), np.int64(per), np.int32(splits), acc(scale)))
    finish = compiled(("colsum_finish", dt.str), _finish_source(dt), "burn_colsum_finish")
    n = a * b
    finish((-(-n // 256),), (256,), (part, out, np.int64(b), np.int32(splits), np.int64(n)))
    return out
