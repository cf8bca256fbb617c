"""Device items read a few steps at a time (learner._reads): same metrics, fewer device syncs."""

from __future__ import annotations

import os

import burn
import numpy as np
import pytest
from burn_train import ClassificationOutput, LearnerBuilder
from burn_train._events import ItemEvent, Progress, TrainingProgress
from burn_train._output import sync_many
from burn_train.learner._reads import BatchedReads
from burn_train.metric import AccuracyMetric, LossMetric

from ._models import TinyMlp, adev, loaders


class _Item:
    """An item whose reads are counted (what a device item's ``sync`` costs)."""

    reads = 0

    def __init__(self, value: float) -> None:
        self.value = value

    def sync(self) -> _Item:
        _Item.reads += 1
        return self


def _event(i: int, t: float, split: str = "train", epoch: int = 1, item: object = None) -> ItemEvent:
    tp = TrainingProgress(Progress(i + 1, 100), epoch, 2, i + 1)
    return ItemEvent(split, _Item(i) if item is None else item, tp, 0.1, time=t)


def test_first_items_are_read_at_once_then_every_interval():
    out: list[ItemEvent] = []
    now = [0.0]
    reads = BatchedReads(out.append, interval=1.0, eager=2, clock=lambda: now[0])
    for i in range(6):  # the two eager ones, then items 0.1 s apart: none reaches the 1 s interval
        now[0] = 0.1 * i
        reads.add(_event(i, now[0]), True)
    assert [e.item.value for e in out] == [0, 1]
    assert len(reads) == 4 and reads.reads == 2
    now[0] = 1.2  # a second after the last read (at 0.1 s): everything waiting goes
    reads.add(_event(6, now[0]), True)
    assert [e.item.value for e in out] == list(range(7))
    assert reads.reads == 3 and len(reads) == 0


def test_a_new_epoch_or_split_is_eager_again_and_flush_keeps_order():
    out: list[ItemEvent] = []
    reads = BatchedReads(out.append, interval=100.0, eager=1)
    reads.add(_event(0, 0.0), True)
    reads.add(_event(1, 0.0), True)
    reads.add(_event(2, 0.0), False)  # a host item queues behind the waiting device item
    assert [e.item.value for e in out] == [0]
    reads.add(_event(0, 0.0, split="valid"), True)  # the first valid item: read now, after the others
    assert [(e.split, e.item.value) for e in out] == [("train", 0), ("train", 1), ("train", 2), ("valid", 0)]
    reads.add(_event(0, 0.0, epoch=2), True)
    assert len(out) == 5
    reads.add(_event(1, 0.0, epoch=2), True)
    reads.flush()
    assert [e.item.value for e in out][-2:] == [0, 1]


def test_a_host_item_with_nothing_waiting_is_submitted_at_once():
    out: list[ItemEvent] = []
    reads = BatchedReads(out.append, interval=100.0, eager=0)
    reads.add(_event(0, 0.0), False)
    assert len(out) == 1 and reads.reads == 0


def test_max_items_and_max_bytes_bound_what_waits_on_the_device():
    out: list[ItemEvent] = []
    reads = BatchedReads(out.append, interval=100.0, max_items=3, eager=0)
    for i in range(3):
        reads.add(_event(i, 0.0), True)
    assert len(out) == 3 and reads.reads == 1
    dev = burn.device("cpu")
    big = ClassificationOutput(
        burn.zeros((), device=dev), burn.zeros((256, 1024), device=dev), burn.zeros(256, device=dev)
    )
    assert big.device_bytes() == 4 + 256 * 1024 * 4 + 256 * 4
    reads = BatchedReads(out.append, interval=100.0, max_bytes=2 * big.device_bytes() - 1, eager=0)
    reads.add(_event(0, 0.0, item=big), True)
    assert len(reads) == 1
    reads.add(_event(1, 0.0, item=big), True)
    assert len(reads) == 0


def test_interval_zero_reads_every_item():
    out: list[ItemEvent] = []
    reads = BatchedReads(out.append, interval=0.0, eager=0)
    for i in range(4):
        reads.add(_event(i, 0.0), True)
    assert reads.reads == 4 and len(out) == 4


