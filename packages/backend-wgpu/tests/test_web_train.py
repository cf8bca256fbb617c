"""Training in a page (issue 37): an MLP's step exported with SGD and with Adam, the MLP with batch norm,
and the digits example's CNN with Adam, run in headless Chromium (SwiftShader's WebGPU adapter),
against the same steps run natively by burn with burn.optim on numpy and on wgpu, and against the
exported schedule replayed natively through wgpu-py (NativeTrainer): the losses and the
accuracy metric of 50 steps (different batches, a learning rate changing every step, some steps
without read back) within 1e-4 relative; the page's saved record loads in Python into the same module
and predicts as the natively trained model; evaluate() gives the loaded model's metrics; a batch of
the wrong shape rejects with a message naming the input and both shapes; a trainer resumed from the
saved record and optimizer state continues exactly.

Needs playwright and Debian's chromium-headless-shell, as the inference page tests; skips with the
reason where either is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from burn_wgpu_tests import _browser  # registered by this folder's conftest

pytestmark = pytest.mark.skipif(_browser.unavailable() is not None, reason=_browser.unavailable() or "")

STEPS, BATCH, CLASSES = 50, 8, 4
RTOL = 1e-4


@pytest.fixture(scope="module")
def browser() -> Any:
    pytest.importorskip("wgpu")
    b = _browser.Browser()
    yield b
    b.close()


def _mlp() -> Any:
    import burn
    from burn import nn

    burn.seed(7)
    return nn.Sequential(nn.LinearConfig(6, 16).init(), nn.Relu(), nn.LinearConfig(16, CLASSES).init())


def _mlp_bn() -> Any:
    """The MLP with batch norm: its running statistics are trained by the page, saved with the record
    and used by evaluate()."""
    import burn
    from burn import nn

    burn.seed(7)
    return nn.Sequential(
        nn.LinearConfig(6, 16).init(),
        nn.BatchNormConfig(16).init(),
        nn.Relu(),
        nn.LinearConfig(16, CLASSES).init(),
    )


def _cnn() -> Any:
    """The digits example's CNN (the demo page's: conv 1->16 and 16->32 with relu and max-pool, then a
    linear layer 128->10) on 8x8 images."""
    import burn
    from burn_wgpu.web._demo import digits_cnn

    burn.seed(7)
    return digits_cnn()


MODELS = {"mlp": (_mlp, (BATCH, 6)), "mlp_bn": (_mlp_bn, (BATCH, 6)), "cnn": (_cnn, (BATCH, 1, 8, 8))}


def _loss(model: Any, x: Any, y: Any) -> Any:
    from burn.nn import functional as F

    return F.cross_entropy(model(x), y)


def _with_accuracy(model: Any, x: Any, y: Any) -> dict[str, Any]:
    from burn.nn import functional as F

    logits = model(x)
    return {
        "loss": F.cross_entropy(logits, y),
        "accuracy": (logits.argmax(1).reshape(y.shape) == y).float().mean(),
    }


def _batches(x_shape: tuple[int, ...]) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [
        {
            "x": rng.standard_normal(x_shape).astype(np.float32),
            "y": rng.integers(0, CLASSES, BATCH).astype(np.int32),
        }
        for _ in range(4)
    ]


def _lr(i: int) -> float:
    return 2e-2 / (1 + 0.1 * i)


def _native(
    make: Any,
    batches: list[dict[str, np.ndarray]],
    opt_config: Any,
    accuracies: list[float] | None = None,
    device: str = "cpu",
) -> tuple[list[float], Any]:
    """The same steps in burn on ``device`` (autodiff, burn.optim's own update): the losses (and each
    step's accuracy into ``accuracies``) and the trained model."""
    import burn

    dev = burn.device(device, autodiff=True)
    model, opt = make().to(dev), opt_config.init()
    losses = []
    for i in range(STEPS):
        b = batches[i % 4]
        out = _with_accuracy(model, burn.tensor(b["x"], device=dev), burn.tensor(b["y"], device=dev))
        model = opt.step(_lr(i), model, out["loss"].backward())
        losses.append(float(out["loss"].item()))
        if accuracies is not None:
            accuracies.append(float(out["accuracy"].item()))
    return losses, model.valid()


TRAIN_JS = """async ([batches, lrs, quiet]) => {
  const { loadTrainer } = await import("./trainer.js");
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  const warnings = [];
  device.addEventListener("uncapturederror", (e) => warnings.push(e.error.message));
  device.pushErrorScope("validation");
  const t = await loadTrainer({ device });
  const feed = (b) => ({ x: { data: Float32Array.from(b.x.data), shape: b.x.shape },
                         y: { data: Int32Array.from(b.y.data), shape: b.y.shape } });
  const losses = [];
  for (let i = 0; i < lrs.length; i++) {
    const out = await t.step(feed(batches[i % batches.length]), { lr: lrs[i], read: !quiet.includes(i) });
    losses.push(out);
  }
  const evaluated = await t.evaluate(feed(batches[0]));
  const record = Array.from(await t.saveRecord());
  let badShape = null;
  try {
    const x = batches[0].x.shape.slice(1);
    await t.step({ x: { data: new Float32Array(2 * x.reduce((a, b) => a * b)), shape: [2, ...x] }, y: feed(batches[0]).y });
  } catch (e) {
    badShape = `${e.name}: ${e.message}`;
  }
  const validation = await device.popErrorScope();
  const steps = t.stepCount;
  t.destroy();
  return { losses, evaluated, record, badShape, steps, counts: t.counts, warnings,
           validation: validation ? validation.message : null };
}"""


@pytest.mark.parametrize(
    ("model", "optimizer"), [("mlp", "sgd"), ("mlp", "adam"), ("mlp_bn", "adam"), ("cnn", "adam")]
)
def test_training_in_chromium_matches_burn(browser: Any, tmp_path: Any, model: str, optimizer: str) -> None:
    import burn
    import burn_wgpu.web

    config = burn.optim.SgdConfig(momentum=0.9) if optimizer == "sgd" else burn.optim.AdamConfig()
    make, x_shape = MODELS[model]
    batches = _batches(x_shape)
    accuracies: list[float] = []
    want, trained = _native(make, batches, config, accuracies)
    on_wgpu, _ = _native(make, batches, config, device="wgpu")  # burn-wgpu's own kernels, natively
    out = burn_wgpu.web.export_training(
        make(), _with_accuracy, config.init(), batches[0], tmp_path / "page", lr=_lr(0)
    )
    assert out.metrics == ["loss", "accuracy"] and out.counts["step"]["submits"] == 1
    assert [b.name for b in out.batch] == ["x", "y"]

    page, log = browser.open(tmp_path / "page")
    page.wait_for_function("window.burnTrainer && window.burnTrainer.status !== 'loading'", timeout=60_000)
    assert page.evaluate("window.burnTrainer.status") == "ready", page.evaluate("window.burnTrainer.error")
    js_batches = [
        {k: {"data": v.ravel().tolist(), "shape": list(v.shape)} for k, v in b.items()} for b in batches
    ]
    quiet = [3, 4, 11]  # steps that skip the read back still train
    res = page.evaluate(TRAIN_JS, [js_batches, [_lr(i) for i in range(STEPS)], quiet])
    page.close()
    assert res["validation"] is None and not res["warnings"], (res["validation"], res["warnings"])
    assert not log["errors"], log["errors"]
    assert res["steps"] == STEPS  # the rejected step did not count

    got = res["losses"]
    assert [i for i, v in enumerate(got) if v is None] == quiet
    for i, (g, w, acc) in enumerate(zip(got, want, accuracies)):
        if g is not None:
            assert abs(g["loss"] - w) <= RTOL * abs(w), (i, g, w)
            assert abs(g["loss"] - on_wgpu[i]) <= RTOL * abs(w), (i, g, on_wgpu[i])
            assert g["accuracy"] == pytest.approx(acc, abs=1e-6), (i, g, acc)
    assert want[-1] < want[0]  # it trains

    # the same exported schedule replayed natively through wgpu-py (NativeTrainer) gives the page's losses
    replay = burn_wgpu.web.NativeTrainer(tmp_path / "page")
    for i, g in enumerate(got):
        n = replay.step(batches[i % 4], lr=_lr(i), read=g is not None)
        if g is not None:
            assert abs(n["loss"] - g["loss"]) <= RTOL * abs(g["loss"]), (i, n, g)
            assert n["accuracy"] == g["accuracy"], (i, n, g)

    # the page's record: a burn record of the same module, predicting as the natively trained model
    loaded = burn.record.from_bytes(make(), bytes(res["record"]))
    x = burn.tensor(batches[0]["x"])
    np.testing.assert_allclose(loaded(x).numpy(), trained(x).numpy(), rtol=1e-3, atol=1e-4)
    want_eval = _with_accuracy(loaded, x, burn.tensor(batches[0]["y"]))
    assert abs(res["evaluated"]["loss"] - want_eval["loss"].item()) <= RTOL * abs(want_eval["loss"].item())
    assert res["evaluated"]["accuracy"] == pytest.approx(want_eval["accuracy"].item(), abs=1e-6)

    shape, bad = ",".join(map(str, x_shape)), ",".join(map(str, (2, *x_shape[1:])))
    assert res["badShape"] == (
        f"RangeError: step: batch input 'x' expects shape [{shape}] (fixed at export), got [{bad}]"
    )


RESUME_JS = """async ([batches, lrs, half]) => {
  const { loadTrainer } = await import("./trainer.js");
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  device.pushErrorScope("validation");
  const feed = (b) => ({ x: { data: Float32Array.from(b.x.data), shape: b.x.shape },
                         y: { data: Int32Array.from(b.y.data), shape: b.y.shape } });
  const first = await loadTrainer({ device });
  for (let i = 0; i < half; i++) await first.step(feed(batches[i % batches.length]), { lr: lrs[i], read: false });
  const record = await first.saveRecord();
  const state = await first.saveState();
  first.destroy();
  const second = await loadTrainer({ device });
  let wrongFile = null;
  try { await second.loadRecord(state); } catch (e) { wrongFile = e.message; }
  await second.loadRecord(record);
  await second.loadState(state);
  const steps = second.stepCount;
  const losses = [];
  for (let i = half; i < lrs.length; i++) losses.push((await second.step(feed(batches[i % batches.length]), { lr: lrs[i] })).loss);
  const validation = await device.popErrorScope();
  second.destroy();
  return { losses, steps, wrongFile, state: Array.from(state), validation: validation ? validation.message : null };
}"""


def test_resume_from_saved_record_and_state_in_chromium(browser: Any, tmp_path: Any) -> None:
    """Weights and Adam state saved after 25 steps and loaded into a fresh trainer: the next 25 steps
    equal 50 uninterrupted steps in burn; the saved state holds burn.optim's moments."""
    import burn
    import burn_wgpu.web
    from safetensors.numpy import load as st_load

    make, x_shape = MODELS["mlp"]
    batches = _batches(x_shape)
    want, _ = _native(make, batches, burn.optim.AdamConfig())
    half = STEPS // 2
    dev = burn.device("cpu", autodiff=True)
    model, opt = make().to(dev), burn.optim.AdamConfig().init()
    for i in range(half):
        b = batches[i % 4]
        loss = _loss(model, burn.tensor(b["x"], device=dev), burn.tensor(b["y"], device=dev))
        model = opt.step(_lr(i), model, loss.backward())
    burn_wgpu.web.export_training(
        make(), _loss, burn.optim.AdamConfig().init(), batches[0], tmp_path / "page"
    )

    page, log = browser.open(tmp_path / "page")
    page.wait_for_function("window.burnTrainer && window.burnTrainer.status !== 'loading'", timeout=60_000)
    js_batches = [
        {k: {"data": v.ravel().tolist(), "shape": list(v.shape)} for k, v in b.items()} for b in batches
    ]
    res = page.evaluate(RESUME_JS, [js_batches, [_lr(i) for i in range(STEPS)], half])
    page.close()
    assert res["validation"] is None and not log["errors"], (res["validation"], log["errors"])
    assert res["steps"] == half
    assert res["wrongFile"].startswith("loadRecord: the file does not match this trainer"), res["wrongFile"]
    assert "missing: layers.0.weight" in res["wrongFile"]
    for i, (g, w) in enumerate(zip(res["losses"], want[half:])):
        assert abs(g - w) <= RTOL * abs(w), (half + i, g, w)

    saved = st_load(bytes(res["state"]))
    states = opt.record()["states"]
    for name, p in model.named_params():
        assert states[p.id]["time"] == half
        for key in ("moment_1", "moment_2"):
            np.testing.assert_allclose(saved[f"{name}.{key}"], states[p.id][key], rtol=1e-3, atol=1e-7)
