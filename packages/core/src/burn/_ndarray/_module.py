"""numpy overrides of the module ops: 2-d conv (``conv_fused``, which ``conv`` calls) through a run
made once per signature (``_rows_run``): rows of whole padded planes with stride phases, kw column
shifts with kh GEMMs, or a channels-last window matrix for small planes, with bias, residual, ReLU and
max pool in the epilogue (with more than one BLAS thread, a batch split over a small thread pool:
``_Parallel``); other convs via im2col (a strided window view copied into a reused
workspace, padding in kept zero-bordered buffers) + a few large BLAS matmuls per batch,
conv_transpose via matmul + col2im (shifted whole-plane adds at unit stride), max pool as element-wise
ops over the kernel's taps (strided views), avg pool as a sum of taps.

Written against ``self.xp`` (numpy here) so a CuPy-based backend can reuse the class with cupy. Shape
bookkeeping (output sizes, pads, divisors) is shared with the core-only defaults in
``burn.backend._pool_defaults``, so the two agree by construction on everything but the arithmetic.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import operator
import os
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from ..backend import Backend
from ..backend import _pool_defaults as P
from ..backend._conv_defaults import fill_value, pool_out_size

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


_PADDED_KEPT = 12  # zero-bordered buffers kept per thread, one per padded shape (least recently used out)
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


# The 2-d conv runs (numpy, no groups; measured on the ResNet-like benchmark, one BLAS thread). The "rows"
# formulation computes the output on a grid ``wq`` columns wide (the padded width, over the stride), so
# every kernel tap's window over a whole image is ONE contiguous run of the (phase-split, zero-bordered)
# input: the window matrix is copied as rows of ho * wq values instead of runs of wo, and the GEMM per
# image writes (C_out, ho, wq); the epilogue (crop, residual, ReLU, max pool) reads that while it is in
# cache, the bias rides in the GEMM. The columns past wo are junk (wq / wo more GEMM work), so plain rows
# only for wide outputs (``_ROWS_MAX_WASTE``). A stride s splits the padded input into s*s phases
# (x[p::s, q::s]); a tap then reads one phase at unit stride. "shifts" (unit stride, deep enough) copies
# kw shifted planes instead of kh * kw taps: 32x32x32 3x3 at batch 32 12.5 ms (im2col 14.1). Planes of
# at most ``_HWC_MAX_PLANE`` go channels-last (``_HwcRun``): no junk, long runs (8x8x128 3x3 at batch 1
# 0.27 ms, shifts 0.35, im2col 0.36); on 32x32 planes its transposed copy costs more than it saves.
_ROWS_MAX_WASTE = 1.1  # wq / wo at most for plain rows ("shifts" has no limit): batch 32, 9 / 8 lost 15%
_SHIFTS_MIN_DEPTH = 48  # C * kw at least for "shifts" (the stem's 3 * 3 runs better as rows)
_HWC_MAX_PLANE = 256  # input planes up to 16 x 16 go channels-last (``_HwcRun``)
_ROWS_CHUNK = 1 << 19  # window-matrix elements per GEMM chunk (2 MiB of float32)


class _Phase(NamedTuple):
    fill_dst: tuple[slice, ...]  # where this phase's interior sits in the (N, C, phases, hq, wq) buffer
    fill_src: tuple[slice, ...]  # the input samples it holds
    offset: int  # element offset of the phase's first tap in an image's first channel
    shape: Ints  # (C, taps along h, taps along w, L) of its tap view
    strides: Ints  # element strides of that view (channel, tap h, tap w, column)
    cols: tuple[slice, ...]  # where those taps sit in the window matrix (C, kh, kw, L)


class _RowsPlan(NamedTuple):
    out: Ints  # (ho, wo)
    grid: Ints  # (hq, wq): the phase planes; outputs are computed on ho x wq
    phases: tuple[_Phase, ...]
    image: int  # elements per image in the phase buffer
    size: int  # phase buffer elements (slack past the end: the junk columns' overrun)
    depth: int  # C * kh * kw
    per: int  # images per GEMM chunk
    key: tuple[Any, ...]  # what decides the buffer's layout (hashable: slices are not, before 3.12)


@functools.lru_cache(maxsize=256)
def _rows_plan(
    xshape: Ints, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints, chunk: int
) -> _RowsPlan:
    n, c, h, w = xshape
    kernel = tuple(wshape[2:])
    out = _out_sizes((h, w), kernel, stride, padding, dilation)
    # per axis: phase -> (first tap, tap step, taps, offset in the phase, offset step)
    axes: list[dict[int, tuple[int, int, int, int, int]]] = []
    for k, s, d in zip(kernel, stride, dilation):
        g = math.gcd(s, d)
        phases: dict[int, tuple[int, int, int, int, int]] = {}
        for t in range(k):
            p, a = (t * d) % s, (t * d) // s
            if p not in phases:
                count = len(range(t, k, s // g))
                phases[p] = (t, s // g, count, a, d // g)
        axes.append(phases)
    reach = [max(a + (cnt - 1) * da for _, _, cnt, a, da in ax.values()) for ax in axes]
    hq, wq = out[0] + reach[0], out[1] + reach[1]
    keys = [(p, q) for p in sorted(axes[0]) for q in sorted(axes[1])]
    plane, length = hq * wq, out[0] * wq
    image = c * len(keys) * plane
    built = []
    for k, (p, q) in enumerate(keys):
        ti, si, ni, ai, dai = axes[0][p]
        tj, sj, nj, aj, daj = axes[1][q]
        # phase (p, q) holds padded sample (p + i * sh, q + j * sw) at (i, j): rows of x from r0 on
        bounds = []
        for ph, pad, s, size, lim in ((p, padding[0], stride[0], h, hq), (q, padding[1], stride[1], w, wq)):
            lo = max(0, -(-(pad - ph) // s))
            hi = min(lim, (pad + size - 1 - ph) // s + 1)
            start = ph + lo * s - pad
            bounds.append((lo, hi, start, s))
        fill_dst = (slice(None), slice(None), slice(k, k + 1)) + tuple(
            slice(lo, max(lo, hi)) for lo, hi, _, _ in bounds
        )
        fill_src = (slice(None), slice(None), None) + tuple(
            slice(st, st + (hi - lo - 1) * s + 1, s) if hi > lo else slice(0, 0) for lo, hi, st, s in bounds
        )
        built.append(
            _Phase(
                fill_dst,
                fill_src,
                k * plane + ai * wq + aj,
                (c, ni, nj, length),
                (len(keys) * plane, dai * wq, daj, 1),
                (slice(None), slice(ti, None, si), slice(tj, None, sj), slice(None)),
            )
        )
    depth = c * math.prod(kernel)
    per = max(1, min(n, chunk // max(1, depth * length)))
    key = (xshape, kernel, stride, padding, dilation)
    return _RowsPlan(out, (hq, wq), tuple(built), image, n * image + reach[1], depth, per, key)


def _max_pool_into(xp: ModuleType, src: Array, pool: Ints, dst: Array) -> None:
    """dst = the (kh, kw) max pool at stride (kh, kw), floor mode, of src (..., H, W): the max of the
    kh rows of each window first (whole rows: long runs), then of the kw columns."""
    kh, kw = pool
    ho, wo = dst.shape[-2:]
    rows = [src[..., i : i + ho * kh : kh, :] for i in range(kh)]
    if kh > 1:
        acc = xp.maximum(rows[0], rows[1])
        for r in rows[2:]:
            xp.maximum(acc, r, out=acc)
    else:
        acc = rows[0]
    cols = [acc[..., j : j + wo * kw : kw] for j in range(kw)]
    if kw == 1:
        xp.copyto(dst, cols[0])
        return
    xp.maximum(cols[0], cols[1], out=dst)
    for col in cols[2:]:
        xp.maximum(dst, col, out=dst)


# numpy's maximum against a scalar (a stride-0 operand) misses its SIMD loop: on 32K float32 values
# max(y, 0) ran 3x slower than max(y, zeros), a kept zero array as large as y (ReLU on the ResNet-like
# benchmark's convs: 22 -> 6 us contiguous, 30 -> 17 us from a cropped view). Same values, NaN included.
_ZEROS_MAX_BYTES = 1 << 24  # a larger ReLU compares against the scalar


def _relu_into(xp: ModuleType, src: Array, dst: Array) -> None:
    """dst = max(src, 0) (dst may be src), against a kept read-only zero array where it pays."""
    nbytes = dst.size * dst.itemsize
    if xp.__name__ != "numpy" or nbytes > _ZEROS_MAX_BYTES or dst.size < 1024:
        xp.maximum(src, 0, out=dst)
        return
    zeros = getattr(_scratch_local, "zeros", None)  # one per thread: never written after it is made
    if zeros is None or zeros.nbytes < nbytes:
        zeros = _scratch_local.zeros = xp.zeros(max(nbytes, 1 << 16), dtype=xp.uint8)
    xp.maximum(src, zeros[:nbytes].view(dst.dtype).reshape(dst.shape), out=dst)


def _store(xp: ModuleType, src: Array, dst: Array, residual: Array | None, relu: bool) -> None:
    """dst = src (+ residual), then max(., 0) where asked: a run's GEMM result into its output."""
    if residual is not None:
        xp.add(src, residual, out=dst)
        if relu:
            _relu_into(xp, dst, dst)
    elif relu:
        _relu_into(xp, src, dst)
    else:
        xp.copyto(dst, src)


