"""Fusion on burn-cuda: a repeated training step is planned once, replayed, then captured as a CUDA graph
(``burn_cuda._graphs``); its losses equal the same training without graphs and without fusion."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn.testing._training import conv_training_losses, fresh_programs, inference_loop_with_new_weights


@pytest.fixture(autouse=True)
def _tuning_blocks(monkeypatch):
    """These tests count graphs and in-place writes after a few steps: tuning runs before first use,
    as before background tuning (a program calling a kernel still tuning is not captured yet)."""
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")


pytestmark = pytest.mark.gpu


def _losses(dev, steps: int, dropout: float, read_every: int) -> list[float]:
    return conv_training_losses(dev, steps, dropout, read_every)


@pytest.mark.parametrize("read_every", [1, 0])
def test_a_training_step_replays_as_a_cuda_graph(cuda, read_every, monkeypatch):
    steps = 12
    plain = _losses(burn.device("cuda:0", autodiff=True, fusion=False), steps, 0.0, read_every)
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    fresh_programs(fb, monkeypatch)  # plan and capture anew for this case
    before = dict(fb.stats)
    got = _losses(dev, steps, 0.0, read_every)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["graphs"] - before["graphs"] >= 1, fb.runtime.capture_failures
    assert fb.stats["graph_launches"] - before["graph_launches"] >= steps - 5


def test_graphs_draw_fresh_dropout_masks_and_equal_step_by_step_replay(cuda, monkeypatch):
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    with_graphs = _losses(dev, 10, 0.5, 1)
    monkeypatch.setattr(fb, "_capture", None)  # replay step by step
    monkeypatch.setattr(fb, "_programs", {})
    monkeypatch.setattr(fb, "_lengths", set())
    without = _losses(dev, 10, 0.5, 1)
    np.testing.assert_allclose(with_graphs, without, rtol=1e-5, atol=1e-6)
    assert len(set(np.round(with_graphs, 6))) > 5  # the losses move: the masks and updates change


def test_an_inference_loop_reads_its_weights_in_place_and_survives_new_weights(cuda, monkeypatch):
    """Weights that stay the same arrays are read by the graph where they are (no copy); when they
    are replaced, the graph declines the launch and the step runs (and is captured) anew."""
    dev = burn.device("cuda:0")
    fb = dev.backend
    fresh_programs(fb, monkeypatch)
    grew = inference_loop_with_new_weights(dev)
    assert grew["graphs"] >= 1, fb.runtime.capture_failures
    assert grew["graph_launches"] >= 4


def _fresh(fb, monkeypatch):
    fresh_programs(fb, monkeypatch)  # plan and capture anew for this case


def test_results_are_lent_without_copies_and_kept_values_survive_later_launches(cuda, monkeypatch):
    """After a launch the weights and moments are the graph's own buffers (lent, not copied); the next
    launch copies out only what a tensor still holds (here each step's loss, read at the end) and
    declines nothing: every step after the capture is one graph launch."""
    steps = 14
    plain = _losses(burn.device("cuda:0", autodiff=True, fusion=False), steps, 0.0, 0)
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    _fresh(fb, monkeypatch)
    before = dict(fb.stats)
    got = _losses(dev, steps, 0.0, 0)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["graphs"] - before["graphs"] == 1, fb.runtime.capture_failures  # never declined
    assert fb.stats["graph_launches"] - before["graph_launches"] >= steps - 4
    (program,) = [p for ps in fb._programs.values() for p in ps if p.graph]
    assert program.graph.lendable and program.graph.lent  # lent buffers exist and were handed out


def test_a_view_of_a_lent_buffer_makes_the_next_launch_decline(cuda, monkeypatch):
    """A reshape of a weight is a view of the graph's buffer: the next launch would overwrite it, so it
    declines (the step replays without the graph) and the view keeps the values it had."""
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    _fresh(fb, monkeypatch)
    burn.seed(1)
    model = nn.LinearConfig(8, 4).init(dev)
    opt = burn.optim.AdamConfig().init()
    x = burn.ones((3, 8), device=dev)
    views, expected = [], []
    for i in range(12):
        model = opt.step(1e-2, model, model(x).square().mean().backward())
        if i in (6, 9):
            v = model.weight.val().reshape(-1)
            expected.append(v.numpy().copy())
            views.append(v)
    for v, e in zip(views, expected):
        np.testing.assert_array_equal(v.numpy(), e)
    assert not np.array_equal(expected[0], expected[1])  # training moved on between the two


def test_an_index_check_inside_a_graph_reports_a_bad_target_at_the_next_read(cuda, monkeypatch):
    """Fusion records burn-cuda's index checks in its streams, so the check of cross-entropy's targets
    is captured with the step; a bad target at a later launch still raises, with its message, at the
    read that ends the step, and the device trains on afterwards."""
    dev = burn.device("cuda:0", autodiff=True)
    fb = dev.backend.inner
    _fresh(fb, monkeypatch)
    burn.seed(2)
    model = nn.LinearConfig(6, 4).init(dev)
    opt = burn.optim.AdamConfig().init()
    x = burn.ones((5, 6), device=dev)
    # two target arrays in turn (new arrays each step, as batches are: copied into the graph, not read
    # in place), then a bad one
    goods = [burn.tensor(np.array(t), device=dev) for t in ([0, 1, 2, 3, 0], [3, 2, 1, 0, 1])]
    bad = burn.tensor(np.array([0, 1, 9, 3, 0]), device=dev)  # class 9 of 4

    def step(targets):
        nonlocal model
        loss = F.cross_entropy(model(x), targets)
        model = opt.step(1e-2, model, loss.backward())
        return loss.item()

    before = dict(fb.stats)
    for i in range(8):
        step(goods[i % 2])
    assert fb.stats["graph_launches"] - before["graph_launches"] >= 3, fb.runtime.capture_failures
    assert fb.inner.index_checks._captured  # the target check is inside the graph
    launches = fb.stats["graph_launches"]
    with pytest.raises(burn.IndexOutOfRangeError, match="9"):
        step(bad)
    assert fb.stats["graph_launches"] == launches + 1  # the bad step ran as the captured graph
    assert np.isfinite(step(goods[0]))
