"""2-d max and avg pooling in C (a max pool with its argmax, or its values alone), and the scatter-add along the last dim that a max pool's backward is
(autodiff's rule scatters the output gradient through the pool's indices).

The pools compute exactly what the numpy path computes: taps visited in row-major kernel order,
padding read as -inf (max) or 0 (avg), the first maximum kept (strictly greater replaces it), a NaN
taken as the maximum at its first occurrence (numpy's argmax; the NaN stays), indices flat in the
unpadded plane (``ih * W + iw``, as numpy's index tables), an avg pool's sum divided by the same
float divisor. One (image, channel) plane per OpenMP task.
A 2x2 or 3x3 window (dilation 1) runs one output at a time with branch-free selects (the
row-at-a-time kernel pays per row, which dominates on the small planes of a CNN's later pools).

The scatter copies x row by row and adds each source element at its index: the same sums as numpy's
``bincount`` within float32 rounding (bincount sums in float64; a position hit once is exact).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend import _pool_defaults as P
from ..backend import pool_out_sizes
from . import _ops
from ._c_loops import strided_loop, valid_range

# a later tap of the max pool at output column ow (``@``: its input column): strictly greater, or the
# first NaN over a number, replaces the running max and its tap number (branch-free selects)
_MAX_TAP = """const scalar_t v = xr[@], m = yr[ow];
const int take = v > m || (v != v && m == m);
yr[ow] = take ? v : m;
kr[ow] = take ? k : kr[ow];"""

_TEMPLATE = (
    r"""
/* a small square window (K = 2 or 3, dilation 1: the CNN pools) one output at a time, K a constant
   where it is inlined so the taps unroll: the row-at-a-time kernel below pays per row and per plane,
   which dominates on small planes (an 8x8 plane: 4 outputs a row). The same taps in the same order and
   the same result as that kernel: tap 0 seeds (padding read as -inf), a later valid tap replaces where
   strictly greater or the first NaN. An interior window compares branch-free on plain ``>`` (a
   compiler turns the NaN rule's ``||`` into jumps, mispredicted on every other tap of random data) and
   redoes itself with the NaN rule only where it saw a NaN */
static inline __attribute__((always_inline)) void burn_max_small_SUF(
    const scalar_t* restrict xp, scalar_t* restrict yp, int64_t* restrict ip, const int64_t* p,
    const int K) {
  const int64_t H = p[1], W = p[2], OH = p[3], OW = p[4], SH = p[7], SW = p[8], PH = p[9], PW = p[10];
  for (int64_t oh = 0; oh < OH; oh++) {
    const int64_t h0 = oh * SH - PH;
    const int rows_in = h0 >= 0 && h0 + K <= H;
    for (int64_t ow = 0; ow < OW; ow++) {
      const int64_t w0 = ow * SW - PW;
      scalar_t m;
      int64_t at;
      int exact = !(rows_in && w0 >= 0 && w0 + K <= W);
      if (!exact) {
        const scalar_t* restrict xr = xp + h0 * W + w0;
        int k = 0, nan = xr[0] != xr[0];
        m = xr[0];
        for (int t = 1; t < K * K; t++) {
          const scalar_t v = xr[(t / K) * W + t % K];
          const int gt = v > m, mask = -gt;
          nan |= v != v;
          m = gt ? v : m;
          k = (k & ~mask) | (t & mask);
        }
        at = (h0 + k / K) * W + w0 + k % K;
        exact = nan;
      }
      if (exact) {
        at = h0 * W + w0;
        m = h0 >= 0 && h0 < H && w0 >= 0 && w0 < W ? xp[at] : (scalar_t)-INFINITY;
        for (int t = 1; t < K * K; t++) {
          const int64_t ih = h0 + t / K, iw = w0 + t % K;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
          const scalar_t v = xp[ih * W + iw];
          if (v > m || (v != v && m == m)) {
            m = v;
            at = ih * W + iw;
          }
        }
      }
      yp[oh * OW + ow] = m;
      ip[oh * OW + ow] = at;
    }
  }
}

/* the 2x2 window at stride 2 without padding, every window inside (the commonest pool), one plane: four taps a window,
   branch-free selects that vectorise over the output row; 1 where a NaN was seen (the caller then
   redoes the plane with the NaN rule) */
