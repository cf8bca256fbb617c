"""The training strategies (SingleDevice, DataParallel), the epoch values' one owner (EventStore with
``restore()``), the frozen ``Snapshot`` renderers read, and gradients recognised by type."""

from __future__ import annotations

import ast
import dataclasses
import io
import types
import typing
from pathlib import Path

import burn
import numpy as np
import pytest
from burn import nn
from burn.autotune import AutotuneEvent
from burn.data import DataLoaderBuilder, InMemDataset
from burn.nn import functional as F
from burn.optim import GradientsParams, SgdConfig
from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput
from burn_train._events import EndEpochEvent, StartEvent
from burn_train.learner import _strategy
from burn_train.learner._strategy import DataParallel, SingleDevice, sync_on_train_thread
from burn_train.metric import LossMetric, MetricEntry
from burn_train.processor import MetricsHub, MetricSlot, make_processor
from burn_train.renderer import DashboardState, Renderer, Snapshot, SplitView

from ._helpers import CountMetric, item_event


class Net(nn.Module):
    """(N, 5) -> Linear(5, 8) -> tanh -> Linear(8, 3) in float64; ``log`` collects each train loss."""

    def __init__(self, device, log: list) -> None:
        self.fc1 = nn.LinearConfig(5, 8).init(device)
        self.fc2 = nn.LinearConfig(8, 3).init(device)
        for p in self.params():
            p.set(p.value.cast(burn.float64))
        self.log = log

    def _output(self, batch) -> ClassificationOutput:
        x, y = batch
        logits = self.fc2(F.tanh(self.fc1(x)))
        return ClassificationOutput(F.cross_entropy(logits, y), logits, y)

    def train_step(self, batch) -> TrainOutput:
        item = self._output(batch)
        self.log.append(float(item.loss.numpy()))
        return TrainOutput(self, item=item, grads=item.loss.backward())

    def valid_step(self, batch) -> ClassificationOutput:
        return self._output(batch)


def _batch(items, device):
    x = burn.tensor(np.stack([i[0] for i in items]), dtype=burn.float64, device=device)
    return x, burn.tensor([i[1] for i in items], dtype=burn.int32, device=device)


def _items(n: int = 28, seed: int = 3) -> list:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5))
    y = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 0.5).astype(int)
    return [(x[i], int(y[i])) for i in range(n)]


def _fit(tmp_path, names, renderer="none"):
    devices = [burn.device(n, autodiff=True) for n in names]
    burn.seed(11)
    log: list = []
    items = _items()
    train = DataLoaderBuilder(_batch).batch_size(4).shuffle(5).build(InMemDataset(items))
    valid = DataLoaderBuilder(_batch).batch_size(8).build(InMemDataset(items[:16]))
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .devices(devices)
        .num_epochs(2)
        .renderer(renderer)
        .system_metrics(False)
        .metric_logs(csv=False, plots=False)
        .build(Net(devices[0], log), SgdConfig(momentum=0.9).init(), 0.1)
    )
    learner.fit(train, valid)
    return learner, log


