"""numpy overrides of the module ops: conv via im2col (a strided window view copied into a reused
workspace, padding in kept zero-bordered buffers) + a few large BLAS matmuls per batch,
conv_transpose via matmul + col2im (shifted whole-plane adds at unit stride), max pool as element-wise
ops over the kernel's taps (strided views), avg pool as a sum of taps.

Written against ``self.xp`` (numpy here) so a CuPy-based backend can reuse the class with cupy. Shape
bookkeeping (output sizes, pads, divisors) is shared with the core-only defaults in
``burn.backend._pool_defaults``, so the two agree by construction on everything but the arithmetic.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from ..backend import Backend
from ..backend import _pool_defaults as P
from ..backend._conv_defaults import fill_value

if TYPE_CHECKING:
    import numpy as np

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one: these formulations run on either namespace (``xp``)


def _windows(xp: ModuleType, x: Array, kernel: Ints, stride: Ints, dilation: Ints, out: Ints) -> Array:
    """A read-only strided view (N, C, *kernel, *out) of x (N, C, *S): no copy."""
    sn, sc, *ss = x.strides
    strides = (sn, sc) + tuple(s * d for s, d in zip(ss, dilation)) + tuple(s * t for s, t in zip(ss, stride))
    shape = x.shape[:2] + tuple(kernel) + tuple(out)
    as_strided = xp.lib.stride_tricks.as_strided
    try:  # read-only where the namespace supports it (numpy): the windows overlap
        return as_strided(x, shape=shape, strides=strides, writeable=False)
    except TypeError:  # cupy's as_strided has no writeable flag
        return as_strided(x, shape=shape, strides=strides)


def _pad(xp: ModuleType, x: Array, pads: tuple[tuple[int, int], ...], value: float | int | bool) -> Array:
    if not any(lo or hi for lo, hi in pads):
        return x
    # a filled buffer and one strided copy: half the time of xp.pad, which fills each side in turn
    shape = x.shape[:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))] = x
    return out


# im2col: images share one GEMM, up to a window matrix of _COLS_BUDGET elements (16 MiB of float32,
# reused between calls) and no more images than give it _GEMM_MIN_COLUMNS columns. Few large GEMMs, not
# one per image: each multithreaded BLAS call synchronises its threads, and on a loaded machine a
# thread that lost its core stalls every call (batch 32 on 2 busy cores: 240 ms per-image vs 75 ms in
# three GEMMs for a 32-channel 32x32 conv; the same within noise on one thread)
_COLS_BUDGET = 1 << 22
_GEMM_MIN_COLUMNS = 1 << 14
_SCRATCH_MAX_BYTES = 1 << 25  # a larger request is served fresh, not kept (32 MiB per name and thread)
_scratch_local = threading.local()


def _scratch(xp: ModuleType, name: str, size: int, dtype: Any) -> Array:
    """A reusable 1-d work buffer of ``size`` elements (contents undefined), one per name and thread.

    Only for values that do not outlive the op that asks: the next request of the same name reuses
    the memory."""
    nbytes = size * xp.dtype(dtype).itemsize
    if nbytes > _SCRATCH_MAX_BYTES or xp.__name__ != "numpy":
        return xp.empty(size, dtype=dtype)
    pool = getattr(_scratch_local, "pool", None)
    if pool is None:
        pool = _scratch_local.pool = {}
    buf = pool.get(name)
    if buf is None or buf.nbytes < nbytes:
        buf = pool[name] = xp.empty(max(nbytes, 1 << 16), dtype=xp.uint8)
    return buf[:nbytes].view(dtype)


class _ConvPlan(NamedTuple):
    """What a conv's shapes decide, worked out once per signature (``_conv_plan``)."""

    out: Ints  # output spatial sizes
    depth: int  # C/g * prod(kernel): the GEMM's contraction
    rows: int  # C * prod(kernel)
    length: int  # prod(out)
    per: int  # images per GEMM
    pointwise: bool  # a 1x1, unpadded, unit-stride conv that needs no windows
    y_shape: Ints
    padded: Ints | None  # x's shape with the padding (None: no padding)
    interior: tuple[slice, ...]  # where x sits in the padded buffer
    view_shape: Ints  # (N, C, *kernel, *out)
    channel_major: Ints  # view axes -> (C, *kernel, N, *out)