static inline int burn_max_2x2_SUF(const scalar_t* restrict xp, scalar_t* restrict yp,
                                   int64_t* restrict ip, int64_t W, int64_t OH, int64_t OW) {
  int nan = 0;
  for (int64_t oh = 0; oh < OH; oh++) {
    const int64_t base = 2 * oh * W;
    const scalar_t* restrict r0 = xp + base;
    const scalar_t* restrict r1 = r0 + W;
    scalar_t* restrict yr = yp + oh * OW;
    int64_t* restrict ir = ip + oh * OW;
    for (int64_t ow = 0; ow < OW; ow++) {
      const scalar_t a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
      nan |= (a != a) | (b != b) | (c != c) | (d != d);
      const int64_t at = base + 2 * ow;
      scalar_t m = a;
      int64_t k = at;
      int g = b > m;
      m = g ? b : m;
      k = g ? at + 1 : k;
      g = c > m;
      m = g ? c : m;
      k = g ? at + W : k;
      g = d > m;
      m = g ? d : m;
      k = g ? at + W + 1 : k;
      yr[ow] = m;
      ir[ow] = k;
    }
  }
  return nan;
}

int burn_max_pool2d_SUF(const scalar_t* restrict x, scalar_t* restrict y, int64_t* restrict idx,
                        const int64_t* p) {
  const int64_t planes = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4], KH = p[5], KW = p[6];
  const int64_t SH = p[7], SW = p[8], PH = p[9], PW = p[10], DH = p[11], DW = p[12];
  int failed = 0;
  if (KH == KW && (KH == 2 || KH == 3) && DH == 1 && DW == 1) {
    #pragma omp parallel for schedule(static) if(planes * OH * OW * KH * KW > BURN_PARALLEL_MIN)
    for (int64_t q = 0; q < planes; q++) {
      if (KH == 2 && SH == 2 && SW == 2 && PH == 0 && PW == 0 && 2 * OH <= H && 2 * OW <= W
          && !burn_max_2x2_SUF(x + q * H * W, y + q * OH * OW, idx + q * OH * OW, W, OH, OW)) continue;
      if (KH == 2) burn_max_small_SUF(x + q * H * W, y + q * OH * OW, idx + q * OH * OW, p, 2);
      else burn_max_small_SUF(x + q * H * W, y + q * OH * OW, idx + q * OH * OW, p, 3);
    }
    return 0;
  }
  #pragma omp parallel for schedule(static) if(planes * OH * OW * KH * KW > BURN_PARALLEL_MIN)
  for (int64_t q = 0; q < planes; q++) {
    const scalar_t* restrict xp = x + q * H * W;
    int32_t* restrict kr = (int32_t*)malloc((size_t)(OW > 0 ? OW : 1) * sizeof(int32_t));
    if (!kr) {
      #pragma omp atomic write
      failed = 1;
      continue;
    }
    for (int64_t oh = 0; oh < OH; oh++) {
      scalar_t* restrict yr = y + (q * OH + oh) * OW;
      int64_t* restrict ir = idx + (q * OH + oh) * OW;
      /* taps in row-major order over the whole output row (branch-free selects): the first tap
         seeds it (padding read as -inf), a later one replaces where strictly greater or the first
         NaN; a later tap's padding (-inf) never replaces, so only its valid columns are visited.
         The winning tap's number is kept as int32 in a row of the task's own (same-width selects
         vectorise), then widened to the flat input index */
      for (int64_t kh = 0; kh < KH; kh++) {
        const int64_t ih = oh * SH - PH + kh * DH;
        const int in_h = ih >= 0 && ih < H;
        const scalar_t* restrict xr = xp + (in_h ? ih : 0) * W;
        for (int64_t kw = 0; kw < KW; kw++) {
          const int64_t off = kw * DW - PW;
          const int32_t k = (int32_t)(kh * KW + kw);
          if (k == 0) {
            for (int64_t ow = 0; ow < OW; ow++) {
              const int64_t iw = ow * SW + off;
              yr[ow] = in_h && iw >= 0 && iw < W ? xr[iw] : (scalar_t)-INFINITY;
              kr[ow] = 0;
            }
            continue;
          }
          if (!in_h) continue;
"""
    + valid_range(10, "W", "OW")
    + strided_loop(10, "ow", _MAX_TAP)
    + r"""        }
      }
      for (int64_t ow = 0; ow < OW; ow++) {
        const int64_t k = kr[ow], kh = k / KW, kw = k % KW;
        ir[ow] = (oh * SH - PH + kh * DH) * W + ow * SW - PW + kw * DW;
      }
    }
    free(kr);
  }
  return failed;
}