# Recorded with the learner before the step was split into strategies (same seed, same data): the
# strategies must train exactly as the one loop did.
BEFORE = {
    "single": {
        "losses": [
            1.1965807238181307, 1.1391109491724714, 1.3972108579197169, 1.0972728240847571,
            1.1224236821669762, 0.9306169331812437, 0.8932782398116261, 1.2829227077737535,
            0.7353962696804774, 1.0091911069532982, 0.6516128884910868, 0.42852939031070364,
            0.9359298651586093, 0.6664083604423137,
        ],
        "train": {1: 1.110927744307846, 2: 0.8157129412586063},
        "valid": {1: 0.7991405402490971, 2: 0.6658368630499998},
    },
    "parallel": {
        "losses": [
            1.1483701805109345, 1.1230609847257937, 1.047996121014052, 1.156452928374886,
            1.1743536865227682, 1.3827107156873544, 1.1181990096870753, 1.1407865750749093,
            0.9732555515832171, 0.9429662134415107, 1.106321958119287, 1.3039180409802649,
            0.8208530950304587, 0.6642879766228926, 0.9544809326320592, 0.6540283966112338,
        ],
        "train": {1: 1.1660624870309686, 2: 0.9451225000570396},
        "valid": {1: 0.9346861727586055, 2: 0.7911604394706035},
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("key", "names", "kind"),
    [("single", ["cpu"], SingleDevice), ("parallel", ["cpu", "cpu:1"], DataParallel)],
)
def test_strategies_train_as_before(tmp_path, key, names, kind):
    learner, log = _fit(tmp_path, names)
    assert type(learner.strategy) is kind
    want = BEFORE[key]
    np.testing.assert_allclose(log, want["losses"], rtol=1e-9, atol=1e-12)
    for split in ("train", "valid"):
        got = learner.store.values[split]["Loss"]
        assert sorted(got) == [1, 2]
        np.testing.assert_allclose([got[1], got[2]], [want[split][1], want[split][2]], rtol=1e-9)


def test_the_sync_decision_is_made_once_per_device(tmp_path, monkeypatch):
    calls = []
    real = _strategy.sync_on_train_thread

    def counting(device, where="auto"):
        calls.append(str(device))
        return real(device, where)

    monkeypatch.setattr(_strategy, "sync_on_train_thread", counting)
    learner, _ = _fit(tmp_path / "one", ["cpu"])  # 2 epochs of 7 batches, and validation
    assert calls == ["cpu+autodiff"] and learner.strategy.sync_here == (False,)
    calls.clear()
    learner, _ = _fit(tmp_path / "two", ["cpu", "cpu:1"])
    assert calls == ["cpu+autodiff", "cpu:1+autodiff"] and learner.strategy.sync_here == (False, False)


def _device(host_memory: bool):
    """A device whose backend declares ``host_memory`` (and nothing else)."""
    return types.SimpleNamespace(
        inner=types.SimpleNamespace(backend=types.SimpleNamespace(host_memory=host_memory))
    )


def test_sync_follows_the_backends_declared_host_memory():
    assert burn.device("cpu").backend.host_memory is True
    assert sync_on_train_thread(burn.device("cpu", autodiff=True)) is False  # numpy: the processor reads
    assert sync_on_train_thread(_device(False)) is True  # a device backend: reads stay on the train thread
    assert sync_on_train_thread(_device(True)) is False
    assert sync_on_train_thread(None) is False  # a model that cannot tell its device
    assert sync_on_train_thread(_device(True), "train") is True
    assert sync_on_train_thread(_device(False), "processor") is False


def test_single_device_steps_and_rejects_a_wrong_output():
    dev = burn.device("cpu", autodiff=True)
    burn.seed(0)
    model = Net(dev, [])
    batches = [_batch(_items(4), dev), _batch(_items(4, seed=1), dev)]
    strategy = SingleDevice(dev, batches)
    steps = list(strategy.steps())
    assert [[k for k, _ in step] for step in steps] == [[0], [0]]
    outs, updated, grads = strategy.train_step(model, steps[0])
    assert [k for k, _ in outs] == [0] and updated is model and isinstance(grads, burn.Gradients)

    class Wrong:
        def train_step(self, batch):
            return 1.0

    with pytest.raises(TypeError, match="train_step must return a TrainOutput, got float"):
        strategy.train_step(Wrong(), steps[0])


def test_data_parallel_reduces_to_the_union_batch_gradient():
    devices = [burn.device("cpu", autodiff=True), burn.device("cpu:1", autodiff=True)]
    items = _items(12)
    burn.seed(0)
    model = Net(devices[0], [])
    loader = DataLoaderBuilder(_batch).batch_size(6).build(InMemDataset(items))
    strategy = DataParallel(devices, loader)
    (step,) = list(strategy.steps())
    assert [k for k, _ in step] == [0, 1]
    outs, main, grads = strategy.train_step(model, step)
    assert main is model and isinstance(grads, GradientsParams)
    union = model.train_step(_batch(items, devices[0]))
    want = GradientsParams.from_grads(union.grads, model)
    for pid, g in want.items():
        np.testing.assert_allclose(grads.get(pid).numpy(), g.numpy(), rtol=1e-10, atol=1e-12, err_msg=pid)
    assert strategy.replicas(model)[1] is strategy.replicas(model)[1]  # kept until the optimizer steps
    before = strategy.replicas(model)[1]
    strategy.stepped()
    assert strategy.replicas(model)[1] is not before


# ------------------------------------------------------------------------- epoch values: one owner
def _one_epoch(hub, total: int, items: int | None = None) -> None:
    """Start, ``items`` (default ``total``) train items out of ``total``, the epoch's end, close."""
    proc = make_processor(hub, "inline")
    proc.start()
    proc.submit(StartEvent(2, 1, {"train": total}))
    for i in range(total if items is None else items):
        proc.submit(item_event(i, total))
    proc.submit(EndEpochEvent("train", 1))
    proc.close()


class _RecordingLock:
    def __init__(self) -> None:
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc) -> None:
        return None


