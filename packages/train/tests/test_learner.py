"""Learner.fit end to end on a tiny model: resume, early stopping, interrupter, accumulation, artifacts."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import threading

import burn
import numpy as np
import pytest
from burn_train import LearnerBuilder, TrainingInterrupter, _sync
from burn_train.metric import AccuracyMetric, LossMetric
from burn_train.renderer import CliRenderer

from ._models import TinyMlp, adev, loaders


def _builder(directory, epochs=2, renderer="none") -> LearnerBuilder:
    return (
        LearnerBuilder(directory)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_valid_numeric(AccuracyMetric())
        .num_epochs(epochs)
        .renderer(renderer)
        .system_metrics(False)
        .metric_logs(csv=True, plots=False)
    )


def _losses(directory, epoch, split="train") -> list[float]:
    with open(os.path.join(directory, split, f"epoch-{epoch}", "metrics.csv"), newline="") as handle:
        return [float(row["Loss"]) for row in csv.DictReader(handle)]


def _fit(directory, epochs, seed=0, resume=None, **kwargs):
    burn.seed(seed)
    dev = adev()
    model = TinyMlp(dev)
    train, valid = loaders(dev)
    builder = _builder(directory, epochs).with_file_checkpointer(keep_last=10, keep_best=None).devices([dev])
    if resume:
        builder = builder.checkpoint(resume)
    sched = burn.lr_scheduler.ExponentialLrSchedulerConfig(0.05, 0.95).init()
    learner = builder.build(model, burn.optim.AdamConfig().init(), sched)
    return learner, learner.fit(train, valid)


def test_resume_from_epoch_2_gives_the_same_epoch_3_losses(tmp_path):
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    _fit(full, 3)
    os.makedirs(resumed / "checkpoint")
    for name in os.listdir(full / "checkpoint"):
        if name.split("-")[1].split(".")[0] in ("1", "2"):
            shutil.copy(full / "checkpoint" / name, resumed / "checkpoint" / name)
    for split in ("train", "valid"):
        os.makedirs(resumed / split)
        shutil.copy(full / split / "epochs.csv", resumed / split / "epochs.csv")
    learner, _ = _fit(
        resumed, 3, seed=123, resume=2
    )  # a different init: everything must come from the checkpoint
    expected, got = _losses(full, 3), _losses(resumed, 3)
    assert len(got) == 4
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)
    np.testing.assert_allclose(_losses(resumed, 3, "valid"), _losses(full, 3, "valid"), rtol=1e-6)
    assert not os.path.exists(resumed / "train" / "epoch-1")  # epochs 1-2 were not re-run
    assert learner.summary.epochs == 3  # the summary covers the resumed run's history too
    # ... and says that its duration is this run's only
    assert learner.summary.resumed_from == 2 and learner.summary.to_dict()["resumed_from"] == 2
    assert str(learner.summary).splitlines()[0] == (
        "Training summary: 3 epoch(s) on cpu (numpy), float32 (completed); resumed from the checkpoint of epoch 2: "
        f"this run trained epoch 3 in {learner.summary.duration_s:.1f} s"
    )
    separators = [
        line for line in (resumed / "experiment.log").read_text().splitlines() if line.startswith("=====")
    ]
    assert len(separators) == 1 and "; resuming from the checkpoint of epoch 2]" in separators[0]
    assert "[on cpu (numpy), float32; " in separators[0]  # the device, in experiment.log too


def test_early_stopping_stops_after_patience_epochs_without_improvement(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    # lr 0: the model never changes, so valid loss never improves after epoch 1
    learner = (
        _builder(tmp_path, epochs=10)
        .early_stopping(metric="Loss", patience=2)
        .build(TinyMlp(dev, dropout=0.0), burn.optim.SgdConfig().init(), 0.0)
    )
    learner.fit(train, valid)
    assert sorted(learner.store.values["valid"]["Loss"]) == [1, 2, 3]
    assert learner.summary.reason == "early stopped"
    with pytest.raises(ValueError, match="early_stopping: patience must be an int >= 1"):
        LearnerBuilder(tmp_path).early_stopping(patience=0)


def test_interrupter_from_code_stops_after_the_current_batch(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    interrupter = TrainingInterrupter()
    model = TinyMlp(dev)
    original = model.train_step
    calls = []

    def train_step(batch):
        calls.append(1)
        if len(calls) == 3:
            interrupter.stop("test says stop")
        return original(batch)

    model.train_step = train_step
    learner = (
        _builder(tmp_path, epochs=5)
        .interrupter(interrupter)
        .build(model, burn.optim.SgdConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    assert len(calls) == 3
    assert learner.summary.reason == "interrupted"
    assert "valid" not in os.listdir(tmp_path)  # no validation after an interrupt


def test_grads_accumulation_matches_a_manual_loop(tmp_path):
    burn.seed(0)
    dev = adev()
    train, _ = loaders(dev, n_train=128, batch_size=32)  # 4 batches -> 2 optimizer steps
    model = TinyMlp(dev, dropout=0.0)
    reference = model.clone()
    learner = (
        _builder(tmp_path, epochs=1).grads_accumulation(2).build(model, burn.optim.SgdConfig().init(), 0.1)
    )
    trained = learner.fit(train, None)
    # independent reference: sum two batches' gradients by hand, one SGD step per pair
    opt = burn.optim.SgdConfig().init()
    train.set_epoch(0)
    batches = list(train)
    for a, b in ((0, 1), (2, 3)):
        ga = burn.optim.GradientsParams.from_grads(reference._output(batches[a]).loss.backward(), reference)
        gb = burn.optim.GradientsParams.from_grads(reference._output(batches[b]).loss.backward(), reference)
        summed = burn.optim.GradientsParams({pid: ga.get(pid) + gb.get(pid) for pid in ga.ids()})
        reference = opt.step(0.1, reference, summed)
    for name, value in reference.record().items():
        np.testing.assert_allclose(trained.record()[name], value, rtol=1e-5, atol=1e-7)


def test_artifacts_summary_logs_and_cli_output(tmp_path, capsys):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    stream = io.StringIO()
    learner = (
        _builder(tmp_path, epochs=2, renderer=CliRenderer(stream, interval=0.0))
        .with_file_checkpointer(keep_last=1, keep_best="Loss")
        .summary()
        .build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    printed = capsys.readouterr().out
    assert (
        "Training summary: 2 epoch(s)" in printed and "| Split: valid" in printed and "Best epoch:" in printed
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    valid_loss = {r["name"]: r for r in summary["splits"]["valid"]}["Loss"]
    stored = learner.store.values["valid"]["Loss"]
    assert (
        valid_loss["minimum"] == min(stored.values()) and summary["best"]["epoch"] == valid_loss["min_epoch"]
    )
    assert (tmp_path / "summary.txt").read_text().startswith("Training summary")
    with open(tmp_path / "valid" / "epochs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {(int(r["epoch"]), r["metric"]) for r in rows} == {
        (e, m) for e in (1, 2) for m in ("Loss", "Accuracy")
    }
    log = (tmp_path / "experiment.log").read_text()
    assert "training epochs 1..2" in log and "checkpoint of epoch 2 saved" in log
    kept = sorted(n for n in os.listdir(tmp_path / "checkpoint") if n.startswith("state-"))
    best = summary["best"]["epoch"]
    assert kept == sorted({f"state-{best}.json", "state-2.json"})
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[start]") and "[valid] epoch 2/2 done  Loss" in "\n".join(lines)
    assert lines[-1] == "[end] training finished"


def test_whole_fit_with_threads_unavailable(tmp_path, monkeypatch):
    """Pyodide-like: Thread.start raises. The processor runs inline, the TUI has no timer thread."""
    from burn_train.renderer import TuiRenderer
    from rich.console import Console

    started = []
    real_start = threading.Thread.start

    def refuse(self):
        started.append(self.name)
        raise RuntimeError("can't start new thread")

    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    monkeypatch.setattr(threading.Thread, "start", refuse)
    _sync.reset_thread_probe()
    try:
        console = Console(record=True, width=110, height=30, file=io.StringIO(), color_system=None)
        tui = TuiRenderer(console=console, keys=False, fps=1000)  # no rate limit: redraw on every event
        learner = _builder(tmp_path, epochs=2, renderer=tui).build(
            TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01
        )
        learner.fit(train, valid)
    finally:
        monkeypatch.setattr(threading.Thread, "start", real_start)
        _sync.reset_thread_probe()
    assert learner.processor.mode == "inline"
    assert started == ["burn-train-probe"]  # only the probe ever tried; no worker, no timer thread
    assert sorted(learner.store.values["valid"]["Accuracy"]) == [1, 2]
    assert tui.frame_count >= 5  # first + last frame, and redraws from the inline path in between
    assert "Mode      : done" in tui.last_frame


def test_builder_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="num_epochs: expected an int >= 1, got 0"):
        LearnerBuilder(tmp_path).num_epochs(0)
    with pytest.raises(TypeError, match="expected a burn_train metric"):
        LearnerBuilder(tmp_path).metric_train_numeric(object())
    with pytest.raises(ValueError, match="renderer: expected 'auto', 'tui', 'cli' or 'none'"):
        LearnerBuilder(tmp_path).renderer("fancy")
    with pytest.raises(ValueError, match="devices: expected each device once, got cpu\\+autodiff"):
        LearnerBuilder(tmp_path).devices([adev(), adev()])
    with pytest.raises(TypeError, match="must define train_step"):
        LearnerBuilder(tmp_path).build(object(), burn.optim.SgdConfig().init(), 0.1)
    with pytest.raises(TypeError, match="expected a float lr or an lr scheduler"):
        LearnerBuilder(tmp_path).build(TinyMlp(adev()), burn.optim.SgdConfig().init(), "fast")


def test_dashboard_draws_before_the_first_batch(tmp_path):
    from burn_train.renderer import TuiRenderer
    from rich.console import Console

    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev, n_train=32)
    console = Console(record=True, width=110, height=30, file=io.StringIO(), color_system=None)
    tui = TuiRenderer(console=console, keys=False)
    model = TinyMlp(dev)
    original, seen = model.train_step, []

    def train_step(batch):
        seen.append((tui.frame_count, tui.last_frame))
        return original(batch)

    model.train_step = train_step
    _builder(tmp_path, epochs=1, renderer=tui).build(model, burn.optim.SgdConfig().init(), 0.01).fit(
        train, valid
    )
    frames, frame = seen[0]
    assert frames >= 1 and "waiting for the first batch" in frame and "Epoch     : 1/1" in frame


def test_resuming_a_missing_checkpoint_fails_clearly_before_writing_anything(tmp_path):
    from burn_train.renderer import TuiRenderer
    from rich.console import Console

    dev = adev()
    train, valid = loaders(dev)
    _fit(tmp_path, 3)  # the previous run: its checkpoints (keep_last=10), summary and log
    (tmp_path / "checkpoint" / "state-1.json").unlink()  # epoch 1 pruned
    (tmp_path / "summary.txt").write_text("the previous run's summary\n")
    before = {name: (tmp_path / name).read_bytes() for name in ("summary.txt", "experiment.log")}
    tui = TuiRenderer(console=Console(file=io.StringIO(), width=80, height=20), keys=False)
    for epoch in (1, 7):
        learner = (
            _builder(tmp_path, renderer=tui)
            .checkpoint(epoch)
            .build(TinyMlp(dev), burn.optim.SgdConfig().init(), 0.1)
        )
        with pytest.raises(
            FileNotFoundError, match=f"^cannot resume from epoch {epoch}: .* available epochs: 2, 3$"
        ):
            learner.fit(train, valid)
        assert learner.summary is None and tui.frame_count == 0
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    with pytest.raises(FileNotFoundError, match="no checkpoint in .* \\(train without resuming first\\)"):
        _builder(tmp_path / "fresh").checkpoint(1).build(
            TinyMlp(dev), burn.optim.SgdConfig().init(), 0.1
        ).fit(train, valid)
    assert not (tmp_path / "fresh").exists()


def test_experiment_log_separates_runs(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev, n_train=32)
    for _ in range(2):
        _builder(tmp_path, epochs=1).build(TinyMlp(dev), burn.optim.SgdConfig().init(), 0.01).fit(
            train, valid
        )
    lines = (tmp_path / "experiment.log").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("===== run started ")]
    assert len(starts) == 2 and starts[0] == 0 and lines[starts[1] - 1] == ""  # a blank line before each
    assert all(re.search(r"run started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(pid \d+\)", lines[i]) for i in starts)
    assert all(lines[i].endswith(" =====") for i in starts)


def test_keyboard_interrupt_writes_summary_and_plots_then_propagates(tmp_path):
    pytest.importorskip("matplotlib")
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    model = TinyMlp(dev)
    original, calls = model.train_step, []

    def train_step(batch):  # Ctrl-C in the second epoch
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return original(batch)

    model.train_step = train_step
    stream = io.StringIO()
    learner = (
        _builder(tmp_path, epochs=5, renderer=CliRenderer(stream=stream))
        .metric_logs(csv=True, plots=True)
        .summary()
        .build(model, burn.optim.SgdConfig().init(), 0.01)
    )
    with pytest.raises(KeyboardInterrupt):
        learner.fit(train, valid)
    assert learner.summary.reason == "interrupted by Ctrl-C"
    assert "(interrupted by Ctrl-C)" in (tmp_path / "summary.txt").read_text()
    assert "loss.png" in os.listdir(tmp_path / "plots")
    lines = stream.getvalue().splitlines()
    # the plots are announced while the renderer still runs, before the last line
    assert "[status] writing plots…" in lines and lines.index("[status] writing plots…") < len(lines) - 1
    assert lines[-1] == "[end] training ended early (interrupted by Ctrl-C)"  # not "finished"


def test_a_second_ctrl_c_while_the_summary_is_written_is_deferred_then_interrupts(capsys):
    import signal

    from burn_train._interrupter import sigint_deferred

    with sigint_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # the handler runs at the next bytecode boundary
            pass
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):
                pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "still writing the summary and plots; Ctrl-C again to abort" in capsys.readouterr().err


def test_summary_reports_start_up_costs(tmp_path):
    """The summary says what starting cost: seconds to the first training step and tuning seconds; on a
    fused device also planning (first launches, compiles) and graph-capture seconds. The fused device's
    planning seconds are the fusion decorator's own count over the fit."""
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    learner = _builder(tmp_path, 1).summary().build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    learner.fit(train, valid)
    startup = learner.summary.startup
    assert startup["first_step_s"] > 0.0 and startup["tune_s"] >= 0.0 and "plan_s" not in startup
    assert str(learner.summary).splitlines()[1].startswith("Start-up: first step after")
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["startup"] == startup

    burn.seed(0)
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fusion = dev.backend.inner
    planned = fusion.seconds["plan"]
    train, valid = loaders(dev)
    learner = (
        _builder(tmp_path / "fused", 1)
        .devices([dev])
        .build(TinyMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    startup = learner.summary.startup
    assert startup["plan_s"] > 0.0 and "capture_s" in startup
    assert startup["plan_s"] <= round(fusion.seconds["plan"] - planned, 3) + 1e-3