/* a max pool's values alone (no argmax: ONNX inference, a pool whose indices nobody reads), one
   (image, channel) plane per call of the noinline body (loops inside the OpenMP region do not
   vectorise): per output row, the max of its KH input rows into a row of padded width (padding and
   rows outside the image read -inf), then the max of each window's KW columns of that row. NaN
   propagates as numpy's maximum does */
static __attribute__((noinline)) void burn_max_plane_SUF(const scalar_t* restrict xp, scalar_t* restrict yp,
                                                         scalar_t* restrict row, const int64_t* p) {
  const int64_t H = p[1], W = p[2], OH = p[3], OW = p[4], KH = p[5], KW = p[6];
  const int64_t SH = p[7], SW = p[8], PH = p[9], PW = p[10], DH = p[11], DW = p[12];
  const int64_t WT = (OW - 1) * SW + (KW - 1) * DW + 1;  /* padded columns the windows read */
  const int64_t a = PW < WT ? PW : WT, e0 = PW + W < WT ? PW + W : WT, e = e0 > a ? e0 : a;
  for (int64_t oh = 0; oh < OH; oh++) {
    for (int64_t j = 0; j < WT; j++) row[j] = (scalar_t)-INFINITY;
    for (int64_t kh = 0; kh < KH; kh++) {
      const int64_t ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= H) continue;
      const scalar_t* restrict xr = xp + ih * W - PW;
      for (int64_t j = a; j < e; j++) {
        const scalar_t v = xr[j], m = row[j];
        row[j] = v > m || v != v ? v : m;
      }
    }
    scalar_t* restrict yr = yp + oh * OW;
    for (int64_t ow = 0; ow < OW; ow++) yr[ow] = row[ow * SW];
    for (int64_t kw = 1; kw < KW; kw++) {
      const scalar_t* restrict rk = row + kw * DW;
      if (SW == 1) {
        for (int64_t ow = 0; ow < OW; ow++) {
          const scalar_t v = rk[ow], m = yr[ow];
          yr[ow] = v > m || v != v ? v : m;
        }
      } else {
        for (int64_t ow = 0; ow < OW; ow++) {
          const scalar_t v = rk[ow * SW], m = yr[ow];
          yr[ow] = v > m || v != v ? v : m;
        }
      }
    }
  }
}

int burn_max_pool2d_values_SUF(const scalar_t* restrict x, scalar_t* restrict y, const int64_t* p) {
  const int64_t planes = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4], KH = p[5], KW = p[6];
  const int64_t SW = p[8], DW = p[12];
  const int64_t WT = (OW - 1) * SW + (KW - 1) * DW + 1;
  int failed = 0;
  #pragma omp parallel if(planes * OH * OW * KH * KW > BURN_PARALLEL_MIN)
  {
    scalar_t* row = (scalar_t*)malloc((size_t)WT * sizeof(scalar_t));
    if (!row) {
      #pragma omp atomic write
      failed = 1;
    }
    #pragma omp for schedule(static)
    for (int64_t q = 0; q < planes; q++) {
      if (row) burn_max_plane_SUF(x + q * H * W, y + q * OH * OW, row, p);
    }
    free(row);
  }
  return failed;
}

