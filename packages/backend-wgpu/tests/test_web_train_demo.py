"""The training demo page (``burn_wgpu.web.train_demo``, ``burn web train-demo digits``) in headless
Chromium on SwiftShader: served over http, it trains the digits CNN in a Worker until validation
accuracy reaches 90 % (the seconds it took are printed), keeps drawing animation frames meanwhile,
reports step time, items/s, the adapter and burn-metrics-web's browser metric names; pause stops the
steps and resume starts them again; "download weights" gives a burn record that loads in Python into
the same module (and the digits example's own class) and has the page's validation accuracy.

Needs playwright and Debian's chromium-headless-shell, as the other page tests; skips with the reason
where either is missing.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from burn_wgpu_tests import _browser  # registered by this folder's conftest

pytestmark = pytest.mark.skipif(_browser.unavailable() is not None, reason=_browser.unavailable() or "")

# the names burn-metrics-web's collectors report (its web-timing, web-js-heap and web-cpu-cores sources)
METRIC_NAMES = {"Page Time", "Step Time", "JS Heap Used", "JS Heap Total", "JS Heap Limit", "CPU Cores"}

FRAMES_JS = """() => new Promise((resolve) => {
  const start = performance.now();
  let frames = 0, longest = 0, last = start;
  const tick = (now) => {
    frames += 1; longest = Math.max(longest, now - last); last = now;
    if (now - start < 1000) requestAnimationFrame(tick); else resolve({ frames, longest });
  };
  requestAnimationFrame(tick);
})"""


def _accuracy(model: Any, images: np.ndarray, labels: np.ndarray) -> float:
    import burn
    from burn_wgpu.web._demo import normalise

    logits = model(burn.tensor(normalise(images))).numpy()
    return float((logits.argmax(1) == labels).mean())


def test_demo_trains_digits_to_90_percent_pauses_and_downloads(tmp_path: Any) -> None:
    pytest.importorskip("wgpu")
    import burn
    import burn_wgpu.web
    from burn_wgpu.web._demo import digits_arrays, digits_cnn

    started = time.monotonic()
    demo = burn_wgpu.web.train_demo("digits", tmp_path / "page", epochs=3)
    assert demo.settings["valid_batches"] * demo.settings["batch_size"] == 360  # every test item
    exported = time.monotonic() - started
    browser = _browser.Browser()
    try:
        page, log = browser.open(demo.out_dir)
        page.wait_for_function(
            "window.burnDemo && (burnDemo.error || burnDemo.status !== 'loading')", timeout=60_000
        )
        assert page.evaluate("burnDemo.error") is None, page.evaluate("burnDemo.error")
        frames = page.evaluate(FRAMES_JS)  # the main thread keeps drawing while the Worker trains
        page.wait_for_function(
            "burnDemo.error || burnDemo.done || (burnDemo.accuracy !== null && burnDemo.accuracy >= 0.9)",
            timeout=150_000,
            polling=200,
        )
        state = page.evaluate(
            "({ error: burnDemo.error, accuracy: burnDemo.accuracy, valid: burnDemo.valid, readyAt: burnDemo.readyAt,"
            " adapter: burnDemo.adapter, last: burnDemo.lastStep, metrics: burnDemo.metrics,"
            " rows: Array.from(document.querySelectorAll('#metrics th'), (th) => th.textContent),"
            " chart: document.getElementById('chart').toDataURL().length })"
        )
        assert state["error"] is None, state["error"]
        assert state["accuracy"] >= 0.9, state["valid"]
        reached = next(v for v in state["valid"] if v["accuracy"] >= 0.9)
        print(
            f"\ndigits demo on SwiftShader: 90 % validation accuracy at step {reached['step']}, "
            f"{reached['pageTime'] - state['readyAt']:.1f} s after the trainer was ready "
            f"(export {exported:.1f} s, last step {state['last']['stepTime']:.0f} ms, "
            f"{state['last']['itemsPerSecond']:.0f} items/s)"
        )
        assert frames["frames"] >= 5, frames
        assert "swiftshader" in state["adapter"].lower(), state["adapter"]
        assert state["last"]["stepTime"] > 0 and state["last"]["itemsPerSecond"] > 0
        assert {"Page Time", "Step Time", "CPU Cores"} <= set(state["metrics"]) <= METRIC_NAMES
        assert set(state["rows"]) == set(state["metrics"])
        assert state["chart"] > 5000  # drawn on

        page.click("#pause")
        page.wait_for_function("burnDemo.paused", timeout=30_000)
        paused_at = page.evaluate("burnDemo.step")
        time.sleep(1.5)
        assert page.evaluate("burnDemo.step") == paused_at  # no step while paused
        with page.expect_download(timeout=60_000) as download:
            page.click("#download")
        data = open(download.value.path(), "rb").read()
        assert download.value.suggested_filename == "digits-cnn.safetensors"
        page.wait_for_function("burnDemo.saves.length === 1", timeout=30_000)
        saved = page.evaluate("burnDemo.saves[0]")
        assert saved["step"] == paused_at and saved["bytes"] == len(data)
        page.click("#pause")  # resume
        page.wait_for_function(f"burnDemo.step > {paused_at} || burnDemo.done", timeout=60_000)
        assert not log["errors"], log["errors"]
    finally:
        browser.close()

    arrays = digits_arrays()
    model = burn.record.from_bytes(digits_cnn(), data)
    got = _accuracy(model, arrays["valid_images"], arrays["valid_labels"])
    assert abs(got - saved["accuracy"]) <= 1e-5, (got, saved["accuracy"])
    try:
        from burn_train.examples.digits import make_model_class
    except ImportError:  # burn-train not installed: the demo's own module was checked above
        return
    example = burn.record.from_bytes(make_model_class()("cpu"), data)
    assert _accuracy(example, arrays["valid_images"], arrays["valid_labels"]) == got
