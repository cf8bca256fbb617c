"""The backend's fused ``attention`` op and its backward (``Backend.attention`` /
``attention_backward``) on the numpy backend against a float64 numpy reference; what the autodiff rule
keeps; ``F.scaled_dot_product_attention``'s folding of leading dims; against torch on cpu where it is
installed; and the op through fusion, ``burn.ir`` capture and replay."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn import ir

rng = np.random.default_rng(11)
B, H, L, S, E, EV = 2, 3, 5, 7, 8, 6


def _ref(q, k, v, mask=None, causal=False, scale=0.5, grad=None):
    """out, lse and (dq, dk, dv) in float64, written from the definition: softmax over allowed keys, the
    softmax Jacobian for the backward (dS = P (dP - rowsum(dP P))), a row with no key gives zeros."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    allowed = np.ones(s.shape, dtype=bool)
    if causal:
        allowed &= np.tril(np.ones(s.shape[-2:], dtype=bool))
    if mask is not None and mask.dtype == bool:
        allowed &= mask
    elif mask is not None:
        s = s + mask
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    with np.errstate(divide="ignore"):
        lse = (np.log(total) + m)[..., 0]
    out = p @ v
    if grad is None:
        return out, lse
    dv = np.swapaxes(p, -1, -2) @ grad
    dp = grad @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return out, lse, (ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv)


def _masks(kind):
    if kind == "bool_broadcast":  # per batch and query, shared by heads; query 1 sees no key
        m = rng.random((B, 1, L, S)) < 0.6
        m[:, :, 1] = False
        return m
    if kind == "key_padding":
        m = np.ones((B, 1, 1, S), dtype=bool)
        m[1, ..., 4:] = False
        return m
    if kind == "float_heads":
        return rng.normal(size=(1, H, 1, S))
    if kind == "float_neg_inf":  # -inf entries, a whole row of them: masked as a bool mask would
        m = rng.normal(size=(B, H, L, S))
        m[..., ::3] = -np.inf
        m[0, 1, 2] = -np.inf
        return m
    return None


@pytest.mark.parametrize("lq,lk", [(L, S), (S, L)])
@pytest.mark.parametrize(
    "kind", ["none", "causal", "bool_broadcast", "key_padding", "float_heads", "float_neg_inf"]
)
def test_numpy_backend_op_matches_float64_reference(kind, lq, lk):
    b = burn.device("cpu").backend
    q, k = rng.normal(size=(B, H, lq, E)), rng.normal(size=(B, H, lk, E))
    v, g = rng.normal(size=(B, H, lk, EV)), rng.normal(size=(B, H, lq, EV))
    mask = _masks(kind) if lq == L else None
    causal = kind == "causal"
    prim = [b.from_numpy(a, burn.float64) for a in (q, k, v, g)]
    pm = None if mask is None else b.from_numpy(mask, burn.bool_ if mask.dtype == bool else burn.float64)
    out, lse = b.attention(*prim[:3], pm, causal, 0.5)
    assert b.dtype_of(lse) is burn.float32 and b.shape_of(lse) == (B, H, lq)
    grads = b.attention_backward(*prim[:3], pm, causal, 0.5, out, lse, prim[3])
    want_out, want_lse, want_grads = _ref(q, k, v, mask, causal, 0.5, g)
    np.testing.assert_allclose(b.to_numpy(out), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.to_numpy(lse), want_lse, rtol=1e-6, atol=1e-6)  # float32
    for got, want in zip(grads, want_grads):
        # lse is float32 whatever the inputs: float64 gradients carry its rounding (~1e-7 relative),
        # amplified where dP - D cancels
        np.testing.assert_allclose(b.to_numpy(got), want, rtol=2e-5, atol=1e-6)
    if mask is not None and kind in (
        "bool_broadcast",
        "float_neg_inf",
    ):  # a row with no key: 0, -inf, zero gradients
        row = (slice(None), slice(None), 1) if kind == "bool_broadcast" else (0, 1, 2)
        assert np.all(b.to_numpy(out)[row] == 0.0) and np.all(np.isneginf(b.to_numpy(lse)[row]))
        assert np.all(b.to_numpy(grads[0])[row] == 0.0)


