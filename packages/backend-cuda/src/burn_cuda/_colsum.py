"""Column sums: ``out[a, j] = scale * sum_r x[a, r, j]`` for a C-contiguous (a, r, b) float tensor (a
bias gradient's sum over the batch rows, a BatchNorm's sums over N after the trailing (H, W) run).

cuBLAS's gemv with a vector of ones (the path before this one) reaches about a quarter of the memory
bandwidth on these shapes (4096 x 768 fp32: ~23 us on an H200); this kernel reads at close to full
speed. A block of 32 x 8 threads covers 32 * VEC columns (VEC = 4 for float32 rows of a multiple of 4:
one 16-byte load per thread and row; else 1): each thread sums its columns over every 8th row of the
block's row range, ``UNROLL`` rows' loads in flight at a time (a warp reads 512 contiguous bytes per
row), then the 8 partial sums meet in shared memory. Where the column tiles alone do not fill the GPU,
the rows are split over ``splits`` blocks whose partials (float32) take a second, small pass (8 row
lanes per column again, so its loads are in flight together, not one after another): always in
the same order, so the result is deterministic. float16 accumulates in float32; float64 in double.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._rawkernels import CVT, compiled, io

LANES, ROWS = 32, 8  # the block: 32 column lanes, 8 row lanes
UNROLL = 4  # rows each thread loads before adding them (independent loads in flight)
_MIN_ROWS_PER_SPLIT = 64  # fewer rows per block than this and the second pass costs more than it saves
_TARGET_BLOCKS = 1024  # enough blocks in flight to keep every SM's loads busy (132 SMs on an H200)


def _vec(dt: np.dtype, b: int) -> int:
    """Columns per thread: 4 (one 16-byte load) for float32 rows whose length keeps 16-byte alignment."""
    return 4 if dt == np.float32 and b % 4 == 0 else 1


def _source(dt: np.dtype, partial: bool, vec: int) -> str:
    acc = "double" if dt == np.float64 else "float"
    out_dt = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    head = CVT + io(dt, "x") + io(out_dt if partial else dt, "o") + f"typedef {acc} ACC;\n"
    if vec == 4:  # float32 only
        load = "const float4 v = *(const float4*)(base + (row + u * ROWS) * b); "
        load += "acc[0] += v.x; acc[1] += v.y; acc[2] += v.z; acc[3] += v.w;"
    else:
        load = "acc[0] += x_load(base, (row + u * ROWS) * b);"
    head += f"#define VEC {vec}\n#define ROWS {ROWS}\n#define LANES {LANES}\n#define UNROLL {UNROLL}\n"
    return (
        head
        + f"""extern "C" __global__ void __launch_bounds__(LANES * ROWS) burn_colsum(
    const x_t* x, o_t* out, long long r, long long b, long long per, int splits, ACC scale) {{
  __shared__ ACC part[ROWS][LANES * VEC + 1];
  const long long col = ((long long)blockIdx.x * LANES + threadIdx.x) * VEC;
  const int split = blockIdx.y;
  const long long a = blockIdx.z;
  const long long r0 = (long long)split * per;
  const long long r1 = min(r, r0 + per);
  ACC acc[VEC];
  for (int k = 0; k < VEC; ++k) acc[k] = (ACC)0;
  if (col < b) {{
    const x_t* base = x + a * r * b + col;
    long long row = r0 + threadIdx.y;
    for (; row + (UNROLL - 1) * ROWS < r1; row += UNROLL * ROWS) {{
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {{ {load} }}
    }}
    for (; row < r1; row += ROWS) {{
      const int u = 0;
      {load}
    }}
  }}
  for (int k = 0; k < VEC; ++k) part[threadIdx.y][threadIdx.x * VEC + k] = acc[k];
  __syncthreads();
  const int t = threadIdx.y * LANES + threadIdx.x;
  for (int c = t; c < LANES * VEC; c += LANES * ROWS) {{
    const long long j = (long long)blockIdx.x * LANES * VEC + c;
    if (j >= b) continue;
    ACC s = (ACC)0;
    for (int k = 0; k < ROWS; ++k) s += part[k][c];
    o_store(out, (a * splits + split) * b + j, s * scale);
  }}
}}
"""
    )


def _finish_source(dt: np.dtype) -> str:
    acc = "double" if dt == np.float64 else "float"
    part_dt = np.dtype(np.float64) if dt == np.float64 else np.dtype(np.float32)
    head = CVT + io(part_dt, "p") + io(dt, "o") + f"typedef {acc} ACC;\n"
    head += f"#define ROWS {ROWS}\n#define LANES {LANES}\n"
    # 32 columns per block; the 8 row lanes each sum every 8th split (independent loads), then meet
    return (
        head
        + """extern "C" __global__ void __launch_bounds__(LANES * ROWS) burn_colsum_finish(
    const p_t* part, o_t* out, long long b, int splits) {
  __shared__ ACC sum[ROWS][LANES + 1];
  const long long col = (long long)blockIdx.x * LANES + threadIdx.x;
  const long long a = blockIdx.y;
  ACC acc = (ACC)0;
  if (col < b) {
    const p_t* p = part + a * splits * b + col;
#pragma unroll 4
    for (int k = threadIdx.y; k < splits; k += ROWS) acc += p_load(p, (long long)k * b);
  }
  sum[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < b) {
    ACC s = (ACC)0;
    for (int k = 0; k < ROWS; ++k) s += sum[k][threadIdx.x];
    o_store(out, a * b + col, s);
  }
}
"""
    )


def splits_for(a: int, r: int, b: int, vec: int = 1) -> int:
    """How many blocks share one column tile's rows: enough blocks for the GPU, at least
    ``_MIN_ROWS_PER_SPLIT`` rows each."""
    tiles = -(-b // (LANES * vec)) * a
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
    vec = _vec(dt, b)
    splits = splits_for(a, r, b, vec)
    per = -(-r // splits)
    splits = -(-r // per)  # no empty split
    acc = np.float64 if dt == np.float64 else np.float32
    grid = (-(-b // (LANES * vec)), splits, a)
    block = (LANES, ROWS, 1)
    out = cp.empty(out_shape, dtype=dt)
    if splits == 1:
        kern = compiled(
            ("colsum", dt.str, False, vec), _source(dt, False, vec), "burn_colsum", f"colsum_{dt.name}"
        )
        kern(grid, block, (x, out, np.int64(r), np.int64(b), np.int64(per), np.int32(1), acc(scale)))
        return out
    part = cp.empty((a, splits, b), dtype=acc)
    kern = compiled(("colsum", dt.str, True, vec), _source(dt, True, vec), "burn_colsum", f"colsum_{dt.name}")
    kern(grid, block, (x, part, np.int64(r), np.int64(b), np.int64(per), np.int32(splits), acc(scale)))
    finish = compiled(("colsum_finish", dt.str), _finish_source(dt), "burn_colsum_finish")
    finish((-(-b // LANES), a), (LANES, ROWS), (part, out, np.int64(b), np.int32(splits)))
    return out
