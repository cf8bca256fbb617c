"""Scaled dot-product attention, PyTorch's ``scaled_dot_product_attention`` spelling and meaning."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..._amp_state import STATE as _AMP
from ..._amp_state import to_half
from ..._creation import arange
from ..._dtype import bfloat16, float16, promote_types
from ..._errors import DTypeError, ShapeError
from ..._tensor import Tensor, _wrap
from ...backend import broadcast_shape
from ._activation import dropout as _dropout
from ._activation import softmax

if TYPE_CHECKING:
    from ..._device import DeviceLike

# a masked score: finite, so a row with every key masked stays finite through softmax and its backward
# (its weights are then set to 0, as PyTorch does since 2.5), and far below any real score
_MASKED = {float16: -65504.0, bfloat16: -3.0e38}
_MASKED_DEFAULT = -3.0e38


def causal_mask(seq_q: int, seq_k: int, device: DeviceLike = None) -> Tensor:
    """(seq_q, seq_k) bool, True where query i may attend to key j (j <= i): the lower triangle, aligned
    at the top left as PyTorch's ``is_causal``. It broadcasts over batch and heads.

    >>> F.causal_mask(3, 3).tolist()
    [[True, False, False], [True, True, False], [True, True, True]]
    """
    rows = arange(seq_q, device=device).reshape(seq_q, 1)
    return rows >= arange(seq_k, device=device).reshape(1, seq_k)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` over the last two dims (PyTorch's query, key, value).

    Shapes: q (..., L, E), k (..., S, E), v (..., S, Ev) -> (..., L, Ev); leading dims
    broadcast. ``attn_mask``: bool, True where attention is allowed (PyTorch's convention, the opposite
    of ``MultiHeadAttention``'s ``mask_attn``), or float, added to the scores; it broadcasts to
    (..., L, S), so a (L, S) mask needs no batch copy. ``is_causal``: query i sees keys 0..i (no mask
    tensor is passed; not together with ``attn_mask``). ``scale`` defaults to 1 / sqrt(E). A query whose
    keys are all masked gets zeros, as PyTorch. ``dropout_p`` > 0 drops attention weights (always, as
    PyTorch's functional form: pass 0.0 for evaluation).

    With ``dropout_p == 0`` it runs the backend's fused ``attention`` op (leading dims folded into
    (batch, heads)): burn-wgpu runs flash-style kernels (tiled over keys with an online softmax), other
    backends the default composed from their core ops, and under autodiff the backward recomputes the
    weights from the saved row log-sum-exp, so no (..., L, S) tensor is kept between forward and
    backward. A float ``attn_mask`` gets no gradient. With ``dropout_p > 0`` it runs the composed form
    (two matmuls and a softmax; the weights are kept for backward).

    >>> q = burn.tensor([[[1.0, 0.0], [0.0, 1.0]]])   # (batch 1, 2 positions, 2 features)
    >>> out = F.scaled_dot_product_attention(q, q, burn.tensor([[[1.0], [3.0]]]), is_causal=True)
    >>> [round(v, 4) for v in out.flatten().tolist()]   # the first query sees only the first key
    [1.0, 2.3395]
    """
    op = "scaled_dot_product_attention"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ShapeError(f"{op}: {name} must be (..., seq, features), got shape {t.shape}")
        if not t.dtype.is_float:
            raise DTypeError(f"{op}: {name} must be a float tensor, got {t.dtype}")
    seq_q, e = q.shape[-2:]
    seq_k = k.shape[-2]
    if k.shape[-1] != e:
        raise ShapeError(f"{op}: k features {k.shape[-1]} != q features {e} ({k.shape} vs {q.shape})")
    if v.shape[-2] != seq_k:
        raise ShapeError(f"{op}: v has {v.shape[-2]} positions, k has {seq_k} ({v.shape} vs {k.shape})")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: pass attn_mask or is_causal=True, not both")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1), got {dropout_p}")
    if scale is not None and not (isinstance(scale, (int, float)) and math.isfinite(scale)):
        raise ValueError(f"{op}: scale must be a finite number or None, got {scale!r}")
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"{op}: attn_mask must be a Tensor or None, got {type(attn_mask).__name__}")
        if not (attn_mask.dtype.is_bool or attn_mask.dtype.is_float):
            raise DTypeError(f"{op}: attn_mask must be bool or float, got {attn_mask.dtype}")
    s = 1.0 / math.sqrt(e) if scale is None else float(scale)
    if dropout_p > 0.0 or 0 in (*q.shape, *k.shape, *v.shape):
        return _composed(q, k, v, attn_mask, is_causal, dropout_p, s)
    return _fused(q, k, v, attn_mask, is_causal, s)


