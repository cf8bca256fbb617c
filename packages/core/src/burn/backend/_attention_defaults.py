"""Attention defaults (``Backend.attention`` / ``Backend.attention_backward``) composed from the core.

The forward is the textbook form: scores ``q kᵀ · scale`` (plus a float mask, a bool mask or the causal
triangle as -inf), the row max, ``exp``, the row sum, then ``P v``; it also returns the row log-sum-exp
(``lse``, float32) that the backward recomputes ``P`` from, so nothing of size L×S has to be kept between
the two. The backward is the flash-attention recurrence written with whole tensors:

    P = exp(S·scale (+ mask) - lse)        dV = Pᵀ dO        dP = dO Vᵀ
    D = rowsum(dO ∘ O)                     dS = P ∘ (dP - D)
    dQ = dS K · scale                      dK = dSᵀ Q · scale

Both hold an L×S tensor while they run (a fused kernel never does). float16 and bfloat16 inputs are
computed in float32 (as the kernels accumulate) and the results rounded back.

A row whose keys are all masked gives out 0 (PyTorch 2.5+), lse -inf, and zero gradients. Kernels may
give such a row a large negative lse instead of -inf: the backward here reads either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._dtype import bfloat16, float16, float32

if TYPE_CHECKING:
    from ._base import Backend

Prim = Any
_NEG_INF = float("-inf")


def _work(b: Backend, x: Prim) -> Prim:
    """x in the dtype attention computes in: float32 for 16-bit floats, else its own."""
    return b.cast(x, float32) if b.dtype_of(x) in (float16, bfloat16) else x


def _to(b: Backend, x: Prim, dtype: Any) -> Prim:
    return x if b.dtype_of(x) is dtype else b.cast(x, dtype)


def _scores(b: Backend, q: Prim, k: Prim, mask: Prim | None, is_causal: bool, scale: float) -> Prim:
    """``q kᵀ · scale`` with the mask applied: a float mask added, disallowed keys -inf."""
    s = b.binary("mul", b.matmul(q, b.permute(k, (0, 1, 3, 2))), float(scale))
    if mask is not None and b.dtype_of(mask).is_float:
        s = b.binary("add", s, _to(b, mask, b.dtype_of(s)))
    elif mask is not None:
        s = b.mask_fill(s, b.unary("not", mask), _NEG_INF)
    elif is_causal:
        n_q, n_k = b.shape_of(q)[2], b.shape_of(k)[2]
        rows = b.reshape(b.arange(0, n_q, 1, b.default_int), (1, 1, n_q, 1))
        cols = b.reshape(b.arange(0, n_k, 1, b.default_int), (1, 1, 1, n_k))
        s = b.mask_fill(s, b.binary("gt", cols, rows), _NEG_INF)
    return s


def attention(
    b: Backend, q: Prim, k: Prim, v: Prim, mask: Prim | None, is_causal: bool, scale: float
) -> tuple[Prim, Prim]:
    """``softmax(q kᵀ · scale + mask) v`` and the row log-sum-exp of the scaled, masked scores.

    q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev), one float dtype; ``mask``: None or 4-d, each dim 1
    or full, bool (True: attend) or float (added to the scores); ``is_causal``: query i sees keys
    j <= i (never together with a mask). Returns out (B, H, L, Ev) in q's dtype and lse (B, H, L)
    float32; a row with every key masked gives out 0 and lse -inf.
    """
    dtype = b.dtype_of(q)
    q, k, v = _work(b, q), _work(b, k), _work(b, v)
    s = _scores(b, q, k, mask, is_causal, scale)
    m = b.reduce("max", s, (3,), True)
    m = b.mask_fill(m, b.binary("eq", m, _NEG_INF), 0.0)  # a fully masked row: exp(-inf - 0) = 0
    e = b.unary("exp", b.binary("sub", s, m))
    total = b.reduce("sum", e, (3,), True)
    empty = b.binary("eq", total, 0.0)
    total = b.mask_fill(total, empty, 1.0)
    out = b.matmul(b.binary("div", e, total), v)
    lse = b.mask_fill(b.binary("add", b.unary("log", total), m), empty, _NEG_INF)
    shape = b.shape_of(lse)
    lse = _to(b, b.reshape(lse, tuple(shape[:3])), float32)
    return _to(b, out, dtype), lse


def attention_backward(
    b: Backend,
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
    """The gradients (dq, dk, dv) of ``attention``'s out given its output gradient ``grad``, from the
    forward's ``out`` and ``lse`` (P recomputed, never stored). The mask gets no gradient."""
    dtypes = b.dtype_of(q), b.dtype_of(k), b.dtype_of(v)
    q, k, v, out, grad = (_work(b, x) for x in (q, k, v, out, grad))
    work = b.dtype_of(q)
    s = _scores(b, q, k, mask, is_causal, scale)
    n = b.shape_of(lse)
    row = _to(b, b.reshape(lse, (n[0], n[1], n[2], 1)), work)
    # a fully masked row (lse -inf or very negative): its scores are -inf too, so P = exp(-inf) = 0
    row = b.mask_fill(row, b.binary("eq", row, _NEG_INF), 0.0)
    p = b.unary("exp", b.binary("sub", s, row))
    dv = b.matmul(b.permute(p, (0, 1, 3, 2)), grad)
    dp = b.matmul(grad, b.permute(v, (0, 1, 3, 2)))
    d = b.reduce("sum", b.binary("mul", grad, out), (3,), True)
    ds = b.binary("mul", p, b.binary("sub", dp, d))
    dq = b.binary("mul", b.matmul(ds, k), float(scale))
    dk = b.binary("mul", b.matmul(b.permute(ds, (0, 1, 3, 2)), q), float(scale))
    return _to(b, dq, dtypes[0]), _to(b, dk, dtypes[1]), _to(b, dv, dtypes[2])