@pytest.mark.parametrize("dtype", [burn.float16, burn.bfloat16])
def test_half_inputs_compute_in_float32(dtype):
    b = burn.device("cpu").backend
    if dtype not in b.dtypes:
        pytest.skip(f"{dtype} is not available on the numpy backend here")
    q, k, v = rng.normal(size=(1, 2, 4, 8)), rng.normal(size=(1, 2, 6, 8)), rng.normal(size=(1, 2, 6, 3))
    prim = [b.from_numpy(a.astype(np.float32), dtype) for a in (q, k, v)]
    out, lse = b.attention(*prim, None, True, 0.35)
    assert b.dtype_of(out) is dtype and b.dtype_of(lse) is burn.float32
    rounded = [b.to_numpy(b.cast(p, burn.float32)).astype(np.float64) for p in prim]
    want_out, want_lse = _ref(*rounded, causal=True, scale=0.35)
    np.testing.assert_allclose(b.to_numpy(b.cast(out, burn.float32)), want_out, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(b.to_numpy(lse), want_lse, rtol=1e-5, atol=1e-5)


def _saved_values(node):
    from burn_autodiff._engine import topo_order

    for n in topo_order(node):
        for v in (*(n.saved_in or ()), n.saved_out, *(n.extras or ())):
            if v is not None and hasattr(v, "shape"):
                yield n.rule.name if n.rule is not None else "leaf", tuple(v.shape)


@pytest.mark.parametrize("mask", ["causal", "bool", "float"])
def test_autodiff_keeps_no_weights_tensor(mask):
    """The graph behind F.scaled_dot_product_attention holds one attention node, which saves q, k, v, the
    mask, out and lse: nothing of shape (..., L, S)."""
    pytest.importorskip("burn_autodiff")
    dev = burn.device("cpu", autodiff=True)
    lq, lk = 12, 20
    q, k, v = (burn.randn((2, 3, n, 4), device=dev).require_grad() for n in (lq, lk, lk))
    kwargs = {
        "causal": {"is_causal": True},
        "bool": {"attn_mask": burn.tensor(rng.random((lq, lk)) < 0.5, device=dev)},
        "float": {"attn_mask": burn.randn((2, 1, lq, lk), device=dev)},
    }[mask]
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    node = out.primitive.node
    assert node.rule.name == "attention"
    saved = list(_saved_values(node))
    weights = [s for s in saved if len(s[1]) >= 2 and s[1][-2:] == (lq, lk) and s[0] != "leaf"]
    masks = [s for s in weights if s[1][:2] != (2, 3)]  # the mask itself is (1|B, 1|H, L, S)
    assert weights == masks and all(s[0] == "attention" for s in weights), saved
    assert sorted(s[1] for s in saved if s[0] == "attention" and len(s[1]) == 3) == [(2, 3, lq)]  # lse
    grads = out.sum().backward()
    assert q.grad(grads).shape == q.shape and k.grad(grads).shape == k.shape


@pytest.mark.parametrize(
    "shapes",
    [
        ((5, 8), (7, 8), (7, 6)),  # 2-d: one (batch, head)
        ((3, 5, 8), (3, 7, 8), (3, 7, 6)),  # 3-d: (batch,)
        ((2, 3, 5, 8), (2, 1, 7, 8), (2, 1, 7, 6)),  # k/v with one head expand to 3
        ((2, 2, 3, 5, 8), (1, 2, 3, 7, 8), (2, 1, 3, 7, 6)),  # 5-d, broadcast in the folded batch
    ],
    ids=["2d", "3d", "kv_heads_broadcast", "5d"],
)
def test_sdpa_folds_leading_dims(shapes):
    q, k, v = (rng.normal(size=s) for s in shapes)
    mask = rng.random(shapes[0][:-2][-1:] + (5, 7)) < 0.7 if len(shapes[0]) > 2 else None
    got = F.scaled_dot_product_attention(
        *(burn.tensor(a, dtype=burn.float64) for a in (q, k, v)),
        attn_mask=None if mask is None else burn.tensor(mask),
        scale=0.5,
    )
    want, _ = _ref(q, k, v, mask, scale=0.5)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_sdpa_leading_dims_that_do_not_broadcast_name_q_k_v():
    with pytest.raises(burn.ShapeError, match="leading dims of q, k, v"):
        F.scaled_dot_product_attention(burn.zeros((2, 3, 4)), burn.zeros((3, 5, 4)), burn.zeros((3, 5, 4)))
    with pytest.raises(burn.ShapeError, match="attn_mask of shape"):
        F.scaled_dot_product_attention(
            burn.zeros((2, 3, 4)), burn.zeros((2, 5, 4)), burn.zeros((2, 5, 4)), attn_mask=burn.zeros((3, 4))
        )


@pytest.mark.parametrize("case", ["causal", "bool", "float", "gqa_broadcast"])
def test_sdpa_and_gradients_match_torch(case):
    torch = pytest.importorskip("torch")
    dev = burn.device("cpu", autodiff=True)
    q, k, v = rng.normal(size=(2, 4, 6, 8)), rng.normal(size=(2, 4, 9, 8)), rng.normal(size=(2, 4, 9, 5))
    if case == "gqa_broadcast":
        k, v = k[:, :1], v[:, :1]
    mask = None
    kwargs: dict = {}
    if case == "causal":
        kwargs["is_causal"] = True
    elif case == "bool":
        mask = rng.random((2, 1, 6, 9)) < 0.6
        mask[..., 0] = True  # torch gives NaN for a fully masked row in its math path on some versions
    elif case == "float":
        mask = rng.normal(size=(6, 9))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tmask = None if mask is None else torch.tensor(mask)
    want = torch.nn.functional.scaled_dot_product_attention(
        tq, tk.expand(2, 4, 9, 8), tv.expand(2, 4, 9, 5), attn_mask=tmask, **kwargs
    )
    g = rng.normal(size=tuple(want.shape))
    want.backward(torch.tensor(g))
    bq, bk, bv = (burn.tensor(a, dtype=burn.float64, device=dev).require_grad() for a in (q, k, v))
    bmask = None if mask is None else burn.tensor(mask, device=dev)
    got = F.scaled_dot_product_attention(bq, bk, bv, attn_mask=bmask, **kwargs)
    grads = (got * burn.tensor(g, dtype=burn.float64, device=dev)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    for t, tt in ((bq, tq), (bk, tk), (bv, tv)):
        np.testing.assert_allclose(
            t.grad(grads).numpy(), tt.grad.numpy(), rtol=2e-5, atol=1e-6
        )  # float32 lse


def test_attention_captures_and_replays():
    """burn.ir records both ops with their shapes and dtypes (out, float32 lse; three gradients) and a
    replay on the numpy backend gives what the direct calls give."""
    from burn.backend import from_primitive

    def step(q, k, v, g):
        b = q.backend
        out, lse = b.attention(q.primitive, k.primitive, v.primitive, None, True, 0.4)
        grads = b.attention_backward(
            q.primitive, k.primitive, v.primitive, None, True, 0.4, out, lse, g.primitive
        )
        return tuple(from_primitive(x, b) for x in (out, lse, *grads))

    shapes = {"q": ((2, 3, 5, 8), "float32"), "k": ((2, 3, 7, 8), "float32")}
    shapes |= {"v": ((2, 3, 7, 6), "float32"), "g": ((2, 3, 5, 6), "float32")}
    graph = ir.capture(step, shapes)
    assert [str(op.kind) for op in graph.ops] == ["attention", "attention_backward"]
    assert [(r.shape, r.dtype) for r in graph.ops[0].outputs] == [
        ((2, 3, 5, 6), burn.float32),
        ((2, 3, 5), burn.float32),
    ]
    assert [r.shape for r in graph.ops[1].outputs] == [(2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)]
    graph = ir.Graph.from_bytes(graph.to_bytes())
    inputs = [burn.tensor(rng.normal(size=s).astype(np.float32)) for s, _ in shapes.values()]
    direct = step(*inputs)
    for got, want in zip(ir.replay(graph, inputs), direct):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


class _OwnKernels:
    """A numpy backend whose attention ops are its own (so fusion records them as calls of the inner
    backend, three results for the backward, instead of composing them); it counts the calls."""

    calls = 0

    @staticmethod
    def make():
        from burn._ndarray._backend import NdArrayBackend
        from burn.backend import Backend

        class Own(NdArrayBackend):
            def attention(self, *args):
                _OwnKernels.calls += 1
                return Backend.attention(self, *args)

            def attention_backward(self, *args):
                _OwnKernels.calls += 1
                return Backend.attention_backward(self, *args)

        return Own()


def test_fusion_defers_attention_calls_and_replays_them():
    """Under fusion, attention and its three-result backward are recorded as calls of the inner backend
    between element-wise ops; the second identical step replays the first one's program and gives the
    same values as the unfused backend."""
    from burn.fusion import Fusion

    inner = _OwnKernels.make()
    fused = Fusion(inner)
    arrays = [
        rng.normal(size=s).astype(np.float32)
        for s in ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), (2, 3, 5, 6))
    ]

    def step(b):
        q, k, v, g = (b.from_numpy(a, burn.float32) for a in arrays)
        q = b.binary("mul", q, 2.0)  # element-wise ops around the calls
        out, lse = b.attention(q, k, v, None, True, 0.4)
        dq, dk, dv = b.attention_backward(q, k, v, None, True, 0.4, out, lse, b.binary("add", g, out))
        return list(b.read_many([b.unary("exp", lse), dq, b.binary("mul", dk, 3.0), dv]))

    want = step(_OwnKernels.make())
    before = _OwnKernels.calls
    first = step(fused)
    assert _OwnKernels.calls == before + 2 and fused.stats["calls"] >= 2
    replays = fused.stats["replays"]
    second = step(fused)
    assert fused.stats["replays"] > replays
    for a, b, c in zip(want, first, second):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(c, b)