def test_restore_goes_through_the_store_lock_and_renderers_see_it():
    state = DashboardState()
    lock = state.store.lock = _RecordingLock()
    version = state.version
    state.store.restore({"valid": {"Loss": {1: 0.5, 2: 0.4}}, "train": {"Loss": {1: 0.7}}})
    assert lock.entered == 1 and state.version > version
    snap = state.snapshot()
    assert snap.epochs == {"Loss": {"train": ((1, 0.7),), "valid": ((1, 0.5), (2, 0.4))}}
    assert state.store.value("valid", "Loss", 2) == 0.4
    assert not hasattr(state, "epochs")  # the dashboard keeps no copy of its own


def test_epoch_values_are_recorded_once_and_shown_from_the_store():
    hub = MetricsHub({"train": [MetricSlot(CountMetric())]})
    assert hub.store is hub.state.store
    _one_epoch(hub, 3)
    assert hub.store.values["train"]["Count"] == {1: 3.0}
    assert hub.state.snapshot().epochs["Count"]["train"] == ((1, 3.0),)


class _Spy(Renderer):
    """Keeps the snapshot of the first frame (drawn before the first batch) and of the last."""

    def start(self, state, interrupter) -> None:
        super().start(state, interrupter)
        self.first = state.snapshot()

    def close(self) -> None:
        self.last = self.state.snapshot()


def test_resume_restores_epoch_values_that_the_renderer_sees(tmp_path):
    from ._models import TinyMlp, adev, loaders

    def fit(epochs, resume=None, renderer="none"):
        burn.seed(0)
        dev = adev()
        train, valid = loaders(dev)
        builder = (
            LearnerBuilder(tmp_path)
            .metric_train_numeric(LossMetric())
            .metric_valid_numeric(LossMetric())
            .with_file_checkpointer(keep_last=10, keep_best=None)
            .devices([dev])
            .num_epochs(epochs)
            .renderer(renderer)
            .system_metrics(False)
            .metric_logs(csv=True, plots=False)
        )
        if resume:
            builder = builder.checkpoint(resume)
        learner = builder.build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
        learner.fit(train, valid)
        return learner

    first = fit(2)
    spy = _Spy()
    resumed = fit(3, resume=2, renderer=spy)
    written = first.store.values
    for split in ("train", "valid"):
        restored = dict(spy.first.epochs["Loss"][split])
        assert sorted(restored) == [1, 2]  # on screen from the first frame
        np.testing.assert_allclose([restored[1], restored[2]], [written[split]["Loss"][e] for e in (1, 2)])
        assert [e for e, _ in spy.last.epochs["Loss"][split]] == [1, 2, 3]
        assert sorted(resumed.store.values[split]["Loss"]) == [1, 2, 3]


