"""A grouped/depthwise 2-d conv's backward in C: the input gradient (a conv_transpose of the output
gradient, which autodiff's conv rule calls) and the weight gradient (``conv_weight_grad``). numpy runs
both as per-group batched matmuls over copied window matrices plus a col2im; for a depthwise conv they
cost about ten times the forward (a (8, 96, 56, 56) 3x3: forward 38 ms, each backward half 320-340 ms
on one thread), so a depthwise training step spends most of its time there.

``burn_conv_transpose2d``: one output plane (image, output channel) per OpenMP task, gathered: output
row ``oy`` takes input row ``iy = (oy + PH - kh * DH) / SH`` where that divides, and each kw adds its
weight times the input row at columns ``ox = ix * SW + kw * DW - PW`` (a dense multiply-add at unit
stride). ``burn_conv_weight_grad2d``: one output channel per task; each (ci, kh, kw) tap is the dot
product of the output gradient with the tap's shifted input over every image and row, rows summed in
the input's precision and added into a double total.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend import conv_transpose_out_sizes
from . import _ops
from ._c_loops import CONV_PARAMS, strided_loop, valid_range

_TEMPLATE = (
    r"""
int burn_conv_transpose2d_SUF(const scalar_t* restrict x, const scalar_t* restrict w,
                              const scalar_t* restrict bias, scalar_t* restrict y, const int64_t* p) {
  /* x (N, C, H, W), w (C, COG, KH, KW), y (N, CO, OH, OW), CO = G * COG */
"""
    + CONV_PARAMS
    + r"""  const int64_t CG = C / G, COG = CO / G, planes = N * CO;
  #pragma omp parallel for schedule(dynamic, 1) if(planes * H * W * CG * KH * KW > BURN_PARALLEL_MIN)
  for (int64_t q = 0; q < planes; q++) {
    const int64_t n = q / CO, co = q % CO, g = co / COG, cj = co % COG;
    scalar_t* restrict yp = y + q * OH * OW;
    const scalar_t b0 = bias ? bias[co] : (scalar_t)0;
    for (int64_t oy = 0; oy < OH; oy++) {
      scalar_t* restrict yr = yp + oy * OW;
      for (int64_t ox = 0; ox < OW; ox++) yr[ox] = b0;
      for (int64_t ci = 0; ci < CG; ci++) {
        const int64_t c = g * CG + ci;
        const scalar_t* restrict xc = x + (n * C + c) * H * W;
        const scalar_t* restrict wc = w + (c * COG + cj) * KH * KW;
        for (int64_t kh = 0; kh < KH; kh++) {
          const int64_t num = oy + PH - kh * DH;
          if (num < 0 || num % SH) continue;
          const int64_t iy = num / SH;
          if (iy >= H) continue;
          const scalar_t* restrict xr = xc + iy * W;
          for (int64_t kw = 0; kw < KW; kw++) {
            const int64_t off = kw * DW - PW;  /* ox = ix * SW + off */
"""
    + valid_range(12, "OW", "W")
    + "            const scalar_t wv = wc[kh * KW + kw];\n"
    + strided_loop(12, "ix", "yr[@] += wv * xr[ix];", "omp simd")
    + r"""          }
        }
      }
    }
  }
  return 0;
}

int burn_conv_weight_grad2d_SUF(const scalar_t* restrict x, const scalar_t* restrict gy,
                                scalar_t* restrict gw, const int64_t* p) {
  /* x (N, C, H, W), gy (N, CO, OH, OW), gw (CO, CG, KH, KW) */
"""
    + CONV_PARAMS
    + r"""  const int64_t CG = C / G, COG = CO / G;
  #pragma omp parallel for schedule(dynamic, 1) if(N * CO * OH * OW * CG * KH * KW > BURN_PARALLEL_MIN)
  for (int64_t co = 0; co < CO; co++) {
    const int64_t g = co / COG;
    for (int64_t ci = 0; ci < CG; ci++) {
      for (int64_t kh = 0; kh < KH; kh++) {
        for (int64_t kw = 0; kw < KW; kw++) {
          const int64_t off = kw * DW - PW;
"""
    + valid_range(10, "W", "OW")
    + r"""          double total = 0;
          for (int64_t n = 0; n < N; n++) {
            const scalar_t* restrict xc = x + (n * C + g * CG + ci) * H * W;
            const scalar_t* restrict gp = gy + (n * CO + co) * OH * OW;
            for (int64_t oh = 0; oh < OH; oh++) {
              const int64_t ih = oh * SH - PH + kh * DH;
              if (ih < 0 || ih >= H) continue;
              const scalar_t* restrict xr = xc + ih * W;
              const scalar_t* restrict gr = gp + oh * OW;
              scalar_t s = 0;
"""
    + strided_loop(14, "ow", "s += gr[ow] * xr[@];", "omp simd reduction(+:s)")
    + r"""              total += s;
            }
          }
          gw[((co * CG + ci) * KH + kh) * KW + kw] = (scalar_t)total;
        }
      }
    }
  }
  return 0;
}
"""
)


def source() -> str:
    """The conv backward family's C source (both float types)."""
    return _ops.header() + _ops.typed(_TEMPLATE)


