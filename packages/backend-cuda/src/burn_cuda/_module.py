"""Module ops on the GPU: convolution as one im2col GEMM per call (cuBLAS through the backend's matmul,
so the matmul precision applies), transposed convolution as GEMM + col2im, and max/avg pooling over
strided windows. CuPy 14 ships no cuDNN bindings (``cupy.cuda.cudnn`` is gone), so convolution is
implicit-GEMM style everywhere. Everything else (adaptive pools, interpolate, embedding) uses the
contract's defaults, which run on this backend's core ops.
"""

from __future__ import annotations

import itertools
import math
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from burn.backend import Backend

from ._types import Prim

Ints = tuple[int, ...]


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


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """Output length of a pool as PyTorch computes it (a ceil window must start inside input + left pad)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


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
        cp = self._on()
        nd = len(stride)
        n, _ = x.shape[:2]
        c_out, c_g = weight.shape[:2]
        kernel = weight.shape[2:]
        if any(padding):
            x = cp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
        out_sp = tuple(
            (x.shape[2 + d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(nd)
        )
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
            _pool_out(spatial[d], kernel[d], stride[d], padding[d], dilation[d], ceil_mode) for d in range(nd)
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

    def max_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
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

    def avg_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
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