int burn_avg_pool2d_SUF(const scalar_t* restrict x, const scalar_t* restrict divisor,
                        scalar_t* restrict y, const int64_t* p) {
  const int64_t planes = p[0], H = p[1], W = p[2], OH = p[3], OW = p[4], KH = p[5], KW = p[6];
  const int64_t SH = p[7], SW = p[8], PH = p[9], PW = p[10];
  #pragma omp parallel for schedule(static) if(planes * OH * OW * KH * KW > BURN_PARALLEL_MIN)
  for (int64_t q = 0; q < planes; q++) {
    const scalar_t* restrict xp = x + q * H * W;
    scalar_t* restrict yp = y + q * OH * OW;
    for (int64_t o = 0; o < OH * OW; o++) yp[o] = (scalar_t)0;
    /* taps in row-major order, each added over the whole output (numpy's order of sums) */
    for (int64_t kh = 0; kh < KH; kh++) {
      for (int64_t kw = 0; kw < KW; kw++) {
        const int64_t off = kw - PW;
"""
    + valid_range(8, "W", "OW")
    + r"""        for (int64_t oh = 0; oh < OH; oh++) {
          const int64_t ih = oh * SH - PH + kh;
          if (ih < 0 || ih >= H) continue;
          const scalar_t* restrict xr = xp + ih * W;
          scalar_t* restrict yr = yp + oh * OW;
"""
    + strided_loop(10, "ow", "yr[ow] += xr[@];", "omp simd")
    + r"""        }
      }
    }
    for (int64_t o = 0; o < OH * OW; o++) yp[o] /= divisor[o];
  }
  return 0;
}

/* out = x; out[r, index[r, k]] += src[r, k] (rows of x: M long; of index and src: K long). An index
   outside [0, M) (read unsigned: negatives too) is skipped and makes the call return 1 (the caller
   then takes numpy's path, which raises or wraps): no separate pass over the index to check it */
int burn_scatter_rows_SUF(const scalar_t* restrict x, const int64_t* restrict index,
                          const scalar_t* restrict src, scalar_t* restrict out, const int64_t* p) {
  const int64_t R = p[0], M = p[1], K = p[2];
  int bad = 0;
  #pragma omp parallel for schedule(static) reduction(|:bad) if(R * (M + K) > BURN_PARALLEL_MIN)
  for (int64_t r = 0; r < R; r++) {
    scalar_t* restrict o = out + r * M;
    const scalar_t* restrict xr = x + r * M;
    for (int64_t m = 0; m < M; m++) o[m] = xr[m];
    const int64_t* restrict ir = index + r * K;
    const scalar_t* restrict sr = src + r * K;
    for (int64_t k = 0; k < K; k++) {
      const uint64_t at = (uint64_t)ir[k];
      if (at >= (uint64_t)M) {
        bad = 1;
        continue;
      }
      o[at] += sr[k];
    }
  }
  return bad;
}
"""
)


def source() -> str:
    """The pool family's C source (both float types)."""
    return _ops.header() + "#include <stdlib.h>\n" + _ops.typed(_TEMPLATE)


def _fits(x: Any) -> bool:
    return isinstance(x, np.ndarray) and x.ndim == 4 and x.dtype in _ops.FLOAT_TYPES


def _max_pool_setup(
    x: np.ndarray,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
    force: bool,
    need_window: bool,
) -> tuple[Any, np.ndarray, tuple[int, ...], np.ndarray] | None:
    """What both max pool kernels take: (library, x dense, the output shape, the parameter words), or
    None where the compiled kernel does not take ``x`` (another rank or dtype, too small unless
    ``force``, no compiler; with ``need_window``, no window fitting the input)."""
    if not _fits(x):
        return None
    out = pool_out_sizes(tuple(x.shape[2:]), kernel, stride, padding, dilation, ceil_mode)
    n, c, h, w = x.shape
    if need_window and min(out) <= 0:
        return None  # no window fits: the caller's errors
    if not force and not _ops.wanted("max_pool", n * c * math.prod(out) * math.prod(kernel)):
        return None
    lib = _ops.library("pool", source)
    if lib is None:
        return None
    p = _ops.params(n * c, h, w, *out, *kernel, *stride, *padding, *dilation)
    return lib, _ops.dense(x, x.dtype), (n, c, *out), p


def max_pool2d(
    x: np.ndarray,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
    force: bool = False,
) -> tuple[np.ndarray, np.ndarray] | None:
    """A 2-d max pool of x (N, C, H, W) float32/float64: (values, flat int64 indices in each plane), or
    None where the compiled kernel does not take it (too small, another rank or dtype, no compiler).
    ``force``: any size (tests, benchmarks)."""
    ready = _max_pool_setup(x, kernel, stride, padding, dilation, ceil_mode, force, False)
    if ready is None:
        return None
    lib, xd, shape, p = ready
    y = np.empty(shape, dtype=x.dtype)
    idx = np.empty(shape, dtype=np.int64)
    if y.size:
        fn = _ops.function(lib, "burn_max_pool2d", x.dtype, 4)
        if fn(_ops.ptr(xd), _ops.ptr(y), _ops.ptr(idx), _ops.ptr(p)):
            return None  # a task's scratch row could not be allocated: numpy's path
    return y, idx


