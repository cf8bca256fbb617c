"""Fused attention on wgpu: the flash-style kernels of ``_kernels.attention`` behind
``WgpuOps.attention`` / ``attention_backward``.

``supported`` says when the kernels take a call: float32 (and float16 where the device has
``shader-f16``) q, k, v; head dims 1..128; no mask, causal, or a bool / float32 / float16 mask (any
broadcast, read through its strides); at most 65535 (batch·head) pairs and query or key blocks. Other
calls run the contract's composed default. q, k, v and the mask are read through their strides (a
transposed or expanded view needs no copy); out and the output gradient are made dense first.

Forward: one dispatch (out, lse). Backward: three (``stats``: lse and D = rowsum(dO ∘ O); ``dq``;
``dkv``), dK and dV written to one buffer (WebGPU's 8 storage buffers per stage) and dV copied out.
A fully masked row gives out 0 and lse -inf, and zero gradients.
"""

from __future__ import annotations

import struct
from typing import Any

import burn

from ._kernels import attention as KA
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor
from ._tuning import pack

_FLOATS = frozenset({burn.float32, burn.float16})
_MAX_GROUPS = 65535


def _mask_kind(mask: WgpuTensor | None, is_causal: bool) -> str | None:
    if mask is None:
        return "causal" if is_causal else "none"
    if mask.dtype is burn.bool_:
        return "bool"
    return mask.dtype.name if mask.dtype in _FLOATS else None


def supported(q: WgpuTensor, k: WgpuTensor, v: WgpuTensor, mask: WgpuTensor | None, is_causal: bool) -> bool:
    """Whether the kernels take this call (else the composed default runs)."""
    n_b, n_h, n_q, e = q.shape
    n_k, ev = k.shape[2], v.shape[3]
    blocks = -(-max(n_q, n_k) // KA.ROWS)
    return (
        q.dtype in _FLOATS
        and k.dtype is q.dtype
        and v.dtype is q.dtype
        and 1 <= e <= KA.MAX_HEAD
        and 1 <= ev <= KA.MAX_HEAD
        and min(n_b, n_h, n_q, n_k) > 0
        and n_b * n_h <= _MAX_GROUPS
        and blocks <= _MAX_GROUPS
        and _mask_kind(mask, is_causal) is not None
        and all(st >= 0 for t in (q, k, v) for st in t.strides)
        and (mask is None or all(st >= 0 for st in mask.strides))
    )


def _view_words(t: WgpuTensor | None) -> list[int]:
    """Offset and (b, h, row, col) strides of a 4-d view; a broadcast (size-1) dim reads stride 0."""
    if t is None:
        return [0] * 5
    return [t.offset, *(st if n > 1 else 0 for n, st in zip(t.shape, t.strides))]


def _meta(
    q: WgpuTensor, k: WgpuTensor, v: WgpuTensor, mask: WgpuTensor | None, scale: float, dv_offset: int = 0
) -> bytes:
    n_b, n_h, n_q, _ = q.shape
    scale_bits = struct.unpack("<I", struct.pack("<f", float(scale)))[0]
    words = [n_h, n_q, k.shape[2], scale_bits]
    for t in (q, k, v, mask):
        words += _view_words(t)
    return pack(*words, n_b * n_h * n_q, dv_offset)


def forward(
    b: Any,
    q: WgpuTensor,
    k: WgpuTensor,
    v: WgpuTensor,
    mask: WgpuTensor | None,
    is_causal: bool,
    scale: float,
) -> tuple[WgpuTensor, WgpuTensor]:
    """out (B, H, L, Ev) in q's dtype and lse (B, H, L) float32, one dispatch."""
    n_b, n_h, n_q, e = q.shape
    ev = v.shape[3]
    kind = _mask_kind(mask, is_causal)
    assert kind is not None
    out = b.empty((n_b, n_h, n_q, ev), q.dtype)
    lse = b.empty((n_b, n_h, n_q), burn.float32)
    kern = KA.forward(q.dtype, e, ev, kind)
    buffers = [out.buffer, lse.buffer, q.buffer, k.buffer, v.buffer] + (
        [mask.buffer] if mask is not None else []
    )
    b.ex.dispatch(kern, buffers, _meta(q, k, v, mask, scale), (-(-n_q // KA.ROWS), n_b * n_h, 1))
    return out, lse


def backward(
    b: Any,
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
    """(dq, dk, dv) in q's dtype: the stats, dq and dkv dispatches."""
    n_b, n_h, n_q, e = q.shape
    n_k, ev = k.shape[2], v.shape[3]
    kind = _mask_kind(mask, is_causal)
    assert kind is not None
    out, grad, lse = b.contiguous(out), b.contiguous(grad), b.contiguous(lse)
    if grad.dtype is not q.dtype:
        grad = b.cast(grad, q.dtype)
    rows = n_b * n_h * n_q
    dk_size = n_b * n_h * n_k * e
    meta = _meta(q, k, v, mask, scale, dk_size)
    stats = b.empty((2, rows), burn.float32)
    # the stats kernel reads out, grad and lse densely from their offsets: shift by them
    st_meta = pack(*([0] * 24), rows, 0)
    if out.offset or grad.offset or lse.offset:
        out, grad, lse = b._copy(out), b._copy(grad), b._copy(lse)
    b.ex.dispatch(
        KA.stats(q.dtype, ev),
        [stats.buffer, out.buffer, grad.buffer, lse.buffer],
        st_meta,
        grid(rows, KA.ROWS),
    )
    masks = [mask.buffer] if mask is not None else []
    dq = b.empty((n_b, n_h, n_q, e), q.dtype)
    b.ex.dispatch(
        KA.dq(q.dtype, e, ev, kind),
        [dq.buffer, q.buffer, k.buffer, v.buffer, *masks, grad.buffer, stats.buffer],
        meta,
        (-(-n_q // KA.ROWS), n_b * n_h, 1),
    )
    dkv = b.empty((dk_size + n_b * n_h * n_k * ev,), q.dtype)
    b.ex.dispatch(
        KA.dkv(q.dtype, e, ev, kind),
        [dkv.buffer, q.buffer, k.buffer, v.buffer, *masks, grad.buffer, stats.buffer],
        meta,
        (-(-n_k // KA.ROWS), n_b * n_h, 1),
    )
    dk = dkv.view((n_b, n_h, n_k, e), (n_h * n_k * e, n_k * e, e, 1), 0)
    dv = b._copy(dkv.view((n_b, n_h, n_k, ev), (n_h * n_k * ev, n_k * ev, ev, 1), dk_size))
    return dq, dk, dv