@functools.lru_cache(maxsize=256)
def _conv_plan(
    xshape: Ints,
    wshape: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    min_columns: int,
    budget: int,
) -> _ConvPlan:
    n, c = xshape[:2]
    c_out, kernel = wshape[0], tuple(wshape[2:])
    nd = len(kernel)
    out = _out_sizes(xshape[2:], kernel, stride, padding, dilation)
    rows, length = c * math.prod(kernel), math.prod(out)
    pointwise = all(k == 1 for k in kernel) and not any(padding) and all(st == 1 for st in stride)
    per = max(1, min(n, -(-min_columns // length), budget // max(1, rows * length)))
    padded = xshape[:2] + tuple(s + 2 * p for s, p in zip(xshape[2:], padding)) if any(padding) else None
    return _ConvPlan(
        out,
        rows // groups,
        rows,
        length,
        per,
        pointwise and (n == 1 or length >= min_columns),
        (n, c_out) + out,
        padded,
        (slice(None), slice(None)) + tuple(slice(p, p + s) for s, p in zip(xshape[2:], padding)),
        (n, c) + kernel + out,
        (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd)),
    )


_PADDED_KEPT = 8  # zero-bordered buffers kept per thread, one per padded shape (least recently used out)
_PADDED_MAX_BYTES = 1 << 24  # a larger padded input is built fresh each call


def _padded(xp: ModuleType, x: Array, plan: _ConvPlan) -> Array:
    """x zero-padded as ``plan`` says, in a buffer kept for that shape: its borders are zeroed once
    and never written again, so each call copies only x into the interior."""
    shape = plan.padded
    assert shape is not None
    nbytes = math.prod(shape) * x.dtype.itemsize
    if nbytes > _PADDED_MAX_BYTES or xp.__name__ != "numpy":
        buf = xp.zeros(shape, dtype=x.dtype)
    else:
        kept = getattr(_scratch_local, "padded", None)
        if kept is None:
            kept = _scratch_local.padded = {}
        key = (shape, x.dtype.str)
        buf = kept.pop(key, None)
        if buf is None:
            buf = xp.zeros(shape, dtype=x.dtype)
            while len(kept) >= _PADDED_KEPT:
                kept.pop(next(iter(kept)))
        kept[key] = buf  # most recently used last
    buf[plan.interior] = x
    return buf


def _conv_windows(xp: ModuleType, src: Array, plan: _ConvPlan, stride: Ints, dilation: Ints) -> Array:
    """The read-only (N, C, *kernel, *out) window view of ``src``, x padded as ``plan`` says."""
    kernel = plan.view_shape[2 : 2 + len(plan.out)]
    if xp.__name__ != "numpy" or not src.flags.c_contiguous:
        return _windows(xp, src, kernel, stride, dilation, plan.out)
    sn, sc, *ss = src.strides
    strides = (sn, sc) + tuple(a * d for a, d in zip(ss, dilation)) + tuple(a * t for a, t in zip(ss, stride))
    view = xp.ndarray(plan.view_shape, src.dtype, src, 0, strides)  # as_strided, without its overhead
    view.flags.writeable = False  # the windows overlap
    return view


def _out_sizes(spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
    )


def _add_bias(y: Array, bias: Array | None) -> Array:
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * (y.ndim - 2))  # y is freshly allocated: safe in place
    return y


# A window max as a chain of element-wise ops over the kernel's taps (strided views of x, one per
# kernel offset) costs a few passes over the output per tap; argmax over contiguous window rows costs
# one copy of every window. The taps win unless the output is small against the kernel (global pools):
# measured crossover between 130 and 220 outputs per tap (float32, one core).
_TAPS_MIN_OUTPUTS = 200


def _offsets(kernel: Ints) -> list[Ints]:
    return list(itertools.product(*(range(k) for k in kernel)))


def _tap(offset: Ints, stride: Ints, dilation: Ints, out: Ints) -> tuple[slice, ...]:
    """Index of the (N, C, *out) view of the padded input seen by kernel ``offset`` in every window."""
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + (o - 1) * st + 1, st) for k, d, o, st in zip(offset, dilation, out, stride)
    )


