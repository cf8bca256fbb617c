"""CUDA graphs of a training step write the new weights and moments over the buffers the old ones were
read from (``burn_cuda._graphs``: ``_alias_plan``, ``_settled``): once the launches have shown which
written value becomes which input, the program is captured again with those outputs aliased, and a
steady launch copies nothing into its inputs. Results equal the same training without fusion; a
weight a tensor still holds, weights the user replaces, and a step split over several graphs stay
right."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn.testing._training import fresh_programs

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _tuning_blocks(monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")


class _Mlp(nn.Module):
    def __init__(self, device) -> None:
        self.l1 = nn.LinearConfig(16, 32).init(device)
        self.l2 = nn.LinearConfig(32, 4).init(device)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def _train(device, steps, *, split=False, keep_at=None, replace_at=None, on_step=None):
    """AdamW on a two-layer MLP; the losses (read at the end), the weights kept at step ``keep_at`` (with
    a copy of their values taken then) and the final first-layer weight. ``split``: the loss is read
    before the optimizer step, so forward+backward and the update are separate programs (graphs).
    ``replace_at``: the first layer's weight is replaced by new values at that step."""
    burn.seed(0)
    model, opt = _Mlp(device), burn.optim.AdamWConfig(weight_decay=0.01).init()
    rng = np.random.default_rng(1)
    x = burn.tensor(rng.standard_normal((8, 16)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, 4, 8).astype(np.int32), device=device)
    losses, kept = [], None
    for i in range(steps):
        loss = F.cross_entropy(model(x), y)
        grads = loss.backward()
        if split:
            losses.append(float(loss.item()))
        model = opt.step(1e-2, model, grads)
        if not split:
            losses.append(loss)
        if i == keep_at:
            w = model.l1.weight.val()
            kept = (w, w.numpy().copy())
        if i == replace_at:
            new = np.linspace(-0.1, 0.1, 16 * 32, dtype=np.float32).reshape(model.l1.weight.shape)
            model.l1.weight.set(burn.tensor(new, device=device))  # same id: its moments go on
        if on_step is not None:
            on_step(i)
    values = [v if isinstance(v, float) else float(v.item()) for v in losses]
    return values, kept, model.l1.weight.val().numpy()


def _live_graphs(fb):
    return [p.graph for ps in fb._programs.values() for p in ps if p.graph]


def _fused(monkeypatch):
    dev = burn.device("cuda:0", autodiff=True)
    fresh_programs(dev.backend.inner, monkeypatch)
    return dev, dev.backend.inner


def test_updates_are_written_over_their_inputs_and_launches_copy_nothing(cuda, monkeypatch):
    from burn_cuda import _graph_inputs

    steps = 16
    plain = _train(burn.device("cuda:0", autodiff=True, fusion=False), steps)
    dev, fb = _fused(monkeypatch)
    copies: list[int] = []
    from burn_cuda import _graphs

    real = _graph_inputs._copy_into
    count = lambda *a: copies.append(a[1].nbytes) or real(*a)  # noqa: E731
    for module in (_graph_inputs, _graphs):  # the fills, and the copies out of lent buffers
        monkeypatch.setattr(module, "_copy_into", count)
    launches = []
    got = _train(
        dev,
        steps,
        on_step=lambda i: (
            launches.append(fb.stats["graph_launches"]) or (copies.clear() if i == steps - 5 else None)
        ),
    )
    np.testing.assert_allclose(got[0], plain[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], plain[2], rtol=1e-5, atol=1e-6)
    (graph,) = _live_graphs(fb)
    # 4 weights/biases x (value, first moment, second moment): most of them (an update may run in a
    # kernel that also reads the old value later, which keeps its own buffer)
    assert len(graph.aliased) >= 9, (graph.aliased, fb.runtime.graph_events)
    # the feed kernel copies none of the inputs the updates were written over
    assert graph.own_inputs and graph.own_inputs.isdisjoint(k for k, _ in graph.feed_pairs)
    # per launch at most the weights are copied (out of the buffers, while the last step's model still
    # holds them when the next step runs); the moments, which nothing holds, never: before, every
    # weight and moment was copied into the graph's inputs at each launch
    weights = sum(int(np.prod(p.shape)) * 4 for p in _Mlp(dev).parameters())
    n = launches[-1] - launches[-5]
    assert n >= 3 and sum(copies) <= n * (weights + 64), (copies, n, weights)