def _composed(
    q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool, dropout_p: float, s: float
) -> Tensor:
    """Two matmuls and a softmax (dropout on the weights, or empty tensors): the (..., L, S) weights are
    kept for backward."""
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * s
    empty_rows = None
    if is_causal:
        attn_mask = causal_mask(seq_q, seq_k, q.device)
    if attn_mask is not None:
        if attn_mask.dtype.is_bool:
            scores = scores.mask_fill(~attn_mask, _MASKED.get(scores.dtype, _MASKED_DEFAULT))
            if not is_causal:  # a causal row always sees its own key
                empty_rows = ~attn_mask.any(-1, keepdim=True)
        else:
            scores = scores + attn_mask.cast(scores.dtype)
    weights = softmax(scores, -1)
    if empty_rows is not None:
        weights = weights.mask_fill(empty_rows, 0.0)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, training=True)
    return weights @ v


def _fold(batch: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The leading dims split into the groups folded into B and into H: 2-d (no leading dims) -> (1, 1),
    3-d -> (N, 1), 4-d -> (B, H), more -> (prod of all but the last, last)."""
    if len(batch) <= 1:
        return batch, ()
    return batch[:-1], batch[-1:]


def _as_bh(t: Tensor, batch: tuple[int, ...], n_b: int, n_h: int) -> Tensor:
    """t (..., rows, cols) broadcast over ``batch`` and viewed as (B, H, rows, cols)."""
    tail = tuple(t.shape[-2:])
    if tuple(t.shape[:-2]) != batch:
        t = t.expand(*batch, *tail)
    return t if t.ndim == 4 and batch == (n_b, n_h) else t.reshape(n_b, n_h, *tail)


def _mask_4d(mask: Tensor, batch: tuple[int, ...]) -> Tensor:
    """An attention mask (broadcastable to batch + (L, S)) as 4-d, each dim 1 or full, with no copy
    unless part of the B group broadcasts and part does not."""
    m = mask.reshape(*(1,) * (len(batch) + 2 - mask.ndim), *mask.shape)
    bdims = _fold(batch)[0]
    mb, mh = tuple(m.shape[: len(bdims)]), tuple(m.shape[len(bdims) : len(batch)])
    tail = tuple(m.shape[-2:])
    if all(d == 1 for d in mb):
        lead_b = 1
    else:
        lead_b = math.prod(bdims)
        if mb != bdims:
            m = m.expand(*bdims, *m.shape[len(bdims) :])
    lead_h = math.prod(mh) if mh else 1
    return m.reshape(lead_b, lead_h, *tail)


def _fused(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, is_causal: bool, s: float) -> Tensor:
    """The backend's ``attention`` op over (B, H, L, E) views of q, k, v."""
    op = "scaled_dot_product_attention"
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    leads = [tuple(t.shape[:-2]) for t in (q, k, v)]
    if attn_mask is not None:
        leads.append(tuple(attn_mask.shape[:-2]))
        try:
            broadcast_shape(tuple(attn_mask.shape[-2:]), (seq_q, seq_k))
        except ShapeError:
            raise ShapeError(
                f"{op}: attn_mask of shape {attn_mask.shape} does not broadcast to (..., {seq_q}, {seq_k})"
            ) from None
    try:
        batch = broadcast_shape(*leads)
    except ShapeError:
        shapes = ", ".join(str(t.shape) for t in (q, k, v))
        raise ShapeError(
            f"{op}: the leading dims of q, k, v (and attn_mask) do not broadcast: {shapes}"
        ) from None
    for name, t in (("k", k), ("v", v)):
        if t.device != q.device:
            raise ValueError(f"{op}: {name} is on {t.device}, q on {q.device}")
    if _AMP.on:  # autocast: the half dtype, as the matmuls of the composed form
        q, k, v = to_half(op, q), to_half(op, k), to_half(op, v)
    dtype = q.dtype
    for t in (k, v):
        dtype = promote_types(dtype, t.dtype)
    q, k, v = (t if t.dtype is dtype else t.cast(dtype) for t in (q, k, v))
    bdims, hdims = _fold(batch)
    n_b, n_h = math.prod(bdims), math.prod(hdims)
    qb, kb, vb = (_as_bh(t, batch, n_b, n_h) for t in (q, k, v))
    mask = None
    if attn_mask is not None:
        if attn_mask.device != q.device:
            raise ValueError(f"{op}: attn_mask is on {attn_mask.device}, q on {q.device}")
        m = attn_mask if attn_mask.dtype.is_bool or attn_mask.dtype is dtype else attn_mask.cast(dtype)
        mask = _mask_4d(m, batch)._p
    b = qb._b
    out, _lse = b.attention(qb._p, kb._p, vb._p, mask, bool(is_causal), s)
    return _wrap(out, b, dtype).reshape(*batch, seq_q, v.shape[-1])
