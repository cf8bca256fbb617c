"""Module ops on the GPU: convolution as im2col + GEMM (cuBLAS through the backend's matmul, so the
matmul precision applies), transposed convolution as GEMM + col2im, and max/avg pooling over strided
windows. Convolution has two strategies, tuned per shape for 1-d and 2-d (``_tuned.CONV``): ``columns``
gathers each image's columns as (C*K, H_out*W_out) with one generated kernel (coalesced along the
output row) and multiplies W (C_out, C*K) into them as one batched GEMM whose result is already NCHW (a
1x1 convolution with stride 1 and no padding multiplies W into the input itself); ``rows`` gathers a
strided window view into one (N*L, C*K) matrix for one large GEMM (any rank). CuPy 14 ships no cuDNN bindings (``cupy.cuda.cudnn`` is gone), so convolution is
implicit-GEMM style everywhere. 1-d and 2-d max/avg pools run direct kernels (``_tuned_kernels``,
tuned per shape by ``_tuned.POOL``); 3-d pools the strided window view. Everything else (adaptive
pools, interpolate, embedding) uses the contract's defaults, which run on this backend's core ops.
"""

from __future__ import annotations

import itertools
import math
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from burn.backend import Backend, pool_out_size

from ._types import Prim

Ints = tuple[int, ...]

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


def _windows(cp: ModuleType, x: Prim, out_sp: Ints, kernel: Ints, stride: Ints, dilation: Ints) -> Prim:
    """A strided view (N, C, *out_sp, *kernel) of x (N, C, *spatial): window ``o`` at offset ``k``."""
    x = cp.ascontiguousarray(x)
    nd = len(kernel)
    st = x.strides
    strides = st[:2] + tuple(st[2 + d] * stride[d] for d in range(nd))
    strides += tuple(st[2 + d] * dilation[d] for d in range(nd))
    return cp.lib.stride_tricks.as_strided(
        x, shape=x.shape[:2] + tuple(out_sp) + tuple(kernel), strides=strides
    )


