"""Fused attention on CUDA: ``CudaAttentionOps.attention`` / ``attention_backward``.

float16 and bfloat16 run through cuDNN's flash attention (``_cudnn_sdpa``, tensor cores) where the
``cudnn`` extra is installed and it takes the call; everything else the kernels of ``_attention_src``
take (float32, float16, bfloat16; head dims 1..128; no mask, causal, or a bool / float mask of any
broadcast) runs there: one launch forward, three backward (``stats``, ``dq``, ``dkv``), nothing of
size L x S stored. Other calls (head dims over 128, more than 65535 (batch, head) pairs) run the
contract's composed default.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from burn.backend import Backend

from . import _attention_src as src
from . import _cudnn_sdpa
from ._rawkernels import compiled
from ._types import Prim

_MAX_GRID_Y = 65535
_FLOATS = ("float32", "float16", "bfloat16")
_OPTED_IN: set[tuple[Any, ...]] = set()  # kernels whose shared-memory limit was raised (per device)


def _dtype_name(x: Prim) -> str:
    """numpy's name for x's dtype; ml_dtypes' bfloat16 (a void-kind dtype) as "bfloat16"."""
    return "bfloat16" if x.dtype.kind == "V" else x.dtype.name


def _mask_kind(mask: Prim | None, is_causal: bool) -> str | None:
    if mask is None:
        return "causal" if is_causal else "none"
    if mask.dtype == np.bool_:
        return "bool"
    name = _dtype_name(mask)
    return name if name in _FLOATS else None


def supported(q: Prim, k: Prim, v: Prim, mask: Prim | None, is_causal: bool) -> bool:
    """Whether the kernels take this call (else the composed default runs)."""
    name = _dtype_name(q)
    n_b, n_h, n_q, e = q.shape
    n_k, ev = k.shape[2], v.shape[3]
    return (
        name in _FLOATS
        and _dtype_name(k) == name
        and _dtype_name(v) == name
        and 1 <= e <= src.MAX_HEAD
        and 1 <= ev <= src.MAX_HEAD
        and min(n_b, n_h, n_q, n_k) > 0
        and n_b * n_h <= _MAX_GRID_Y
        and _mask_kind(mask, is_causal) is not None
        and all(t.strides[3] == t.itemsize for t in (q, k, v))
    )


def _kernel(device: int, kind: str, dtype: str, mask: str, e: int, ev: int) -> Any:
    key = ("attention", kind, dtype, mask, e, ev)
    kern = compiled(
        key,
        src.source(kind, dtype, mask, e, ev),
        f"burn_attn_{kind}",
        label=f"attention_{kind}_{dtype}_e{e}_v{ev}_{mask}",
    )
    need = src.shared_bytes(kind, e, ev)
    if need > 48 * 1024 and (device, key) not in _OPTED_IN:  # above 48 KiB a kernel must opt in to more
        kern.max_dynamic_shared_size_bytes = need
        _OPTED_IN.add((device, key))
    return kern


