"""``export_training`` without a browser: the captured step (forward, backward, update, with the
learning rate and bias corrections as inputs) replayed step after step on burn's numpy backend equals
burn.optim's own AdamW with gradient clipping by norm; metrics beyond the loss; the files written;
clear errors for what a page cannot train yet."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

burn = pytest.importorskip("burn")
pytest.importorskip("wgpu")

from burn import nn  # noqa: E402
from burn.nn import functional as F  # noqa: E402


def _model() -> Any:
    burn.seed(3)
    return nn.Sequential(nn.LinearConfig(5, 12).init(), nn.Relu(), nn.LinearConfig(12, 3).init())


def _step(model: Any, x: Any, y: Any) -> Any:
    logits = model(x)
    accuracy = (logits.argmax(1).reshape(y.shape) == y).float().mean()
    return {"loss": F.cross_entropy(logits, y), "accuracy": accuracy}


def _batch(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((6, 5)).astype(np.float32) * 3,
        "y": rng.integers(0, 3, 6).astype(np.int32),
    }


def test_captured_adamw_step_with_clipping_equals_burn_optim(tmp_path: Any) -> None:
    import burn_wgpu.web

    config = burn.optim.AdamWConfig(weight_decay=0.05, grad_clipping=burn.optim.GradientClipping.norm(0.5))
    out = burn_wgpu.web.export_training(_model(), _step, config.init(), _batch(0), tmp_path, lr=0.01)
    assert out.metrics == ["loss", "accuracy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html", "trainer.js", "weights.bin"]
    assert out.counts["step"]["submits"] == 1 and out.counts["evaluate"]["dispatches"] > 0
    names = list(out.graph.inputs)
    assert names[:5] == ["x", "y", "lr", "bias1", "bias2"]

    dev = burn.device("cpu", autodiff=True)
    model, opt = _model().to(dev), config.init()
    params = [p.value.numpy() for _, p in _model().named_params()]
    states = [np.zeros_like(p) for p in params for _ in range(2)]
    for t in range(1, 6):
        b, lr = _batch(t), 0.01 / t
        want = _step(model, burn.tensor(b["x"], device=dev), burn.tensor(b["y"], device=dev))
        model = opt.step(lr, model, want["loss"].backward())
        hyper = [np.array([v], np.float32) for v in (lr, 1 - 0.9**t, 1 - 0.999**t)]
        got = burn.ir.replay(out.graph, [b["x"], b["y"], *hyper, *params, *states], device="cpu", check=False)
        got = [g.numpy() for g in got]
        np.testing.assert_allclose(got[0], want["loss"].item(), rtol=1e-5)
        assert float(got[1]) == float(want["accuracy"].item())
        params, states = got[2 : 2 + len(params)], got[2 + len(params) :]
        for g, (_, p) in zip(params, model.named_params()):
            np.testing.assert_allclose(g, p.value.numpy(), rtol=1e-5, atol=1e-6)
    assert out.max_abs_diff["loss"] < 1e-4


@pytest.mark.parametrize(
    ("model", "step", "optimizer", "message"),
    [
        (_model, _step, lambda: burn.optim.AdaGradConfig().init(), "optimizer AdaGrad cannot run in a page"),
        (
            _model,
            lambda m, x, y: {"accuracy": m(x).sum()},
            lambda: burn.optim.SgdConfig().init(),
            "without 'loss'",
        ),
        (_model, lambda m, x, y: m(x), lambda: burn.optim.SgdConfig().init(), "one-element tensor"),
        (
            _model,
            lambda m, x, y: _step(m, x + burn.randn(x.shape, device=x.device), y),
            lambda: burn.optim.SgdConfig().init(),
            r"the step draws random numbers \(random_normal\).*supported in the training step: "
            r"random_bernoulli, random_uniform",
        ),
    ],
)
def test_export_training_refuses_what_a_page_cannot_train(
    tmp_path: Any, model: Any, step: Any, optimizer: Any, message: str
) -> None:
    import burn_wgpu.web

    with pytest.raises(burn_wgpu.web.WebExportError, match=message):
        burn_wgpu.web.export_training(model(), step, optimizer(), _batch(0), tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_export_training_checks_its_schedule_natively(tmp_path: Any, monkeypatch: Any) -> None:
    """The written step runs natively through wgpu-py before anything is written: a schedule whose
    results drift from burn's numpy backend is refused, naming the output and the step."""
    import burn_wgpu.web
    from burn_wgpu.web import _native

    run = _native.NativeSchedule.run

    def drifting(self: Any, feeds: Any) -> Any:
        out = run(self, feeds)
        if "param:layers.2.bias" in out:
            out["param:layers.2.bias"] = out["param:layers.2.bias"] + 0.01
        return out

    monkeypatch.setattr(_native.NativeSchedule, "run", drifting)
    with pytest.raises(burn_wgpu.web.WebExportError, match=r"param:layers.2.bias .* step 1\) differs"):
        burn_wgpu.web.export_training(_model(), _step, burn.optim.AdamConfig().init(), _batch(0), tmp_path)
    assert not list(tmp_path.iterdir())