def _out_spatial(spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    """A convolution's output size per spatial dim."""
    return tuple(pool_out_size(*a, False) for a in zip(spatial, kernel, stride, padding, dilation))


def _gather_fits(x: Prim, stride: Ints, out_len: int) -> bool:
    """Whether the columns gather takes a conv of ``x`` with ``out_len`` outputs per plane: 1-d/2-d,
    an element size it copies, and a plane and channel count within its int positions and grid."""
    return (
        len(stride) <= 2
        and x.dtype.itemsize in _BITS
        and out_len < 1 << 31
        and -(-x.shape[1] // _C_PER) <= 65535
    )


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


class CudaModuleOps(Backend):  # CudaBackend(CudaModuleOps, Backend): the MRO of a plain mixin
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
        out_len = math.prod(_out_spatial(x.shape[2:], weight.shape[2:], stride, padding, dilation))
        if not _gather_fits(x, stride, out_len):
            return self._conv_rows(*args)
        from . import _tuned

        if _tuned.should_tune(x, weight, out_len):
            return _tuned.tuner(self).run(_tuned.CONV, self, *args)
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
        out_sp = _out_spatial(x.shape[2:], kernel, stride, padding, dilation)
        if any(padding):
            x = cp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
        g, ck, length = groups, c_g * math.prod(kernel), math.prod(out_sp)
        win = _windows(cp, x, out_sp, kernel, stride, dilation)
        win = win.reshape((n, g, c_g) + out_sp + tuple(kernel))
        # (G, N, *out, Cg, *k): rows are output positions, columns the receptive field
        perm = (1, 0) + tuple(range(3, 3 + nd)) + (2,) + tuple(range(3 + nd, 3 + 2 * nd))
        cols = cp.ascontiguousarray(win.transpose(perm)).reshape(g, n * length, ck)
        w = weight.reshape(g, c_out // g, ck).transpose(0, 2, 1)  # a view: the GEMM reads it transposed
        out = self.matmul(cols, w)  # (G, N*L, Cout/G)
        out = out.reshape(g, n, length, c_out // g).transpose(1, 0, 3, 2).reshape((n, c_out) + out_sp)
        if bias is not None:
            out = out + bias.reshape((1, c_out) + (1,) * nd)
        return out

    def _columns_fit(
        self,
        x: Prim,
        weight: Prim,
        bias: Prim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> bool:
        """Whether ``_conv_columns`` takes this conv (``_gather_fits``)."""
        out_len = math.prod(_out_spatial(x.shape[2:], weight.shape[2:], stride, padding, dilation))
        return _gather_fits(x, stride, out_len)

    def unfold4d(self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Prim:
        """im2col as torch's unfold, (N, C, H, W) -> (N, C * kh * kw, L): the columns gather of
        ``_conv_columns`` (one kernel) where it fits, else the backend contract's composition."""
        out_sp = _out_spatial(x.shape[2:], kernel, stride, padding, dilation)
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
            stride, padding, dilation = (1, *stride), (0, *padding), (1, *dilation)
        x = cp.ascontiguousarray(x)
        n, c, h, w = x.shape
        c_out, c_g, kh, kw = weight.shape
        (sh, sw), (ph, pw) = stride, padding
        oh, ow = _out_spatial((h, w), (kh, kw), stride, padding, dilation)
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
        full = tuple(
            (spatial[d] - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + 1 + output_padding[d]
            for d in range(nd)
        )
        out = cp.zeros((n, c_out) + full, dtype=x.dtype)
        for j, offs in enumerate(itertools.product(*(range(k) for k in kernel))):
            region = tuple(
                slice(o * dilation[d], o * dilation[d] + (spatial[d] - 1) * stride[d] + 1, stride[d])
                for d, o in enumerate(offs)
            )
            out[(slice(None), slice(None)) + region] += cols[:, :, j]
        crop = tuple(slice(padding[d], full[d] - padding[d]) for d in range(nd))
        out = out[(slice(None), slice(None)) + crop]
        if bias is not None:
            out = out + bias.reshape((1, c_out) + (1,) * nd)
        return out

    def _pool_windows(
        self,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        fill: float | int,
    ) -> tuple[Prim, Ints, Ints]:
        cp = self.xp
        nd = len(kernel)
        spatial = x.shape[2:]
        out_sp = tuple(
            pool_out_size(spatial[d], kernel[d], stride[d], padding[d], dilation[d], ceil_mode)
            for d in range(nd)
        )
        right = tuple(
            max(
                padding[d],
                (out_sp[d] - 1) * stride[d] + dilation[d] * (kernel[d] - 1) + 1 - spatial[d] - padding[d],
            )
            for d in range(nd)
        )
        pads = ((0, 0), (0, 0)) + tuple((padding[d], right[d]) for d in range(nd))
        xp_ = cp.pad(x, pads, mode="constant", constant_values=fill) if any(map(any, pads)) else x
        return _windows(cp, xp_, out_sp, kernel, stride, dilation), out_sp, right

    # ---- pools: the direct kernels of the tuned pool family (``_tuned.POOL``) for 1-d and 2-d pools
    # of the dtypes they take; 3-d and other dtypes (and the family's reference) the window paths
    def _pool(
        self,
        op: str,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> Prim | tuple[Prim, Prim] | None:
        from . import _tuned
        from ._tuned_kernels import POOL_DTYPES

        if len(kernel) not in (1, 2) or x.dtype not in POOL_DTYPES[op] or x.ndim != 2 + len(kernel):
            return None
        if len(kernel) == 2:
            return _tuned.pool2d(self, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad)
        n, c, length = x.shape
        y = _tuned.pool2d(
            self,
            op,
            x.reshape(n, c, 1, length),
            (1, *kernel),
            (1, *stride),
            (0, *padding),
            (1, *dilation),
            ceil_mode,
            count_include_pad,
        )
        if isinstance(y, tuple):
            return y[0][:, :, 0], y[1][:, :, 0]
        return y[:, :, 0]

    def _pool_direct(
        self,
        op: str,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
        block: int = 256,
        px: int = 1,
    ) -> Prim | tuple[Prim, Prim]:
        """A 2-d pool of x (N, C, H, W) with the direct kernel (``_tuned_kernels.pool_source``):
        ``block`` threads per block, ``px`` outputs per thread along the output row; max returns
        (values, int64 indices)."""
        from ._tuned_kernels import pool_kernel

        cp = self._on()
        x = cp.ascontiguousarray(x)
        n, c, h, w = x.shape
        oh, ow = (
            pool_out_size(s, k, st, p, d, ceil_mode)
            for s, k, st, p, d in zip((h, w), kernel, stride, padding, dilation)
        )
        y = cp.empty((n, c, oh, ow), dtype=x.dtype)
        idx = cp.empty((n, c, oh, ow), dtype=np.int64) if op == "max" else None
        pb = -(-ow // px)
        total = n * c * oh * pb
        if y.size:
            i32 = np.int32
            params = (
                np.int64(total),
                *(i32(v) for v in (pb, oh, ow, h, w, *kernel, *stride, *padding, *dilation)),
                i32(int(count_include_pad)),
            )
            outs = (y, idx) if idx is not None else (y,)
            pool_kernel(op, x.dtype, px)((-(-total // block),), (block,), (x, *outs, *params))
        return (y, idx) if idx is not None else y

    def max_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        out = self._pool("max", x, kernel, stride, padding, dilation, ceil_mode, False)
        if isinstance(out, tuple):
            return out
        return self._max_pool_windows(x, kernel, stride, padding, dilation, ceil_mode)

    def avg_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        ones = (1,) * len(kernel)
        out = self._pool("avg", x, kernel, stride, padding, ones, ceil_mode, count_include_pad)
        if out is not None and not isinstance(out, tuple):
            return out
        return self._avg_pool_windows(x, kernel, stride, padding, count_include_pad, ceil_mode)

    def _max_pool_windows(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        """Max pool over a padded strided window view (CuPy argmax): any rank, any dtype."""
        cp = self._on()
        nd = len(kernel)
        dt = x.dtype
        fill = -np.inf if dt.kind == "f" else np.iinfo(dt).min
        win, out_sp, _ = self._pool_windows(x, kernel, stride, padding, dilation, ceil_mode, fill)
        flat = win.reshape(x.shape[:2] + out_sp + (-1,))
        local = cp.argmax(flat, axis=-1)  # first maximum in window order, as PyTorch
        values = cp.take_along_axis(flat, local[..., None], axis=-1)[..., 0]
        # local kernel offset -> position in the unpadded input, flattened over the spatial dims
        index = cp.zeros(local.shape, dtype=np.int64)
        rest = local.astype(np.int64)
        spatial = x.shape[2:]
        for d in reversed(range(nd)):
            k_d = rest % kernel[d]
            rest = rest // kernel[d]
            o_d = cp.arange(out_sp[d], dtype=np.int64).reshape((-1,) + (1,) * (nd - 1 - d))
            pos = o_d * stride[d] - padding[d] + k_d * dilation[d]
            index = index + pos * math.prod(spatial[d + 1 :])
        return values, index

    def _avg_pool_windows(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        """Average pool over a padded strided window view (CuPy sums): any rank."""
        cp = self._on()
        nd = len(kernel)
        ones = (1,) * nd
        win, out_sp, right = self._pool_windows(x, kernel, stride, padding, ones, ceil_mode, 0)
        axes = tuple(range(2 + nd, 2 + 2 * nd))
        total = cp.sum(win, axis=axes, dtype=x.dtype)
        # divisor: cells of each window inside the input (or inside input + padding), as PyTorch counts
        spatial = x.shape[2:]
        if count_include_pad:  # padded coordinates [0, S + 2p) count; ceil-mode overhang does not
            inside = tuple(s + p + min(p, r) for s, p, r in zip(spatial, padding, right))
            pads = tuple((0, r - min(p, r)) for p, r in zip(padding, right))
        else:
            inside, pads = spatial, tuple(zip(padding, right))
        mask = cp.pad(cp.ones((1, 1) + tuple(inside), dtype=x.dtype), ((0, 0), (0, 0)) + pads)
        count = cp.sum(_windows(cp, mask, out_sp, kernel, stride, ones), axis=axes, dtype=x.dtype)
        return total / count
