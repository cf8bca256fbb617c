"""Direct 2-d convolution in C, without im2col, for grouped and depthwise convs (numpy runs them as a
batched matmul of thin per-group matrices over a copied window matrix). groups == 1 stays on numpy's
BLAS-based rows (``_ops.THRESHOLDS`` says what was measured).

Two kernels. ``burn_conv2d`` (groups of fewer than COB output channels, depthwise): one output plane
per OpenMP task; each output row stays in L1 while every (input channel, kh, kw) tap of its group adds
``w * x`` over the row's valid columns (found once per kw, so padding costs nothing; a dense
multiply-add at unit stride, vectorised). ``burn_conv2d_block`` (groups of COB or more output
channels): COB channels x VB columns of a row in vector registers, each tap's VB inputs gathered once
and multiplied by COB weights. The bias seeds the sums, which run in the input's precision in
(ci, kh, kw) order: within float32 rounding of numpy's GEMM.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend import conv_out_sizes_padded
from . import _ops
from ._c_loops import CONV_PARAMS, strided_loop, valid_range

_TEMPLATE = (
    r"""
int burn_conv2d_SUF(const scalar_t* restrict x, const scalar_t* restrict w,
                    const scalar_t* restrict bias, scalar_t* restrict y, const int64_t* p) {
"""
    + CONV_PARAMS
    + r"""  const int64_t CG = C / G, COG = CO / G, planes = N * CO;
  const int64_t work = planes * OH * OW * CG * KH * KW;
  #pragma omp parallel for schedule(dynamic, 1) if(work > BURN_PARALLEL_MIN)
  for (int64_t q = 0; q < planes; q++) {
    const int64_t n = q / CO, co = q % CO, g = co / COG;
    scalar_t* restrict yp = y + q * OH * OW;
    const scalar_t* restrict wp = w + co * CG * KH * KW;
    const scalar_t* restrict xg = x + (n * C + g * CG) * H * W;
    const scalar_t b0 = bias ? bias[co] : (scalar_t)0;
    for (int64_t oh = 0; oh < OH; oh++) {
      scalar_t* restrict yr = yp + oh * OW;
      for (int64_t ow = 0; ow < OW; ow++) yr[ow] = b0;
      for (int64_t ci = 0; ci < CG; ci++) {
        const scalar_t* restrict xc = xg + ci * H * W;
        for (int64_t kh = 0; kh < KH; kh++) {
          const int64_t ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= H) continue;
          const scalar_t* restrict xr = xc + ih * W;
          const scalar_t* restrict wr = wp + (ci * KH + kh) * KW;
          for (int64_t kw = 0; kw < KW; kw++) {
            const int64_t off = kw * DW - PW;  /* input column of output column ow: ow * SW + off */
"""
    + valid_range(12, "W", "OW")
    + "            const scalar_t wv = wr[kw];\n"
    + strided_loop(12, "ow", "yr[ow] += wv * xr[@];", "omp simd")
    + r"""          }
        }
      }
    }
  }
  return 0;
}

/* groups of at least COB output channels: COB channels x VB output columns of one row held in
   registers while every tap adds its weights times VB input values (gathered once, zero outside the
   image); wt: the weights packed (G, blocks, CG, KH, KW, COB), zero past a group's last channel */
