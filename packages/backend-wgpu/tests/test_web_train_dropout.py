"""Dropout in an exported training step: the mask comes from a per-step uint32 seed fed at run time.

Without a browser: the masks are Bernoulli(p) (keep rate within 4.5 sigma over 4096 elements and over
many seeds, values exactly 0 and 1 / (1 - p), neighbours and consecutive seeds uncorrelated), the same
for the same seed and drawn identically by burn's numpy backend and by wgpu natively. In headless
Chromium: the page's steps equal the captured step replayed on numpy with the page's seeds (its
default seed + t, and an explicit seed), and ``evaluate()`` runs without dropout (it equals the saved
record's deterministic forward in Python).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from burn_wgpu_tests import _browser  # registered by this folder's conftest

burn = pytest.importorskip("burn")
pytest.importorskip("wgpu")

from burn import nn  # noqa: E402
from burn.nn import functional as F  # noqa: E402

P = 0.3
N = 4096


def _mask(seed: int, device: str = "cpu", stream: int = 1) -> np.ndarray:
    from burn_wgpu.web._train_random import bernoulli_mask

    s = burn.tensor(np.array([seed], np.uint32), device=device)
    return bernoulli_mask(s, (64, 64), 1.0 - P, burn.float32, stream).numpy().ravel()


def test_masks_are_bernoulli_and_reproducible_per_seed() -> None:
    keep = 1.0 - P
    sigma = np.sqrt(keep * P / N)
    masks = {s: _mask(s) for s in range(1, 41)}
    for m in masks.values():
        assert set(np.unique(m)) <= {0.0, 1.0}
        assert abs(m.mean() - keep) < 4.5 * sigma
    assert abs(np.mean([m.mean() for m in masks.values()]) - keep) < 4.5 * sigma / np.sqrt(len(masks))
    np.testing.assert_array_equal(_mask(7), masks[7])  # the same seed, the same draw
    np.testing.assert_array_equal(_mask(7, "wgpu"), masks[7])  # on wgpu natively too
    agree = keep**2 + P**2  # two independent masks agree at this rate
    for a, b in [(1, 2), (2, 3), (10, 11)]:
        assert abs((masks[a] == masks[b]).mean() - agree) < 4.5 * np.sqrt(agree * (1 - agree) / N)
    m = masks[1]
    assert abs((m[:-1] == m[1:]).mean() - agree) < 4.5 * np.sqrt(agree * (1 - agree) / N)  # neighbours
    other = _mask(1, stream=2)  # a second dropout of the same step draws its own mask
    assert abs((other == m).mean() - agree) < 4.5 * np.sqrt(agree * (1 - agree) / N)


class _Net(nn.Module):
    def __init__(self) -> None:
        self.fc = nn.LinearConfig(8, 64).init()
        self.drop = nn.DropoutConfig(P).init()
        self.out = nn.LinearConfig(64, 3).init()

    def forward(self, x: Any) -> Any:
        return self.out(self.drop(F.relu(self.fc(x))))


def _model() -> Any:
    burn.seed(5)
    return _Net()


def _step(model: Any, x: Any, y: Any) -> dict[str, Any]:
    dropped = model.drop(burn.ones((64, 64), device=x.device))  # the mask itself, seen through metrics
    return {
        "loss": F.cross_entropy(model(x), y),
        "kept": (dropped != 0).float().mean(),
        "high": dropped.max(),
        "low": dropped.min(),
    }


def _batch() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)
    return {
        "x": rng.standard_normal((16, 8)).astype(np.float32),
        "y": rng.integers(0, 3, 16).astype(np.int32),
    }


def _replay(graph: Any, batch: dict[str, np.ndarray], seeds: list[int], lr: float) -> list[list[float]]:
    """The captured step on burn's numpy backend, one step per seed: each step's metrics."""
    params = [p.value.numpy() for _, p in _model().named_params()]
    states = [np.zeros_like(p) for p in params for _ in range(2)]
    out = []
    for t, seed in enumerate(seeds, 1):
        hyper = [np.array([v], np.float32) for v in (lr, 1 - 0.9**t, 1 - 0.999**t)]
        feeds = [batch["x"], batch["y"], *hyper, np.array([seed], np.uint32), *params, *states]
        got = [g.numpy() for g in burn.ir.replay(graph, feeds, device="cpu", check=False)]
        out.append([float(v) for v in got[:4]])
        params, states = got[4 : 4 + len(params)], got[4 + len(params) :]
    return out


def test_exported_step_draws_dropout_from_its_seed(tmp_path: Any) -> None:
    import burn_wgpu.web

    out = burn_wgpu.web.export_training(_model(), _step, burn.optim.AdamConfig().init(), _batch(), tmp_path)
    assert list(out.graph.inputs)[:6] == ["x", "y", "lr", "bias1", "bias2", "seed"]
    assert out.graph.inputs["seed"].dtype is burn.uint32
    assert not any(burn.ir.op_def(op.kind).family == "random" for op in out.graph.ops)
    steps = _replay(out.graph, _batch(), list(range(1, 31)), 1e-3)
    kept = [s[1] for s in steps]
    assert all(s[2] == pytest.approx(1 / (1 - P)) and s[3] == 0.0 for s in steps)
    assert all(abs(k - (1 - P)) < 4.5 * np.sqrt(P * (1 - P) / N) for k in kept)
    assert len(set(kept)) > 25  # a different mask every step
    again = _replay(out.graph, _batch(), [3, 3], 1e-3)  # the same seed twice: the same mask
    assert again[0][1] == again[1][1] == steps[2][1]


@pytest.mark.skipif(_browser.unavailable() is not None, reason=_browser.unavailable() or "")
def test_page_dropout_follows_the_seed_and_evaluate_has_none(tmp_path: Any) -> None:
    import burn_wgpu.web

    out = burn_wgpu.web.export_training(
        _model(), _step, burn.optim.AdamConfig().init(), _batch(), tmp_path / "page"
    )
    b = _batch()
    js = """async ([x, y]) => {
      const { loadTrainer } = await import("./trainer.js");
      const t = await loadTrainer({ seed: 100 });
      const batch = { x: { data: Float32Array.from(x), shape: [16, 8] }, y: { data: Int32Array.from(y), shape: [16] } };
      const steps = [];
      for (let i = 0; i < 6; i++) steps.push(await t.step(batch, { lr: 1e-3 }));
      steps.push(await t.step(batch, { lr: 1e-3, seed: 104 }));  // seed 100 + 4 again
      const evaluated = [await t.evaluate(batch), await t.evaluate(batch)];
      const record = Array.from(await t.saveRecord());
      t.destroy();
      return { steps, evaluated, record };
    }"""
    browser = _browser.Browser()
    try:
        page, log = browser.open(tmp_path / "page")
        page.wait_for_function(
            "window.burnTrainer && window.burnTrainer.status !== 'loading'", timeout=60_000
        )
        res = page.evaluate(js, [b["x"].ravel().tolist(), b["y"].tolist()])
    finally:
        browser.close()
    assert not log["errors"], log["errors"]
    want = _replay(out.graph, b, [101, 102, 103, 104, 105, 106, 104], 1e-3)
    for got, w in zip(res["steps"], want):
        assert got["kept"] == w[1] and got["high"] == pytest.approx(1 / (1 - P))
        assert abs(got["loss"] - w[0]) <= 1e-4 * abs(w[0])
    assert res["steps"][6]["kept"] == res["steps"][3]["kept"]
    # evaluate(): no dropout, so deterministic and equal to the saved weights' forward in Python
    loaded = burn.record.from_bytes(_model(), bytes(res["record"]))
    loss = F.cross_entropy(loaded(burn.tensor(b["x"])), burn.tensor(b["y"])).item()
    for e in res["evaluated"]:
        assert e["kept"] == 1.0 and e["high"] == e["low"] == 1.0
        assert abs(e["loss"] - loss) <= 1e-4 * abs(loss)