def test_sync_many_reads_every_item_with_one_transaction(monkeypatch):
    dev = burn.device("cpu")
    rng = np.random.default_rng(0)
    items = [
        ClassificationOutput(
            burn.tensor(np.float32(rng.random()), device=dev),
            burn.from_numpy(rng.standard_normal((4, 3)).astype(np.float32), device=dev),
            burn.from_numpy(rng.integers(0, 3, 4), device=dev),
        )
        for _ in range(3)
    ]
    executed = []
    original = burn.Transaction.execute

    def counting(self):
        executed.append(len(self))
        return original(self)

    monkeypatch.setattr(burn.Transaction, "execute", counting)
    synced = sync_many([*items, 7, _Item(1.0)])
    assert executed == [9]  # 3 fields of 3 items, one Transaction
    for item, read in zip(items, synced):
        for name in ("loss", "output", "targets"):
            np.testing.assert_array_equal(getattr(read, name), getattr(item, name).numpy())
            assert isinstance(getattr(read, name), np.ndarray)
    assert synced[3] == 7 and isinstance(synced[4], _Item)


def _fit(tmp_path, where: str, interval: float | None):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev, n_train=192, n_valid=64, batch_size=16)
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(LossMetric())
        .metric_valid_numeric(AccuracyMetric())
        .num_epochs(2)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(csv=True, plots=False)
        .devices([dev])
        .sync_items(where, interval=interval)
        .build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    rows = {}
    for split in ("train", "valid"):
        with open(os.path.join(tmp_path, split, "epoch-2", "metrics.csv")) as handle:
            rows[split] = handle.read()
    return learner, rows


def test_batched_reads_give_the_same_metrics_as_a_read_per_step(tmp_path):
    every, every_rows = _fit(tmp_path / "every", "train", 0.0)
    batched, batched_rows = _fit(tmp_path / "batched", "train", 60.0)
    host, host_rows = _fit(tmp_path / "host", "processor", None)
    assert every._reads.reads == 2 * (12 + 4)  # a read per step: 12 train and 4 valid batches an epoch
    # batched: the first 2 items of each split's epoch, then one read at each split's epoch end
    assert batched._reads.reads == 2 * (3 + 3)
    assert host._reads.reads == 0  # the processor reads host items
    assert batched.store.values == every.store.values == host.store.values
    assert batched_rows == every_rows == host_rows  # every batch value, in order


def test_sync_items_interval_is_checked():
    with pytest.raises(ValueError, match="interval must be a number of seconds >= 0, got -1"):
        LearnerBuilder("x").sync_items("train", interval=-1)


class _FailingMlp(TinyMlp):
    """Fails in its fifth train step."""

    def train_step(self, batch):
        type(self).calls += 1
        if type(self).calls == 5:
            raise RuntimeError("boom in step 5")
        return super().train_step(batch)


def test_items_waiting_when_a_step_fails_still_reach_the_logs(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev, n_train=192, n_valid=32, batch_size=16)
    _FailingMlp.calls = 0
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .num_epochs(1)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(csv=True, plots=False)
        .devices([dev])
        .sync_items("train", interval=60.0)
        .build(_FailingMlp(dev), burn.optim.SgdConfig().init(), 0.01)
    )
    with pytest.raises(RuntimeError, match="boom in step 5"):
        learner.fit(train, valid)
    with open(tmp_path / "train" / "epoch-1" / "metrics.csv") as handle:
        rows = handle.read().splitlines()
    assert len(rows) == 1 + 4  # the header and the 4 steps done: 2 read at once, 2 read at the end
    assert len(learner._reads) == 0


def test_a_checkpoint_that_cannot_be_written_fails_fit(tmp_path, monkeypatch):
    from burn_train.checkpoint import _file

    def full_disk(path, data):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_file, "atomic_write", full_disk)
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev, n_train=32, n_valid=32)
    learner = (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .num_epochs(1)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(csv=False, plots=False)
        .with_file_checkpointer()
        .devices([dev])
        .build(TinyMlp(dev), burn.optim.SgdConfig().init(), 0.01)
    )
    with pytest.raises(OSError, match="disk full"):  # raised by fit once the write was waited for
        learner.fit(train, valid)
    assert learner.checkpointer.epochs() == []
