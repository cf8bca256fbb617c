"""The 2-d numpy conv runs: ``_RowsRun`` (rows of whole padded planes with stride phases, or kw column
shifts with kh GEMMs) and ``_HwcRun`` (a channels-last window matrix for small planes), each made once
per signature and thread (``_rows_run``), with bias, residual, ReLU and max pool in the epilogue
(``_store``, ``_epilogue``, ``_max_pool_into``).
"""

from __future__ import annotations

import math
import operator
from types import ModuleType
from typing import Any

from ..backend import conv_out_sizes_padded
from ._conv_plans import _rows_plan
from ._workspace import _kept_zeros, _scratch_base, _scratch_local, _view

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one: these formulations run on either namespace (``xp``)

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


def _chunks(n: int, per: int) -> tuple[tuple[int, int], ...]:
    """(first image, images) of each GEMM chunk of a batch of ``n``, ``per`` images a chunk."""
    return tuple((s, min(per, n - s)) for s in range(0, n, per))


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
        self.chunks = _chunks(n, per)
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
        ho, wo = conv_out_sizes_padded((h, w), (kh, kw), stride, padding, dilation)
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
        self.chunks = _chunks(n, per)
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
