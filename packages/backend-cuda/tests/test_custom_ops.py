"""``burn.custom`` on cuda (skipped with the reason without CuPy or a GPU): the example's CUDA C kernels
(fused linear + bias + ReLU, one thread per output and 16x16 tiles) against numpy float64, forward and
gradients, with and without fusion; a training loop through the op replayed and captured as CUDA graphs
with the losses of the unfused device; the variants autotuned; an element-wise expression op fused into
one kernel with its neighbours."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import burn
import numpy as np
import pytest
from burn.testing._training import fresh_programs

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "custom_kernel.py"


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("custom_kernel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data(rng, m, k, n):
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return x, w, b


def _ref(x, w, b):
    return np.maximum(x.astype(np.float64) @ w + b, 0)


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize("size", [(13, 37, 22), (300, 129, 70), (1, 1, 1)])
def test_each_cuda_variant_matches_numpy(cuda, ex, variant, size):
    kernel = ex.KERNELS["cuda"][variant]
    op = burn.custom.op(
        f"test_cuda_flr_{variant}", shape=lambda x, w, b: (x[0], w[1]), kernels={"cuda": kernel}
    )
    try:
        x, w, b = _data(np.random.default_rng(0), *size)
        for d in (cuda, burn.device(cuda, fusion=False)):
            got = op(*(burn.tensor(a, device=d) for a in (x, w, b))).numpy()
            np.testing.assert_allclose(got, _ref(x, w, b), rtol=1e-5, atol=1e-5)
    finally:
        burn.custom.unregister(op.name)


def test_gradients_match_numpy(cuda, ex):
    rng = np.random.default_rng(1)
    x, w, b = _data(rng, 17, 33, 9)
    adev = burn.device(cuda, autodiff=True)
    ts = [burn.tensor(a, device=adev).require_grad() for a in (x, w, b)]
    g = rng.standard_normal((17, 9)).astype(np.float32)
    grads = (ex.fused_linear_relu(*ts) * burn.tensor(g, device=adev)).sum().backward()
    gz = g * (x.astype(np.float64) @ w + b > 0)
    for t, ref in zip(ts, [gz @ w.T, x.T.astype(np.float64) @ gz, gz.sum(0)]):
        np.testing.assert_allclose(t.grad(grads).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_training_through_the_op_is_captured_as_cuda_graphs(cuda, ex, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # a program calling a key still tuning is not captured
    steps = 8
    plain = ex.train_mlp(burn.device(cuda, fusion=False, autodiff=True), steps)
    adev = burn.device(cuda, autodiff=True)
    fb = adev.backend.inner
    fresh_programs(fb, monkeypatch)
    before = dict(fb.stats)
    got = ex.train_mlp(adev, steps)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    grew = {k: fb.stats[k] - before[k] for k in ("calls", "replays", "graphs", "graph_launches")}
    assert grew["calls"] >= 2 * steps and grew["replays"] >= steps - 3, grew
    assert grew["graphs"] >= 1 and grew["graph_launches"] >= 1, (grew, fb.runtime.capture_failures)


def test_variants_are_autotuned(cuda, ex, monkeypatch, tmp_path):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")
    events = []
    burn.autotune.subscribe(events.append)
    try:
        x, w, b = _data(np.random.default_rng(2), 257, 129, 65)
        got = ex.fused_linear_relu(*(burn.tensor(a, device=cuda) for a in (x, w, b))).numpy()
    finally:
        burn.autotune.unsubscribe(events.append)
    np.testing.assert_allclose(got, _ref(x, w, b), rtol=1e-5, atol=1e-5)
    done = [
        e for e in events if e.kernel == "custom:fused_linear_relu:cuda" and e.kind == "autotune" and e.done
    ]
    assert done and done[-1].best in ("one", "tiled")


def test_elementwise_op_fuses_into_one_kernel(cuda):
    op = burn.custom.elementwise("test_cuda_swish", "x * sigmoid(1.702 * x)")
    try:
        x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
        results, kernels, fused = [], [], []
        for d in (burn.device(cuda, fusion=False), cuda):
            t = burn.tensor(x, device=d)
            d.backend.sync()
            with burn.profile(d) as p:
                results.append((op(t * 0.5) + 1.0).numpy())
            kernels.append(p.kernels)
            fused.append(p.fused)
        np.testing.assert_allclose(
            results[1], 0.5 * x / (1 + np.exp(-1.702 * 0.5 * x)) + 1, rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)
        # one generated kernel runs the whole chain (the count also holds the read's own copy)
        assert fused[1] == 1 and kernels[1] < kernels[0], (kernels, fused)
    finally:
        burn.custom.unregister(op.name)
