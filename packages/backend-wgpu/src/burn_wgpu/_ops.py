"""Reductions, matmul, conv, pools, indexing, sort and scans of ``WgpuBackend`` (a mixin over its
data and element-wise methods)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import burn
from burn.backend import Backend, matmul_shape, op_def

from . import _attention, _conv, _matmul, _pool, _reduce, _split
from . import _elementwise as EW
from . import _windows as W
from ._dtypes import ELEM_BYTES, NARROW, WIDE, word_dtype
from ._kernels import index as KI
from ._kernels import matmul as KM
from ._kernels import quant as KQ
from ._kernels import reduce as KR
from ._kernels import scan as KS
from ._kernels import sort as KSORT
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor, contiguous_strides, numel
from ._tuning import tuner

if TYPE_CHECKING:
    from ._executor import Executor

_EMPTY_REDUCE = {"sum": 0, "prod": 1, "all": True, "any": False, "mean": float("nan")}
_SHORT_ROW = 64  # rows up to this long reduce one per thread; longer ones one per workgroup
# dtypes the direct pool kernels take (others: the contract's default)
_POOL_DTYPES = {
    "max": frozenset({burn.float32, burn.float16, burn.int32, burn.uint32, *NARROW}),
    "avg": frozenset({burn.float32, burn.float16}),
}


def _pack(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _acc_dtype(dtype: burn.DType) -> burn.DType:
    return burn.float32 if dtype is burn.float16 else dtype


def as_words(x: WgpuTensor) -> WgpuTensor:
    """x read as the 32-bit dtype its storage holds (int8 as int32, uint8 as uint32): the same view,
    no copy; x itself for every other dtype."""
    dt = word_dtype(x.dtype)
    return x if dt is x.dtype else WgpuTensor(x.storage, x.shape, dt, x.strides, x.offset)


class WgpuOps(Backend):  # WgpuBackend(WgpuOps, Backend): the MRO is the same as for a plain mixin
    ex: Executor

    if TYPE_CHECKING:  # WgpuBackend's data methods

        def empty(self, shape: tuple[int, ...], dtype: burn.DType) -> WgpuTensor: ...

        def contiguous(self, x: WgpuTensor) -> WgpuTensor: ...

        def _copy(self, x: WgpuTensor, out: WgpuTensor | None = None) -> WgpuTensor: ...

    # ------------------------------------------------------------------ helpers
    def _rows(self, x: WgpuTensor, dims: tuple[int, ...]) -> tuple[WgpuTensor, tuple[int, ...], int, int]:
        """x with ``dims`` moved last and made dense: (dense view, perm, rows, row length)."""
        keep = tuple(d for d in range(len(x.shape)) if d not in dims)
        perm = keep + tuple(dims)
        moved = self.permute(x, perm) if perm != tuple(range(len(perm))) else x
        dense = self.contiguous(moved)
        row = numel(tuple(x.shape[d] for d in dims))
        return dense, perm, numel(tuple(x.shape[d] for d in keep)), row

    def _unmove(self, y: WgpuTensor, perm: tuple[int, ...]) -> WgpuTensor:
        inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
        return self.permute(y, inverse) if perm != tuple(range(len(perm))) else y

    # ------------------------------------------------------------------ reductions
    def reduce(self, op: str, x: WgpuTensor, dims: tuple[int, ...], keepdim: bool) -> WgpuTensor:
        kept = op_def(op).out_shape(x.shape, dims, keepdim)
        dense, _, rows, n = self._rows(x, dims)
        kind = "sum" if op == "mean" else op
        out_dt = _acc_dtype(x.dtype) if op == "mean" else x.dtype
        if n == 0:
            y = self.full((rows,), _EMPTY_REDUCE[op], out_dt)
        else:
            y = self._reduce_rows(kind, dense, rows, n, out_dt)
        if op == "mean":
            y = self.binary("div", y, float(n)) if n else y
            y = self.cast(y, x.dtype)
        return self.reshape(y, kept) if kept != y.shape else y

    def _reduce_rows(self, op: str, x: WgpuTensor, rows: int, n: int, out_dt: burn.DType) -> WgpuTensor:
        """``op`` over each of ``rows`` dense rows of ``n`` elements of x (bound through a window of a
        buffer over the binding limit, or split where the rows span more: ``_split.reduce_rows``)."""
        limit = self.pool.max_binding  # type: ignore[attr-defined]
        if rows and n and not W.fits(_split.dense_rows(x, rows, n), limit):
            return _split.reduce_rows(self, op, x, rows, n, out_dt, _acc_dtype(x.dtype), self._reduce_rows)
        xb, offset = W.window(_split.dense_rows(x, rows, n), limit)
        if n <= _SHORT_ROW or rows == 0:
            out = self.empty((rows,), out_dt)
            if rows:
                kernel = KR.render(op, x.dtype, out_dt, True)
                self.ex.dispatch(kernel, [out.buffer, xb], _pack(rows, n, 1, n, offset), grid(rows))
            return out
        if _reduce.should_tune_reduce(rows, n):  # long rows: workgroup size and chunk tuned per shape
            return tuner(self).run(_reduce.REDUCE, self, op, x, rows, n, out_dt)
        chunks = -(-n // KR.CHUNK)
        part_dt = out_dt if chunks == 1 else _acc_dtype(x.dtype)
        part = self.empty((rows, chunks), part_dt)
        kernel = KR.render(op, x.dtype, part_dt, False)
        self.ex.dispatch(
            kernel, [part.buffer, xb], _pack(rows, n, chunks, KR.CHUNK, offset), grid(rows * chunks, 1)
        )
        if chunks == 1:
            return self.reshape(part, (rows,))
        return self._reduce_rows(op, part, rows, chunks, out_dt)

    def arg_reduce(self, op: str, x: WgpuTensor, dim: int, keepdim: bool) -> WgpuTensor:
        kept = op_def(op).out_shape(x.shape, dim, keepdim)
        dense, _, rows, n = self._rows(x, (dim,))
        return self.reshape(self._arg_rows(op, dense, rows, n), kept)

    def _arg_rows(self, op: str, x: WgpuTensor, rows: int, n: int) -> WgpuTensor:
        """int32 argmax/argmin of each of ``rows`` dense rows of ``n`` elements of x."""
        limit = self.pool.max_binding  # type: ignore[attr-defined]
        if rows and n and not W.fits(_split.dense_rows(x, rows, n), limit):
            return _split.arg_reduce_rows(self, op, x, rows, n, self._arg_rows)
        out = self.empty((rows,), burn.int32)
        if rows:
            xb, offset = W.window(_split.dense_rows(x, rows, n), limit)
            per_thread = n <= _SHORT_ROW
            kernel = KR.render_arg(op, x.dtype, per_thread)
            self.ex.dispatch(
                kernel, [out.buffer, xb], _pack(rows, n, 0, 0, offset), grid(rows, 256 if per_thread else 1)
            )
        return out

    # ------------------------------------------------------------------ matmul
    def matmul(self, a: WgpuTensor, b: WgpuTensor) -> WgpuTensor:
        """Batched matmul through the tile shape the autotuner chose for this case; narrow ints as
        their 32-bit words, the product wrapped into their dtype (NumPy's int8 @ int8 in int8).
        Operands or a product over one storage binding multiply in blocks (``_split.matmul_blocks``)."""
        limit = self.pool.max_binding  # type: ignore[attr-defined]
        out_bytes = numel(matmul_shape(a.shape, b.shape)) * ELEM_BYTES[a.dtype]
        if a.storage.nbytes > limit or b.storage.nbytes > limit or out_bytes > limit:
            return _split.matmul_blocks(self, a, b, limit)
        if a.dtype in NARROW:
            return self.cast(self.matmul(as_words(a), as_words(b)), a.dtype)
        if a.dtype in WIDE:  # 64-bit: the plain kernel, each output summing its K products in order
            return self.matmul_tiled(a, b, 0, 0)
        if _matmul.should_tune(a, b):
            return tuner(self).run(_matmul.MATMUL, self, a, b)
        m, k = a.shape[-2:]
        if KM.is_small(m, b.shape[-1], k):
            return self.matmul_tiled(a, b, 0, 0)
        return self.matmul_tiled(a, b, KM.TILE, KM.TK)

    def quantized_matmul(self, a: WgpuTensor, w: WgpuTensor) -> WgpuTensor:
        """int8-valued a @ w with exact int32 accumulation (``_kernels.quant``: packed int8 tiles)."""
        return KQ.quantized_matmul(self, a, w)

    def matmul_tiled(self, a: WgpuTensor, b: WgpuTensor, tile: int, tk: int) -> WgpuTensor:
        """Batched matmul with one tile shape (``_kernels.matmul.CONFIGS``; tile 0: the kernel for
        small products, one invocation per output)."""
        *ba, m, k = a.shape
        *bb, _, n = b.shape
        shape = matmul_shape(a.shape, b.shape)
        batch = shape[:-2]
        out = self.empty(shape, a.dtype)
        count = numel(batch)
        if count == 0 or m == 0 or n == 0:
            return out
        sa = EW.broadcast_strides(self._batch_view(a, len(ba)), batch)
        sb = EW.broadcast_strides(self._batch_view(b, len(bb)), batch)
        cshape, (sa, sb) = EW.collapse(batch, [sa, sb])
        nb = len(cshape)
        inner = (a.offset, b.offset, a.strides[-2], a.strides[-1], b.strides[-2], b.strides[-1])
        if tile:
            kernel = KM.render(a.dtype, nb, tile, tk)
            gx, gy = -(-n // tile), -(-m // tile)
        else:
            kernel = KM.render_small(a.dtype, nb)
            gx, gy = -(-(m * n) // 64), 1
        for base in range(0, count, 65535):
            meta = _pack(m, n, k, base, *inner, *cshape, *sa, *sb)
            self.ex.dispatch(
                kernel, [out.buffer, a.buffer, b.buffer], meta, (gx, gy, min(65535, count - base))
            )
        return out

    # ------------------------------------------------------------------ conv
    def conv(
        self,
        x: WgpuTensor,
        weight: WgpuTensor,
        bias: WgpuTensor | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> WgpuTensor:
        """2-d float convolutions through the tuned conv family (``_conv.CONV2D``: im2col + tuned
        matmul, implicit GEMM, strided slices); other ranks and dtypes: the contract's default."""
        if len(x.shape) == 4 and x.dtype.is_float and x.dtype not in WIDE and weight.dtype is x.dtype:
            return _conv.conv2d(self, x, weight, bias, stride, padding, dilation, groups)
        return super().conv(x, weight, bias, stride, padding, dilation, groups)

    # ------------------------------------------------------------------ pooling
    def _pool(
        self,
        op: str,
        x: WgpuTensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        **flags: bool,
    ) -> Any:
        """1-d and 2-d pools through the tuned direct kernels (``_pool.POOL``), a 1-d pool as a
        2-d one of height 1; None where the direct kernels do not apply (3-d, other dtypes)."""
        if len(kernel) not in (1, 2) or x.dtype not in _POOL_DTYPES[op]:
            return None
        if len(kernel) == 2:
            return _pool.pool2d(self, op, x, kernel, stride, padding, dilation, **flags)
        n, c, length = x.shape
        y = _pool.pool2d(
            self,
            op,
            self.reshape(x, (n, c, 1, length)),
            (1, *kernel),
            (1, *stride),
            (0, *padding),
            (1, *dilation),
            **flags,
        )
        if op == "max":
            values, index = y
            return self.reshape(values, values.shape[:2] + values.shape[3:]), self.reshape(
                index, index.shape[:2] + index.shape[3:]
            )
        return self.reshape(y, y.shape[:2] + y.shape[3:])

    def max_pool(
        self,
        x: WgpuTensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        ceil_mode: bool,
    ) -> tuple[WgpuTensor, WgpuTensor]:
        """1-d/2-d max pools with the tuned direct kernel (values and int32 indices: the first
        maximum in window order, flattened over the input's spatial dims); 3-d: the default."""
        out = self._pool(
            "max", x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, count_include_pad=False
        )
        if out is None:
            return super().max_pool(x, kernel, stride, padding, dilation, ceil_mode)
        values, index = out
        return values, index

    def avg_pool(
        self,
        x: WgpuTensor,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> WgpuTensor:
        """1-d/2-d float average pools with the tuned direct kernel; 3-d: the default."""
        ones = (1,) * len(kernel)
        out = self._pool(
            "avg", x, kernel, stride, padding, ones, ceil_mode=ceil_mode, count_include_pad=count_include_pad
        )
        if out is None:
            return super().avg_pool(x, kernel, stride, padding, count_include_pad, ceil_mode)
        result: WgpuTensor = out
        return result

    # ------------------------------------------------------------------ attention
    def attention(
        self,
        q: WgpuTensor,
        k: WgpuTensor,
        v: WgpuTensor,
        mask: WgpuTensor | None,
        is_causal: bool,
        scale: float,
    ) -> tuple[WgpuTensor, WgpuTensor]:
        """Flash-style forward (``_attention``): out and the float32 row log-sum-exp, one dispatch;
        head dims over 128 and other dtypes: the default."""
        if not _attention.supported(q, k, v, mask, is_causal):
            return super().attention(q, k, v, mask, is_causal, scale)
        return _attention.forward(self, q, k, v, mask, is_causal, scale)

    def attention_backward(
        self,
        q: WgpuTensor,
        k: WgpuTensor,
        v: WgpuTensor,
        mask: WgpuTensor | None,
        is_causal: bool,
        scale: float,
        out: WgpuTensor,
        lse: WgpuTensor,
        grad: WgpuTensor,
    ) -> tuple[WgpuTensor, WgpuTensor, WgpuTensor]:
        """Flash-style backward (``_attention``): P recomputed from lse in the dq and dk/dv kernels."""
        if not _attention.supported(q, k, v, mask, is_causal):
            return super().attention_backward(q, k, v, mask, is_causal, scale, out, lse, grad)
        return _attention.backward(self, q, k, v, mask, is_causal, scale, out, lse, grad)

    @staticmethod
    def _batch_view(x: WgpuTensor, nb: int) -> WgpuTensor:
        return x.view(x.shape[:nb], x.strides[:nb], x.offset)

    # ------------------------------------------------------------------ indexing
    def _index_int(self, index: WgpuTensor) -> WgpuTensor:
        index = as_words(index)
        return index if index.dtype in (burn.int32, burn.uint32) else self.cast(index, burn.int32)

    def gather(self, x: WgpuTensor, dim: int, index: WgpuTensor) -> WgpuTensor:
        return self._gather(x, dim, self._index_int(index), index.shape, index.strides, index.offset)

    def select(self, x: WgpuTensor, dim: int, indices: WgpuTensor) -> WgpuTensor:
        indices = self._index_int(indices)
        shape = tuple(indices.shape[0] if d == dim else s for d, s in enumerate(x.shape))
        strides = tuple(indices.strides[0] if d == dim else 0 for d in range(len(x.shape)))
        return self._gather(x, dim, indices, shape, strides, indices.offset)

    def _gather(
        self,
        x: WgpuTensor,
        dim: int,
        index: WgpuTensor,
        shape: tuple[int, ...],
        idx_strides: tuple[int, ...],
        idx_offset: int,
    ) -> WgpuTensor:
        out = self.empty(tuple(shape), x.dtype)
        n = numel(shape)
        if n == 0:
            return out
        nd = len(shape)
        kernel = KI.render_gather(x.dtype, index.dtype, nd, dim)
        meta = _pack(n, *shape, *x.strides, x.offset, *idx_strides, idx_offset, x.shape[dim])
        self.ex.dispatch(kernel, [out.buffer, x.buffer, index.buffer], meta, grid(n))
        return out

    def scatter_add(self, x: WgpuTensor, dim: int, index: WgpuTensor, src: WgpuTensor) -> WgpuTensor:
        index = self._index_int(index)
        return self._scatter(x, dim, index, src, index.shape, index.strides, index.offset)

    def select_add(self, x: WgpuTensor, dim: int, indices: WgpuTensor, values: WgpuTensor) -> WgpuTensor:
        indices = self._index_int(indices)
        strides = tuple(indices.strides[0] if d == dim else 0 for d in range(len(values.shape)))
        return self._scatter(x, dim, indices, values, values.shape, strides, indices.offset)

    def _scatter(
        self,
        x: WgpuTensor,
        dim: int,
        index: WgpuTensor,
        src: WgpuTensor,
        shape: tuple[int, ...],
        idx_strides: tuple[int, ...],
        idx_offset: int,
    ) -> WgpuTensor:
        if x.dtype in WIDE:  # WGSL has no 64-bit float atomics, nor i64 ones without another feature
            return self._scatter_on_host(x, dim, index, src, shape, idx_strides, idx_offset)
        native = {burn.float32: burn.float32, burn.int32: burn.int32, burn.uint32: burn.uint32}
        work = native.get(x.dtype, burn.float32 if x.dtype.is_float else burn.int32)
        if work is not x.dtype:  # no 16-bit or bool atomics: accumulate in a wider type
            out = self._scatter(
                self.cast(x, work), dim, index, self.cast(src, work), shape, idx_strides, idx_offset
            )
            return self.cast(out, x.dtype)
        out = self._copy(x)
        n = numel(shape)
        if n == 0:
            return out
        nd = len(shape)
        kernel = KI.render_scatter_add(x.dtype, index.dtype, nd, dim)
        meta = _pack(
            n,
            *shape,
            *EW.broadcast_strides(src, shape),
            src.offset,
            *idx_strides,
            idx_offset,
            *out.strides,
            0,
            x.shape[dim],
        )
        self.ex.dispatch(kernel, [out.buffer, src.buffer, index.buffer], meta, grid(n))
        return out

    def _scatter_on_host(
        self,
        x: WgpuTensor,
        dim: int,
        index: WgpuTensor,
        src: WgpuTensor,
        shape: tuple[int, ...],
        idx_strides: tuple[int, ...],
        idx_offset: int,
    ) -> WgpuTensor:
        """A 64-bit scatter-add summed exactly on the host (one read and one upload): the device has
        no 64-bit atomics to accumulate duplicate indices with."""
        import numpy as np

        idx_view = WgpuTensor(index.storage, shape, index.dtype, idx_strides, idx_offset)
        src_view = WgpuTensor(src.storage, shape, src.dtype, EW.broadcast_strides(src, shape), src.offset)
        host, idx, values = self.read_many([x, idx_view, src_view])
        idx = np.where(idx < 0, idx + x.shape[dim], idx)
        coords = list(np.indices(shape, sparse=False))
        coords[dim] = idx
        np.add.at(host, tuple(coords), values)
        return self.from_numpy(host, x.dtype)

    # ------------------------------------------------------------------ sort and scans
    def sort(self, x: WgpuTensor, dim: int, descending: bool) -> tuple[WgpuTensor, WgpuTensor]:
        if x.dtype is burn.float16:
            values, indices = self.sort(self.cast(x, burn.float32), dim, descending)
            return self.cast(values, burn.float16), indices
        dense, perm, rows, n = self._rows(x, (dim,))
        moved = tuple(x.shape[d] for d in perm)
        if rows * n == 0:
            return self._unmove(self.empty(moved, x.dtype), perm), self._unmove(
                self.empty(moved, burn.int32), perm
            )
        p = 1
        while p < n:
            p *= 2
        keys = self.empty((rows * p,), x.dtype)
        idx = self.empty((rows * p,), burn.uint32)
        total = rows * p
        self.ex.dispatch(
            KSORT.render_init(x.dtype),
            [keys.buffer, idx.buffer, dense.buffer],
            _pack(total, p, n, dense.offset),
            grid(total),
        )
        stage = KSORT.render_stage(x.dtype, bool(descending))
        k = 2
        while k <= p:
            j = k // 2
            while j >= 1:
                self.ex.dispatch(stage, [keys.buffer, idx.buffer], _pack(total, p, n, k, j), grid(total))
                j //= 2
            k *= 2
        strides = contiguous_strides(moved[:-1] + (p,))
        values = WgpuTensor(keys.storage, moved, x.dtype, strides, 0)
        indices = WgpuTensor(idx.storage, moved, burn.int32, strides, 0)  # u32 bits of values < 2^31
        return self._unmove(values, perm), self._unmove(indices, perm)

    def _scan(self, op: str, x: WgpuTensor, dim: int) -> WgpuTensor:
        dense, perm, rows, n = self._rows(x, (dim,))
        moved = tuple(x.shape[d] for d in perm)
        out = self.empty(moved, x.dtype)
        if rows * n:
            self.ex.dispatch(
                KS.render(op, x.dtype), [out.buffer, dense.buffer], _pack(rows, n, dense.offset), grid(rows)
            )
        return self._unmove(out, perm)

    def cumsum(self, x: WgpuTensor, dim: int) -> WgpuTensor:
        return self._scan("cumsum", x, dim)

    def cumprod(self, x: WgpuTensor, dim: int) -> WgpuTensor:
        return self._scan("cumprod", x, dim)
