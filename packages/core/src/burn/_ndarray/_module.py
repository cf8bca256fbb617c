"""numpy overrides of the module ops: 2-d conv (``conv_fused``, which ``conv`` calls) through a run
made once per signature (``_conv_runs``): rows of whole padded planes with stride phases, kw column
shifts with kh GEMMs, or a channels-last window matrix for small planes, with bias, residual, ReLU and
max pool in the epilogue (with more than one BLAS thread, a batch split over a small thread pool:
``_threads``); other convs via im2col (a strided window view copied into a reused workspace, padding
in kept zero-bordered buffers: ``_conv_plans``, ``_workspace``) + a few large BLAS matmuls per batch,
conv_transpose via matmul + col2im (shifted whole-plane adds at unit stride), except an ungrouped
2-d one at unit stride, which runs as the forward conv with the kernel flipped, and the ungrouped
weight gradient as GEMMs over windows copied once (both ``_conv_grads``). Pools: ``_pool``.
Grouped and depthwise 2-d convs (forward, conv_transpose for their input gradient, conv_weight_grad) run
compiled kernels (``burn._native._ops_conv``, ``_ops_conv_grad``) where a C compiler works and the conv
is shallow and large enough, numpy's im2col otherwise.

Written against ``self.xp`` (numpy here) so a CuPy-based backend can reuse the class with cupy. Output
sizes come from ``burn.backend``'s shape rules, the homes every backend shares.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any

from ..backend import conv_out_sizes_padded, conv_transpose_out_sizes
from . import _conv_grads, _threads
from ._conv_plans import _conv_plan, _conv_windows, _pad, _padded, _windows
from ._conv_runs import _epilogue, _max_pool_into, _rows_run
from ._pool import NdArrayPoolOps, _offsets, _tap
from ._workspace import _scratch

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one: these formulations run on either namespace (``xp``)

# im2col: images share one GEMM, up to a window matrix of _COLS_BUDGET elements (16 MiB of float32,
# reused between calls) and no more images than give it _GEMM_MIN_COLUMNS columns. Few large GEMMs, not
# one per image: each multithreaded BLAS call synchronises its threads, and on a loaded machine a
# thread that lost its core stalls every call (batch 32 on 2 busy cores: 240 ms per-image vs 75 ms in
# three GEMMs for a 32-channel 32x32 conv; the same within noise on one thread)
_COLS_BUDGET = 1 << 22
_GEMM_MIN_COLUMNS = 1 << 14


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


def _clamp(relu: bool, clip: tuple[float, float] | None) -> tuple[float, float] | None:
    """The (lo, hi) bounds of ``max(., 0)`` when ``relu`` followed by ``clip``; None for neither."""
    if clip is None:
        return (0.0, math.inf) if relu else None
    return (max(clip[0], 0.0), clip[1]) if relu else clip


def _clipped(xp: ModuleType, y: Array, clip: tuple[float, float] | None) -> Array:
    """y clipped to ``clip`` in place (a conv's fresh result; one pass, no allocation)."""
    if clip is not None:
        xp.clip(y, clip[0], clip[1], out=y)
    return y


def _pointwise(
    xp: ModuleType,
    x: Array,
    weight: Array,
    bias: Array | None,
    residual: Array | None,
    clamp: tuple[float, float] | None,
) -> Array | None:
    """A 1x1 unit-stride unpadded conv (numpy, float): one stacked GEMM, then bias, residual and clip in
    one compiled pass (``burn._native._ops_epilogue``; numpy: one pass each, its per-channel bias add
    off its SIMD loop). None where that kernel is not available (the im2col path runs). Blocks of a
    few images, each epilogue right after its GEMM, measured no faster (2 cores, one thread)."""
    from .._native import _ops, _ops_epilogue

    if not _ops.enabled():
        return None
    n, c, h, w = x.shape
    co = weight.shape[0]
    with _threads.small_gemm(co * c * h * w):  # one GEMM per image
        y = xp.matmul(weight.reshape(co, c), xp.ascontiguousarray(x).reshape(n, c, h * w))
    res = None if residual is None else xp.ascontiguousarray(residual, dtype=x.dtype).reshape(y.shape)
    if not _ops_epilogue.channel_epilogue(y, bias, res, clamp):
        return None
    return y.reshape(n, co, h, w)


class NdArrayModuleOps(NdArrayPoolOps):  # NdArrayBackend(NdArrayModuleOps, Backend): a plain mixin's MRO
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
        clip: tuple[float, float] | None = None,
    ) -> Array:
        """``conv`` with an epilogue on its fresh result, in this order: ``+ residual`` (an array of the
        output's shape), ``max(., 0)`` when ``relu``, ``clip(., lo, hi)`` for ``clip = (lo, hi)`` (a
        ReLU6: (0, 6)), and a max pool of kernel = stride ``pool`` (floor mode, unpadded; 2-d only, not
        with ``residual``). One pass over the output instead of one per op, and the pool reads the
        GEMM's result while it is in cache; a depthwise conv's ReLU or clip runs inside its kernel.

        ``weight_cache``: a dict the caller keeps for this weight, where a re-laid-out copy of it is
        kept while ``weight`` is the very same array; only for weights never modified in place."""
        xp = self.xp
        if pool is not None and (residual is not None or x.ndim != 4):
            raise ValueError(f"conv_fused: pool={pool} needs a 2-d conv and no residual")
        if xp.__name__ == "numpy" and x.ndim == 4 and groups > 1:
            # grouped and depthwise: the compiled direct kernel where a C compiler works and the conv
            # is large enough (``burn._native._ops``), the epilogue on its fresh result
            from .._native import _ops_conv

            clamp = _clamp(relu, clip) if residual is None else None
            geometry = (tuple(stride), tuple(padding), tuple(dilation))
            y = _ops_conv.conv2d(x, weight, bias, *geometry, groups, clamp=clamp)
            if y is not None:
                if clamp is not None:
                    return self._conv_epilogue(y, None, False, pool)
                return _clipped(xp, self._conv_epilogue(y, residual, relu, pool), clip)
        if xp.__name__ == "numpy" and x.ndim == 4 and groups == 1 and x.dtype.kind == "f":
            run = _rows_run(
                xp, x, weight.shape, tuple(stride), tuple(padding), tuple(dilation), pool, bias is not None
            )
            if run is not None:
                threads = _threads._parallel.threads()
                if x.shape[0] == 1 and threads > 1:
                    macs = weight.shape[0] * math.prod(weight.shape[1:]) * math.prod(run.y_shape[2:])
                    macs *= math.prod(pool) if pool else 1
                    cap = 1 if macs < _threads._SMALL_GEMM_MACS else _threads._ONE_IMAGE_BLAS_THREADS
                    if threads > cap:
                        with _threads._parallel.held(cap):
                            y = run(xp, x, weight, bias, residual, relu, weight_cache)
                            return _clipped(xp, y, clip)
                if threads > 1 and x.shape[0] > 1:
                    macs = (
                        weight.shape[0]
                        * math.prod(weight.shape[1:])
                        * math.prod(run.y_shape[2:])
                        * (math.prod(pool) if pool else 1)
                    )
                    # one slice too: on this thread with BLAS at one thread (see ``_Parallel``)
                    slices = _threads._batch_slices(x.shape[0], macs, threads)
                    geometry = (tuple(stride), tuple(padding), tuple(dilation))
                    epilogue = (residual, relu, pool)
                    y = self._conv_split(
                        x, weight, bias, geometry, epilogue, weight_cache, run.y_shape, slices
                    )
                    return _clipped(xp, y, clip)
                return _clipped(xp, run(xp, x, weight, bias, residual, relu, weight_cache), clip)
        if (
            xp.__name__ == "numpy"
            and x.ndim == 4
            and groups == 1
            and pool is None
            and tuple(weight.shape[2:]) == (1, 1)
            and tuple(stride) == (1, 1)
            and not any(padding)
            and x.dtype.kind == "f"
            and weight.dtype == x.dtype
        ):
            y = _pointwise(xp, x, weight, bias, residual, _clamp(relu, clip))
            if y is not None:
                return y
        y = self._conv_im2col(x, weight, bias, stride, padding, dilation, groups)
        return _clipped(xp, self._conv_epilogue(y, residual, relu, pool), clip)

    def _conv_epilogue(self, y: Array, residual: Array | None, relu: bool, pool: Ints | None) -> Array:
        """``conv_fused``'s epilogue on a fresh conv result y (written in place)."""
        xp = self.xp
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

        _threads._parallel.map([functools.partial(task, start, stop) for start, stop in slices])
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
            y = y.reshape(plan.y_shape)
            _epilogue(xp, y, bias, None, False)  # y is freshly made: safe in place
            return y
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
        if xp.__name__ == "numpy" and x.ndim == 4 and groups > 1:  # a grouped conv's input gradient
            from .._native import _ops_conv_grad

            y = _ops_conv_grad.conv_transpose2d(
                x, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), tuple(dilation), groups
            )
            if y is not None:
                return y
        if xp.__name__ == "numpy":  # unit stride: the forward conv's engine with the kernel flipped
            pads = _conv_grads.transpose_padding(x, weight, stride, padding, output_padding, dilation, groups)
            if pads is not None:
                flipped = _conv_grads.transposed_weight(weight)
                return self.conv_fused(x, flipped, bias, (1,) * len(pads), pads, tuple(dilation), 1)
        n, c_in, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
        c_out_g, kernel = weight.shape[1], tuple(weight.shape[2:])
        c_out, c_in_g = c_out_g * groups, c_in // groups
        out = conv_transpose_out_sizes(spatial, kernel, stride, padding, output_padding, dilation)
        # the uncropped extent (no padding, no output_padding), grown to hold the crop when it reaches past
        zeros = (0,) * len(spatial)
        spread = conv_transpose_out_sizes(spatial, kernel, stride, zeros, zeros, dilation)
        full = tuple(max(f, p + o) for f, p, o in zip(spread, padding, out))
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
        y = xp.ascontiguousarray(y)
        _epilogue(xp, y, bias, None, False)  # a fresh copy: safe in place
        return y

    def conv_weight_grad(
        self,
        x: Array,
        g: Array,
        wshape: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> Array:
        if self.xp.__name__ == "numpy" and x.ndim == 4 and groups > 1:  # compiled where it pays
            from .._native import _ops_conv_grad

            gw = _ops_conv_grad.conv_weight_grad2d(
                x, g, tuple(wshape), tuple(stride), tuple(padding), tuple(dilation), groups
            )
            if gw is not None:
                return gw
        if self.xp.__name__ == "numpy" and groups == 1 and x.dtype.kind == "f":
            return _conv_grads.weight_grad(
                self.xp, x, g, tuple(wshape), tuple(stride), tuple(padding), tuple(dilation)
            )
        return super().conv_weight_grad(x, g, wshape, stride, padding, dilation, groups)

    def unfold4d(self, x: Array, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Array:
        xp = self.xp
        n, c = x.shape[:2]
        out = conv_out_sizes_padded(x.shape[2:], kernel, stride, padding, dilation)
        view = _windows(xp, _pad(xp, x, tuple((p, p) for p in padding), 0), kernel, stride, dilation, out)
        return view.reshape(n, c * math.prod(kernel), math.prod(out))

    def embedding(self, weight: Array, indices: Array) -> Array:
        return self.xp.take(weight, indices, axis=0)
