"""numpy overrides of the module ops: conv via im2col on a strided view + one BLAS matmul per batch,
conv_transpose via matmul + col2im, pools via strided windows.

Written against ``self.xp`` (numpy here) so a CuPy-based backend can reuse the class with cupy. Shape
bookkeeping (output sizes, pads, divisors) is shared with the core-only defaults in
``burn.backend._pool_defaults``, so the two agree by construction on everything but the arithmetic.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ..backend import _pool_defaults as P
from ..backend._conv_defaults import fill_value

Ints = tuple[int, ...]


def _windows(xp: Any, x: Any, kernel: Ints, stride: Ints, dilation: Ints, out: Ints) -> Any:
    """A read-only strided view (N, C, *kernel, *out) of x (N, C, *S): no copy."""
    sn, sc, *ss = x.strides
    strides = (sn, sc) + tuple(s * d for s, d in zip(ss, dilation)) + tuple(s * t for s, t in zip(ss, stride))
    shape = x.shape[:2] + tuple(kernel) + tuple(out)
    as_strided = xp.lib.stride_tricks.as_strided
    try:  # read-only where the namespace supports it (numpy): the windows overlap
        return as_strided(x, shape=shape, strides=strides, writeable=False)
    except TypeError:  # cupy's as_strided has no writeable flag
        return as_strided(x, shape=shape, strides=strides)


def _pad(xp: Any, x: Any, pads: tuple[tuple[int, int], ...], value: Any) -> Any:
    if not any(lo or hi for lo, hi in pads):
        return x
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(pads), mode="constant", constant_values=value)


def _out_sizes(spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
    )


def _add_bias(y: Any, bias: Any) -> Any:
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * (y.ndim - 2))  # y is freshly allocated: safe in place
    return y


class NdArrayModuleOps:
    xp: Any

    def conv(self, x, weight, bias, stride, padding, dilation, groups):
        xp = self.xp
        n, c = x.shape[:2]
        c_out, kernel = weight.shape[0], tuple(weight.shape[2:])
        out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
        depth = (c // groups) * math.prod(kernel)
        if all(k == 1 for k in kernel) and not any(padding):
            # 1x1 conv: no im2col, just a (strided) view into one matmul
            cols = x[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in stride)]
        else:
            xpad = _pad(xp, x, tuple((p, p) for p in padding), 0)
            cols = _windows(xp, xpad, kernel, stride, dilation, out)
        # (N, g, C/g*K, L) in channel-major then kernel order: the layout of weight's rows, and the
        # matmul result (N, g, C_out/g, L) is already NCHW
        cols = cols.reshape(n, groups, depth, math.prod(out))
        y = xp.matmul(weight.reshape(groups, c_out // groups, depth), cols)
        return _add_bias(y.reshape((n, c_out) + out), bias)

    def conv_transpose(self, x, weight, bias, stride, padding, output_padding, dilation, groups):
        xp = self.xp
        n, c_in, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
        c_out_g, kernel = weight.shape[1], tuple(weight.shape[2:])
        c_out, c_in_g = c_out_g * groups, c_in // groups
        # every input pixel scatters weight^T @ x into a kernel-sized patch (matmul), then col2im
        w = weight.reshape(groups, c_in_g, c_out_g * math.prod(kernel)).transpose(0, 2, 1)
        cols = xp.matmul(w, x.reshape(n, groups, c_in_g, math.prod(spatial)))
        cols = cols.reshape((n, c_out) + kernel + spatial)
        out = tuple(
            (s - 1) * st - 2 * p + d * (k - 1) + op + 1
            for s, st, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
        )
        full = tuple(
            max((s - 1) * st + d * (k - 1) + 1, p + o)
            for s, st, d, k, p, o in zip(spatial, stride, dilation, kernel, padding, out)
        )
        buf = xp.zeros((n, c_out) + full, dtype=x.dtype)
        head = (slice(None), slice(None))
        for offset in itertools.product(*(range(k) for k in kernel)):
            region = tuple(
                slice(k * d, k * d + (s - 1) * st + 1, st)
                for k, d, s, st in zip(offset, dilation, spatial, stride)
            )
            buf[head + region] += cols[head + offset]
        y = buf[head + tuple(slice(p, p + o) for p, o in zip(padding, out))]
        return _add_bias(xp.ascontiguousarray(y), bias)

    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        xp = self.xp
        n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
        out = tuple(
            P.pool_out_size(s, k, st, p, d, ceil_mode)
            for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
        )
        pads = P.pool_pads(spatial, kernel, stride, padding, dilation, out)
        lowest = fill_value(self.dtype_of(x), lowest=True)
        view = _windows(xp, _pad(xp, x, pads, lowest), kernel, stride, dilation, out)
        cols = view.reshape((n, c, math.prod(kernel)) + out)
        arg = xp.argmax(cols, axis=2)
        values = xp.take_along_axis(cols, arg[:, :, None], axis=2)[:, :, 0]
        return values, self._flat_index(arg, kernel, stride, padding, dilation, spatial, out)

    def _flat_index(self, arg, kernel, stride, padding, dilation, spatial, out):
        """Flat spatial input index of kernel offset ``arg`` (row-major over kernel) per output."""
        xp = self.xp
        nd = len(kernel)
        flat = xp.zeros(arg.shape, dtype=xp.int64)
        inner_k, inner_s = 1, 1
        for d in range(nd - 1, -1, -1):
            k_d = (arg // inner_k) % kernel[d]
            o_d = xp.arange(out[d], dtype=xp.int64).reshape((out[d],) + (1,) * (nd - 1 - d))
            flat += (o_d * stride[d] - padding[d] + k_d * dilation[d]) * inner_s
            inner_k *= kernel[d]
            inner_s *= spatial[d]
        return flat

    def avg_pool(self, x, kernel, stride, padding, count_include_pad, ceil_mode):
        xp = self.xp
        spatial = tuple(x.shape[2:])
        ones = (1,) * len(spatial)
        out = tuple(
            P.pool_out_size(s, k, st, p, 1, ceil_mode)
            for s, k, st, p in zip(spatial, kernel, stride, padding)
        )
        xpad = _pad(xp, x, P.pool_pads(spatial, kernel, stride, padding, ones, out), 0)
        head = (slice(None), slice(None))
        total = xp.zeros(x.shape[:2] + out, dtype=x.dtype)
        for offset in itertools.product(*(range(k) for k in kernel)):
            total += xpad[
                head + tuple(slice(k, k + (o - 1) * st + 1, st) for k, o, st in zip(offset, out, stride))
            ]
        divisor = P.avg_divisor(spatial, kernel, stride, padding, out, count_include_pad)
        total /= xp.asarray(divisor, dtype=x.dtype)
        return total

    def adaptive_avg_pool(self, x, output_size):
        shape = x.shape
        if any(s % o for s, o in zip(shape[2:], output_size)):
            return super().adaptive_avg_pool(x, output_size)
        # equal windows: a reshape into (O, k) pairs and one mean
        split = shape[:2] + tuple(v for o, s in zip(output_size, shape[2:]) for v in (o, s // o))
        axes = tuple(range(3, len(split), 2))
        return x.reshape(split).mean(axis=axes, dtype=x.dtype)

    def adaptive_max_pool(self, x, output_size):
        spatial = tuple(x.shape[2:])
        if any(s % o for s, o in zip(spatial, output_size)):
            return super().adaptive_max_pool(x, output_size)
        kernel = tuple(s // o for s, o in zip(spatial, output_size))
        zeros = (0,) * len(spatial)
        return self.max_pool(x, kernel, kernel, zeros, (1,) * len(spatial), False)

    def unfold4d(self, x, kernel, stride, padding, dilation):
        xp = self.xp
        n, c = x.shape[:2]
        out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
        view = _windows(xp, _pad(xp, x, tuple((p, p) for p in padding), 0), kernel, stride, dilation, out)
        return view.reshape(n, c * math.prod(kernel), math.prod(out))

    def embedding(self, weight, indices):
        return self.xp.take(weight, indices, axis=0)