def _first_match(xp: ModuleType, taps: list[Array], values: Array) -> Array:
    """Kernel offset (row-major) of the first tap equal to ``values``: the count of leading taps that
    differ from the max. Branch-free (masked copies and ``where`` mispredict on random data); exact
    when no value is NaN. uint8 counts while the kernel has at most 256 taps."""
    miss = taps[0] != values
    arg = miss.astype(xp.uint8 if len(taps) <= 256 else xp.int32)
    for tap in taps[1:-1]:  # the last tap matches whenever all before it missed
        miss &= tap != values
        arg += miss
    return arg


@functools.lru_cache(maxsize=64)
def _pool_index_tables(
    kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, spatial: Ints, out: Ints
) -> tuple[np.ndarray, np.ndarray]:
    """Flat input index of window o's kernel offset k as ``base[o] + table[k]`` (int64, read-only):
    base (*out) is the window origin, table (prod(kernel),) the offset, both in unpadded coordinates."""
    import numpy as np

    nd = len(kernel)
    inner = [math.prod(spatial[d + 1 :]) for d in range(nd)]
    base = np.zeros(out, dtype=np.int64)
    for d in range(nd):
        origin = np.arange(out[d], dtype=np.int64) * stride[d] - padding[d]
        base = base + (origin * inner[d]).reshape((out[d],) + (1,) * (nd - 1 - d))
    table = np.array(
        [sum(k * dl * s for k, dl, s in zip(off, dilation, inner)) for off in _offsets(kernel)],
        dtype=np.int64,
    )
    base.flags.writeable = table.flags.writeable = False
    return base, table