def _epilogue(xp: ModuleType, y: Array, bias: Array | None, residual: Array | None, relu: bool) -> None:
    """y += bias; y += residual; y = max(y, 0), in place, as asked."""
    if bias is not None:
        y += bias.reshape((-1,) + (1,) * (y.ndim - 2))
    if residual is not None:
        y += residual
    if relu:
        _relu_into(xp, y, y)


def _kept_zeros(xp: ModuleType, key: tuple[Any, ...], size: int, dtype: Any) -> tuple[Array, dict[Any, Any]]:
    """A flat buffer of ``size`` elements, zeroed when made and kept per thread under ``key`` (the
    ``_PADDED_KEPT`` most recent, each at most ``_PADDED_MAX_BYTES``; larger: fresh each call), so
    what its owner never writes (a padded buffer's borders) stays zero; and a dict kept (and dropped)
    with it, for views into it."""
    if size * xp.dtype(dtype).itemsize > _PADDED_MAX_BYTES or xp.__name__ != "numpy":
        return xp.zeros(size, dtype=dtype), {}
    kept = getattr(_scratch_local, "padded", None)
    if kept is None:
        kept = _scratch_local.padded = {}
    entry = kept.pop(key, None)
    if entry is None:
        entry = (xp.zeros(size, dtype=dtype), {})
        while len(kept) >= _PADDED_KEPT:
            kept.pop(next(iter(kept)))
    kept[key] = entry  # most recently used last
    return entry


