"""Shared checks of fused attention kernels (``Backend.attention`` / ``attention_backward``) against the
numpy backend's composed default: the inputs, the mask kinds every kernel must read, one forward +
backward run, and the comparison (out and lse, then the gradients; rows with no key to attend must be
-inf in lse on both sides). burn-wgpu's and burn-cuda's kernel tests use them."""

from __future__ import annotations

from typing import Any

import numpy as np

import burn

MASKS = ["none", "causal", "bool_broadcast", "bool_key_padding", "float_heads", "float_full"]


def run(
    b: Any, arrays: list[np.ndarray], mask: np.ndarray | None, causal: bool, scale: float, dtype: Any = None
) -> list[np.ndarray]:
    """Forward and backward on backend ``b``: [out, lse, dq, dk, dv] as float32 numpy arrays."""
    dtype = dtype or burn.float32
    q, k, v, g = (b.from_numpy(a, dtype) for a in arrays)
    m = None
    if mask is not None:
        m = b.from_numpy(mask, burn.bool_ if mask.dtype == bool else dtype)
    out, lse = b.attention(q, k, v, m, causal, scale)
    grads = b.attention_backward(q, k, v, m, causal, scale, out, lse, g)
    return [
        b.to_numpy(b.cast(x, burn.float32) if b.dtype_of(x) is not burn.float32 else x)
        for x in (out, lse, *grads)
    ]


def inputs(rng: np.random.Generator, b: int, h: int, lq: int, lk: int, e: int, ev: int) -> list[np.ndarray]:
    """q (b, h, lq, e), k (b, h, lk, e), v (b, h, lk, ev) and an output gradient, standard normal."""
    return [
        rng.standard_normal(s).astype(np.float32)
        for s in ((b, h, lq, e), (b, h, lk, e), (b, h, lk, ev), (b, h, lq, ev))
    ]


def compare(
    got: list[np.ndarray],
    want: list[np.ndarray],
    rtol: tuple[float, float] = (1e-5, 1e-4),
    atol: tuple[float, float] = (1e-5, 1e-5),
) -> None:
    """Assert [out, lse, dq, dk, dv] agree: (rtol, atol)[0] for out and lse, [1] for the gradients."""
    names = ("out", "lse", "dq", "dk", "dv")
    for i, (name, g, w) in enumerate(zip(names, got, want)):
        assert g.shape == w.shape, name
        assert np.array_equal(np.isneginf(g), np.isneginf(w)), f"{name}: -inf rows differ"
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], rtol=rtol[i >= 2], atol=atol[i >= 2], err_msg=name)


def mask(kind: str, rng: np.random.Generator, b: int, h: int, lq: int, lk: int) -> np.ndarray | None:
    """A mask of ``kind`` (one of ``MASKS``; "none" and "causal" give None)."""
    if kind == "bool_broadcast":  # (B, 1, L, S); query 2 sees no key
        m = rng.random((b, 1, lq, lk)) < 0.6
        m[:, :, 2] = False
        return m
    if kind == "bool_key_padding":  # (B, 1, 1, S)
        m = np.ones((b, 1, 1, lk), dtype=bool)
        m[0, ..., lk // 2 :] = False
        return m
    if kind == "float_heads":  # (1, H, 1, S)
        return rng.standard_normal((1, h, 1, lk)).astype(np.float32)
    if kind == "float_full":
        m = rng.standard_normal((b, h, lq, lk)).astype(np.float32)
        m[..., 1::4] = -np.inf
        return m
    return None