def _view_args(t: Prim) -> list[np.int64]:
    """(batch, head, row) strides in elements; a broadcast (size-1) dim reads stride 0."""
    return [np.int64(st // t.itemsize if n > 1 else 0) for n, st in zip(t.shape[:3], t.strides[:3])]


def _like(cp: ModuleType, x: Prim, last: int) -> Prim:
    """A new (B, H, rows, last) array of x's dtype laid out as x is: a head-interleaved x (its head
    stride below its row stride, a (B, rows, H, dim) buffer seen through a transpose) gets a
    (B, rows, H, last) buffer returned as the same transposed view, so that merging the heads back
    (``transpose(1, 2).reshape(B, rows, H * last)``) is free; anything else a contiguous array."""
    n_b, n_h, n_r = x.shape[:3]
    if n_h > 1 and n_r > 1 and 0 < x.strides[1] < x.strides[2]:
        return cp.empty((n_b, n_r, n_h, last), dtype=x.dtype).transpose(0, 2, 1, 3)
    return cp.empty((n_b, n_h, n_r, last), dtype=x.dtype)


def _mask_args(cp: ModuleType, mask: Prim | None) -> tuple[Prim, list[np.int64]]:
    if mask is None:
        return cp.zeros(1, dtype=np.uint8), [np.int64(0)] * 4
    strides = [np.int64(st // mask.itemsize if n > 1 else 0) for n, st in zip(mask.shape, mask.strides)]
    if mask.dtype.kind == "V":
        mask = mask.view(np.uint16)
    return mask, strides


def _bits(x: Prim) -> Prim:
    return x.view(np.uint16) if x.dtype.kind == "V" else x


def _common(q: Prim, k: Prim, scale: float) -> list[Any]:
    n_h, n_q, n_k = q.shape[1], q.shape[2], k.shape[2]
    return [np.int32(n_h), np.int32(n_q), np.int32(n_k), np.float32(scale)]


class CudaAttentionOps(Backend):  # a mixin of CudaBackend
    xp: ModuleType  # cupy
    index: int

    if TYPE_CHECKING:  # CudaBackend's

        def _on(self) -> ModuleType: ...

    def attention(
        self, q: Prim, k: Prim, v: Prim, mask: Prim | None, is_causal: bool, scale: float
    ) -> tuple[Prim, Prim]:
        """Flash-style forward: out (B, H, L, Ev) in q's dtype and the float32 row log-sum-exp."""
        if not supported(q, k, v, mask, is_causal):
            return super().attention(q, k, v, mask, is_causal, scale)
        cp = self._on()
        n_b, n_h, n_q, e = q.shape
        ev = v.shape[3]
        kind = _mask_kind(mask, is_causal)
        assert kind is not None
        out = _like(cp, q, ev)
        lse = cp.empty((n_b, n_h, n_q), dtype=np.float32)
        if _cudnn_sdpa.forward(self, q, k, v, mask, is_causal, scale, out, lse):
            return out, lse
        m, m_strides = _mask_args(cp, mask)
        args = [_bits(q), _bits(k), _bits(v), m, _bits(out), lse, *_common(q, k, scale)]
        args += _view_args(q) + _view_args(k) + _view_args(v) + m_strides + _view_args(out)
        grid = (-(-n_q // src.TILE), n_b * n_h)
        kern = _kernel(self.index, "fwd", _dtype_name(q), kind, e, ev)
        kern(grid, (src.THREADS,), tuple(args), shared_mem=src.shared_bytes("fwd", e, ev))
        return out, lse

    def attention_backward(
        self,
        q: Prim,
        k: Prim,
        v: Prim,
        mask: Prim | None,
        is_causal: bool,
        scale: float,
        out: Prim,
        lse: Prim,
        grad: Prim,
    ) -> tuple[Prim, Prim, Prim]:
        """Flash-style backward: dq, dk, dv in q's dtype, P recomputed from lse (three launches)."""
        if not supported(q, k, v, mask, is_causal) or _dtype_name(grad) != _dtype_name(q):
            return super().attention_backward(q, k, v, mask, is_causal, scale, out, lse, grad)
        cp = self._on()
        n_b, n_h, n_q, e = q.shape
        n_k, ev = k.shape[2], v.shape[3]
        kind = _mask_kind(mask, is_causal)
        assert kind is not None
        dtype = _dtype_name(q)
        out, grad = (x if x.strides[3] == x.itemsize else cp.ascontiguousarray(x) for x in (out, grad))
        lse = cp.ascontiguousarray(lse, dtype=np.float32)
        dq, dk, dv = _like(cp, q, e), _like(cp, k, e), _like(cp, v, ev)
        if _cudnn_sdpa.backward(self, q, k, v, mask, is_causal, scale, out, lse, grad, (dq, dk, dv)):
            return dq, dk, dv
        rows = n_b * n_h * n_q
        d = cp.empty((rows,), dtype=np.float32)
        stats = [_bits(out), _bits(grad), d, np.int64(rows), np.int32(n_h), np.int32(n_q)]
        stats += _view_args(out) + _view_args(grad)
        _kernel(self.index, "stats", dtype, "none", 1, ev)((-(-rows // 8),), (src.THREADS,), tuple(stats))
        m, m_strides = _mask_args(cp, mask)
        views = _view_args(q) + _view_args(k) + _view_args(v) + m_strides + _view_args(grad)
        head = [_bits(q), _bits(k), _bits(v), m, _bits(grad), lse, d]
        common = _common(q, k, scale)
        kern = _kernel(self.index, "dq", dtype, kind, e, ev)
        grid = (-(-n_q // src.TILE), n_b * n_h)
        args = head + [_bits(dq)] + common + views + _view_args(dq)
        kern(grid, (src.THREADS,), tuple(args), shared_mem=src.shared_bytes("dq", e, ev))
        kern = _kernel(self.index, "dkv", dtype, kind, e, ev)
        grid = (-(-n_k // src.TILE), n_b * n_h)
        args = head + [_bits(dk), _bits(dv)] + common + views + _view_args(dk) + _view_args(dv)
        kern(grid, (src.THREADS,), tuple(args), shared_mem=src.shared_bytes("dkv", e, ev))
        return dq, dk, dv
