"""Fusion on wgpu: fused WGSL kernels compute what the unfused kernels compute, a training step launches
at least 3x fewer kernels (counted with burn.profile, not timed), and plans respect the portable
binding limit."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.fusion import Fusion
from burn.optim import AdamConfig


def test_wgpu_devices_fuse_by_default(dev, raw_dev, monkeypatch):
    assert isinstance(dev.backend, Fusion) and str(dev).endswith("+fusion")
    assert not isinstance(raw_dev.backend, Fusion)
    monkeypatch.setenv("BURN_FUSION", "0")
    assert not burn.device("wgpu").decorators


EXPRESSIONS = {
    "chain": lambda x, y, i: ((x * 3.0 - y) / (x.abs() + 1.0)).exp().log1p().sqrt(),
    "broadcast_views": lambda x, y, i: (
        x.permute(1, 0)[::2] * y[:, :1].permute(1, 0) + y.sum(0, keepdim=True).T[:1]
    ),
    "where_compare": lambda x, y, i: burn.where(x > y, x, y * 0.5) + (x <= 0.1).float(),
    "casts_ints": lambda x, y, i: (x.clamp(-1.0, 1.0) * 50.0).int() * i // 3 + (i % 4),
    "activations": lambda x, y, i: x.sigmoid() + x.relu() * y.tanh() - nn.functional.gelu(y) + x.exp().log(),
    "bool_logic": lambda x, y, i: ((x > 0) & (y < 0)) | ~(i > 2),
    "nan_inf": lambda x, y, i: (x.log()).isnan().int() + (y / 0.0).isinf().int(),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_fused_kernels_equal_the_unfused_ones(name, dev, raw_dev):
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((6, 6)).astype(np.float32)
    ys = rng.standard_normal((6, 6)).astype(np.float32)
    ints = rng.integers(-9, 9, (6, 6)).astype(np.int32)
    cpu = EXPRESSIONS[name](*(burn.tensor(v) for v in (xs, ys, ints.astype(np.int64))))
    out = []
    for d in (raw_dev, dev):
        with burn.profile(d) as p:
            out.append(EXPRESSIONS[name](*(burn.tensor(v, device=d) for v in (xs, ys, ints))).numpy())
        out.append(p)
    unfused, p_off, fused, p_on = out
    # the same table expressions in the same order: equal to the unfused kernels up to the driver's
    # freedom to contract a*b+c (1 ulp); both agree with numpy within float32 tolerance
    np.testing.assert_allclose(fused, unfused, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(fused, cpu.numpy(), rtol=2e-5, atol=1e-5)
    assert p_on.kernels < p_off.kernels and p_on.fused >= 1


def test_training_step_launches_three_times_fewer_kernels(dev, raw_dev):
    """The issue's CI target: an MLP step (784-256-256-10, Adam) with fusion launches at least 3x
    fewer kernels than without, and 20 steps give the same losses within float32 tolerance."""

    def run(device):
        burn.seed(0)
        model = nn.Sequential(
            nn.LinearConfig(784, 256).init(device),
            nn.Relu(),
            nn.LinearConfig(256, 256).init(device),
            nn.Relu(),
            nn.LinearConfig(256, 10).init(device),
        )
        opt = AdamConfig().init()
        rng = np.random.default_rng(0)
        losses, kernels = [], []
        ad = burn.device(device, autodiff=True)
        model = model.to(ad)
        x = burn.tensor(rng.standard_normal((32, 784)).astype(np.float32), device=ad)
        y = burn.tensor(rng.integers(0, 10, 32).astype(np.int32), device=ad)
        for _ in range(20):  # one batch again and again: the loss must fall
            with burn.profile(ad) as p:
                loss = nn.functional.cross_entropy(model(x), y)
                model = opt.step(1e-3, model, loss.backward())
                losses.append(loss.item())
            kernels.append(p.kernels)
        return np.array(losses), kernels[-1]

    off, k_off = run(raw_dev)
    stats = dev.backend.stats
    replays = stats["replays"]
    on, k_on = run(dev)
    np.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-6)
    assert off[-1] < off[0]  # it trains
    assert k_off >= 3 * k_on, (k_off, k_on)
    assert stats["replays"] - replays >= 17  # each step after the first two replays its program


def test_wide_expressions_split_under_the_portable_binding_limit():
    portable = burn.device("wgpu", fusion=True)
    backend = portable.backend
    runtime = backend.runtime
    old = runtime.max_tensors
    runtime.max_tensors = 7  # WebGPU's default: 8 storage buffers per stage, one is the metadata
    try:
        rng = np.random.default_rng(1)
        arrays = [rng.standard_normal(16).astype(np.float32) for _ in range(12)]
        acc = None
        for a in arrays:
            t = burn.tensor(a, device=portable).exp()
            acc = t if acc is None else acc + t
        np.testing.assert_allclose(acc.numpy(), np.sum(np.exp(arrays), axis=0), rtol=1e-5)
    finally:
        runtime.max_tensors = old


def test_fused_float16_rounds_like_the_unfused_ops(dev, raw_dev):
    if burn.float16 not in dev.backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    x = np.linspace(-3, 3, 64).astype(np.float32) / 3.1
    got = [
        ((burn.tensor(x, device=d).cast(burn.float16) * 3.3).float() + 1.0).numpy() for d in (raw_dev, dev)
    ]
    np.testing.assert_array_equal(got[1], got[0])


def test_fused_wgsl_validates(dev):
    x = burn.tensor(np.ones((3, 4), np.float32), device=dev)
    y = (burn.where(x > 0, x.exp(), -x).int() % 3).float().sigmoid()
    assert y.shape == (3, 4) and np.isfinite(y.numpy()).all()
    from burn_wgpu._fusion import render

    runtime = dev.backend.runtime
    device = dev.backend.inner.ctx.device
    for kernel in runtime._kernels.values():
        device.create_shader_module(label=kernel.name, code=kernel.source)  # raises on invalid WGSL
    assert callable(render) and runtime._kernels


def test_dense_chains_run_four_elements_per_invocation(dev):
    runtime = dev.backend.runtime
    before = set(runtime._kernels)
    for n in (16, 15):  # vec4 where numel allows it, one element per invocation otherwise
        x = np.linspace(-2, 2, n).astype(np.float32)
        t = burn.tensor(x, device=dev)
        out = ((t * 2.0 + 1.0).exp() > 3.0).int() + burn.tensor(np.arange(n, dtype=np.int32), device=dev)
        np.testing.assert_array_equal(out.numpy(), (np.exp(x * 2 + 1) > 3).astype(np.int32) + np.arange(n))
    layouts = {key[-2] for key in set(runtime._kernels) - before}  # (plan key, nd, contig, vec4, alias)
    assert layouts == {True, False}