int burn_conv2d_block_SUF(const scalar_t* restrict x, const scalar_t* restrict wt,
                          const scalar_t* restrict bias, scalar_t* restrict y, const int64_t* p) {
"""
    + CONV_PARAMS
    + r"""  const int64_t CG = C / G, COG = CO / G, NB = (COG + COB - 1) / COB, taps = CG * KH * KW;
  const int64_t tasks = N * G * NB * OH;
  const int64_t work = N * CO * OH * OW * taps;
  #pragma omp parallel for schedule(static) if(work > BURN_PARALLEL_MIN)
  for (int64_t t = 0; t < tasks; t++) {
    const int64_t oh = t % OH, b = (t / OH) % NB, g = (t / (OH * NB)) % G, n = t / (OH * NB * G);
    const int64_t co0 = g * COG + b * COB, nco = COG - b * COB < COB ? COG - b * COB : COB;
    const scalar_t* restrict xg = x + (n * C + g * CG) * H * W;
    const scalar_t* restrict wb = wt + (g * NB + b) * taps * COB;
    for (int64_t ow0 = 0; ow0 < OW; ow0 += VB) {
      vec_SUF acc[COB];
      for (int j = 0; j < COB; j++) {
        const scalar_t b0 = bias && j < nco ? bias[co0 + j] : (scalar_t)0;
        for (int i = 0; i < VB; i++) acc[j][i] = b0;
      }
      for (int64_t ci = 0; ci < CG; ci++) {
        for (int64_t kh = 0; kh < KH; kh++) {
          const int64_t ih = oh * SH - PH + kh * DH;
          if (ih < 0 || ih >= H) continue;
          const scalar_t* restrict xr = xg + (ci * H + ih) * W;
          const scalar_t* restrict wv = wb + (ci * KH + kh) * KW * COB;
          for (int64_t kw = 0; kw < KW; kw++, wv += COB) {
            const int64_t first = ow0 * SW + kw * DW - PW, last = first + (VB - 1) * SW;
            vec_SUF xv;
            if (SW == 1 && first >= 0 && last < W) {
              memcpy(&xv, xr + first, sizeof xv);
            } else if (first >= 0 && last < W) {
              for (int i = 0; i < VB; i++) xv[i] = xr[first + i * SW];
            } else {
              for (int i = 0; i < VB; i++) {
                const int64_t iw = first + i * SW;
                xv[i] = iw >= 0 && iw < W ? xr[iw] : (scalar_t)0;
              }
            }
            for (int j = 0; j < COB; j++) acc[j] += wv[j] * xv;
          }
        }
      }
      const int64_t nw = OW - ow0 < VB ? OW - ow0 : VB;
      for (int j = 0; j < nco; j++) {
        scalar_t* restrict yr = y + ((n * CO + co0 + j) * OH + oh) * OW + ow0;
        for (int i = 0; i < nw; i++) yr[i] = acc[j][i];
      }
    }
  }
  return 0;
}
"""
)


# the blocked kernel's output channels x columns in registers (8 x 8 floats: 8 of AVX2's 16 vector
# registers), taken where a group has at least COB output channels; fewer: the row kernel
COB = 8
VB = 8
# GCC/Clang vector types (a vector times a scalar broadcasts): VB lanes of each float type
_VECTORS = (
    f"#include <string.h>\n#define COB {COB}\n#define VB {VB}\n"
    "typedef float vec_f32 __attribute__((vector_size(VB * sizeof(float))));\n"
    "typedef double vec_f64 __attribute__((vector_size(VB * sizeof(double))));\n"
)


def source() -> str:
    """The conv family's C source (both float types)."""
    return _ops.header() + _VECTORS + _ops.typed(_TEMPLATE)


def conv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    force: bool = False,
) -> np.ndarray | None:
    """``conv(x, weight, bias)`` (x (N, C, H, W), weight (C_out, C/groups, KH, KW), float32 or float64) by
    the compiled direct kernel, or None where it does not take this conv (groups == 1, a group's window
    deeper than ``GROUPED_MAX_DEPTH`` unless depthwise, too small by ``THRESHOLDS``, another dtype, no
    compiler): then the caller's numpy path runs. ``force``: take
    any conv, groups == 1 and tiny ones too (tests, benchmarks)."""
    if x.ndim != 4 or x.dtype not in _ops.FLOAT_TYPES or weight.dtype != x.dtype:
        return None
    if bias is not None and bias.dtype != x.dtype:
        return None
    out = tuple(conv_out_sizes_padded(x.shape[2:], weight.shape[2:], stride, padding, dilation))
    macs = x.shape[0] * math.prod(weight.shape) * math.prod(out)
    depth = math.prod(weight.shape[1:])  # a group's window: C_in/groups * KH * KW
    shallow = weight.shape[1] == 1 or depth <= _ops.GROUPED_MAX_DEPTH
    if not force and (groups == 1 or not shallow or not _ops.wanted("conv_grouped", macs)):
        return None
    lib = _ops.library("conv", source)
    if lib is None:
        return None
    xd, wd = _ops.dense(x, x.dtype), _ops.dense(weight, x.dtype)
    bd = None if bias is None else _ops.dense(bias, x.dtype)
    n, c, h, w = xd.shape
    co, _, kh, kw = wd.shape
    y = np.empty((n, co, *out), dtype=x.dtype)
    if y.size == 0:
        return y
    p = _ops.params(n, c, h, w, co, kh, kw, *out, *stride, *padding, *dilation, groups)
    cog = co // groups
    if cog >= COB:
        wd = _packed(wd, groups)
        fn: Any = _ops.function(lib, "burn_conv2d_block", x.dtype, 5)
    else:
        fn = _ops.function(lib, "burn_conv2d", x.dtype, 5)
    fn(_ops.ptr(xd), _ops.ptr(wd), _ops.ptr(bd), _ops.ptr(y), _ops.ptr(p))
    return y


def _packed(w: np.ndarray, groups: int) -> np.ndarray:
    """(C_out, CG, KH, KW) as (G, blocks, CG, KH, KW, COB): each block's COB weights of one tap side
    by side, zero past a group's last channel (the blocked kernel's layout)."""
    co, cg, kh, kw = w.shape
    cog = co // groups
    nb = -(-cog // COB)
    padded = np.zeros((groups, nb * COB, cg, kh, kw), dtype=w.dtype)
    padded[:, :cog] = w.reshape(groups, cog, cg, kh, kw)
    return np.ascontiguousarray(padded.reshape(groups, nb, COB, cg, kh, kw).transpose(0, 1, 3, 4, 5, 2))
