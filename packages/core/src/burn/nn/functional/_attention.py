"""Scaled dot-product attention, PyTorch's ``scaled_dot_product_attention`` spelling and meaning."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..._creation import arange
from ..._dtype import bfloat16, float16
from ..._errors import DTypeError, ShapeError
from ..._tensor import Tensor
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

    Every backend runs the composed form (two matmuls and a softmax; the (..., L, S) weights are kept
    for backward).

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
    s = 1.0 / math.sqrt(e) if scale is None else float(scale)
    scores = (q @ k.transpose(-2, -1)) * s
    empty_rows = None
    if is_causal:
        attn_mask = causal_mask(seq_q, seq_k, q.device)
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"{op}: attn_mask must be a Tensor or None, got {type(attn_mask).__name__}")
        if attn_mask.dtype.is_bool:
            scores = scores.mask_fill(~attn_mask, _MASKED.get(scores.dtype, _MASKED_DEFAULT))
            if not is_causal:  # a causal row always sees its own key
                empty_rows = ~attn_mask.any(-1, keepdim=True)
        elif attn_mask.dtype.is_float:
            scores = scores + attn_mask.cast(scores.dtype)
        else:
            raise DTypeError(f"{op}: attn_mask must be bool or float, got {attn_mask.dtype}")
    weights = softmax(scores, -1)
    if empty_rows is not None:
        weights = weights.mask_fill(empty_rows, 0.0)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, training=True)
    return weights @ v