@pytest.mark.parametrize("masks", ["none", "pad", "attn_causal", "pad_attn"])
def test_mha_without_weights_runs_the_op_and_matches_the_composed_form(masks):
    """need_weights=False: weights None, the attention op on the graph, the context of the composed
    form (no query here has every key masked); TransformerEncoder asks for no weights."""
    from burn import nn

    pytest.importorskip("burn_autodiff")
    from burn_autodiff import graph_rules

    dev = burn.device("cpu", autodiff=True)
    burn.seed(3)
    mha = nn.MultiHeadAttentionConfig(16, 4, dropout=0.0).init(dev)
    x = burn.tensor(rng.normal(size=(2, 5, 16)).astype(np.float32), device=dev).require_grad()
    pad = burn.tensor([[False] * 5, [False, False, False, True, True]], device=dev)
    attn = burn.tensor(np.triu(np.ones((2, 5, 5), dtype=bool), 2), device=dev)
    kwargs = {
        "none": {},
        "pad": {"mask_pad": pad},
        "attn_causal": {"mask_attn": attn, "causal": True},
        "pad_attn": {"mask_pad": pad, "mask_attn": attn},
    }[masks]
    fused = mha(x, need_weights=False, **kwargs)
    composed = mha(x, **kwargs)
    assert fused.weights is None and composed.weights is not None
    assert "attention" in graph_rules(fused.context) and "attention" not in graph_rules(composed.context)
    np.testing.assert_allclose(fused.context.numpy(), composed.context.numpy(), rtol=1e-5, atol=1e-6)
    g1 = x.grad(fused.context.sum().backward()).numpy()
    g2 = x.grad(composed.context.sum().backward()).numpy()
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-5)
    enc = nn.TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=1, dropout=0.0).init(dev)
    assert "attention" in graph_rules(enc(x, mask_pad=pad))
