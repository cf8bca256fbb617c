"""``burn.custom`` on wgpu (lavapipe here): the example's WGSL kernels (fused linear + bias + ReLU)
against numpy float64, forward and gradients; inside fused, replayed and recorded streams (a training
loop whose losses equal the unfused device's); the variants autotuned; an element-wise expression op
fused into its neighbours' kernel; and a page export that runs the kernel, natively and in Chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import burn
import numpy as np
import pytest
from burn.testing._training import fresh_programs
from burn_wgpu_tests import _browser  # registered by this folder's conftest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "custom_kernel.py"


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("custom_kernel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data(rng, m=13, k=37, n=22):
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return x, w, b


def _ref(x, w, b):
    return np.maximum(x.astype(np.float64) @ w + b, 0)


@pytest.mark.parametrize("variant", [0, 1])
def test_each_wgsl_variant_matches_numpy(dev, raw_dev, rng, ex, variant):
    kernel = ex.KERNELS["wgpu"][variant]
    op = burn.custom.op(f"test_flr_{variant}", shape=lambda x, w, b: (x[0], w[1]), kernels={"wgpu": kernel})
    try:
        x, w, b = _data(rng)
        for d in (dev, raw_dev):
            with burn.profile(d) as p:
                got = op(*(burn.tensor(a, device=d) for a in (x, w, b))).numpy()
            np.testing.assert_allclose(got, _ref(x, w, b), rtol=1e-5, atol=1e-5)
            assert p.kernels == 1  # the custom kernel alone (uploads are no kernels)
    finally:
        burn.custom.unregister(op.name)


def test_gradients_match_numpy(dev, rng, ex):
    x, w, b = _data(rng)
    adev = burn.device(dev, autodiff=True)
    ts = [burn.tensor(a, device=adev).require_grad() for a in (x, w, b)]
    g = rng.standard_normal((x.shape[0], w.shape[1])).astype(np.float32)
    grads = (ex.fused_linear_relu(*ts) * burn.tensor(g, device=adev)).sum().backward()
    z = x.astype(np.float64) @ w + b
    gz = g * (z > 0)
    want = [gz @ w.T, x.T.astype(np.float64) @ gz, gz.sum(0)]
    for t, ref in zip(ts, want):
        np.testing.assert_allclose(t.grad(grads).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_other_dtypes_fall_back_to_the_composition(dev, ex):
    """The kernels declare float32 only: int32 inputs run the op's unfused composition."""
    x = burn.tensor([[1, -2], [3, 4]], dtype=burn.int32, device=dev)
    w = burn.tensor([[1, 0], [0, 1]], dtype=burn.int32, device=dev)
    b = burn.tensor([0, 1], dtype=burn.int32, device=dev)
    assert ex.fused_linear_relu(x, w, b).tolist() == [[1, 0], [3, 5]]


def test_training_through_the_op_replays_and_records_its_stream(dev, raw_dev, ex, monkeypatch):
    steps = 8
    plain = ex.train_mlp(burn.device(raw_dev, autodiff=True), steps)
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    fresh_programs(fb, monkeypatch)
    before = dict(fb.stats)
    got = ex.train_mlp(adev, steps)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert got[-1] < got[0]
    grew = {k: fb.stats[k] - before[k] for k in ("calls", "replays", "graphs", "graph_launches")}
    assert grew["calls"] >= 2 * steps and grew["replays"] >= steps - 3, grew
    assert grew["graphs"] >= 1 and grew["graph_launches"] >= 1, (grew, fb.runtime.capture_failures)


def test_variants_are_autotuned(dev, rng, ex, monkeypatch, tmp_path):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")
    events = []
    burn.autotune.subscribe(events.append)
    try:
        x, w, b = _data(rng, 9, 21, 31)  # a shape no other test tuned
        got = ex.fused_linear_relu(*(burn.tensor(a, device=dev) for a in (x, w, b))).numpy()
    finally:
        burn.autotune.unsubscribe(events.append)
    np.testing.assert_allclose(got, _ref(x, w, b), rtol=1e-5, atol=1e-5)
    mine = [
        e for e in events if e.kernel == "custom:fused_linear_relu:wgpu" and e.kind == "autotune" and e.done
    ]
    assert mine and mine[-1].best in ("one", "four")


def test_elementwise_op_fuses_into_one_kernel(dev, raw_dev, rng):
    gelu_ish = burn.custom.elementwise("test_wgpu_swish", "x * sigmoid(1.702 * x)")
    try:
        x = rng.standard_normal(1000).astype(np.float32)
        results, kernels = [], []
        for d in (raw_dev, dev):
            t = burn.tensor(x, device=d)
            with burn.profile(d) as p:
                results.append((gelu_ish(t * 0.5) + 1.0).numpy())
            kernels.append(p.kernels)
        want = 0.5 * x / (1 + np.exp(-1.702 * 0.5 * x)) + 1
        np.testing.assert_allclose(results[1], want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)
        assert kernels == [5, 1]  # mul, mul, sigmoid, mul, add -> one fused kernel
    finally:
        burn.custom.unregister("test_wgpu_swish")


def _export(ex, folder, rng):
    import burn_wgpu.web as web

    x, w, b = _data(rng, 4, 6, 5)
    wt, bt = burn.tensor(w), burn.tensor(b)

    def forward(x):
        d = burn.ir.capture_device()
        return ex.fused_linear_relu(x, wt.to(d), bt.to(d)) * 2.0

    return web.export(forward, {"x": x}, folder), x, w, b


def test_page_export_runs_the_wgsl_kernel(dev, rng, ex, tmp_path):
    out, x, w, b = _export(ex, tmp_path / "page", rng)
    assert max(out.max_abs_diff.values()) < 1e-4  # the export ran its schedule natively against numpy
    model_js = (tmp_path / "page" / "model.js").read_text()
    assert "let row = i / n;" in model_js  # the op's own WGSL (the first variant: no tuning while exporting)
    if _browser.unavailable() is not None:
        pytest.skip(f"no page run: {_browser.unavailable()}")
    browser = _browser.Browser()
    try:
        page, log = browser.open(tmp_path / "page")
        page.wait_for_function("window.burnDemo && window.burnDemo.status !== 'loading'", timeout=60_000)
        res = page.evaluate(
            _browser.RUN_JS, [{"x": {"data": x.ravel().tolist(), "shape": list(x.shape)}}, True]
        )
        page.close()
    finally:
        browser.close()
    assert res["validation"] is None, res["validation"]
    got = np.asarray(res["result"]["output"]["data"], np.float64).reshape(res["result"]["output"]["shape"])
    np.testing.assert_allclose(got, 2 * _ref(x, w, b), rtol=1e-4, atol=1e-4)


def test_page_export_names_an_op_without_a_wgsl_kernel(dev, tmp_path):
    import burn_wgpu.web as web

    op = burn.custom.op("test_host_only", kernels={"cpu": lambda x: x + 1})
    try:
        with pytest.raises(web.WebExportError, match="custom op 'test_host_only' has no WGSL kernel"):
            web.export(lambda x: op(x), {"x": np.ones(3, np.float32)}, tmp_path / "page")
        assert not (tmp_path / "page").exists()
    finally:
        burn.custom.unregister(op.name)