def _scratch_base(xp: ModuleType, name: str, nbytes: int) -> Array:
    """The raw (uint8) buffer behind ``_scratch(name)``, at least ``nbytes`` long: the same object
    between calls until a larger request replaces it, so views into it can be kept."""
    pool = getattr(_scratch_local, "pool", None)
    base = None if pool is None else pool.get(name)
    if base is not None and base.nbytes >= nbytes:
        return base
    _scratch(xp, name, nbytes, xp.uint8)
    base = getattr(_scratch_local, "pool", {}).get(name)
    if base is None or base.nbytes < nbytes:  # served fresh (too large, or not numpy)
        return xp.empty(nbytes, dtype=xp.uint8)
    return base


def _view(xp: ModuleType, base: Array, dtype: Any, offset: int, shape: Ints, strides: Ints) -> Array:
    """A view of ``base`` (element offset and strides in elements of ``dtype``)."""
    item = xp.dtype(dtype).itemsize
    return xp.ndarray(shape, dtype, base, offset * item, tuple(s * item for s in strides))


class _Run:
    """What a 2-d numpy conv's shapes decide, worked out once per signature (``_rows_run``), and the
    views into its kept input buffer and the shared scratch buffers: made again only when one of
    those buffers is replaced, and kept with the input buffer (so dropped with it)."""

    buf_key: tuple[Any, ...]
    buf_size: int
    scratch: tuple[tuple[str, int], ...]  # (name, bytes) of the scratch buffers it uses
    y_shape: Ints  # the output's shape

    weights_key: str  # its entry in a caller's weight cache

    def _build(self, xp: ModuleType, buf: Array, bases: tuple[Array, ...]) -> tuple[Any, ...]:
        raise NotImplementedError

    def _relay(self, xp: ModuleType, weight: Array, bias: Array | None) -> Array:
        """The GEMM's weights in this run's layout (bias folded in where it has a column)."""
        raise NotImplementedError

    def _weights(
        self, xp: ModuleType, weight: Array, bias: Array | None, cache: dict[str, Any] | None
    ) -> Array:
        """``_relay``'s weights, kept in ``cache`` while the caller passes the very same arrays: one
        (weight, bias, relaid) entry, set in one store (threads of a split batch share the cache)."""
        entry = None if cache is None else cache.get(self.weights_key)
        if entry is not None and entry[0] is weight and entry[1] is bias:
            return entry[2]
        w = self._relay(xp, weight, bias)
        if cache is not None:
            cache[self.weights_key] = (weight, bias, w)
        return w

    def _state(self, xp: ModuleType, x: Array) -> tuple[Any, ...]:
        buf, memo = _kept_zeros(xp, self.buf_key, self.buf_size, x.dtype)
        bases = tuple(_scratch_base(xp, name, nbytes) for name, nbytes in self.scratch)
        state = memo.get(self)
        if state is None or not all(map(operator.is_, bases, state[0])):
            state = memo[self] = (bases, *self._build(xp, buf, bases))
        return state


