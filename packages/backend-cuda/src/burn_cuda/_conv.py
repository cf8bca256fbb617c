"""Convolution on the GPU: im2col + GEMM (cuBLAS through the backend's matmul, so the matmul precision
applies), transposed convolution as GEMM + col2im, and the tuned conv family (``burn.autotune``).

Convolution has two strategies, tuned per shape for 1-d and 2-d (``CONV``): ``columns`` gathers each
image's columns as (C*K, H_out*W_out) with one generated kernel (coalesced along the output row) and
multiplies W (C_out, C*K) into them as one batched GEMM whose result is already NCHW (best for large
planes; a 1x1 convolution with stride 1 and no padding multiplies W into the input itself); ``rows``
gathers a strided window view into one (N*L, C*K) matrix for one large GEMM, then transposes to NCHW
(any rank; best when the planes are small and the batch and channels large). ``rows`` is the
reference (the older, general path), ``columns`` the default when tuning is off. Small convolutions
are not tuned: they run ``columns`` for planes of 1024 outputs or more, else ``rows``.

Where the ``cudnn`` extra is installed (``_cudnn``: CuPy 14 has no cuDNN bindings of its own), cuDNN
runs every float32/float16 convolution it has an engine for before any of this: the forward, the
transposed convolution (cuDNN's input gradient) and the weight gradient (``conv_weight_grad``), all as
fast as PyTorch's on the H200 at ResNet shapes; the kernels here run the rest.
"""

from __future__ import annotations

import itertools
import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from burn.autotune import Candidate, Family, bucket
from burn.backend import Backend, conv_out_sizes_padded, conv_transpose_out_sizes

from . import _cudnn
from ._pool import height_one, windows
from ._tuning import Ints, close, tuner
from ._types import Prim

_TUNE_MIN_FLOPS = 1 << 24  # below this a conv is not tuned: tuning would cost more than it saves

_IM2COL_SOURCE = r"""
extern "C" __global__ void im2col2d(const T* x, T* cols, int c, int h, int w, int kh, int kw, int oh,
        int ow, int sh, int sw, int ph, int pw, int dh, int dw, int c_per) {
    // cols[n, ci, ky, kx, p] = x[n, ci, oy*sh - ph + ky*dh, ox*sw - pw + kx*dw] (0 outside), p = oy*ow + ox.
    // A thread owns one output position p of one image (blockIdx.z) and walks channels
    // [blockIdx.y * c_per, +c_per) and the kernel window: no division in the loop, and each store is
    // coalesced across the threads of a block (consecutive p).
    int length = oh * ow;
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= length) return;
    int oy = p / ow, ox = p - oy * ow;
    int c0 = blockIdx.y * c_per, c1 = min(c, c0 + c_per);
    const T* xn = x + (long long)blockIdx.z * c * h * w;
    T* out = cols + (long long)blockIdx.z * c * kh * kw * length + p;
    int iy0 = oy * sh - ph, ix0 = ox * sw - pw;
    for (int ci = c0; ci < c1; ++ci) {
        const T* xc = xn + (long long)ci * h * w;
        T* oc = out + (long long)ci * kh * kw * length;
        for (int ky = 0; ky < kh; ++ky) {
            int iy = iy0 + ky * dh;
            bool inside = iy >= 0 && iy < h;
            for (int kx = 0; kx < kw; ++kx) {
                int ix = ix0 + kx * dw;
                oc[(long long)(ky * kw + kx) * length] =
                    (inside && ix >= 0 && ix < w) ? xc[(long long)iy * w + ix] : (T)0;
            }
        }
    }
}
"""
_C_PER = 8  # channels a gather thread walks (blocks along y cover the rest)
_BITS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_im2col_kernels: dict[int, object] = {}
_WORKSPACE = 1 << 29  # bytes of columns gathered at once (larger batches go in chunks of images)


def _im2col_kernel(cp: ModuleType, itemsize: int) -> object:
    """The gather kernel for elements of ``itemsize`` bytes (copied as bits: any dtype)."""
    kernel = _im2col_kernels.get(itemsize)
    if kernel is None:
        src = f"typedef {_BITS[itemsize]} T;\n" + _IM2COL_SOURCE
        kernel = _im2col_kernels[itemsize] = cp.RawKernel(src, "im2col2d")
    return kernel


def _out_len(x: Prim, weight: Prim, stride: Ints, padding: Ints, dilation: Ints) -> int:
    """A convolution's output positions per image and channel."""
    return math.prod(conv_out_sizes_padded(x.shape[2:], weight.shape[2:], stride, padding, dilation))


def _plus_bias(out: Prim, bias: Prim | None) -> Prim:
    """out (N, C_out, *spatial) plus the bias (C_out) broadcast over the spatial dims."""
    if bias is None:
        return out
    return out + bias.reshape((1, out.shape[1]) + (1,) * (out.ndim - 2))