# ------------------------------------------------------------------------- the frozen Snapshot
def test_snapshot_is_frozen_and_typed():
    hub = MetricsHub({"train": [MetricSlot(CountMetric())]})
    _one_epoch(hub, 3, items=1)
    snap = hub.state.snapshot(history_of="Count")
    assert type(snap) is Snapshot and dataclasses.is_dataclass(snap)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.mode = "valid"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.splits["train"].epoch = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap["mode"]  # type: ignore[index]  # no reading by key
    for mapping in (snap.splits, snap.history, snap.epochs, snap.splits["train"].entries):
        with pytest.raises(TypeError):
            mapping["x"] = 1  # type: ignore[index]
    assert isinstance(snap.numeric, tuple) and isinstance(snap.status, tuple)
    assert snap.history["Count"]["train"] == ((1 / 3, 0.0),) and snap.epochs["Count"]["train"] == ((1, 1.0),)
    assert isinstance(snap.splits["train"], SplitView) and snap.splits["train"].iteration == 1
    names = {"AutotuneEvent": AutotuneEvent, "MetricEntry": MetricEntry}  # imported for type checkers only
    for cls in (Snapshot, SplitView):
        hints = typing.get_type_hints(cls, localns=names)
        assert set(hints) == {f.name for f in dataclasses.fields(cls)} and typing.Any not in hints.values()


def test_tui_and_web_renderer_draw_from_the_snapshot(monkeypatch):
    pytest.importorskip("rich")
    from burn_train.renderer import TuiRenderer
    from rich.console import Console

    seen = []
    real = DashboardState.snapshot

    def spying(self, history_of=None):
        snap = real(self, history_of)
        seen.append(snap)
        return snap

    monkeypatch.setattr(DashboardState, "snapshot", spying)
    console = Console(record=True, width=100, height=30, file=io.StringIO(), color_system=None)
    renderers = [TuiRenderer(console, keys=False)]
    web = pytest.importorskip("burn_metrics_web")
    renderers.append(web.WebRenderer(console=True, stream=io.StringIO()))
    for renderer in renderers:
        seen.clear()
        hub = MetricsHub({"train": [MetricSlot(CountMetric())]}, renderer=renderer)
        _one_epoch(hub, 2)
        assert seen and all(type(s) is Snapshot for s in seen), renderer.name
    assert "Count" in renderers[0].last_frame
    assert "[train] epoch 1/2 done | Count 2" in renderers[1].stream.getvalue()


# ------------------------------------------------------------------------- gradients by type
def test_gradients_are_recognised_by_type_not_by_name():
    dev = burn.device("cpu", autodiff=True)
    x = burn.tensor([1.0, 2.0], device=dev).require_grad()
    grads = (x * x).sum().backward()
    out = TrainOutput("model", grads, "item")  # Burn's positional order (model, grads, item)
    assert out.grads is grads and out.item == "item"
    params = GradientsParams({})
    assert TrainOutput("model", params, "item").grads is params

    class Gradients:  # the name alone is not the type
        pass

    lookalike = Gradients()
    out = TrainOutput("model", lookalike, "item")
    assert out.item is lookalike and out.grads == "item"


def _name_comparisons(path: Path) -> list[str]:
    """``type(x).__name__ == "..."`` / ``in {...}`` comparisons in a source file (the module's own
    ``__name__ == "__main__"`` is a plain name, not an attribute)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "__name__" for side in sides):
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_class_name_checks_in_burn_train():
    import burn_train

    root = Path(burn_train.__file__).parent
    found = [hit for path in sorted(root.rglob("*.py")) for hit in _name_comparisons(path)]
    assert found == []