def _col2im_unit_stride(
    xp: ModuleType, w: Array, x: Array, kernel: Ints, dilation: Ints, full: Ints, groups: int
) -> Array:
    """col2im of a stride-1 conv_transpose, (N, C_out, *full), by k slice-adds of long contiguous rows.

    x (N, C_in, *S) is laid out on the output grid (zero-padded to ``full`` in every spatial dim but
    the first), so in flat coordinates each kernel offset's patch is the matmul result shifted by one
    constant: the adds run over whole planes instead of rows of S[-1] elements (each add about 2x
    faster on 14x14 images). The padding columns are zero, so what they add past a row's end is zero
    too; the buffer's tail (``reach``) takes what the last plane adds past its end."""
    n, c_in, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    grid = spatial[:1] + full[1:]
    if grid != spatial:
        laid = xp.zeros((n, c_in) + grid, dtype=x.dtype)
        laid[(slice(None), slice(None)) + tuple(slice(0, s) for s in spatial)] = x
        x = laid
    length, size = math.prod(grid), math.prod(full)
    cols = xp.matmul(w, x.reshape(n, groups, c_in // groups, length))
    cols = cols.reshape(n, -1, math.prod(kernel), length)
    inner = [math.prod(full[d + 1 :]) for d in range(len(full))]
    reach = sum(d * (k - 1) * r for d, k, r in zip(dilation[1:], kernel[1:], inner[1:]))
    buf = xp.zeros((n, cols.shape[1], size + reach), dtype=x.dtype)
    for j, offset in enumerate(_offsets(kernel)):
        start = sum(k * d * r for k, d, r in zip(offset, dilation, inner))
        buf[:, :, start : start + length] += cols[:, :, j]
    # the planes as (N, C_out, *full) without copying out the tails: the caller's crop is the one copy
    strides = buf.strides[:2] + tuple(r * buf.itemsize for r in inner)
    return xp.lib.stride_tricks.as_strided(buf, shape=buf.shape[:2] + full, strides=strides)


class NdArrayModuleOps(Backend):  # NdArrayBackend(NdArrayModuleOps, Backend): a plain mixin's MRO
    xp: ModuleType  # the array namespace: numpy (or cupy)

    def conv(
        self,
        x: Array,
        weight: Array,
        bias: Array | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Array:
        xp = self.xp
        plan = _conv_plan(
            tuple(x.shape),
            tuple(weight.shape),
            stride,
            padding,
            dilation,
            groups,
            _GEMM_MIN_COLUMNS,
            _COLS_BUDGET,
        )
        n, c_out, length = x.shape[0], weight.shape[0], plan.length
        w = weight.reshape(groups, c_out // groups, plan.depth)
        if plan.pointwise:
            # 1x1 conv at unit stride: x is already the (N, g, C/g, L) matrix of every window
            y = xp.matmul(w, x.reshape(n, groups, plan.depth, length))
            return _add_bias(y.reshape(plan.y_shape), bias)
        # im2col into a reused workspace (fresh multi-MB buffers cost a page fault per 4 KiB page on
        # every call), a few images at a time: (g, C/g*K, B*L) in channel-major then kernel order, the
        # layout of weight's rows, so one GEMM serves B images
        src = x if plan.padded is None else _padded(xp, x, plan)
        view = _conv_windows(xp, src, plan, stride, dilation)  # (N, C, *K, *O)
        y = xp.empty(plan.y_shape, dtype=x.dtype)
        y_rows = y.reshape(n, groups, c_out // groups, length)
        rows = plan.rows  # C * prod(kernel): the window matrix's rows over all groups
        # one image per GEMM without groups: the bias rides in the GEMM as one more row of ones in the
        # window matrix (and bias as one more weight column), saving a pass over y
        ones_row, w_single = 0, w
        if bias is not None and groups == 1 and plan.per == 1:
            ones_row, w_single = 1, xp.concatenate([w[0], bias.reshape(-1, 1)], axis=1)[None]
        for start in range(0, n, plan.per):
            b = min(plan.per, n - start)
            if b == 1:  # the product is already this image's (g, C_out/g, L) block of y
                cols = _scratch(xp, "cols", (rows + ones_row) * length, x.dtype)
                xp.copyto(cols[: rows * length].reshape(view.shape[1:]), view[start])
                if ones_row:
                    cols[rows * length :] = 1
                xp.matmul(w_single, cols.reshape(groups, plan.depth + ones_row, length), out=y_rows[start])
                if bias is not None and not ones_row:
                    y[start] += bias.reshape((-1,) + (1,) * len(plan.out))
                continue
            part = view[start : start + b].transpose(plan.channel_major)  # (C, *K, B, *O)
            cols = _scratch(xp, "cols", rows * b * length, x.dtype)
            xp.copyto(cols.reshape(part.shape), part)
            prod = _scratch(xp, "prod", c_out * b * length, x.dtype)
            xp.matmul(
                w, cols.reshape(groups, plan.depth, b * length), out=prod.reshape(groups, -1, b * length)
            )
            # (C_out, B, L) -> y's (B, C_out, L): the one copy the batched GEMM costs, with the bias in it
            block = prod.reshape(c_out, b, length).transpose(1, 0, 2)
            target = y[start : start + b].reshape(b, c_out, length)
            if bias is not None:
                xp.add(block, bias.reshape(1, -1, 1), out=target)
            else:
                xp.copyto(target, block)
        return y

    def conv_transpose(
        self,
        x: Array,
        weight: Array,
        bias: Array | None,
        stride: Ints,
        padding: Ints,
        output_padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Array:
        xp = self.xp
        n, c_in, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
        c_out_g, kernel = weight.shape[1], tuple(weight.shape[2:])
        c_out, c_in_g = c_out_g * groups, c_in // groups
        out = tuple(
            (s - 1) * st - 2 * p + d * (k - 1) + op + 1
            for s, st, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
        )
        full = tuple(
            max((s - 1) * st + d * (k - 1) + 1, p + o)
            for s, st, d, k, p, o in zip(spatial, stride, dilation, kernel, padding, out)
        )
        # every input pixel scatters weight^T @ x into a kernel-sized patch (matmul), then col2im
        w = weight.reshape(groups, c_in_g, c_out_g * math.prod(kernel)).transpose(0, 2, 1)
        if all(st == 1 for st in stride):
            buf = _col2im_unit_stride(xp, w, x, kernel, dilation, full, groups)
        else:
            cols = xp.matmul(w, x.reshape(n, groups, c_in_g, math.prod(spatial)))
            cols = cols.reshape((n, c_out) + kernel + spatial)
            buf = xp.zeros((n, c_out) + full, dtype=x.dtype)
            for offset in _offsets(kernel):
                buf[_tap(offset, stride, dilation, spatial)] += cols[(slice(None), slice(None)) + offset]
        y = buf[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out))]
        return _add_bias(xp.ascontiguousarray(y), bias)

    def max_pool(
        self, x: Array, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Array, Array]:
        xp = self.xp
        spatial = tuple(x.shape[2:])
        out = tuple(
            P.pool_out_size(s, k, st, p, d, ceil_mode)
            for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
        )
        pads = P.pool_pads(spatial, kernel, stride, padding, dilation, out)
        xpad = _pad(xp, x, pads, fill_value(self.dtype_of(x), lowest=True))
        base, table = (
            xp.asarray(t) for t in _pool_index_tables(kernel, stride, padding, dilation, spatial, out)
        )
        kp = math.prod(kernel)
        if kp > 1 and math.prod(out) * x.shape[0] * x.shape[1] >= _TAPS_MIN_OUTPUTS * kp:
            taps = [xpad[_tap(offset, stride, dilation, out)] for offset in _offsets(kernel)]
            values = xp.maximum(taps[0], taps[1])
            for tap in taps[2:]:
                xp.maximum(values, tap, out=values)
            # a NaN max equals no tap: then the whole pool takes the argmax path (first NaN wins)
            if x.dtype.kind != "f" or not xp.isnan(values).any():
                return values, xp.add(base, xp.take(table, _first_match(xp, taps, values)))
        view = _windows(xp, xpad, kernel, stride, dilation, out)
        # window axes last: each window is one contiguous row for argmax (a copy of the strided view)
        last = (0, 1) + tuple(range(2 + len(kernel), view.ndim)) + tuple(range(2, 2 + len(kernel)))
        cols = view.transpose(last).reshape(x.shape[:2] + out + (kp,))
        arg = xp.argmax(cols, axis=-1)
        values = xp.take_along_axis(cols, arg[..., None], axis=-1)[..., 0]
        return values, xp.add(base, xp.take(table, arg))

    def avg_pool(
        self, x: Array, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Array:
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

    def adaptive_avg_pool(self, x: Array, output_size: Ints) -> Array:
        shape = x.shape
        if any(s % o for s, o in zip(shape[2:], output_size)):
            return super().adaptive_avg_pool(x, output_size)
        # equal windows: a reshape into (O, k) pairs and one mean
        split = shape[:2] + tuple(v for o, s in zip(output_size, shape[2:]) for v in (o, s // o))
        axes = tuple(range(3, len(split), 2))
        return x.reshape(split).mean(axis=axes, dtype=x.dtype)

    def adaptive_max_pool(self, x: Array, output_size: Ints) -> tuple[Array, Array]:
        spatial = tuple(x.shape[2:])
        if any(s % o for s, o in zip(spatial, output_size)):
            return super().adaptive_max_pool(x, output_size)
        kernel = tuple(s // o for s, o in zip(spatial, output_size))
        zeros = (0,) * len(spatial)
        return self.max_pool(x, kernel, kernel, zeros, (1,) * len(spatial), False)

    def unfold4d(self, x: Array, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Array:
        xp = self.xp
        n, c = x.shape[:2]
        out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
        view = _windows(xp, _pad(xp, x, tuple((p, p) for p in padding), 0), kernel, stride, dilation, out)
        return view.reshape(n, c * math.prod(kernel), math.prod(out))

    def embedding(self, weight: Array, indices: Array) -> Array:
        return self.xp.take(weight, indices, axis=0)
