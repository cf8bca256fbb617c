"""Data-parallel Learner.fit over several devices against a hand-written single-device reference.

The reference trains one model on one device with the union of the devices' batches of each step
(``GradientsParams.from_grads`` + ``opt.step``, no Learner). For a loss that is a mean over items, the
item-weighted average of the replicas' gradients is the gradient of that union batch, so losses, valid
metrics and final params must agree: to 1e-9 in float64 on numpy devices (only the summation order
differs), to 1e-5 relative in float32 with a wgpu replica.
"""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.data import DataLoaderBuilder, InMemDataset, PartialDataset
from burn.nn import functional as F
from burn.optim import GradientsAccumulator, GradientsParams, SgdConfig
from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput
from burn_train.metric import LossMetric, Metric

LR = 0.2


class Net(nn.Module):
    """(N, 5) -> Linear(5, 8) -> tanh -> Linear(8, 3) logits; ``log`` collects (device, loss, n)."""

    def __init__(self, device, dtype, log: list) -> None:
        self.fc1 = nn.LinearConfig(5, 8).init(device)
        self.fc2 = nn.LinearConfig(8, 3).init(device)
        for p in self.params():
            p.set(p.value.cast(dtype))
        self.log = log  # a plain list: shared by the replicas (module copies are shallow)

    def forward(self, x):
        return self.fc2(F.tanh(self.fc1(x)))

    def _output(self, batch) -> ClassificationOutput:
        x, y = batch
        logits = self.forward(x)
        return ClassificationOutput(F.cross_entropy(logits, y), logits, y)

    def train_step(self, batch) -> TrainOutput:
        item = self._output(batch)
        self.log.append((str(batch[0].device), float(item.loss.numpy()), len(item)))
        return TrainOutput(self, item=item, grads=item.loss.backward())

    def valid_step(self, batch) -> ClassificationOutput:
        return self._output(batch)


class ProgressProbe(Metric):
    """Records (items, items_processed, items_total, iteration) of every item it sees."""

    name = "Probe"

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, int]] = []
        super().__init__()

    def _reset(self) -> None:
        self._n = 0

    def _update(self, item, metadata) -> float:
        p = metadata.progress
        self.seen.append((len(item), p.items_processed, p.items_total, metadata.iteration))
        self._n += len(item)
        return float(len(item))

    def _epoch(self) -> float:
        return float(self._n)


def _data(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5))
    y = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 0.5).astype(int)
    return [(x[i], int(y[i])) for i in range(n)]


def _batcher(dtype):
    def batch(items, device):
        x = burn.tensor(np.stack([i[0] for i in items]), dtype=dtype, device=device)
        return x, burn.tensor([i[1] for i in items], dtype=burn.int32, device=device)

    return batch


def _union_batches(items: list, devices: int, batch_size: int) -> list[list]:
    """Each step's batches of every device, concatenated (contiguous parts, the last takes the rest)."""
    step = len(items) // devices
    bounds = [k * step for k in range(devices)] + [len(items)]
    parts = [items[bounds[k] : bounds[k + 1]] for k in range(devices)]
    per_device = [[p[i : i + batch_size] for i in range(0, len(p), batch_size)] for p in parts]
    steps = max(len(b) for b in per_device)
    return [sum((b[s] for b in per_device if s < len(b)), []) for s in range(steps)]


def _reference(model, items, devices, batch_size, epochs, dtype, accumulation=1) -> tuple[list, list]:
    """Single-device training on the union batches; returns (train losses per step, valid loss per epoch)."""
    opt, acc = SgdConfig(momentum=0.9).init(), GradientsAccumulator()
    batch, losses, valid = _batcher(dtype), [], []
    dev = model.devices()[0]
    for _ in range(epochs):
        for union in _union_batches(items, devices, batch_size):
            out = model.train_step(batch(union, dev))
            losses.append(float(out.item.loss.numpy()))
            acc.accumulate(model, GradientsParams.from_grads(out.grads, model))
            if acc.count == accumulation:
                model = opt.step(LR, model, acc.grads())
        valid.append(float(model.valid().valid_step(batch(items[:24], dev.inner)).loss.numpy()))
    return losses, valid