def max_pool2d_values(
    x: np.ndarray,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
    force: bool = False,
) -> np.ndarray | None:
    """The values of ``max_pool2d`` alone (no argmax, half the work), the same numbers (the max is
    exact; a NaN in a window gives NaN), or None where the compiled kernel does not take it.
    ``force``: any size (tests, benchmarks)."""
    ready = _max_pool_setup(x, kernel, stride, padding, dilation, ceil_mode, force, True)
    if ready is None:
        return None
    lib, xd, shape, p = ready
    y = np.empty(shape, dtype=x.dtype)
    if y.size:
        fn = _ops.function(lib, "burn_max_pool2d_values", x.dtype, 3)
        if fn(_ops.ptr(xd), _ops.ptr(y), _ops.ptr(p)):
            return None  # a task's scratch row could not be allocated: numpy's path
    return y


def avg_pool2d(
    x: np.ndarray,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    count_include_pad: bool,
    ceil_mode: bool,
    force: bool = False,
) -> np.ndarray | None:
    """A 2-d avg pool of x (N, C, H, W) float32/float64 (the divisor: ``burn.backend``'s rule), or None
    where the compiled kernel does not take it. ``force``: any size (tests, benchmarks)."""
    if not _fits(x):
        return None
    spatial = tuple(x.shape[2:])
    out = pool_out_sizes(spatial, kernel, stride, padding, (1, 1), ceil_mode)
    n, c, h, w = x.shape
    if not force and not _ops.wanted("avg_pool", n * c * math.prod(out) * math.prod(kernel)):
        return None
    lib = _ops.library("pool", source)
    if lib is None:
        return None
    xd = _ops.dense(x, x.dtype)
    y = np.empty((n, c, *out), dtype=x.dtype)
    if y.size:
        divisor = _ops.dense(P.avg_divisor(spatial, kernel, stride, padding, out, count_include_pad), x.dtype)
        p = _ops.params(n * c, h, w, *out, *kernel, *stride, *padding)
        fn = _ops.function(lib, "burn_avg_pool2d", x.dtype, 4)
        fn(_ops.ptr(xd), _ops.ptr(divisor), _ops.ptr(y), _ops.ptr(p))
    return y


def scatter_add_rows(
    x: np.ndarray, index: np.ndarray, src: np.ndarray, force: bool = False
) -> np.ndarray | None:
    """``scatter_add(x, dim=-1, index, src)`` where index and src have x's shape but the last dim and x is
    float32/float64: one compiled pass, or None where the kernel does not take it (other shapes or
    dtypes, too small, no compiler) or an index lies outside ``[0, x.shape[-1])`` (checked as it goes).
    ``force``: any size."""
    if (
        not isinstance(x, np.ndarray)
        or x.dtype not in _ops.FLOAT_TYPES
        or x.ndim == 0
        or index.shape != src.shape
        or index.shape[:-1] != x.shape[:-1]
        or index.dtype.kind not in "iu"
        or src.dtype != x.dtype
    ):
        return None
    if not force and not _ops.wanted("scatter_rows", src.size + x.size):
        return None
    lib = _ops.library("pool", source)
    if lib is None:
        return None
    xd, sd = _ops.dense(x, x.dtype), _ops.dense(src, x.dtype)
    idx = _ops.dense(index, np.dtype(np.int64))
    out = np.empty_like(xd)
    if out.size:
        rows = math.prod(x.shape[:-1])
        p = _ops.params(rows, x.shape[-1], index.shape[-1])
        fn = _ops.function(lib, "burn_scatter_rows", x.dtype, 5)
        if fn(_ops.ptr(xd), _ops.ptr(idx), _ops.ptr(sd), _ops.ptr(out), _ops.ptr(p)):
            return None  # an index out of range: numpy's path says so
    return out
