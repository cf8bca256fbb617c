"""A run owns its artifacts folder, says what it ran on, and an interrupted run claims no more than it
did (issue 32): a second run into a used folder refuses in one line (or, with ``--overwrite``, moves
the old run aside), ``--resume`` refuses a checkpoint of another run, a resumed run never repeats an
epoch in epochs.csv, an interrupted summary counts only completed epochs and picks its best epoch among
them, and the device is named in the start line, experiment.log and summary.json."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import burn
import pytest
from burn.autotune import AutotuneEvent
from burn_train import LearnerBuilder
from burn_train.metric import LossMetric
from burn_train.renderer._state import DashboardState, tuning_line

from ._models import TinyMlp, adev, loaders

ROOT = Path(__file__).resolve().parents[3]
TRAIN = [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--limit", "96", "--renderer", "cli"]


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [*TRAIN, "--no-plots", "--artifacts", "art", *args]
    return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=300)


def _epochs_in_csv(path: Path) -> list[int]:
    with open(path, newline="") as handle:
        return [int(row["epoch"]) for row in csv.DictReader(handle) if row["metric"] == "Loss"]


def test_a_run_owns_its_folder_and_resume_checks_the_run(tmp_path):
    first = _run(tmp_path, "--epochs", "2")
    assert first.returncode == 0, first.stderr
    art = tmp_path / "art"
    run = json.loads((art / "run.json").read_text())
    assert run["device"] == "cpu (numpy), float32" and len(run["run_id"]) == 12
    assert "[start] training on cpu (numpy), float32 for 2 epoch(s)" in first.stdout
    assert json.loads((art / "summary.json").read_text())["device"] == "cpu (numpy), float32"
    assert "[on cpu (numpy), float32]" in (art / "experiment.log").read_text().splitlines()[0]
    before = sorted(p.name for p in art.rglob("*"))

    # a new run into the same folder: one line, exit 2, nothing touched
    second = _run(tmp_path, "--epochs", "1")
    lines = [line for line in second.stderr.splitlines() if line]
    assert second.returncode == 2 and len(lines) == 1, second.stderr
    assert f"already holds another run (run {run['run_id']}" in lines[0] and "--overwrite" in lines[0]
    assert sorted(p.name for p in art.rglob("*")) == before

    # resuming continues the folder's own run: epochs.csv gets epoch 3 once, the run id is kept
    third = _run(tmp_path, "--epochs", "3", "--resume", "2")
    assert third.returncode == 0, third.stderr
    assert _epochs_in_csv(art / "train" / "epochs.csv") == [1, 2, 3]
    assert json.loads((art / "run.json").read_text())["run_id"] == run["run_id"]
    state = json.loads((art / "checkpoint" / "state-3.json").read_text())
    assert state["run_id"] == run["run_id"]

    # resuming from epoch 2 again: the rows of epoch 3 are retrained, not repeated
    again = _run(tmp_path, "--epochs", "3", "--resume", "2")
    assert again.returncode == 0, again.stderr
    assert _epochs_in_csv(art / "train" / "epochs.csv") == [1, 2, 3]

    # a checkpoint of another run is refused
    other = json.loads((art / "run.json").read_text())
    other["run_id"] = "0123456789ab"
    (art / "run.json").write_text(json.dumps(other))
    refused = _run(tmp_path, "--epochs", "4", "--resume", "3")
    assert (
        refused.returncode == 2 and "belongs to run" in refused.stderr and "Traceback" not in refused.stderr
    )

    # --overwrite moves the old run aside, nothing is deleted
    fresh = _run(tmp_path, "--epochs", "1", "--overwrite")
    assert fresh.returncode == 0, fresh.stderr
    assert (tmp_path / "art.previous-1" / "checkpoint" / "state-3.json").exists()
    assert json.loads((art / "run.json").read_text())["run_id"] != run["run_id"]
    assert _epochs_in_csv(art / "train" / "epochs.csv") == [1]


def test_an_interrupted_run_counts_completed_epochs_only(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    model = TinyMlp(dev)
    original, calls = model.train_step, []
    learner = None

    def train_step(batch):
        calls.append(1)
        if len(calls) == len(train) + 2:  # two steps into epoch 2
            learner.interrupter.stop("stopped from the dashboard")
        return original(batch)

    model.train_step = train_step
    learner = (
        LearnerBuilder(str(tmp_path))
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer()
        .devices([dev])
        .num_epochs(4)
        .renderer("none")
        .summary()
        .build(model, burn.optim.SgdConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    s = learner.summary
    assert (s.reason, s.detail, s.epochs, s.checkpointed) == (
        "interrupted",
        "stopped from the dashboard",
        1,
        [1],
    )
    assert s.best_epoch == 1  # epoch 2's partial values are no epoch of the run
    text = str(s)
    assert "(interrupted: stopped from the dashboard)" in text.splitlines()[0]
    assert "resume from the checkpoint of epoch 1" in text
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["completed_epochs"] == 1 and saved["checkpointed_epochs"] == [1]
    assert saved["device"].startswith("cpu (numpy)")


def test_status_says_what_is_being_tuned():
    event = AutotuneEvent("conv2d", step=3, total=7, key="k")
    assert tuning_line(event) == "tuning conv2d (3 of 7 candidates)"
    assert tuning_line(AutotuneEvent("matmul", kind="compile", key="k")) == "compiling matmul"
    state = DashboardState()
    state.start(1, 1, ["Loss"], [], device="wgpu:0 (llvmpipe, software), float32")
    state.autotune(event)
    snap = state.snapshot()
    pytest.importorskip("rich")
    from burn_train.renderer._tui import TuiRenderer
    from rich.console import Console

    console = Console(width=100, record=True)
    console.print(TuiRenderer._status_panel(object.__new__(TuiRenderer), snap))
    shown = console.export_text()
    assert "tuning conv2d (3 of 7 candidates)" in shown and "Status (q: quit)" in shown
    # the device is in the Progress panel's title, across the full width (test_dashboard_device.py)


def test_status_says_when_tuning_runs_in_the_background_and_keeps_the_eta():
    """Background tuning holds no step up: the Status panel says what is tuned and how many tuning jobs
    wait behind it, and
    the Progress panel keeps its ETAs instead of a frozen ``100 %``."""
    pytest.importorskip("rich")
    from burn_train.renderer._tui import TuiRenderer
    from rich.console import Console

    older = AutotuneEvent("matmul", step=0, total=7, key="a", background=True, pending=1)
    newer = AutotuneEvent("conv2d", step=2, total=5, key="b", background=True, pending=2)
    assert tuning_line(newer) == "tuning conv2d 2/5 (background, 1 more queued)"
    assert tuning_line(older) == "tuning matmul 0/7 (background)"
    assert newer.describe() == "autotuning conv2d [b] 2/5 (background, 2 pending)"
    state = DashboardState()
    state.start(1, 1, ["Loss"], [], device="wgpu:0 (llvmpipe, software), float32")
    state.autotune(older)
    state.autotune(newer)
    tui = object.__new__(TuiRenderer)
    tui.state = state
    snap = state.snapshot()
    console = Console(width=100, record=True)
    console.print(TuiRenderer._status_panel(tui, snap))
    assert "» tuning conv2d 2/5 (background, 1 more queued)" in console.export_text()
    view = snap.splits["train"]
    assert TuiRenderer._eta_text(tui, snap, view).startswith("ETA ")
    state.autotune(AutotuneEvent("matmul", step=3, total=3, key="a", done=True, best="x"))
    state.autotune(AutotuneEvent("reduce", step=1, total=4, key="c"))  # a blocking run: it holds the step
    assert TuiRenderer._eta_text(tui, state.snapshot(), view) == "tuning reduce (1 of 4 candidates)"