def _fit(tmp_path, devices, items, batch_size, epochs, dtype, accumulation=1, seed=0, resume=None):
    log: list = []
    burn.seed(seed)
    model = Net(devices[0], dtype, log)
    initial = model.clone()  # same params and ids: the reference starts from here
    initial.log = []  # the reference's own log
    train = (
        DataLoaderBuilder(_batcher(dtype))
        .batch_size(batch_size)
        .set_device(devices[0])
        .build(InMemDataset(items))
    )
    valid = DataLoaderBuilder(_batcher(dtype)).batch_size(24).build(InMemDataset(items[:24]))
    probe = ProgressProbe()
    builder = LearnerBuilder(tmp_path)
    if resume is not None:
        builder = builder.with_file_checkpointer(keep_last=10, keep_best=None)
        builder = builder.checkpoint(resume) if resume else builder
    learner = (
        builder.metric_train_numeric(LossMetric())
        .metric_train_numeric(probe)
        .metric_valid_numeric(LossMetric())
        .devices(devices)
        .num_epochs(epochs)
        .grads_accumulation(accumulation)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(csv=False, plots=False)
        .build(model, SgdConfig(momentum=0.9).init(), LR)
    )
    trained = learner.fit(train, valid)
    return learner, trained, initial, log, probe


def _assert_same_params(got, expected, rtol, atol) -> None:
    want = {p.id: p.value.numpy() for p in expected.params()}
    for p in got.params():
        np.testing.assert_allclose(p.value.numpy(), want[p.id], rtol=rtol, atol=atol, err_msg=p.id)


