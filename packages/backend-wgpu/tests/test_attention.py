"""The flash-style attention kernels (``WgpuOps.attention`` / ``attention_backward``) against the numpy
backend's composed default on the same float32 inputs: out and lse to 1e-5 (relative and absolute),
gradients to 1e-4 relative / 1e-5 absolute (summation order differs); float16 inputs (where the adapter
has shader-f16) to 2e-2 against the numpy backend's float32 result on the same rounded inputs. Small
shapes keep lavapipe quick, plus one L = S = 300, E = 64 case (several key and query tiles, partial
blocks)."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn.testing import _attention_checks as A
from burn.testing._attention_checks import MASKS

_run, _inputs, _compare, _mask = A.run, A.inputs, A.compare, A.mask


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("lq,lk,e,ev", [(5, 7, 8, 6), (70, 9, 16, 4), (3, 67, 5, 12)])
def test_kernels_match_the_numpy_backend(raw_dev, rng, kind, lq, lk, e, ev):
    cpu = burn.device("cpu").backend
    arrays = _inputs(rng, 2, 3, lq, lk, e, ev)
    mask = _mask(kind, rng, 2, 3, lq, lk)
    got = _run(raw_dev.backend, arrays, mask, kind == "causal", 0.45)
    want = _run(cpu, arrays, mask, kind == "causal", 0.45)
    _compare(got, want)
    if kind == "bool_broadcast":  # a row with no key: out 0, lse -inf, dq 0
        assert (
            np.all(got[0][:, :, 2] == 0)
            and np.all(np.isneginf(got[1][:, :, 2]))
            and np.all(got[2][:, :, 2] == 0)
        )


@pytest.mark.parametrize("causal", [False, True])
def test_long_sequences(raw_dev, rng, causal):
    """L = S = 300, E = 64: five query and key blocks, the last one partial."""
    arrays = _inputs(rng, 1, 2, 300, 300, 64, 64)
    got = _run(raw_dev.backend, arrays, None, causal, 0.125)
    want = _run(burn.device("cpu").backend, arrays, None, causal, 0.125)
    _compare(got, want, rtol=(1e-5, 2e-4), atol=(1e-5, 2e-5))


@pytest.mark.parametrize("kind", ["none", "causal", "float_heads"])
def test_float16(raw_dev, rng, kind):
    b = raw_dev.backend
    if burn.float16 not in b.dtypes:
        pytest.skip("the adapter has no shader-f16")
    arrays = [a.astype(np.float16).astype(np.float32) for a in _inputs(rng, 2, 2, 9, 11, 16, 8)]
    mask = _mask(kind, rng, 2, 2, 9, 11)
    mask = None if mask is None else mask.astype(np.float16).astype(np.float32)
    got = _run(b, arrays, mask, kind == "causal", 0.25, burn.float16)
    want = _run(burn.device("cpu").backend, arrays, mask, kind == "causal", 0.25)
    _compare(got, want, rtol=(2e-2, 2e-2), atol=(2e-2, 2e-2))


def test_strided_views_need_no_copy(raw_dev, rng):
    """q, k, v as (batch, seq, heads, dim) tensors transposed to (batch, heads, seq, dim) views, as
    MultiHeadAttention makes them: the kernels read the strides."""
    b = raw_dev.backend
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 6, 3, 8), (2, 5, 3, 8), (2, 5, 3, 4))]
    views = [b.permute(b.from_numpy(a, burn.float32), (0, 2, 1, 3)) for a in arrays]
    assert not views[0].is_contiguous
    out, lse = b.attention(*views, None, False, 0.3)
    cpu = burn.device("cpu").backend
    want, want_lse = cpu.attention(
        *(cpu.from_numpy(a.transpose(0, 2, 1, 3).copy(), burn.float32) for a in arrays), None, False, 0.3
    )
    np.testing.assert_allclose(b.to_numpy(out), cpu.to_numpy(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.to_numpy(lse), cpu.to_numpy(want_lse), rtol=1e-5, atol=1e-5)


def test_large_head_dims_run_the_default(raw_dev, rng):
    """E > 128 falls back to the composed default (same results)."""
    from burn_wgpu import _attention

    b = raw_dev.backend
    arrays = _inputs(rng, 1, 1, 4, 5, 160, 8)
    assert not _attention.supported(*(b.from_numpy(a, burn.float32) for a in arrays[:3]), None, False)
    got = _run(b, arrays, None, False, 0.1)
    want = _run(burn.device("cpu").backend, arrays, None, False, 0.1)
    _compare(got, want)


def test_sdpa_training_on_the_fused_device(dev, rng):
    """F.scaled_dot_product_attention under autodiff on the default (fused) wgpu device: the kernels run
    through fusion's calls, and the gradients equal the numpy backend's."""
    x = [rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 10, 8), (2, 1, 12, 8), (2, 1, 12, 8))]
    mask = rng.random((10, 12)) < 0.7
    results = []
    for d in (burn.device(dev, autodiff=True), burn.device("cpu", autodiff=True)):
        q, k, v = (burn.tensor(a, device=d).require_grad() for a in x)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=burn.tensor(mask, device=d))
        grads = (out * out).sum().backward()
        results.append([out.numpy(), *(t.grad(grads).numpy() for t in (q, k, v))])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_transformer_encoder_exports_to_a_page_with_the_attention_kernel(dev, tmp_path):
    """burn's TransformerEncoder runs the fused op; its page (WebGPU's default limits) holds the
    flash forward kernel and its native run matches the model on the device."""
    import json

    from burn import nn
    from burn_wgpu import web

    burn.seed(0)
    enc = nn.TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2, dropout=0.0).init(dev)

    class Causal(nn.Module):
        def __init__(self, enc):
            self.enc = enc

        def forward(self, x):
            return self.enc(x, causal=True)

    model = Causal(enc)
    x = np.random.default_rng(0).standard_normal((2, 5, 16)).astype(np.float32)
    out = web.export(model, x, tmp_path / "page")
    assert out.max_abs_diff["output"] < 1e-5
    text = (tmp_path / "page" / "model.js").read_text()
    start = text.index("/*SCHEDULE*/") + len("/*SCHEDULE*/")
    sources = [k["source"] for k in json.loads(text[start : text.index("/*END*/", start)])["kernels"]]
    assert any("var<workgroup> ks:" in s and "lse" in s for s in sources)
    got = web.NativeSchedule(tmp_path / "page").run({"input": x})["output"]
    want = model(burn.tensor(x, device=dev)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_training_steps_replay_and_capture_with_attention(dev):
    """A TransformerEncoder trained for several steps on the fused wgpu device: the repeated step is
    replayed (and captured as a recorded command list) with the attention calls inside, and the losses
    follow the numpy backend's."""
    from burn import nn

    x = np.random.default_rng(2).standard_normal((2, 6, 16)).astype(np.float32)
    target = np.random.default_rng(3).standard_normal((2, 6, 16)).astype(np.float32)
    runs = {}
    for d in (burn.device(dev, autodiff=True), burn.device("cpu", autodiff=True)):
        burn.seed(0)
        model = nn.TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=1, dropout=0.0).init(d)
        opt = burn.optim.AdamConfig().init()
        xs, ys = burn.tensor(x, device=d), burn.tensor(target, device=d)
        losses = []
        for _ in range(5):
            loss = (model(xs, causal=True) - ys).square().mean()
            model = opt.step(1e-2, model, loss.backward())
            losses.append(loss.item())
        runs[str(d)] = losses
    fused = dev.backend
    assert fused.stats["replays"] > 0
    got, want = runs.values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