def _takes(
    x: Any, w_shape: tuple[int, ...], depth_channels: int, groups: int, macs: int, force: bool
) -> bool:
    """Whether a grouped conv's backward half runs compiled: the forward's rule (``_ops_conv``)."""
    if not isinstance(x, np.ndarray) or x.ndim != 4 or x.dtype not in _ops.FLOAT_TYPES:
        return False
    if force:
        return True
    shallow = depth_channels == 1 or depth_channels * w_shape[-2] * w_shape[-1] <= _ops.GROUPED_MAX_DEPTH
    return groups > 1 and shallow and _ops.wanted("conv_grouped", macs)


def conv_transpose2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    output_padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    force: bool = False,
) -> np.ndarray | None:
    """``conv_transpose(x, weight, bias)`` (x (N, C, H, W), weight (C, C_out/groups, KH, KW)) by the
    compiled gather kernel, or None where it does not take it (groups == 1, deep groups, small, another
    dtype, no compiler). ``force``: any conv (tests, benchmarks)."""
    if weight.dtype != x.dtype or (bias is not None and bias.dtype != x.dtype):
        return None
    c, cog = weight.shape[0], weight.shape[1]
    out = tuple(
        conv_transpose_out_sizes(
            tuple(x.shape[2:]), tuple(weight.shape[2:]), stride, padding, output_padding, dilation
        )
    )
    macs = x.shape[0] * math.prod(weight.shape) * math.prod(x.shape[2:])
    # the gather reads C/groups input channels per output element: the forward's group depth
    if not _takes(x, weight.shape, c // groups, groups, macs, force):
        return None
    lib = _ops.library("conv_grad", source)
    if lib is None:
        return None
    xd, wd = _ops.dense(x, x.dtype), _ops.dense(weight, x.dtype)
    bd = None if bias is None else _ops.dense(bias, x.dtype)
    n, _, h, w = xd.shape
    y = np.empty((n, cog * groups, *out), dtype=x.dtype)
    if y.size:
        p = _ops.params(
            n, c, h, w, cog * groups, *weight.shape[2:], *out, *stride, *padding, *dilation, groups
        )
        fn = _ops.function(lib, "burn_conv_transpose2d", x.dtype, 5)
        fn(_ops.ptr(xd), _ops.ptr(wd), _ops.ptr(bd), _ops.ptr(y), _ops.ptr(p))
    return y


def conv_weight_grad2d(
    x: np.ndarray,
    g: np.ndarray,
    wshape: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    force: bool = False,
) -> np.ndarray | None:
    """d loss / d weight (``wshape``: (C_out, C/groups, KH, KW)) of a 2-d conv of x (N, C, H, W) with
    output gradient g (N, C_out, OH, OW), compiled, or None where the kernel does not take it."""
    if not isinstance(g, np.ndarray) or g.dtype != getattr(x, "dtype", None) or len(wshape) != 4:
        return None
    macs = g.shape[0] * math.prod(wshape) * math.prod(g.shape[2:])
    if not _takes(x, wshape, wshape[1], groups, macs, force):
        return None
    lib = _ops.library("conv_grad", source)
    if lib is None:
        return None
    xd, gd = _ops.dense(x, x.dtype), _ops.dense(g, x.dtype)
    n, c, h, w = xd.shape
    gw = np.empty(wshape, dtype=x.dtype)
    if gw.size:
        p = _ops.params(
            n, c, h, w, wshape[0], *wshape[2:], *g.shape[2:], *stride, *padding, *dilation, groups
        )
        fn = _ops.function(lib, "burn_conv_weight_grad2d", x.dtype, 4)
        fn(_ops.ptr(xd), _ops.ptr(gd), _ops.ptr(gw), _ops.ptr(p))
    return gw