def test_a_weight_a_tensor_still_holds_keeps_its_values(cuda, monkeypatch):
    dev, fb = _fused(monkeypatch)
    losses, (w, then), _ = _train(dev, 14, keep_at=8)
    np.testing.assert_array_equal(w.numpy(), then)  # later launches wrote over its buffer: copied out
    plain = _train(burn.device("cuda:0", autodiff=True, fusion=False), 14, keep_at=8)
    np.testing.assert_allclose(losses, plain[0], rtol=1e-5, atol=1e-6)
    assert any(g.aliased for g in _live_graphs(fb))


def test_weights_replaced_by_the_user_are_read(cuda, monkeypatch):
    dev, _ = _fused(monkeypatch)
    got = _train(dev, 14, replace_at=9)
    plain = _train(burn.device("cuda:0", autodiff=True, fusion=False), 14, replace_at=9)
    np.testing.assert_allclose(got[0], plain[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], plain[2], rtol=1e-5, atol=1e-6)


def test_a_step_split_over_graphs_reads_the_updated_weights_in_place(cuda, monkeypatch):
    """The loss read before the update splits the step into two programs: the update's graph aliases
    its outputs, and the forward/backward graph reads the weights from its buffers (no own copy)."""
    dev, fb = _fused(monkeypatch)
    got = _train(dev, 16, split=True)
    plain = _train(burn.device("cuda:0", autodiff=True, fusion=False), 16, split=True)
    np.testing.assert_allclose(got[0], plain[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], plain[2], rtol=1e-5, atol=1e-6)
    graphs = _live_graphs(fb)
    assert len(graphs) >= 2, fb.runtime.capture_failures
    assert any(g.aliased for g in graphs)
    readers = [g for g in graphs if not g.aliased]
    assert any(sum(g.direct) >= 4 for g in readers), [g.direct for g in readers]


class _Deep(nn.Module):
    def __init__(self, device) -> None:
        self.layers = [nn.LinearConfig(16, 16).init(device) for _ in range(6)]
        self.head = nn.LinearConfig(16, 4).init(device)

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x)) + x
        return self.head(x)


def _train_deep(device, steps, on_step=None):
    burn.seed(0)
    model, opt = _Deep(device), burn.optim.AdamWConfig(weight_decay=0.01).init()
    rng = np.random.default_rng(2)
    x = burn.tensor(rng.standard_normal((8, 16)).astype(np.float32), device=device)
    y = burn.tensor(rng.integers(0, 4, 8).astype(np.int32), device=device)
    losses = []
    for i in range(steps):
        loss = F.cross_entropy(model(x), y)
        model = opt.step(1e-2, model, loss.backward())
        losses.append(float(loss.item()))
        if on_step is not None:
            on_step(i)
    return losses, model.head.weight.val().numpy()


@pytest.mark.parametrize("segment", [24, 40, 64])
def test_a_step_cut_into_several_graphs_settles(cuda, monkeypatch, segment):
    """The stream cut every ``segment`` ops (``stream_segment``): a step is several programs whose graphs
    read each other's buffers in a cycle (the update's outputs feed the next forward). A capture gives
    its values new buffers, which drops the graphs reading the old ones in place; each such input is
    then copied in (``graph_copied``), so the graphs settle and every flush of the last steps launches
    one, with the unfused run's results."""
    steps = 24
    plain = _train_deep(burn.device("cuda:0", autodiff=True, fusion=False), steps)
    dev, fb = _fused(monkeypatch)
    monkeypatch.setattr(fb.runtime, "stream_segment", segment)
    monkeypatch.setattr(fb.runtime, "graph_copied", {})
    seen: list[tuple[int, int]] = []
    got = _train_deep(dev, steps, lambda i: seen.append((fb.stats["flushes"], fb.stats["graph_launches"])))
    np.testing.assert_allclose(got[0], plain[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], plain[1], rtol=1e-5, atol=1e-6)
    flushes = seen[-1][0] - seen[-5][0]
    launched = seen[-1][1] - seen[-5][1]
    assert flushes >= 4 * 3, flushes  # several programs per step
    assert launched == flushes, (launched, flushes, fb.runtime.graph_events[-12:])
