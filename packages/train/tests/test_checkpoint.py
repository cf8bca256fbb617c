"""Checkpoints are atomic (a crash mid-write keeps the previous one) and pruned by policy."""

from __future__ import annotations

import os
import subprocess
import sys

import burn
import numpy as np
import pytest
from burn_train.checkpoint import (
    ComposedPolicy,
    FileCheckpointer,
    KeepBest,
    KeepLastN,
    _atomic,
    atomic_write,
    record_from_bytes,
    record_to_bytes,
    remove_stale_temps,
)
from burn_train.processor import EventStore

from ._models import TinyMlp, adev


def test_crash_mid_write_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model-1.bin"
    atomic_write(path, b"old checkpoint" * 1000)

    def crash_half_way(handle, data):
        handle.write(data[: len(data) // 2])
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_atomic, "_write_all", crash_half_way)
    with pytest.raises(OSError, match="simulated"):
        atomic_write(path, b"new checkpoint" * 1000)
    assert path.read_bytes() == b"old checkpoint" * 1000
    assert os.listdir(tmp_path) == ["model-1.bin"]  # the temporary file was removed


KILLED = r"""
import os, sys
from burn_train.checkpoint import _atomic, atomic_write
def die_half_way(handle, data):
    handle.write(data[: len(data) // 2]); handle.flush()
    os._exit(9)                        # the process dies: no cleanup runs at all
_atomic._write_all = die_half_way
atomic_write(sys.argv[1], b"new" * 100000)
"""


def test_killed_process_leaves_old_file_and_a_stale_temp_that_is_cleaned(tmp_path):
    path = tmp_path / "optim-3.npz"
    atomic_write(path, b"previous")
    result = subprocess.run([sys.executable, "-c", KILLED, str(path)], timeout=60)
    assert result.returncode == 9
    assert path.read_bytes() == b"previous"
    stale = [n for n in os.listdir(tmp_path) if n != "optim-3.npz"]
    assert len(stale) == 1 and stale[0].endswith(".tmp")
    assert remove_stale_temps(tmp_path) == stale
    assert os.listdir(tmp_path) == ["optim-3.npz"]


def test_record_round_trip_without_pickle():
    record = {
        "optimizer": "Adam",
        "states": {"p1": {"m": np.arange(6.0).reshape(2, 3), "step": 3}},
        "lrs": [0.1, 0.2],
        "pair": (1, "a"),
        "none": None,
    }
    back = record_from_bytes(record_to_bytes(record))
    np.testing.assert_array_equal(back["states"]["p1"]["m"], record["states"]["p1"]["m"])
    assert back["states"]["p1"]["step"] == 3 and back["lrs"] == [0.1, 0.2] and back["pair"] == (1, "a")
    assert back["none"] is None
    with pytest.raises(ValueError, match="not a burn_train record"):
        record_from_bytes(b"garbage", "x.npz")
    with pytest.raises(TypeError, match="cannot store a object"):
        record_to_bytes({"bad": object()})


def _store(values: dict[int, float]) -> EventStore:
    store = EventStore()
    store.higher_is_better["Loss"] = False
    for epoch, value in values.items():
        store.record("valid", epoch, "Loss", value)
    return store


def test_keep_last_n_and_keep_best_policies():
    store = _store({1: 0.9, 2: 0.5, 3: 0.7, 4: 0.8, 5: 0.6})
    epochs = [1, 2, 3, 4, 5]
    assert KeepLastN(2).keep(epochs, store) == {4, 5}
    assert KeepBest("Loss").keep(epochs, store) == {2}
    assert KeepBest("Loss", higher_is_better=True).keep(epochs, store) == {1}
    assert ComposedPolicy(KeepLastN(2), KeepBest("Loss")).keep(epochs, store) == {2, 4, 5}
    assert KeepBest("Accuracy").keep(epochs, store) == set()  # no values yet: nothing kept for it
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        KeepLastN(0)


def test_file_checkpointer_saves_prunes_and_restores_model_and_optimizer(tmp_path):
    burn.seed(1)
    dev = adev()
    model = TinyMlp(dev)
    optim = burn.optim.AdamConfig().init()
    sched = burn.lr_scheduler.StepLrSchedulerConfig(0.1, step_size=2).init()
    ckpt = FileCheckpointer(tmp_path, ComposedPolicy(KeepLastN(2), KeepBest("Loss")))
    store = _store({1: 0.5, 2: 0.9, 3: 0.8})
    for epoch in (1, 2, 3):
        x = burn.randn((4, 1, 8, 8), device=dev)
        loss = model.forward(x).sum()
        model = optim.step(0.01, model, loss.backward())
        sched.step()
        ckpt.save(epoch, model, optim, sched, {"rng": None})
        ckpt.prune(store)
    assert ckpt.epochs() == [1, 2, 3]  # best (1) and the last two (2, 3)
    store.record("valid", 4, "Loss", 0.95)
    ckpt.save(4, model, optim, sched)
    assert ckpt.prune(store) == [2]  # keeps best (1) and the last two (3, 4)
    assert sorted(os.listdir(tmp_path)) == sorted(
        f"{part}-{e}.{ext}"
        for e in (1, 3, 4)
        for part, ext in (("model", "safetensors"), ("optim", "npz"), ("scheduler", "npz"), ("state", "json"))
    )
    fresh, fresh_optim = TinyMlp(dev), burn.optim.AdamConfig().init()
    fresh_sched = burn.lr_scheduler.StepLrSchedulerConfig(0.1, step_size=2).init()
    fresh, fresh_optim, fresh_sched, state = ckpt.load(4, fresh, fresh_optim, fresh_sched)
    assert state["epoch"] == 4
    for name, value in model.record().items():
        np.testing.assert_array_equal(fresh.record()[name], value)
    assert fresh.param_ids() == model.param_ids()  # optimizer state is keyed by these
    assert fresh_sched.record() == sched.record()
    a, b = optim.record()["states"], fresh_optim.record()["states"]
    assert a.keys() == b.keys()
    for pid in a:
        for key in a[pid]:
            np.testing.assert_array_equal(np.asarray(a[pid][key]), np.asarray(b[pid][key]))
    with pytest.raises(FileNotFoundError, match=r"cannot resume from epoch 2: .* available epochs: 1, 3, 4$"):
        ckpt.load(2, fresh, fresh_optim)


def _trained(dev, steps=1):
    model, optim = TinyMlp(dev), burn.optim.AdamConfig().init()
    for _ in range(steps):
        loss = model.forward(burn.randn((4, 1, 8, 8), device=dev)).sum()
        model = optim.step(0.01, model, loss.backward())
    return model, optim


def test_background_save_writes_the_same_files_and_prunes_after_the_new_one(tmp_path):
    burn.seed(2)
    dev = adev()
    model, optim = _trained(dev)
    store = _store({1: 0.5, 2: 0.9, 3: 0.8})
    fg, bg = FileCheckpointer(tmp_path / "fg", KeepLastN(2)), FileCheckpointer(tmp_path / "bg", KeepLastN(2))
    for epoch in (1, 2, 3):
        fg.save(epoch, model, optim, None, {"n": epoch})
        fg.prune(store)
        bg.save(epoch, model, optim, None, {"n": epoch}, store=store, background=True)
    bg.wait()
    assert fg.epochs() == bg.epochs() == [2, 3]
    assert sorted(os.listdir(tmp_path / "fg")) == sorted(os.listdir(tmp_path / "bg"))
    for name in os.listdir(tmp_path / "fg"):
        a, b = (tmp_path / "fg" / name).read_bytes(), (tmp_path / "bg" / name).read_bytes()
        if name.endswith(".safetensors"):  # its header's key order varies from one write to the next
            from safetensors.numpy import load

            a, b = load(a), load(b)  # type: ignore[assignment]
            assert a.keys() == b.keys()
            for key in a:
                np.testing.assert_array_equal(a[key], b[key])
        else:
            assert a == b, name


def test_a_failed_background_write_is_raised_by_wait_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    burn.seed(3)
    dev = adev()
    model, optim = _trained(dev)
    ckpt = FileCheckpointer(tmp_path, KeepLastN(1))
    store = _store({1: 0.5, 2: 0.4})
    ckpt.save(1, model, optim, store=store, background=True)
    ckpt.wait()
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}

    def crash_half_way(handle, data):
        handle.write(data[: len(data) // 2])
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(_atomic, "_write_all", crash_half_way)
    ckpt.save(2, *_trained(dev, 2), store=store, background=True)  # KeepLastN(1) would drop epoch 1
    with pytest.raises(OSError, match="simulated"):
        ckpt.wait()
    assert ckpt.epochs() == [1]  # epoch 2 never completed, so epoch 1 was not pruned
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before
    ckpt.wait()  # the error was handed over once


def test_learner_checkpoints_are_complete_when_fit_returns(tmp_path):
    from burn_train import LearnerBuilder
    from burn_train.metric import LossMetric

    from ._models import loaders

    burn.seed(4)
    dev = adev()
    train, valid = loaders(dev, n_train=64, n_valid=32)
    learner = (
        LearnerBuilder(tmp_path).metric_valid_numeric(LossMetric()).num_epochs(3).renderer("none")
        .system_metrics(False).metric_logs(csv=False, plots=False).with_file_checkpointer(keep_last=2, keep_best=None)
        .devices([dev]).build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    )  # fmt: skip
    model = learner.fit(train, valid)
    assert learner.checkpointer._writer is None  # joined by fit
    assert learner.checkpointer.epochs() == [2, 3]
    fresh, _, _, state = learner.checkpointer.load(3, TinyMlp(dev), burn.optim.AdamConfig().init())
    assert state["epoch"] == 3
    for name, value in model.record().items():
        np.testing.assert_array_equal(fresh.record()[name], value)


def test_background_save_writes_inline_where_threads_cannot_start(tmp_path, monkeypatch):
    from burn_train import _sync

    monkeypatch.setattr(_sync, "threads_available", lambda: False)  # Pyodide
    burn.seed(5)
    model, optim = _trained(adev())
    ckpt = FileCheckpointer(tmp_path)
    ckpt.save(1, model, optim, background=True)
    assert ckpt._writer is None and ckpt.epochs() == [1]  # written before save returned