def _gather_fits(x: Prim, stride: Ints, out_len: int) -> bool:
    """Whether the columns gather takes a conv of ``x`` with ``out_len`` outputs per plane: 1-d/2-d,
    an element size it copies, and a plane and channel count within its int positions and grid."""
    return (
        len(stride) <= 2
        and x.dtype.itemsize in _BITS
        and out_len < 1 << 31
        and -(-x.shape[1] // _C_PER) <= 65535
    )


def _columns_fit(
    b: Any, x: Prim, weight: Prim, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int
) -> bool:
    """Whether ``_conv_columns`` takes this conv (``_gather_fits``)."""
    return _gather_fits(x, stride, _out_len(x, weight, stride, padding, dilation))


def _gather_columns(
    cp: ModuleType, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, out_sp: Ints
) -> Prim:
    """The columns (N, C * kh * kw, oh * ow) of a C-contiguous x (N, C, H, W), channel-major then
    kernel row-major, by one gather kernel (``_gather_fits`` and N <= 65535: the grid's z)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    length = out_sp[0] * out_sp[1]
    cols = cp.empty((n, c * kh * kw, length), dtype=x.dtype)
    if cols.size:
        args = (c, h, w, kh, kw, *out_sp, sh, sw, ph, pw, dh, dw, _C_PER)
        _im2col_kernel(cp, x.dtype.itemsize)(  # type: ignore[operator]  # a cupy.RawKernel
            (-(-length // 128), -(-c // _C_PER), n), (128,), (x, cols, *(np.int32(v) for v in args))
        )
    return cols


class CudaConvOps(Backend):  # CudaBackend(CudaConvOps, CudaPoolOps, Backend): plain mixins
    xp: ModuleType  # cupy

    if TYPE_CHECKING:  # CudaBackend's

        def _on(self) -> ModuleType: ...

    def conv(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        args = (x, weight, bias, stride, padding, dilation, groups)
        out_sp = conv_out_sizes_padded(x.shape[2:], weight.shape[2:], stride, padding, dilation)
        out = _cudnn.fprop(
            self, x, weight, x.shape[:1] + weight.shape[:1] + out_sp, stride, padding, dilation
        )
        if out is not None:
            return _plus_bias(out, bias)
        out_len = _out_len(x, weight, stride, padding, dilation)
        if not _gather_fits(x, stride, out_len):
            return self._conv_rows(*args)
        if should_tune(x, weight, out_len):
            return tuner(self).run(CONV, self, *args)
        # untuned (small) convs: columns pay off for large planes, one large GEMM for small ones
        return self._conv_columns(*args) if out_len >= 1024 else self._conv_rows(*args)

    def _conv_rows(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        """Any rank: one (N*L, C_g*K) matrix of receptive fields per group, one GEMM, NCHW after."""
        cp = self._on()
        nd = len(stride)
        n, _ = x.shape[:2]
        c_out, c_g = weight.shape[:2]
        kernel = weight.shape[2:]
        out_sp = conv_out_sizes_padded(x.shape[2:], kernel, stride, padding, dilation)
        if any(padding):
            x = cp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
        g, ck, length = groups, c_g * math.prod(kernel), math.prod(out_sp)
        win = windows(cp, x, out_sp, kernel, stride, dilation)
        win = win.reshape((n, g, c_g) + out_sp + tuple(kernel))
        # (G, N, *out, Cg, *k): rows are output positions, columns the receptive field
        perm = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
        cols = cp.ascontiguousarray(win.transpose(perm)).reshape(g, n * length, ck)
        w = weight.reshape(g, c_out // g, ck).transpose(0, 2, 1)  # a view: the GEMM reads it transposed
        out = self.matmul(cols, w)  # (G, N*L, Cout/G)
        out = out.reshape(g, n, length, c_out // g).transpose(1, 0, 3, 2).reshape((n, c_out) + out_sp)
        return _plus_bias(out, bias)

    def unfold4d(self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Prim:
        """im2col as torch's unfold, (N, C, H, W) -> (N, C * kh * kw, L): the columns gather of
        ``_conv_columns`` (one kernel) where it fits, else the backend contract's composition."""
        out_sp = conv_out_sizes_padded(x.shape[2:], kernel, stride, padding, dilation)
        length = math.prod(out_sp)
        n, c = x.shape[:2]
        if not _gather_fits(x, stride, length) or n > 65535:
            return super().unfold4d(x, kernel, stride, padding, dilation)
        cp = self._on()
        return _gather_columns(cp, cp.ascontiguousarray(x), kernel, stride, padding, dilation, out_sp)

    def _conv_columns(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        """1-d/2-d conv (``_columns_fit``): per image, W (G, C_out/G, C_g*K) @ columns (G, C_g*K, L)
        -> (C_out, L)."""
        cp = self._on()
        one_d = len(stride) == 1
        if one_d:  # a 1-d conv is a 2-d one of height 1
            x, weight = x[:, :, None, :], weight[:, :, None, :]
            stride, padding, dilation = height_one(stride, padding, dilation)
        x = cp.ascontiguousarray(x)
        n, c, h, w = x.shape
        c_out, c_g, kh, kw = weight.shape
        (sh, sw), (ph, pw) = stride, padding
        oh, ow = conv_out_sizes_padded((h, w), (kh, kw), stride, padding, dilation)
        g, length, ck = groups, oh * ow, c_g * kh * kw
        wg = weight.reshape(g, c_out // g, ck)[None] if g > 1 else weight.reshape(c_out, ck)
        pointwise = kh == kw == 1 and sh == sw == 1 and ph == pw == 0
        per_image = c * kh * kw * length * x.dtype.itemsize
        # images per gather: within the workspace, and within the gather grid's z dimension (65535)
        chunk = n if pointwise else max(1, min(n, 65535, _WORKSPACE // max(per_image, 1)))
        parts = []
        for n0 in range(0, n, chunk):
            m = min(n, n0 + chunk) - n0
            if pointwise:
                cols = x[n0 : n0 + m].reshape(m, c, length)
            else:
                cols = _gather_columns(cp, x[n0 : n0 + m], (kh, kw), stride, padding, dilation, (oh, ow))
            if g > 1:
                cols = cols.reshape(m, g, ck, length)
            parts.append(self.matmul(wg, cols).reshape(m, c_out, length))
        if not parts:  # an empty batch
            out = cp.empty((0, c_out, length), dtype=x.dtype)
        else:
            out = parts[0] if len(parts) == 1 else cp.concatenate(parts)
        if bias is not None:
            out += bias.reshape(1, c_out, 1)
        return out.reshape((n, c_out) + ((ow,) if one_d else (oh, ow)))

    def conv_transpose(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        output_padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        out_sp = conv_transpose_out_sizes(
            x.shape[2:], weight.shape[2:], stride, padding, output_padding, dilation
        )
        in_shape = (x.shape[0], weight.shape[1] * groups) + out_sp
        out = _cudnn.dgrad(self, x, weight, in_shape, stride, padding, dilation)
        if out is not None:  # the transposed convolution is the forward's input gradient
            return _plus_bias(out, bias)
        cp = self._on()
        nd = len(stride)
        n, c_in = x.shape[:2]
        spatial = x.shape[2:]
        c_out_g = weight.shape[1]
        kernel = weight.shape[2:]
        g, c_in_g = groups, c_in // groups
        c_out = c_out_g * g
        length, kprod = math.prod(spatial), math.prod(kernel)
        xg = x.reshape(n, g, c_in_g, length).transpose(1, 2, 0, 3).reshape(g, c_in_g, n * length)
        w = weight.reshape(g, c_in_g, c_out_g * kprod).transpose(0, 2, 1)
        cols = self.matmul(w, xg)  # (G, Cout/G * K, N * L)
        cols = cols.reshape((g, c_out_g, kprod, n) + tuple(spatial)).transpose(
            (3, 0, 1, 2) + tuple(range(4, 4 + nd))
        )  # (N, G, Cout/G, K, *spatial)
        cols = cols.reshape((n, c_out, kprod) + tuple(spatial))
        full = tuple(o + 2 * p for o, p in zip(out_sp, padding))  # before ``padding`` is cropped each side
        out = cp.zeros((n, c_out) + full, dtype=x.dtype)
        for j, offs in enumerate(itertools.product(*(range(k) for k in kernel))):
            region = tuple(
                slice(o * dilation[d], o * dilation[d] + (spatial[d] - 1) * stride[d] + 1, stride[d])
                for d, o in enumerate(offs)
            )
            out[(slice(None), slice(None)) + region] += cols[:, :, j]
        crop = tuple(slice(p, p + o) for p, o in zip(padding, out_sp))
        return _plus_bias(out[(slice(None), slice(None)) + crop], bias)

    def conv_weight_grad(
        self,
        x: Prim,
        g: Prim,
        wshape: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Prim:
        """cuDNN's weight gradient where it runs the case, else the backend contract's default."""
        out = _cudnn.wgrad(self, x, g, tuple(wshape), stride, padding, dilation)
        if out is not None:
            return out
        return super().conv_weight_grad(x, g, wshape, stride, padding, dilation, groups)


def _conv_key(
    backend: Any, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int
) -> str:
    n, c, *sp = x.shape
    co, _, *k = weight.shape
    spatial = "x".join(str(bucket(s)) for s in sp)
    kernel = "x".join(map(str, k))
    return (
        f"{x.dtype.name} n{bucket(n)} c{bucket(c)} {spatial} co{bucket(co)} k{kernel} s{stride} p{padding} "
        f"d{dilation} g{groups}"
    )


CONV = Family(
    "conv2d",
    (
        Candidate("columns", lambda b, *a: b._conv_columns(*a), applies=_columns_fit),
        Candidate("rows", lambda b, *a: b._conv_rows(*a)),
    ),
    key=_conv_key,
    reference="rows",
    default="columns",
    close=close,
)


def should_tune(x: Any, weight: Any, out_len: int) -> bool:
    """Whether a conv is large enough to tune: ``out_len`` output positions per image and channel."""
    k = 1
    for s in weight.shape[1:]:
        k *= s  # C_in/G * kernel: the products per output
    return 2 * x.shape[0] * weight.shape[0] * out_len * k >= _TUNE_MIN_FLOPS
