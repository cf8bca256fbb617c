"""``F.scaled_dot_product_attention`` and causal attention in the modules, against a float64 numpy
reference written from PyTorch's documented definition, and gradients against central finite
differences on the numpy backend in float64."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn import nn

rng = np.random.default_rng(7)


def _np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v; a bool mask is True where allowed; a query with every key
    masked gives zeros (PyTorch 2.5+)."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    allowed = np.ones(s.shape, dtype=bool)
    if causal:
        allowed = np.broadcast_to(np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool)), s.shape)
    elif mask is not None and mask.dtype == bool:
        allowed = np.broadcast_to(mask, s.shape)
    elif mask is not None:
        s = s + mask
    s = np.where(allowed, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ v


def _t(a, dev="cpu"):
    return burn.tensor(np.asarray(a, dtype=np.float32), device=dev)


@pytest.mark.parametrize("device", ["cpu", "cpu+fusion"])
@pytest.mark.parametrize(
    "case",
    ["plain", "causal", "causal_rect", "bool_2d", "bool_empty_row", "float_mask", "scale", "broadcast"],
)
def test_sdpa_matches_the_numpy_definition(device, case):
    dev = burn.device("cpu", fusion=device.endswith("fusion"))
    b, h, lq, lk, e, ev = 2, 3, 5, 5, 8, 6
    if case == "causal_rect":
        lq, lk = 4, 7
    q = rng.normal(size=(b, h, lq, e))
    k = rng.normal(size=(b, h, lk, e))
    v = rng.normal(size=(b, h, lk, ev))
    kwargs: dict = {}
    ref: dict = {}
    if case.startswith("causal"):
        kwargs["is_causal"] = ref["causal"] = True
    elif case.startswith("bool"):
        mask = rng.random((lq, lk)) > 0.4
        mask[:, 0] = True
        if case == "bool_empty_row":
            mask[2] = False  # query 2 sees no key: zeros
        kwargs["attn_mask"] = burn.tensor(mask, device=dev)
        ref["mask"] = mask
    elif case == "float_mask":
        mask = rng.normal(size=(b, 1, lq, lk))
        kwargs["attn_mask"] = _t(mask, dev)
        ref["mask"] = mask
    elif case == "scale":
        kwargs["scale"] = ref["scale"] = 0.3
    elif case == "broadcast":
        k, v = k[:1], v[:1]  # one key/value set for every batch entry
    got = F.scaled_dot_product_attention(_t(q, dev), _t(k, dev), _t(v, dev), **kwargs)
    want = _np_sdpa(q, k, v, **ref)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    if case == "bool_empty_row":
        assert np.all(got.numpy()[:, :, 2] == 0.0)


@pytest.mark.parametrize("mask", [None, "causal", "bool_empty_row"])
def test_sdpa_gradients_match_finite_differences(mask):
    """d(sum(out * g))/d(q, k, v) by autodiff in float64 against central differences."""
    dev = burn.device("cpu", autodiff=True)
    q0, k0, v0 = rng.normal(size=(1, 2, 3, 4)), rng.normal(size=(1, 2, 4, 4)), rng.normal(size=(1, 2, 4, 3))
    g = rng.normal(size=(1, 2, 3, 3))
    bool_mask = np.array([[True, False, True, False], [False, False, False, False], [True, True, True, True]])
    kwargs: dict = {}
    if mask == "causal":
        kwargs["is_causal"] = True
    elif mask == "bool_empty_row":
        kwargs["attn_mask"] = burn.tensor(bool_mask, device=dev)

    def value(q, k, v):
        out = _np_sdpa(q, k, v, causal=mask == "causal", mask=bool_mask if mask else None)
        return float((out * g).sum())

    tq, tk, tv = (burn.tensor(a, dtype=burn.float64, device=dev).require_grad() for a in (q0, k0, v0))
    out = F.scaled_dot_product_attention(tq, tk, tv, **kwargs)
    grads = (out * burn.tensor(g, dtype=burn.float64, device=dev)).sum().backward()
    arrays = [q0, k0, v0]
    for which, t in enumerate((tq, tk, tv)):
        numeric = np.zeros_like(arrays[which])
        for idx in np.ndindex(arrays[which].shape):
            hi = [a.copy() for a in arrays]
            lo = [a.copy() for a in arrays]
            hi[which][idx] += 1e-6
            lo[which][idx] -= 1e-6
            numeric[idx] = (value(*hi) - value(*lo)) / 2e-6
        np.testing.assert_allclose(t.grad(grads).numpy(), numeric, rtol=1e-5, atol=1e-7)


def test_sdpa_argument_errors_name_the_argument():
    q = burn.zeros((1, 2, 3, 4))
    with pytest.raises(ValueError, match="attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=burn.ones((3, 3), dtype=burn.bool_), is_causal=True)
    with pytest.raises(burn.ShapeError, match="k features 5 != q features 4"):
        F.scaled_dot_product_attention(q, burn.zeros((1, 2, 3, 5)), q)
    with pytest.raises(burn.ShapeError, match="v has 2 positions, k has 3"):
        F.scaled_dot_product_attention(q, q, burn.zeros((1, 2, 2, 4)))
    with pytest.raises(burn.DTypeError, match="q must be a float tensor"):
        F.scaled_dot_product_attention(burn.zeros((1, 3, 4), dtype=burn.int32), q, q)
    with pytest.raises(burn.DTypeError, match="attn_mask must be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=burn.zeros((3, 3), dtype=burn.int32))
    with pytest.raises(ValueError, match="dropout_p must be in"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)


def test_sdpa_dropout_drops_weights_and_rescales():
    burn.seed(0)
    q = burn.zeros((1, 1, 64, 4))
    v = burn.ones((1, 1, 64, 1))
    out = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5).numpy()
    # uniform weights 1/64, each kept with probability 1/2 and doubled: the mean stays near 1
    assert 0.7 < out.mean() < 1.3 and out.std() > 0.05


def test_causal_attention_in_the_modules_sees_no_future_token():
    """MultiHeadAttention / TransformerEncoder with causal=True equal the explicit (batch, seq, seq) mask,
    and changing a later token leaves earlier positions' outputs unchanged."""
    burn.seed(1)
    enc = nn.TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2, dropout=0.0).init()
    x = rng.normal(size=(2, 5, 16)).astype(np.float32)
    future = np.triu(np.ones((5, 5), dtype=bool), 1)
    explicit = enc(burn.tensor(x), mask_attn=burn.tensor(np.broadcast_to(future, (2, 5, 5)).copy()))
    causal = enc(burn.tensor(x), causal=True)
    np.testing.assert_allclose(causal.numpy(), explicit.numpy(), rtol=1e-5, atol=1e-6)
    x2 = x.copy()
    x2[:, 3:] += 1.0
    later = enc(burn.tensor(x2), causal=True).numpy()
    np.testing.assert_allclose(later[:, :3], causal.numpy()[:, :3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(later[:, 3:], causal.numpy()[:, 3:])
    mha = nn.MultiHeadAttentionConfig(16, 4, dropout=0.0).init()
    weights = mha(burn.tensor(x), causal=True).weights.numpy()
    assert np.all(weights[..., future] < 1e-6)
