"""Neural-network ops: Conv, ConvTranspose, pools, normalisations, Gemm, MatMul, Einsum, LRN."""

from __future__ import annotations

import itertools
import math
import string
from typing import Any

import burn
import numpy as np
from burn.backend import conv_transpose_out_sizes, from_primitive, pool_out_sizes
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, checks, op
from ._common import axis, unidirectional
from ._pool_taps import dilated_average_pool

_AUTO_PAD = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _window_pads(
    node: Node, spatial: tuple[int, ...], kernel: tuple[int, ...], stride: list[int], dilation: list[int]
) -> tuple[list[int], list[int]]:
    """(begin, end) pads per spatial dim from ``pads`` or ``auto_pad`` (SAME_UPPER/SAME_LOWER/VALID)."""
    nd = len(spatial)
    mode = node.attrs.get("auto_pad", "NOTSET")
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        outs = [-(-n // s) for n, s in zip(spatial, stride)]
        # the input extent those windows span: a transposed conv's size rule without padding
        reach = conv_transpose_out_sizes(outs, kernel, stride, [0] * nd, [0] * nd, dilation)
        for n, r in zip(spatial, reach):
            total = max(r - n, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if mode == "SAME_UPPER" else big)
            end.append(big if mode == "SAME_UPPER" else small)
        return begin, end
    if mode == "VALID":
        return [0] * nd, [0] * nd
    pads = list(node.attrs.get("pads", [0] * (2 * nd)))
    return pads[:nd], pads[nd:]


def _spatial_attrs(node: Node, nd: int) -> tuple[list[int], list[int]]:
    return list(node.attrs.get("strides", [1] * nd)), list(node.attrs.get("dilations", [1] * nd))


def _pad_spatial(x: burn.Tensor, begin: list[int], end: list[int], value: float = 0.0) -> burn.Tensor:
    flat: list[int] = []
    for b, e in zip(reversed(begin), reversed(end)):
        flat += [b, e]
    return x.pad(flat, "constant", value)


def _nd_check(*allowed: int) -> Any:
    def check(node: Node) -> str | None:
        k = node.attrs.get("kernel_shape")
        if k is not None and len(k) not in allowed:
            return f"{len(k)}-d windows are not supported (supported: {', '.join(f'{n}-d' for n in allowed)})"
        return None

    return check


# ------------------------------------------------------------------ convolutions


@op("Conv", check=checks(attr_in("auto_pad", _AUTO_PAD, "NOTSET"), _nd_check(1, 2, 3)))
def conv(ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, b: burn.Tensor | None = None) -> burn.Tensor:
    nd = x.ndim - 2
    stride, dilation = _spatial_attrs(node, nd)
    begin, end = _window_pads(node, tuple(x.shape[2:]), tuple(w.shape[2:]), stride, dilation)
    groups = int(node.attrs.get("group", 1))
    if begin != end:
        x = _pad_spatial(x, begin, end)
        begin = [0] * nd
    return _CONV[nd](
        x, w, b, stride=tuple(stride), padding=tuple(begin), dilation=tuple(dilation), groups=groups
    )


@op("ConvTranspose", check=checks(attr_in("auto_pad", _AUTO_PAD, "NOTSET"), _nd_check(1, 2, 3)))
def conv_transpose(
    ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, b: burn.Tensor | None = None
) -> burn.Tensor:
    nd = x.ndim - 2
    stride, dilation = _spatial_attrs(node, nd)
    groups = int(node.attrs.get("group", 1))
    out_pad = list(node.attrs.get("output_padding", [0] * nd))
    kernel = w.shape[2:]
    spatial = x.shape[2:]
    full = list(conv_transpose_out_sizes(spatial, kernel, stride, [0] * nd, [0] * nd, dilation))
    mode = node.attrs.get("auto_pad", "NOTSET")
    wanted = node.attrs.get("output_shape")
    if wanted is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        target = list(wanted)[-nd:] if wanted is not None else [n * s for n, s in zip(spatial, stride)]
        total = [f + o - t for f, o, t in zip(full, out_pad, target)]
        upper = mode == "SAME_UPPER"
        begin = [t // 2 if upper else t - t // 2 for t in total]
        end = [t - t // 2 if upper else t // 2 for t in total]
    elif mode == "VALID":
        begin, end = [0] * nd, [0] * nd
    else:
        pads = list(node.attrs.get("pads", [0] * (2 * nd)))
        begin, end = pads[:nd], pads[nd:]
    fast = (
        begin == end
        and all(p >= 0 for p in begin)
        and all(o < max(s, d) for o, s, d in zip(out_pad, stride, dilation))
    )
    fast = fast and all(f - 2 * p + o > 0 for f, p, o in zip(full, begin, out_pad))
    if fast:
        return _CONV_T[nd](
            x,
            w,
            b,
            stride=tuple(stride),
            padding=tuple(begin),
            output_padding=tuple(out_pad),
            groups=groups,
            dilation=tuple(dilation),
        )
    y = _CONV_T[nd](x, w, None, stride=tuple(stride), padding=0, groups=groups, dilation=tuple(dilation))
    # crop ``begin`` and ``end - output_padding``; negative amounts pad with zeros
    y = _pad_spatial(y, [max(0, -p) for p in begin], [max(0, o - p) for p, o in zip(end, out_pad)])
    index = [slice(None), slice(None)] + [
        slice(max(0, p), max(0, p) + f - p - e + o) for p, e, f, o in zip(begin, end, full, out_pad)
    ]
    y = y[tuple(index)]
    if b is not None:
        y = y + b.reshape(1, -1, *([1] * nd))
    return y


# ------------------------------------------------------------------ pools


@op("MaxPool", check=checks(attr_in("auto_pad", _AUTO_PAD, "NOTSET"), _nd_check(1, 2, 3)))
def max_pool(ctx: Any, node: Node, x: burn.Tensor) -> Any:
    kernel = tuple(node.attrs["kernel_shape"])
    nd = len(kernel)
    stride, dilation = _spatial_attrs(node, nd)
    begin, end = _window_pads(node, tuple(x.shape[2:]), kernel, stride, dilation)
    ceil = bool(node.attrs.get("ceil_mode", 0))
    want_indices = len(node.outputs) > 1 and bool(node.outputs[1])
    taps = not want_indices and not ceil and x.dtype.is_float and math.prod(kernel) <= _MAX_TAPS
    if taps and _taps_pay(x):
        return _max_taps(x, kernel, stride, dilation, begin, end)
    src = x
    padded = begin != end or any(p > k // 2 for p, k in zip(begin, kernel))
    if padded:
        fill = float("-inf") if x.dtype.is_float else -(2**31)
        src = _pad_spatial(x, begin, end, fill)
        pads = (0,) * nd
    else:
        pads = tuple(begin)
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    result = pool(src, kernel, tuple(stride), pads, tuple(dilation), ceil, return_indices=want_indices)
    if not want_indices:
        return result
    values, idx = result
    n, c = x.shape[:2]
    plane = math.prod(x.shape[2:])
    column_major = bool(node.attrs.get("storage_order", 0))
    if padded or column_major:
        # indices into the padded plane -> into the input plane; storage_order=1: first dim fastest
        widths = src.shape[2:]
        coords = []
        rest = idx
        for i in reversed(range(nd)):
            coords.append(rest % widths[i] - (begin[i] if padded else 0))
            rest = rest // widths[i]
        coords.reverse()
        order = list(reversed(range(nd))) if column_major else list(range(nd))
        idx = coords[order[0]]
        for i in order[1:]:
            idx = idx * x.shape[2 + i] + coords[i]
    base = burn.arange(0, n * c, device=idx.device).cast(idx.dtype).reshape(n, c, *([1] * nd)) * plane
    return values, (idx + base).cast(ctx.fit(burn.int64))


# values-only max pool as a chain of maximums over the kernel's taps (strided slices): half the work
# of the backend's max_pool, which also finds every window's argmax; the taps pass over the output
# once each, so only for small kernels
_MAX_TAPS = 16


def _taps_pay(x: burn.Tensor) -> bool:
    """The taps run in place on numpy arrays, and on autodiff devices their backward is the maximums'
    own. A GPU backend would record each tap's slice and maximum as its own op (7 ops for a 2x2 pool),
    where its max_pool is one tuned launch whose argmax costs next to nothing."""
    return type(x.primitive) is np.ndarray or x.backend.is_autodiff


def _max_taps(
    x: burn.Tensor,
    kernel: tuple[int, ...],
    stride: list[int],
    dilation: list[int],
    begin: list[int],
    end: list[int],
) -> burn.Tensor:
    prim = x.primitive
    values = getattr(x.backend, "max_pool_values", None)
    if (
        values is not None
        and type(prim) is np.ndarray
        and prim.ndim == 4
        and list(begin) == list(end)
        and not x.backend.is_autodiff
    ):
        # the numpy backend: the compiled values-only kernel where it pays (padding read as -inf)
        pads = tuple(begin)
        sizes = pool_out_sizes(tuple(prim.shape[2:]), kernel, tuple(stride), pads, tuple(dilation), False)
        if all(o > 0 for o in sizes):
            y = values(prim, kernel, tuple(stride), pads, tuple(dilation), False)
            return from_primitive(y, x.backend, x.dtype)
    if any(begin) or any(end):
        x = _pad_spatial(x, begin, end, float("-inf"))
    spatial = x.shape[2:]
    out = list(pool_out_sizes(spatial, kernel, stride, [0] * len(spatial), dilation, False))
    if any(o <= 0 for o in out):
        raise ValueError(
            f"MaxPool: kernel {kernel} (dilation {dilation}) is larger than the padded input {spatial}"
        )
    index = [
        (slice(None), slice(None))
        + tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, dilation, out, stride))
        for offset in itertools.product(*(range(k) for k in kernel))
    ]
    prim = x.primitive
    if type(prim) is np.ndarray and not x.backend.is_autodiff and len(index) > 1:
        # numpy: the running max in one fresh buffer, without a tensor per tap
        acc = np.maximum(prim[index[0]], prim[index[1]])
        for where in index[2:]:
            np.maximum(acc, prim[where], out=acc)
        return from_primitive(acc, x.backend, x.dtype)
    y = x[index[0]]
    for where in index[1:]:
        y = y.maximum(x[where])
    return y


@op("AveragePool", check=checks(attr_in("auto_pad", _AUTO_PAD, "NOTSET"), _nd_check(1, 2, 3)))
def average_pool(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    kernel = tuple(node.attrs["kernel_shape"])
    nd = len(kernel)
    stride, dilation = _spatial_attrs(node, nd)
    begin, end = _window_pads(node, tuple(x.shape[2:]), kernel, stride, dilation)
    ceil = bool(node.attrs.get("ceil_mode", 0))
    include = bool(node.attrs.get("count_include_pad", 0))
    if any(d != 1 for d in dilation):  # the backends' pools take no dilation: one strided slice per tap
        return dilated_average_pool(x, kernel, stride, dilation, begin, end, ceil, include)
    pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    if begin == end and all(p <= k // 2 for p, k in zip(begin, kernel)):
        return pool(x, kernel, tuple(stride), tuple(begin), ceil, include)
    # asymmetric pads: pool the zero-padded input, divided by the window's count of real (or all) cells
    xp = _pad_spatial(x, begin, end)
    total = pool(xp, kernel, tuple(stride), (0,) * nd, ceil, True)
    if include:
        return total
    ones = _pad_spatial(burn.ones((1, 1, *x.shape[2:]), dtype=x.dtype, device=x.device), begin, end)
    share = pool(ones, kernel, tuple(stride), (0,) * nd, ceil, True)
    return total / share


def _numpy_float(*ts: burn.Tensor | None) -> bool:
    """Every given tensor is a float32/float64 numpy array off autodiff: converters may then call numpy
    directly (the per-op dispatch costs more than the arithmetic on small tensors)."""
    return all(
        t is None
        or (type(t.primitive) is np.ndarray and t.primitive.dtype.char in "fd" and not t.backend.is_autodiff)
        for t in ts
    )


@op("GlobalAveragePool")
def global_average_pool(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    axes = tuple(range(2, x.ndim))
    if _numpy_float(x):
        prim = x.primitive
        return from_primitive(prim.mean(axis=axes, keepdims=True, dtype=prim.dtype), x.backend, x.dtype)
    return x.mean(axes, keepdim=True)


@op("GlobalMaxPool")
def global_max_pool(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    return x.max(tuple(range(2, x.ndim)), keepdim=True)


# ------------------------------------------------------------------ normalisation


def _channel(t: burn.Tensor, rank: int) -> burn.Tensor:
    return t.reshape(1, -1, *([1] * (rank - 2)))


def _bn_check(node: Node) -> str | None:
    if node.attrs.get("training_mode", 0):
        return "training_mode=1 is not supported (burn-onnx runs inference graphs)"
    return None


@op("BatchNormalization", check=_bn_check)
def batch_norm(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    scale: burn.Tensor,
    bias: burn.Tensor,
    mean: burn.Tensor,
    var: burn.Tensor,
) -> burn.Tensor:
    eps = float(node.attrs.get("epsilon", 1e-5))
    factor = scale * (var + eps).rsqrt()
    shift = bias - mean * factor
    if node.opset < 9 and node.attrs.get("spatial", 1) == 0:
        # BatchNormalization-7/8 spatial=0: statistics per (channel, position), shaped (C, D1, ...)
        return x * factor.unsqueeze(0) + shift.unsqueeze(0)
    return x * _channel(factor, x.ndim) + _channel(shift, x.ndim)


@op("InstanceNormalization")
def instance_norm(ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, bias: burn.Tensor) -> burn.Tensor:
    eps = float(node.attrs.get("epsilon", 1e-5))
    dims = tuple(range(2, x.ndim))
    mean = x.mean(dims, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dims, keepdim=True)
    return centred * (var + eps).rsqrt() * _channel(scale, x.ndim) + _channel(bias, x.ndim)


@op("LayerNormalization")
def layer_norm(
    ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, bias: burn.Tensor | None = None
) -> Any:
    a = axis(int(node.attrs.get("axis", -1)), x.ndim, node)
    eps = float(node.attrs.get("epsilon", 1e-5))
    shape = tuple(x.shape[a:])
    extra = len(node.outputs) > 1 and any(node.outputs[1:])
    if not extra and tuple(scale.shape) == shape and (bias is None or tuple(bias.shape) == shape):
        return F.layer_norm(x, shape, scale, bias, eps)
    dims = tuple(range(a, x.ndim))
    mean = x.mean(dims, keepdim=True)
    centred = x - mean
    inv = ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
    y = centred * inv * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv


@op("GroupNormalization", since=18)
def group_norm(ctx: Any, node: Node, x: burn.Tensor, scale: burn.Tensor, bias: burn.Tensor) -> burn.Tensor:
    eps = float(node.attrs.get("epsilon", 1e-5))
    groups = int(node.attrs["num_groups"])
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    mean = g.mean(2, keepdim=True)
    centred = g - mean
    y = (centred * ((centred * centred).mean(2, keepdim=True) + eps).rsqrt()).reshape(*x.shape)
    if scale.shape[0] != c:  # opset 18: one scale and bias per group
        scale = scale.reshape(groups, 1).expand(groups, c // groups).reshape(c)
        bias = bias.reshape(groups, 1).expand(groups, c // groups).reshape(c)
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


@op("LRN")
def lrn(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    size = int(node.attrs["size"])
    alpha, beta = float(node.attrs.get("alpha", 1e-4)), float(node.attrs.get("beta", 0.75))
    bias = float(node.attrs.get("bias", 1.0))
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = x * x
    flat = [0, 0] * (x.ndim - 2) + [lo, hi]
    padded = sq.pad(flat)
    total = padded.narrow(1, 0, c)
    for i in range(1, size):
        total = total + padded.narrow(1, i, c)
    return x / (total * (alpha / size) + bias) ** beta


@op("MeanVarianceNormalization")
def mean_variance_norm(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    dims = tuple(axis(a, x.ndim, node) for a in node.attrs.get("axes", [0, 2, 3]))
    mean = x.mean(dims, keepdim=True)
    centred = x - mean
    return centred / ((centred * centred).mean(dims, keepdim=True).sqrt() + 1e-9)


# ------------------------------------------------------------------ linear algebra


@op("MatMul")
def matmul(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    return a @ b


@op("Gemm")
def gemm(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor, c: burn.Tensor | None = None) -> burn.Tensor:
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    if _numpy_float(a, b, c) and a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype:
        pa, pb = a.primitive, b.primitive
        y = np.matmul(
            pa.T if node.attrs.get("transA", 0) else pa, pb.T if node.attrs.get("transB", 0) else pb
        )
        if alpha != 1.0:
            y *= alpha
        if c is not None and beta != 0.0:
            pc = c.primitive.astype(y.dtype, copy=False)
            y = y + (pc * beta if beta != 1.0 else pc)  # C broadcasts (unidirectionally) to y
        return from_primitive(y, a.backend, a.dtype)
    if node.attrs.get("transA", 0):
        a = a.transpose(0, 1)
    if node.attrs.get("transB", 0):
        b = b.transpose(0, 1)
    y = a @ b
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        y = y + (unidirectional(c, 2) * beta if beta != 1.0 else c)
    return y


def _einsum_check(node: Node) -> str | None:
    eq = node.attrs.get("equation", "")
    if not isinstance(eq, str) or "->" not in eq and not eq:
        return "an empty equation"
    return None


@op("Einsum", check=_einsum_check)
def einsum(ctx: Any, node: Node, *xs: burn.Tensor) -> burn.Tensor:
    eq = node.attrs["equation"].replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    free = [ch for ch in string.ascii_letters if ch not in eq]
    # expand "..." into letters of their own (the broadcast dims, aligned from the right)
    ell_rank = max((x.ndim - (len(t) - 3) for t, x in zip(terms, xs) if "..." in t), default=0)
    ell = "".join(free[:ell_rank])
    expanded = []
    for t, x in zip(terms, xs):
        if "..." in t:
            n = x.ndim - (len(t) - 3)
            t = t.replace("...", ell[ell_rank - n :])
        expanded.append(t)
    if "->" not in eq:
        counts: dict[str, int] = {}
        for t in expanded:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        rhs = ell + "".join(sorted(ch for ch, k in counts.items() if k == 1 and ch not in ell))
    else:
        rhs = rhs.replace("...", ell)
    letters = list(dict.fromkeys("".join(expanded) + rhs))
    sizes: dict[str, int] = {}
    views = []
    for t, x in zip(expanded, xs):
        # repeated letters within one operand take the diagonal
        while len(set(t)) < len(t):
            ch = next(c for c in t if t.count(c) > 1)
            i, j = t.index(ch), t.index(ch, t.index(ch) + 1)
            n = x.shape[i]
            eye = burn.eye(n, device=x.device).cast(x.dtype)
            shape = [1] * x.ndim
            shape[i], shape[j] = n, n
            x = (x * eye.reshape(*shape)).sum(j)
            t = t[:j] + t[j + 1 :]
        for ch, n in zip(t, x.shape):
            if n != 1:
                sizes[ch] = n
        order = sorted(range(len(t)), key=lambda k: letters.index(t[k]))
        x = x.permute(*order) if order != list(range(len(t))) else x
        present = [t[k] for k in order]
        shape = [x.shape[present.index(ch)] if ch in present else 1 for ch in letters]
        views.append(x.reshape(*shape))
    out = views[0]
    for v in views[1:]:
        out = out * v
    summed = tuple(i for i, ch in enumerate(letters) if ch not in rhs)
    if summed:
        out = out.sum(summed)
    kept = [ch for ch in letters if ch in rhs]
    out = out.expand(*[sizes.get(ch, 1) for ch in kept]) if kept else out
    perm = [kept.index(ch) for ch in rhs]
    return out.permute(*perm) if perm != list(range(len(perm))) else out