class _RowsRun(_Run):
    """A 2-d numpy conv in the rows formulation for one signature: what the shapes decide, worked out
    once, and the views into the phase buffer and the shared scratch buffers, made again only when
    one of those buffers is replaced. Two ways to build the GEMM operand:

    - ``shifts`` (unit stride): the padded input's kw column shifts are copied once (rows (c, dj),
      each a whole plane: kw copies of x, not kh * kw), and kernel row di reads those rows from
      column di * wq on, a strided view: kh GEMMs of depth C * kw per image (one stacked matmul
      call), whose partial products are summed in place;
    - else each phase's taps are copied as rows of ho * wq (the window matrix, depth C * kh * kw).

    With a bias the operand gets one more row of ones and the weights the bias as one more column
    (zero for di > 0): the GEMM adds it, and the epilogue is one pass (crop + ReLU, or + residual).
    """

    def __init__(
        self,
        xp: ModuleType,
        xshape: Ints,
        wshape: Ints,
        dtype: Any,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        shifts: bool,
        pool: Ints | None,
        bias: bool,
    ) -> None:
        n, c = xshape[:2]
        c_out, _, kh, kw = wshape
        plan = _rows_plan(xshape, wshape, stride, padding, dilation, _ROWS_CHUNK)
        (ho, wo), (hq, wq) = plan.out, plan.grid
        self.plan, self.shifts, self.pool, self.dtype = plan, shifts, pool, dtype
        self.c_out, self.kh, self.dilation, self.ones = c_out, kh, dilation, int(bias)
        self.plane, self.length = hq * wq, ho * wq
        self.depth = c * kw if shifts else plan.depth  # weight columns, without the bias's
        rows = self.depth + self.ones
        if shifts:
            per = max(1, min(n, _ROWS_CHUNK // (rows * self.plane)))
            scratch = {"cols": per * rows * self.plane, "part": per * kh * c_out * self.length}
        else:
            per = plan.per
            scratch = {"cols": per * rows * self.length, "prod": per * c_out * self.length}
        item = xp.dtype(dtype).itemsize
        self.scratch = tuple((name, size * item) for name, size in scratch.items())
        self.chunks = tuple((s, min(per, n - s)) for s in range(0, n, per))
        self.y_shape = (n, c_out) + ((ho // pool[0], wo // pool[1]) if pool else (ho, wo))
        self.direct = not shifts and wq == wo and pool is None  # the GEMM writes y itself
        self.buf_key, self.buf_size = ("rows", plan.key, xp.dtype(dtype).str), plan.size

    def _build(self, xp: ModuleType, buf: Array, bases: tuple[Array, ...]) -> tuple[Any, ...]:
        """(fills, steps): the phase interiors with the input samples they take, and per chunk its
        copies, ones row, GEMM operands, partial products and output crop."""
        plan, dt = self.plan, self.dtype
        bases = (buf, *bases)
        n, c = plan.key[0][:2]
        kh, kw = plan.key[1]
        image, plane, length, c_out = plan.image, self.plane, self.length, self.c_out
        depth, rows = self.depth, self.depth + self.ones
        wo, wq = plan.out[1], plan.grid[1]
        grid = buf[: n * image].reshape((n, c, len(plan.phases)) + plan.grid)
        fills = [(grid[ph.fill_dst], ph.fill_src) for ph in plan.phases]
        steps: list[tuple[Any, ...]] = []
        for start, b in self.chunks:
            copies = []
            if self.shifts:
                dh, dw = self.dilation
                src = _view(xp, buf, dt, 0, (n, c, kw, plane), (image, plane, dw, 1))
                block = _view(xp, bases[1], dt, 0, (b, rows, plane), (rows * plane, plane, 1))
                copies.append((block[:, :depth].reshape(b, c, kw, plane), src[start : start + b]))
                ones = block[:, depth:]
                gemm_in = _view(xp, bases[1], dt, 0, (b, kh, rows, length), (rows * plane, dh * wq, plane, 1))
                gemm_out = _view(
                    xp,
                    bases[2],
                    dt,
                    0,
                    (b, kh, c_out, length),
                    (kh * c_out * length, c_out * length, length, 1),
                )
                acc, partials = gemm_out[:, 0], [gemm_out[:, i] for i in range(1, kh)]
            else:
                gemm_in = _view(xp, bases[1], dt, 0, (b, rows, length), (rows * length, length, 1))
                cols5 = gemm_in[:, :depth].reshape((b, c, kh, kw, length))
                for ph in plan.phases:
                    src = _view(xp, buf, dt, ph.offset, (n,) + ph.shape, (image,) + ph.strides)
                    copies.append((cols5[(slice(None),) + ph.cols], src[start : start + b]))
                ones = gemm_in[:, depth:]
                gemm_out = acc = None
                if not self.direct:
                    gemm_out = acc = _view(
                        xp, bases[2], dt, 0, (b, c_out, length), (c_out * length, length, 1)
                    )
                partials = []
            wide = None if acc is None else acc.reshape(b, c_out, plan.out[0], wq)
            crop = None if wide is None else wide[..., :wo]
            steps.append((start, b, copies, ones, gemm_in, gemm_out, acc, partials, wide, crop))
        return fills, steps

    weights_key = "rows"

    def _relay(self, xp: ModuleType, weight: Array, bias: Array | None) -> Array:
        """The GEMM's weights: (C_out, depth [+ 1]), or per kernel row (kh, C_out, C * kw [+ 1])."""
        c_out, kh = self.c_out, self.kh
        if self.shifts:  # (di, C_out, (c, dj)): a copy with runs of kw elements, slow enough to keep
            w = xp.zeros((kh, c_out, self.depth + self.ones), dtype=weight.dtype)
            w[:, :, : self.depth] = weight.transpose(2, 0, 1, 3).reshape(kh, c_out, self.depth)
            if bias is not None:
                w[0, :, self.depth] = bias
        elif bias is not None:
            w = xp.concatenate([weight.reshape(c_out, self.depth), bias.reshape(c_out, 1)], axis=1)
        else:
            w = weight.reshape(c_out, self.depth)
        return w

    def __call__(
        self,
        xp: ModuleType,
        x: Array,
        weight: Array,
        bias: Array | None,
        residual: Array | None,
        relu: bool,
        weight_cache: dict[str, Any] | None,
        out: Array | None = None,
    ) -> Array:
        _, fills, steps = self._state(xp, x)
        for dst, src in fills:
            xp.copyto(dst, x[src])
        w = self._weights(xp, weight, bias, weight_cache)
        y = xp.empty(self.y_shape, dtype=x.dtype) if out is None else out
        for start, b, copies, ones, gemm_in, gemm_out, acc, partials, wide, crop in steps:
            for dst, src in copies:
                xp.copyto(dst, src)
            if self.ones:
                ones.fill(1)
            dst = y[start : start + b]
            res = None if residual is None else residual[start : start + b]
            if self.direct:
                xp.matmul(w, gemm_in, out=dst.reshape(b, self.c_out, self.length))
                _epilogue(xp, dst, None, res, relu)
                continue
            xp.matmul(w, gemm_in, out=gemm_out)
            for p in partials:
                xp.add(acc, p, out=acc)
            if self.pool is not None:  # ReLU commutes with the max: it runs on the pooled output
                _max_pool_into(xp, wide, self.pool, dst)
                if relu:
                    _relu_into(xp, dst, dst)
            else:
                _store(xp, crop, dst, res, relu)
        return y


class _HwcRun(_Run):
    """A small 2-d numpy conv (planes of at most ``_HWC_MAX_PLANE`` inputs) for one signature, through
    a channels-last copy: in a zero-bordered (N, Hp, Wp, C) buffer every window is kh runs of kw * C
    contiguous values, so the window matrix (N * L, K) is copied in long runs with no junk columns
    (what NCHW windows cost on small planes: runs of wo values, or rows' junk), the GEMM is
    (B * L, K) @ (K, C_out), and the epilogue reads its transpose into the NCHW output. With a bias
    the window matrix gets a column of ones and the weights the bias as one more row."""

    def __init__(
        self,
        xp: ModuleType,
        xshape: Ints,
        wshape: Ints,
        dtype: Any,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        bias: bool,
    ) -> None:
        n, c, h, w = xshape
        c_out, _, kh, kw = wshape
        ho, wo = _out_sizes((h, w), (kh, kw), stride, padding, dilation)
        self.out, self.c_out, self.ones, self.dtype = (ho, wo), c_out, int(bias), dtype
        self.y_shape = (n, c_out, ho, wo)
        self.depth = c * kh * kw
        self.padded = (n, h + 2 * padding[0], w + 2 * padding[1], c)
        self.interior = (slice(None), slice(padding[0], padding[0] + h), slice(padding[1], padding[1] + w))
        self.buf_key = ("hwc", xshape, padding, xp.dtype(dtype).str)
        self.geometry = (kh, kw, stride, dilation)
        length, rows = ho * wo, self.depth + self.ones
        per = max(1, min(n, _ROWS_CHUNK // (rows * length)))
        item = xp.dtype(dtype).itemsize
        self.scratch = (("cols", per * length * rows * item), ("prod", per * length * c_out * item))
        self.chunks = tuple((s, min(per, n - s)) for s in range(0, n, per))
        self.buf_size = math.prod(self.padded)

    def _build(self, xp: ModuleType, buf: Array, bases: tuple[Array, ...]) -> tuple[Any, ...]:
        """(fill, steps): the padded buffer's interior, and per chunk its window copy, ones column,
        GEMM operands and the GEMM result read in NCHW order."""
        bases = (buf, *bases)
        n, hp, wp, c = self.padded
        kh, kw, (sh, sw), (dh, dw) = self.geometry
        (ho, wo), dt, c_out = self.out, self.dtype, self.c_out
        length, depth, rows = ho * wo, self.depth, self.depth + self.ones
        fill = buf.reshape(self.padded)[self.interior]
        windows = _view(
            xp, buf, dt, 0, (n, ho, wo, kh, kw, c), (hp * wp * c, sh * wp * c, sw * c, dh * wp * c, dw * c, 1)
        )
        steps = []
        for start, b in self.chunks:
            cols = _view(xp, bases[1], dt, 0, (b * length, rows), (rows, 1))
            dst = cols[:, :depth].reshape(b, ho, wo, kh, kw, c)
            prod = _view(xp, bases[2], dt, 0, (b * length, c_out), (c_out, 1))
            # the GEMM's (B * L, C_out) result read as (B, C_out, ho, wo): the NCHW order
            result = _view(xp, bases[2], dt, 0, (b, c_out, ho, wo), (length * c_out, 1, wo * c_out, c_out))
            steps.append((start, b, dst, windows[start : start + b], cols[:, depth:], cols, prod, result))
        return fill, steps

    weights_key = "hwc"

    def _relay(self, xp: ModuleType, weight: Array, bias: Array | None) -> Array:
        """The GEMM's weights: ((di, dj, c) [+ bias], C_out)."""
        w = xp.empty((self.depth + self.ones, self.c_out), dtype=weight.dtype)
        w[: self.depth] = weight.transpose(2, 3, 1, 0).reshape(self.depth, self.c_out)
        if bias is not None:
            w[self.depth] = bias
        return w

    def __call__(
        self,
        xp: ModuleType,
        x: Array,
        weight: Array,
        bias: Array | None,
        residual: Array | None,
        relu: bool,
        weight_cache: dict[str, Any] | None,
        out: Array | None = None,
    ) -> Array:
        _, fill, steps = self._state(xp, x)
        xp.copyto(fill, x.transpose(0, 2, 3, 1))
        w = self._weights(xp, weight, bias, weight_cache)
        y = xp.empty((x.shape[0], self.c_out) + self.out, dtype=x.dtype) if out is None else out
        for start, b, dst, src, ones, cols, prod, result in steps:
            xp.copyto(dst, src)
            if self.ones:
                ones.fill(1)
            xp.matmul(cols, w, out=prod)
            res = None if residual is None else residual[start : start + b]
            _store(xp, result, y[start : start + b], res, relu)
        return y


_RUNS_KEPT = 64  # per thread, least recently used out


def _rows_run(
    xp: ModuleType,
    x: Array,
    wshape: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    pool: Ints | None,
    bias: bool,
) -> _RowsRun | _HwcRun | None:
    """The rows (or channels-last) conv for this signature (made once per thread, the ``_RUNS_KEPT`` most recent kept),
    or None where im2col serves it better: a 1x1 unit-stride conv (no window copy at all), or junk
    columns past ``_ROWS_MAX_WASTE`` without ``shifts`` or a pool to pay for them."""
    key = (
        x.shape,
        wshape,
        x.dtype,
        stride,
        padding,
        dilation,
        pool,
        bias,
        (_ROWS_MAX_WASTE, _SHIFTS_MIN_DEPTH, _ROWS_CHUNK, _HWC_MAX_PLANE),  # tests change these
    )
    runs = getattr(_scratch_local, "runs", None)
    if runs is None:
        runs = _scratch_local.runs = {}
    run: _RowsRun | _HwcRun | None
    if key in runs:
        run = runs.pop(key)
    else:
        plan = _rows_plan(tuple(x.shape), tuple(wshape), stride, padding, dilation, _ROWS_CHUNK)
        pointwise = tuple(wshape[2:]) == (1, 1) and stride == (1, 1) and not any(padding)
        narrow = plan.grid[1] <= _ROWS_MAX_WASTE * plan.out[1]
        shifts = not pointwise and stride == (1, 1) and x.shape[1] * wshape[3] >= _SHIFTS_MIN_DEPTH
        run = None
        if 0 in x.shape or 0 in tuple(wshape) or min(plan.out) <= 0:
            pass  # nothing to compute, or no window fits: im2col's checks and empty results
        elif pool is None and x.shape[2] * x.shape[3] <= _HWC_MAX_PLANE and tuple(wshape[2:]) != (1, 1):
            run = _HwcRun(xp, x.shape, wshape, x.dtype, stride, padding, dilation, bias)
        elif shifts or pool is not None or (narrow and not pointwise):
            run = _RowsRun(xp, x.shape, wshape, x.dtype, stride, padding, dilation, shifts, pool, bias)
        while len(runs) >= _RUNS_KEPT:
            runs.pop(next(iter(runs)))
    runs[key] = run
    return run


# Batch-parallel runs. numpy's BLAS threads split each GEMM, but the window copies, padding and
# epilogues around it run on the calling thread; numpy releases the GIL in those copies, ufuncs and
# BLAS, so with T > 1 BLAS threads a batch of n >= 2 images is split into up to min(T, n) slices, each run
# whole (copies, GEMMs, epilogue) on one thread of a small persistent pool (the caller takes the
# first), every thread with its own run and workspaces (the thread-local caches above), writing its
# slice of one output. BLAS is held at one thread for the parallel region (process-wide, through
# threadpoolctl: its own threads would fight the pool's for the cores), restored after. The BLAS thread
# count is read on every call (a ctypes call), so ``threadpool_limits(1)`` around a call, or
# OPENBLAS_NUM_THREADS=1, keeps today's one-thread path exactly. Without threadpoolctl (burn-core's
# dependency, but not imported until a batch asks: a missing one is no error) or without threads
# (emscripten) everything runs on the caller. A batch splits into _PARALLEL_MAX_SLICES at most.
# A batch too small to split still runs with BLAS at one thread: OpenBLAS's threads spin for a while
# after each multithreaded call, and split convs next to BLAS-threaded ones fight those spinning
# threads for the cores (the benchmark at batch 32 on 2 cores: 43 ms all split, 54 ms none, 85 ms
# with the small convs left to BLAS's threads). One image keeps BLAS's threads, at most
# _ONE_IMAGE_BLAS_THREADS of them (below): its GEMMs are too small to split by hand (split by
# rows, each thread packs the whole weight matrix: measured slower).
# Measured again with the best split of one image (bands of output rows, each thread copying and
# packing only its band's windows in workspaces of that size; output channels for channels-last runs;
# a two-lock hand-off, 12 us a region against the executor's 27): the ResNet-like benchmark's
# 32x32x32 3x3 conv 316-328 us against 227-232 on BLAS's 2 threads, the stem with its pool 257 against
# 204, every other conv slower too. Two threads' element-wise numpy work (window copies, epilogue, pool)
# hardly overlaps on the 2-core machine (np.add over 200K values: 17 us alone, 42 us two at once; a
# 256^3 GEMM: 374 alone, 405 two at once), so only the GEMM halves gain, and OpenBLAS splits those
# better itself (148 us against 169 for the conv's three GEMMs).
# Measured on a 16-core host (the H200 machine, OpenBLAS 0.3.34, the ResNet-like benchmark, ms per
# forward at 1/2/4/8/16 BLAS threads): batch 32 74/54/32/26/43, so more than 8 slices lose to the
# GIL the slices' Python shares (cpu time 118 -> 145 ms); batch 1 3.75/3.27/2.99/3.04/4.06, its small
# GEMMs slower on OpenBLAS's 16 threads than on 4 (whose spinning threads also cost 60 ms of cpu).
_PARALLEL_MIN_MACS = 1 << 22  # multiply-adds per slice at least (about 0.1 ms of GEMM: pays a hand-off)
_PARALLEL_MAX_SLICES = 8  # slices of one batch at most
_ONE_IMAGE_BLAS_THREADS = 4  # BLAS threads at most for one image's convs


class _Parallel:
    """The BLAS libraries' controllers (threadpoolctl), a pool of worker threads and the count of
    parallel regions open (BLAS is held at one thread while any is)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blas: list[Any] | None = None  # None: not looked up yet
        self.pool: Any = None
        self.workers = 0
        self.open = 0
        self.saved: list[int] = []
        self.local = threading.local()  # .inside: this thread runs a slice (no nested regions)

    def threads(self) -> int:
        """numpy's BLAS thread count now (1 without threadpoolctl, or inside a parallel region)."""
        if getattr(self.local, "inside", False):
            return 1
        blas = self.blas
        if blas is None:
            blas = self._lookup()
        if not blas:
            return 1
        with self.lock:
            if self.open:  # another thread's region holds BLAS at one thread: share its count
                return max(self.saved, default=1)
            return max(lib.get_num_threads() or 1 for lib in blas)

    def _lookup(self) -> list[Any]:
        found: list[Any] = []
        try:
            import sys

            if sys.platform != "emscripten":
                from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped,import-not-found,unused-ignore]

                found = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        except Exception:  # not installed, or a library it cannot drive: no parallel regions
            found = []
        self.blas = found
        return found

    def map(self, tasks: list[Any]) -> None:
        """Run the callables ``tasks`` at once: the first on this thread, the rest on the pool; BLAS
        at one thread meanwhile. Waits for all; the first exception raised is raised here."""
        import concurrent.futures

        with self.lock:
            if len(tasks) > 1 and (self.pool is None or self.workers < len(tasks) - 1):
                old = self.pool
                self.workers = max(len(tasks) - 1, self.workers)
                self.pool = concurrent.futures.ThreadPoolExecutor(
                    self.workers, thread_name_prefix="burn-conv"
                )
                if old is not None:
                    old.shutdown(wait=False)
            pool = self.pool
        with self.held(1):
            futures = [pool.submit(self._inside, task) for task in tasks[1:]]
            error: BaseException | None = None
            try:
                self._inside(tasks[0])
            except BaseException as exc:  # wait for the others before raising: they write the output
                error = exc
            for future in futures:
                failed = future.exception()
                if error is None:
                    error = failed
            if error is not None:
                raise error

    @contextlib.contextmanager
    def held(self, count: int) -> Iterator[None]:
        """BLAS at ``count`` threads at most while the block runs (process-wide; regions nest and
        overlap across threads: the first sets the count, the last out restores it)."""
        with self.lock:
            if not self.open:
                self.saved = [lib.get_num_threads() or 1 for lib in self.blas or ()]
                for lib, now in zip(self.blas or (), self.saved):
                    lib.set_num_threads(min(now, count))
            self.open += 1
        try:
            yield
        finally:
            with self.lock:
                self.open -= 1
                if not self.open:
                    for lib, saved in zip(self.blas or (), self.saved):
                        lib.set_num_threads(saved)

    def _inside(self, task: Any) -> None:
        local = self.local
        before = getattr(local, "inside", False)
        local.inside = True
        try:
            task()
        finally:
            local.inside = before


_parallel = _Parallel()


def _after_fork() -> None:
    """A forked child has none of the parent's threads: a new pool (made on first use) and lock."""
    global _parallel
    _parallel = _Parallel()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork)


def _batch_slices(n: int, macs: int, threads: int) -> list[tuple[int, int]]:
    """The (start, stop) batch slices of a conv of ``macs`` multiply-adds per image: up to
    ``threads`` of them, each of ``_PARALLEL_MIN_MACS`` at least, as even as the batch allows."""
    parts = min(threads, n, _PARALLEL_MAX_SLICES, max(1, n * macs // max(1, _PARALLEL_MIN_MACS)))
    bounds = [n * i // parts for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _out_sizes(spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    return tuple(pool_out_size(*a, False) for a in zip(spatial, kernel, stride, padding, dilation))


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
        return self.conv_fused(x, weight, bias, stride, padding, dilation, groups)

    def conv_fused(
        self,
        x: Array,
        weight: Array,
        bias: Array | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
        residual: Array | None = None,
        relu: bool = False,
        pool: Ints | None = None,
        weight_cache: dict[str, Any] | None = None,
    ) -> Array:
        """``conv`` with an epilogue on its fresh result, in this order: ``+ residual`` (an array of the
        output's shape), ``max(., 0)`` when ``relu``, and a max pool of kernel = stride ``pool``
        (floor mode, unpadded; 2-d only, not with ``residual``). One pass over the output instead of
        one per op, and the pool reads the GEMM's result while it is in cache.

        ``weight_cache``: a dict the caller keeps for this weight, where a re-laid-out copy of it is
        kept while ``weight`` is the very same array; only for weights never modified in place."""
        xp = self.xp
        if pool is not None and (residual is not None or x.ndim != 4):
            raise ValueError(f"conv_fused: pool={pool} needs a 2-d conv and no residual")
        if xp.__name__ == "numpy" and x.ndim == 4 and groups == 1 and x.dtype.kind == "f":
            run = _rows_run(
                xp, x, weight.shape, tuple(stride), tuple(padding), tuple(dilation), pool, bias is not None
            )
            if run is not None:
                threads = _parallel.threads()
                if x.shape[0] == 1 and threads > _ONE_IMAGE_BLAS_THREADS:
                    with _parallel.held(_ONE_IMAGE_BLAS_THREADS):
                        return run(xp, x, weight, bias, residual, relu, weight_cache)
                if threads > 1 and x.shape[0] > 1:
                    macs = (
                        weight.shape[0]
                        * math.prod(weight.shape[1:])
                        * math.prod(run.y_shape[2:])
                        * (math.prod(pool) if pool else 1)
                    )
                    # one slice too: on this thread with BLAS at one thread (see ``_Parallel``)
                    slices = _batch_slices(x.shape[0], macs, threads)
                    geometry = (tuple(stride), tuple(padding), tuple(dilation))
                    epilogue = (residual, relu, pool)
                    return self._conv_split(
                        x, weight, bias, geometry, epilogue, weight_cache, run.y_shape, slices
                    )
                return run(xp, x, weight, bias, residual, relu, weight_cache)
        y = self._conv_im2col(x, weight, bias, stride, padding, dilation, groups)
        _epilogue(xp, y, None, residual, relu)
        if pool is not None:
            pooled = xp.empty(y.shape[:2] + (y.shape[2] // pool[0], y.shape[3] // pool[1]), dtype=y.dtype)
            _max_pool_into(xp, y, pool, pooled)
            return pooled
        return y

    def _conv_split(
        self,
        x: Array,
        weight: Array,
        bias: Array | None,
        geometry: tuple[Ints, Ints, Ints],
        epilogue: tuple[Array | None, bool, Ints | None],
        weight_cache: dict[str, Any] | None,
        y_shape: Ints,
        slices: list[tuple[int, int]],
    ) -> Array:
        """A 2-d conv run whole on each batch slice, the slices at once (``_Parallel.map``): each
        thread takes its own run (and workspaces: the caches are per thread) for its slice's shape
        and writes its part of y. A slice of a signature the runs serve is served too (the choice
        does not depend on the batch size)."""
        xp = self.xp
        residual, relu, pool = epilogue
        y = xp.empty(y_shape, dtype=x.dtype)

        def task(start: int, stop: int) -> None:
            xs = x[start:stop]
            run = _rows_run(xp, xs, weight.shape, *geometry, pool, bias is not None)
            assert run is not None
            res = None if residual is None else residual[start:stop]
            run(xp, xs, weight, bias, res, relu, weight_cache, out=y[start:stop])

        _parallel.map([functools.partial(task, start, stop) for start, stop in slices])
        return y

    def _conv_im2col(
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
            pool_out_size(s, k, st, p, d, ceil_mode)
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
            pool_out_size(s, k, st, p, 1, ceil_mode) for s, k, st, p in zip(spatial, kernel, stride, padding)
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