def _bn_model() -> Any:
    burn.seed(4)
    return nn.Sequential(
        nn.LinearConfig(5, 12).init(),
        nn.BatchNormConfig(12, momentum=0.2).init(),
        nn.Relu(),
        nn.LinearConfig(12, 3).init(),
    )


def test_batch_norm_running_statistics_follow_burn_over_steps(tmp_path: Any) -> None:
    """The step updates batch norm's running mean and variance as burn.nn.BatchNorm does (its momentum),
    as inputs and outputs ``running:NAME`` of the graph: five steps replayed on numpy equal burn's own
    training within 1e-4 relative; the files' trainer keeps them with the params."""
    import json

    import burn_wgpu.web

    config = burn.optim.AdamConfig()
    out = burn_wgpu.web.export_training(_bn_model(), _step, config.init(), _batch(0), tmp_path, lr=0.01)
    names = list(out.graph.inputs)
    running = [n for n in names if n.startswith("running:")]
    assert running == ["running:layers.1.running_mean", "running:layers.1.running_var"]
    spec = json.loads((tmp_path / "trainer.js").read_text().split("/*TRAINER*/")[1].split("/*END*/")[0])
    assert [p["name"] for p in spec["persistent"] if p["role"] == "running"] == running

    dev = burn.device("cpu", autodiff=True)
    model, opt = _bn_model().to(dev), config.init()
    entries = dict(_bn_model().named_entries())
    params = [p.value.numpy() for _, p in _bn_model().named_params()]
    stats = [entries[n.split(":", 1)[1]].value.numpy() for n in running]
    states = [np.zeros_like(p) for p in params for _ in range(2)]
    for t in range(1, 6):
        b = _batch(t)
        want = _step(model, burn.tensor(b["x"], device=dev), burn.tensor(b["y"], device=dev))
        model = opt.step(0.01, model, want["loss"].backward())
        hyper = [np.array([v], np.float32) for v in (0.01, 1 - 0.9**t, 1 - 0.999**t)]
        feeds = [b["x"], b["y"], *hyper, *params, *stats, *states]
        got = [g.numpy() for g in burn.ir.replay(out.graph, feeds, device="cpu", check=False)]
        np.testing.assert_allclose(got[0], want["loss"].item(), rtol=1e-4)
        n = len(params)
        params, stats, states = got[2 : 2 + n], got[2 + n : 4 + n], got[4 + n :]
        for g, (_, p) in zip(params, model.named_params()):
            np.testing.assert_allclose(g, p.value.numpy(), rtol=1e-4, atol=1e-6)
        bn = model.layers[1]
        np.testing.assert_allclose(stats[0], bn.running_mean.value.numpy(), rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(stats[1], bn.running_var.value.numpy(), rtol=1e-4, atol=1e-7)
    assert not np.allclose(stats[0], 0.0)  # they moved


def test_page_modules_share_common_js(tmp_path: Any) -> None:
    """runtime.js (model.js) and trainer.js import their WebGPU helpers from common.js and define none of
    them again; the written modules have common.js inlined (no import left: one file each), keep their
    own exports, and parse as JavaScript modules where node is installed."""
    import re
    import shutil
    import subprocess
    from importlib import resources

    from burn_wgpu.web._export import page_module

    here = resources.files("burn_wgpu.web")
    shared = set(
        re.findall(r"^export (?:async )?function (\w+)", here.joinpath("common.js").read_text(), re.M)
    )
    assert {"toStorage", "fetchWeights", "requestDevice", "createPipelines", "bindOps", "recordOps"} <= shared
    for name, marker, exports in (
        ("runtime.js", "SCHEDULE", ["load", "requestDevice", "schedule"]),
        ("trainer.js", "TRAINER", ["loadTrainer", "requestDevice", "spec"]),
    ):
        source = here.joinpath(name).read_text()
        assert 'from "./common.js";' in source
        assert not set(re.findall(r"^(?:export )?(?:async )?function (\w+)", source, re.M)) & shared
        written = page_module(name, marker, "null")
        assert not re.search(r"^import ", written, re.M)
        for fn in shared:
            assert len(re.findall(rf"^(?:async )?function {fn}\(", written, re.M)) == 1, (name, fn)
        if shutil.which("node"):
            path = tmp_path / name.replace(".js", ".mjs")
            path.write_text(written)
            listed = subprocess.run(
                [
                    "node",
                    "-e",
                    f"import({str(path)!r}).then((m) => console.log(Object.keys(m).sort().join()))",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert listed.stdout.strip() == ",".join(exports), listed.stderr
