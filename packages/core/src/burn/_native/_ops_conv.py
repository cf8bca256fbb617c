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

/* depthwise (C == CO == G): each (image, channel) plane is copied once into a zero-bordered buffer
   split into SW column phases (phase ph holds padded columns ph, ph + SW, ...), so every tap of an
   output row is one contiguous run and the row's loop has no bounds; a 3x3 kernel's nine taps are
   summed in one pass per row (one store), other kernels tap by tap over the row. clamp (lo, hi) or
   NULL: the activation on the sum (ReLU: (0, inf); ReLU6: (0, 6)), NaN kept as numpy's clip keeps it.
   The plane's loops live in a noinline body outside the OpenMP region (inside it they do not
   vectorise) */
static __attribute__((noinline)) void burn_dw_plane_SUF(
    const scalar_t* restrict xp, const scalar_t* restrict wc, scalar_t b0, const scalar_t* restrict clamp,
    scalar_t* restrict yp, scalar_t* restrict buf, const int64_t* p) {
  const int64_t H = p[2], W = p[3], KH = p[4], KW = p[5];
  const int64_t OH = p[6], OW = p[7], SH = p[8], SW = p[9], PH = p[10], PW = p[11], DH = p[12], DW = p[13];
  const int64_t HP = (OH - 1) * SH + (KH - 1) * DH + 1, WQ = OW + ((KW - 1) * DW) / SW;
  for (int64_t r = 0; r < HP; r++) {
    const int64_t ih = r - PH;
    for (int64_t ph = 0; ph < SW; ph++) {
      scalar_t* restrict dst = buf + (r * SW + ph) * WQ;
      if (ih < 0 || ih >= H) {
        for (int64_t j = 0; j < WQ; j++) dst[j] = (scalar_t)0;
        continue;
      }
      const scalar_t* restrict xr = xp + ih * W;
      /* phase column j holds input column j * SW + ph - PW: inside the image for j in [a, e) */
      const int64_t first = PW - ph, last = W - 1 + PW - ph;
      int64_t a = first <= 0 ? 0 : (first + SW - 1) / SW, e = last < 0 ? 0 : last / SW + 1;
      if (a > WQ) a = WQ;
      if (e > WQ) e = WQ;
      if (e < a) e = a;
      for (int64_t j = 0; j < a; j++) dst[j] = (scalar_t)0;
      if (SW == 1) {
        for (int64_t j = a; j < e; j++) dst[j] = xr[j - PW];
      } else {
        for (int64_t j = a; j < e; j++) dst[j] = xr[j * SW + ph - PW];
      }
      for (int64_t j = e; j < WQ; j++) dst[j] = (scalar_t)0;
    }
  }
  const int has_clamp = clamp != NULL;
  const scalar_t lo = has_clamp ? clamp[0] : (scalar_t)-INFINITY, hi = has_clamp ? clamp[1] : (scalar_t)INFINITY;
  if (KH == 3 && KW == 3 && SH == 1 && SW == 1 && OW < DW_WIDE_MAX) {
    /* a small plane at unit stride: every output row on the buffer's width (WQ columns, the last
       (KW - 1) * DW of each junk) in one loop over the whole plane, so short rows still fill vectors;
       the valid columns copied out after */
    scalar_t* restrict wide = buf + HP * WQ;
    const int64_t n = (OH - 1) * WQ + OW, r1 = DH * WQ, r2 = 2 * DH * WQ;
    const scalar_t w0 = wc[0], w1 = wc[1], w2 = wc[2], w3 = wc[3], w4 = wc[4];
    const scalar_t w5 = wc[5], w6 = wc[6], w7 = wc[7], w8 = wc[8];
    const scalar_t* restrict t0 = buf;
    const scalar_t* restrict t1 = buf + DW;
    const scalar_t* restrict t2 = buf + 2 * DW;
    for (int64_t i = 0; i < n; i++) {
      scalar_t s = b0 + w0 * t0[i] + w1 * t1[i] + w2 * t2[i] + w3 * t0[i + r1] + w4 * t1[i + r1]
                   + w5 * t2[i + r1] + w6 * t0[i + r2] + w7 * t1[i + r2] + w8 * t2[i + r2];
      s = s < lo ? lo : s;
      wide[i] = s > hi ? hi : s;
    }
    for (int64_t oh = 0; oh < OH; oh++) {
      for (int64_t ow = 0; ow < OW; ow++) yp[oh * OW + ow] = wide[oh * WQ + ow];
    }
    return;
  }
  for (int64_t oh = 0; oh < OH; oh++) {
    scalar_t* restrict yr = yp + oh * OW;
    if (KH == 3 && KW == 3) {
      const scalar_t* restrict t0 = buf + ((oh * SH) * SW) * WQ;
      const scalar_t* restrict t1 = buf + ((oh * SH) * SW + DW % SW) * WQ + DW / SW;
      const scalar_t* restrict t2 = buf + ((oh * SH) * SW + (2 * DW) % SW) * WQ + (2 * DW) / SW;
      const int64_t down = DH * SW * WQ;  /* the next kernel row */
      const scalar_t w0 = wc[0], w1 = wc[1], w2 = wc[2], w3 = wc[3], w4 = wc[4];
      const scalar_t w5 = wc[5], w6 = wc[6], w7 = wc[7], w8 = wc[8];
      if (has_clamp) {
        for (int64_t ow = 0; ow < OW; ow++) {
          scalar_t s = b0 + w0 * t0[ow] + w1 * t1[ow] + w2 * t2[ow] + w3 * t0[ow + down]
                       + w4 * t1[ow + down] + w5 * t2[ow + down] + w6 * t0[ow + 2 * down]
                       + w7 * t1[ow + 2 * down] + w8 * t2[ow + 2 * down];
          s = s < lo ? lo : s;
          yr[ow] = s > hi ? hi : s;
        }
      } else {
        for (int64_t ow = 0; ow < OW; ow++) {
          yr[ow] = b0 + w0 * t0[ow] + w1 * t1[ow] + w2 * t2[ow] + w3 * t0[ow + down]
                   + w4 * t1[ow + down] + w5 * t2[ow + down] + w6 * t0[ow + 2 * down]
                   + w7 * t1[ow + 2 * down] + w8 * t2[ow + 2 * down];
        }
      }
      continue;
    }
    for (int64_t ow = 0; ow < OW; ow++) yr[ow] = b0;
    for (int64_t kh = 0; kh < KH; kh++) {
      for (int64_t kw = 0; kw < KW; kw++) {
        const int64_t off = kw * DW;
        const scalar_t* restrict tr = buf + ((oh * SH + kh * DH) * SW + off % SW) * WQ + off / SW;
        const scalar_t wv = wc[kh * KW + kw];
        for (int64_t ow = 0; ow < OW; ow++) yr[ow] += wv * tr[ow];
      }
    }
    if (has_clamp) {
      for (int64_t ow = 0; ow < OW; ow++) {
        const scalar_t s = yr[ow] < lo ? lo : yr[ow];
        yr[ow] = s > hi ? hi : s;
      }
    }
  }
}