@pytest.mark.parametrize(("n_devices", "n_items", "accumulation"), [(2, 32, 1), (3, 35, 1), (2, 32, 2)])
def test_data_parallel_equals_single_device_on_the_union_batch(tmp_path, n_devices, n_items, accumulation):
    # 3 devices over 35 items: parts of 11, 11, 13 -> batches (4, 4, 3), (4, 4, 3), (4, 4, 4, 1): uneven
    # weights per step and a last step on the third device alone
    devices = [burn.device(f"cpu:{k}", autodiff=True) for k in range(n_devices)]
    items = _data(n_items)
    learner, trained, initial, log, probe = _fit(tmp_path, devices, items, 4, 2, burn.float64, accumulation)
    losses, valid = _reference(initial, items, n_devices, 4, 2, burn.float64, accumulation)

    # each step's union loss is the item-weighted mean of the replicas' losses
    steps = len(losses) // 2
    got, i = [], 0
    for union in _union_batches(items, n_devices, 4) * 2:
        n = len(union)
        chunk = []
        while n:
            chunk.append(log[i])
            n -= log[i][2]
            i += 1
        names = [d for d, _, _ in chunk]  # one batch per device that still had one, in device order
        assert names == [str(d) for d in devices if str(d) in names]
        got.append(sum(loss * m for _, loss, m in chunk) / len(union))
    assert i == len(log) and len(got) == 2 * steps
    np.testing.assert_allclose(got, losses, rtol=1e-10, atol=1e-12)
    _assert_same_params(trained, initial, rtol=1e-9, atol=1e-12)
    assert all(p.device == devices[0] for p in trained.params())

    # metrics saw every item of every device; validation ran on the main device with the trained model
    store = learner.store.values
    assert store["train"]["Probe"] == {1: float(n_items), 2: float(n_items)}
    weighted = [sum(loss * m for _, loss, m in log[: len(log) // 2]) / n_items]
    np.testing.assert_allclose(store["train"]["Loss"][1], weighted[0], rtol=1e-12)
    np.testing.assert_allclose([store["valid"]["Loss"][e] for e in (1, 2)], valid, rtol=1e-10)
    # progress: item counts grow to the epoch's total; the iteration counts items of every device
    first_epoch = probe.seen[: len(probe.seen) // 2]
    assert [s[3] for s in first_epoch] == list(range(1, len(first_epoch) + 1))
    assert all(total == n_items for _, _, total, _ in first_epoch)
    done = [s[1] for s in first_epoch]
    assert done == sorted(done) and done[-1] == n_items


def test_cpu_and_wgpu_replicas_train_like_one_cpu_device(tmp_path):
    ok = next((b for b in burn.backends() if b.name == "wgpu"), None)
    if ok is None or not ok.available:
        pytest.skip(f"wgpu backend unavailable: {getattr(ok, 'reason', 'not installed')}")
    devices = [burn.device("cpu", autodiff=True), burn.device("wgpu", autodiff=True)]
    items = _data(32, seed=1)
    learner, trained, initial, log, _ = _fit(tmp_path, devices, items, 8, 1, burn.float32)
    losses, valid = _reference(initial, items, 2, 8, 1, burn.float32)
    assert {d for d, _, _ in log} == {str(d) for d in devices}  # wgpu:0+fusion+autodiff
    got = [(log[i][1] + log[i + 1][1]) / 2 for i in range(0, len(log), 2)]
    np.testing.assert_allclose(got, losses, rtol=1e-5, atol=1e-6)
    _assert_same_params(trained, initial, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(learner.store.values["valid"]["Loss"][1], valid[0], rtol=1e-5)


def test_cpu_devices_of_one_backend_are_distinct():
    one, zero = burn.device("cpu:1"), burn.device("cpu")
    assert str(zero) == "cpu" and str(burn.device("cpu:0")) == "cpu"
    assert str(one) == "cpu:1" and str(burn.device("cpu:2", autodiff=True)) == "cpu:2+autodiff"
    assert one != zero and one.backend is not zero.backend
    x = burn.tensor([1.0, 2.0], device=one)
    assert x.device == one and x.to(zero).device == zero
    np.testing.assert_array_equal(x.to(zero).numpy(), [1.0, 2.0])


def test_multi_device_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match=r"devices: expected each device once, got cpu:1 more than once"):
        LearnerBuilder(tmp_path).devices(["cpu", "cpu:1", "cpu:1"])
    with pytest.raises(TypeError, match=r"LearnerBuilder.devices: device: expected a device name"):
        LearnerBuilder(tmp_path).devices([3])
    devices = [burn.device("cpu", autodiff=True), burn.device("cpu:1", autodiff=True)]
    burn.seed(0)
    model = Net(devices[0], burn.float32, [])
    batches = [_batcher(burn.float32)(_data(4), devices[0])]

    def quiet_learner(model):  # on both devices; built outside pytest.raises: the errors come from fit
        return (
            LearnerBuilder(tmp_path)
            .devices(devices)
            .renderer("none")
            .system_metrics(False)
            .metric_logs(csv=False, plots=False)
            .build(model, SgdConfig().init(), LR)
        )

    learner = quiet_learner(model)
    with pytest.raises(TypeError, match=r"on 2 devices: the train loader must be a burn.data.DataLoader"):
        learner.fit(batches)

    class NoTo:  # a model that is not a burn.nn.Module: it cannot be copied to the other devices
        def train_step(self, batch):
            return model.train_step(batch)

    loader = DataLoaderBuilder(_batcher(burn.float32)).batch_size(2).build(InMemDataset(_data(4)))
    learner = quiet_learner(NoTo())
    with pytest.raises(TypeError, match=r"the model \(NoTo\) must have to\(device\)"):
        learner.fit(loader)


def test_partial_split_matches_the_reference_layout():
    # the reference's union batches assume DataLoader.split's contiguous parts: check that assumption
    items = list(range(35))
    parts = PartialDataset.split(InMemDataset(items), 3)
    assert [[p[i] for i in range(len(p))] for p in parts] == [items[:11], items[11:22], items[22:]]


def test_data_parallel_run_resumes_from_a_checkpoint_exactly(tmp_path):
    devices = [burn.device("cpu", autodiff=True), burn.device("cpu:1", autodiff=True)]
    items = _data(24, seed=2)
    _, full, _, _, _ = _fit(tmp_path, devices, items, 4, 2, burn.float64, resume=0)
    # a different init: params and momentum buffers of epoch 1 must come from the checkpoint
    learner, resumed, _, log, _ = _fit(tmp_path, devices, items, 4, 2, burn.float64, seed=7, resume=1)
    assert len(log) == 6  # only epoch 2 ran: 3 steps on each of 2 devices
    _assert_same_params(resumed, full, rtol=1e-12, atol=0)
