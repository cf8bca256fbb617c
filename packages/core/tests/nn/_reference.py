"""Independent numpy formulations used as references by the nn tests (float64, loops where clearer)."""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def conv(x, w, b, stride, padding, dilation, groups):
    """Direct N-d convolution (cross-correlation) over windows, as PyTorch defines it."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    eff = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dilation)]
    win = sliding_window_view(xp, eff, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
    sl += tuple(slice(None, None, d) for d in dilation)
    win = win[sl]  # (N, C, *out, *k)
    cin_g, cout_g = x.shape[1] // groups, w.shape[0] // groups
    outs = []
    for g in range(groups):
        xg = win[:, g * cin_g : (g + 1) * cin_g]
        wg = w[g * cout_g : (g + 1) * cout_g]
        axes_x = [1, *range(2 + nd, 2 + 2 * nd)]
        axes_w = [1, *range(2, 2 + nd)]
        outs.append(np.tensordot(xg, wg, axes=(axes_x, axes_w)))  # (N, *out, cout_g)
    out = np.moveaxis(np.concatenate(outs, -1), -1, 1)
    if b is not None:
        out = out + b.reshape(1, -1, *([1] * nd))
    return out


def conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    """Transposed convolution by its scatter definition: every input element adds w * x to the output."""
    n, c_in = x.shape[:2]
    nd = x.ndim - 2
    cin_g, cout_g = c_in // groups, w.shape[1]
    k = w.shape[2:]
    full = [
        (l - 1) * s + d * (kk - 1) + 1 + op
        for l, s, d, kk, op in zip(x.shape[2:], stride, dilation, k, output_padding)
    ]
    out = np.zeros((n, cout_g * groups, *full))
    for ci in range(c_in):
        g = ci // cin_g
        for pos in np.ndindex(*x.shape[2:]):
            for kp in np.ndindex(*k):
                idx = tuple(p * s + q * d for p, s, q, d in zip(pos, stride, kp, dilation))
                sl = (slice(None), slice(g * cout_g, (g + 1) * cout_g), *idx)
                out[sl] += x[(slice(None), ci, *pos)][:, None] * w[(ci, slice(None), *kp)][None, :]
    sizes = [
        (l - 1) * s - 2 * p + d * (kk - 1) + op + 1
        for l, s, p, d, kk, op in zip(x.shape[2:], stride, padding, dilation, k, output_padding)
    ]
    out = out[(slice(None), slice(None), *(slice(p, p + sz) for p, sz in zip(padding, sizes)))]
    if b is not None:
        out = out + b.reshape(1, -1, *([1] * nd))
    return out


def pool(x, kernel, stride, padding, kind, dilation=None, count_include_pad=True):
    nd = x.ndim - 2
    dilation = dilation or (1,) * nd
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding], constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), [(p, p) for p in padding])
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    axes = tuple(range(2, 2 + nd))
    sl = tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, d) for d in dilation)
    win = sliding_window_view(xp, eff, axis=axes)[(slice(None), slice(None), *sl)]
    red = tuple(range(2 + nd, 2 + 2 * nd))
    if kind == "max":
        return win.max(axis=red)
    total = win.sum(axis=red)
    if count_include_pad:
        return total / math.prod(kernel)
    counts = sliding_window_view(ones, eff)[sl].sum(axis=tuple(range(nd, 2 * nd)))
    return total / counts


def adaptive_avg_pool(x, out):
    nd = x.ndim - 2
    res = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        sl = []
        for i, o, size in zip(pos, out, x.shape[2:]):
            sl.append(slice((i * size) // o, -((-(i + 1) * size) // o)))
        res[(slice(None), slice(None), *pos)] = x[(slice(None), slice(None), *sl)].mean(
            axis=tuple(range(2, 2 + nd))
        )
    return res