int burn_dwconv2d_SUF(const scalar_t* restrict x, const scalar_t* restrict w,
                      const scalar_t* restrict bias, const scalar_t* restrict clamp,
                      scalar_t* restrict y, const int64_t* p) {
  const int64_t planes = p[0] * p[1], C = p[1], H = p[2], W = p[3], KH = p[4], KW = p[5];
  const int64_t OH = p[6], OW = p[7], SH = p[8], SW = p[9], DH = p[12], DW = p[13];
  const int64_t HP = (OH - 1) * SH + (KH - 1) * DH + 1, WQ = OW + ((KW - 1) * DW) / SW;
  int failed = 0;
  #pragma omp parallel if(planes * OH * OW * KH * KW > BURN_PARALLEL_MIN)
  {
    scalar_t* buf = (scalar_t*)malloc((size_t)(HP * SW * WQ + OH * WQ) * sizeof(scalar_t));
    if (!buf) {
      #pragma omp atomic write
      failed = 1;
    }
    #pragma omp for schedule(static)
    for (int64_t q = 0; q < planes; q++) {
      if (!buf) continue;
      const int64_t c = q % C;
      burn_dw_plane_SUF(x + q * H * W, w + c * KH * KW, bias ? bias[c] : (scalar_t)0, clamp,
                        y + q * OH * OW, buf, p);
    }
    free(buf);
  }
  return failed;
}
"""
)


# the depthwise kernel's outputs narrower than this are computed over whole planes on the padded width
# (rows of 7 or 4 outputs fill no 8-wide vector alone): one thread, (1, 960, 7, 7) 3x3: 0.40 -> 0.20 ms
DW_WIDE_MAX = 16
# the blocked kernel's output channels x columns in registers (8 x 8 floats: 8 of AVX2's 16 vector
# registers), taken where a group has at least COB output channels; fewer: the row kernel
COB = 8
VB = 8
# GCC/Clang vector types (a vector times a scalar broadcasts): VB lanes of each float type
_VECTORS = (
    f"#include <string.h>\n#include <stdlib.h>\n#define DW_WIDE_MAX {DW_WIDE_MAX}\n#define COB {COB}\n#define VB {VB}\n"
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
    clamp: tuple[float, float] | None = None,
) -> np.ndarray | None:
    """``conv(x, weight, bias)`` (x (N, C, H, W), weight (C_out, C/groups, KH, KW), float32 or float64) by
    the compiled direct kernel, or None where it does not take this conv (groups == 1, a group's window
    deeper than ``GROUPED_MAX_DEPTH`` unless depthwise, too small by ``THRESHOLDS``, another dtype, no
    compiler): then the caller's numpy path runs. ``force``: take
    any conv, groups == 1 and tiny ones too (tests, benchmarks). ``clamp`` (lo, hi): the result clipped
    to [lo, hi] as numpy's ``clip`` does (a ReLU: (0, inf)), inside the depthwise kernel, in place
    after the others."""
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
    if wd.shape[1] == 1 and co == groups:  # depthwise, one output channel per input channel
        p = _ops.params(n, c, h, w, kh, kw, *out, *stride, *padding, *dilation)
        lim = None if clamp is None else np.array(clamp, dtype=x.dtype)
        dw = _ops.function(lib, "burn_dwconv2d", x.dtype, 6)
        if not dw(_ops.ptr(xd), _ops.ptr(wd), _ops.ptr(bd), _ops.ptr(lim), _ops.ptr(y), _ops.ptr(p)):
            return y
        return None  # a task's scratch plane could not be allocated: numpy's path
    p = _ops.params(n, c, h, w, co, kh, kw, *out, *stride, *padding, *dilation, groups)
    cog = co // groups
    if cog >= COB:
        wd = _packed(wd, groups)
        fn: Any = _ops.function(lib, "burn_conv2d_block", x.dtype, 5)
    else:
        fn = _ops.function(lib, "burn_conv2d", x.dtype, 5)
    fn(_ops.ptr(xd), _ops.ptr(wd), _ops.ptr(bd), _ops.ptr(y), _ops.ptr(p))
    if clamp is not None:
        np.clip(y, clamp[0], clamp[1], out=y)
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
