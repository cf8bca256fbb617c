"""Recorded fusion programs on wgpu (``burn_wgpu._graphs``): a repeated training step becomes one pass of
prebuilt commands and one submission; its losses equal training without recording and without fusion,
with changing scalars (a learning-rate schedule), dropout, losses held across steps and replaced
inference weights."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn.testing._training import conv_training_losses, fresh_programs, inference_loop_with_new_weights
from burn_wgpu._executor import NotRecordable


def _fresh(fb, monkeypatch):
    fresh_programs(fb, monkeypatch)


def _losses(dev, steps: int, dropout: float, read_every: int) -> list[float]:
    # a new learning rate every step: the recorded metadata is rewritten
    return conv_training_losses(dev, steps, dropout, read_every, image=6, hidden=16, decay=True)


@pytest.mark.parametrize("read_every", [1, 0])
def test_a_training_step_replays_as_one_recorded_submission(dev, raw_dev, read_every, monkeypatch):
    steps = 10
    plain = _losses(burn.device(raw_dev, autodiff=True), steps, 0.0, read_every)
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    _fresh(fb, monkeypatch)
    before = dict(fb.stats)
    got = _losses(adev, steps, 0.0, read_every)
    # the same kernels over the same values: equal up to the driver's freedom to contract a*b+c
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["graphs"] - before["graphs"] >= 1, fb.runtime.capture_failures
    assert fb.stats["graph_launches"] - before["graph_launches"] >= steps - 5
    # after a first launch through wgpu-py's checked calls, launches call wgpu-native directly
    graphs = [p.graph for programs in fb._programs.values() for p in programs if p.graph]
    assert any(g.raw is not None for g in graphs)


def test_a_launched_step_is_one_submission(dev, monkeypatch):
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    _fresh(fb, monkeypatch)
    burn.seed(1)
    model = nn.LinearConfig(8, 4).init(adev)
    opt = burn.optim.SgdConfig().init()
    x = burn.tensor(np.ones((3, 8), np.float32), device=adev)
    counts = []
    for _ in range(6):
        launches = fb.stats["graph_launches"]
        with burn.profile(adev) as p:
            model = opt.step(0.1, model, (model(x) ** 2).mean().backward())
        counts.append((fb.stats["graph_launches"] - launches, p.submits))
    launched = [submits for n, submits in counts if n]
    assert launched and all(s == 1 for s in launched), counts


def test_dropout_masks_are_fresh_and_equal_step_by_step_replay(dev, monkeypatch):
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    _fresh(fb, monkeypatch)
    recorded = _losses(adev, 8, 0.5, 1)
    assert fb.stats["graph_launches"] > 0, fb.runtime.capture_failures
    monkeypatch.setattr(fb, "_capture", None)  # replay step by step
    _fresh(fb, monkeypatch)
    stepwise = _losses(adev, 8, 0.5, 1)
    np.testing.assert_allclose(recorded, stepwise, rtol=1e-5, atol=1e-6)
    assert len(set(np.round(recorded, 6))) > 4  # the masks and updates change from step to step


def test_an_inference_loop_reads_its_weights_in_place_and_survives_new_weights(dev, monkeypatch):
    fb = dev.backend
    _fresh(fb, monkeypatch)
    grew = inference_loop_with_new_weights(dev)
    assert grew["graphs"] >= 1, fb.runtime.capture_failures
    assert grew["graph_launches"] >= 4


def test_reads_cannot_be_recorded(backend):
    ex = backend.ex
    buf = backend.pool.storage(16)
    ex.recording = []
    try:
        with pytest.raises(NotRecordable, match="read back to the host"):
            ex.read([(buf.buffer, 0, 16)])
        ex.copy(buf.buffer, 0, buf.buffer, 8, 8)  # appended, not encoded
        assert len(ex.recording) == 1
    finally:
        ex.recording = None


def test_alternating_batch_shapes_keep_one_recording_each(dev, raw_dev, monkeypatch):
    """Two batch shapes in turn (a last partial batch, validation): each stream keeps its own recorded
    program, and no launch serves a stream of the other shape."""

    def losses(device):
        burn.seed(2)
        model = nn.LinearConfig(6, 3).init(device)
        opt = burn.optim.AdamConfig().init()
        rng = np.random.default_rng(5)
        out = []
        for i in range(12):
            rows = 8 if i % 2 else 5
            x = burn.tensor(rng.standard_normal((rows, 6)).astype(np.float32), device=device)
            y = burn.tensor(rng.integers(0, 3, rows).astype(np.int32), device=device)
            loss = F.cross_entropy(model(x), y)
            model = opt.step(1e-2, model, loss.backward())
            out.append(loss)
        return [float(v.item()) for v in out]

    plain = losses(burn.device(raw_dev, autodiff=True))
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    _fresh(fb, monkeypatch)
    before = dict(fb.stats)
    got = losses(adev)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["graphs"] - before["graphs"] >= 2, fb.runtime.capture_failures
    assert fb.stats["graph_launches"] - before["graph_launches"] >= 4
