"""What waiting for kernel compiles and tuning in the background look like: the Status panel's
``tuning matmul 3/7 (background)`` and its ``Compiles`` line (seconds waited, share of the last training
step), and the Learner summary's compile seconds."""

from __future__ import annotations

import json

import burn
import pytest
from burn.autotune import AutotuneEvent, publish
from burn_train import LearnerBuilder
from burn_train._events import Progress, TrainingProgress
from burn_train.metric import LossMetric
from burn_train.renderer._state import DashboardState, compile_line, tuning_line

from ._models import TinyMlp, adev, loaders


def _status_text(state: DashboardState) -> str:
    pytest.importorskip("rich")
    from burn_train.renderer._tui import TuiRenderer
    from rich.console import Console

    tui = object.__new__(TuiRenderer)
    tui.state = state
    console = Console(width=100, record=True)
    console.print(TuiRenderer._status_panel(tui, state.snapshot()))
    return console.export_text()


def _item(state: DashboardState, iteration: int, now: float) -> None:
    tp = TrainingProgress(Progress(iteration * 8, 64), 1, 1, iteration)
    state.item("train", tp, [], now)


def test_background_tuning_reads_kernel_step_of_total():
    event = AutotuneEvent("matmul", step=3, total=7, key="k", background=True, pending=1)
    assert tuning_line(event) == "tuning matmul 3/7 (background)"
    state = DashboardState()
    state.start(1, 1, ["Loss"], [], device="wgpu:0")
    state.autotune(event)
    assert "» tuning matmul 3/7 (background)" in _status_text(state)


def test_status_shows_the_share_of_the_step_spent_waiting_for_compiles():
    state = DashboardState()
    state.start(1, 1, ["Loss"], [], device="wgpu:0")
    assert compile_line(state.snapshot()) == ""  # nothing waited yet: no line
    t0 = state._last_item
    assert t0 is not None
    # the first step: 4 s, of which 0.5 s + 2.5 s waited for two pipelines (a started compile waits 0)
    state.autotune(AutotuneEvent("matmul", kind="compile", device="wgpu:0"))
    state.autotune(AutotuneEvent("matmul", kind="compile", done=True, waited=0.5))
    state.autotune(AutotuneEvent("conv2d", kind="compile", done=True, waited=2.5))
    _item(state, 1, t0 + 4.0)
    snap = state.snapshot()
    assert snap.compile_waited == pytest.approx(3.0)
    assert snap.compile_share == pytest.approx(0.75)
    assert compile_line(snap) == "Compiles  : 3.0 s waited, 75 % of the last step"
    assert "Compiles  : 3.0 s waited, 75 % of the last step" in _status_text(state)
    # the second step compiles nothing: the share drops, the total stays
    _item(state, 2, t0 + 5.0)
    assert compile_line(state.snapshot()) == "Compiles  : 3.0 s waited, 0 % of the last step"
    # tuning events carry no compile wait
    state.autotune(AutotuneEvent("matmul", step=7, total=7, done=True, key="k"))
    assert state.snapshot().compile_waited == pytest.approx(3.0)


class _CompilingMlp(TinyMlp):
    """TinyMlp whose first forward reports a compile that held it up for 0.4 s (as a backend would)."""

    def forward(self, images):
        if not getattr(self, "_compiled", False):
            self._compiled = True
            publish(AutotuneEvent("fake_kernel", kind="compile", device="cpu"))
            publish(AutotuneEvent("fake_kernel", kind="compile", done=True, device="cpu", waited=0.4))
        return super().forward(images)


def test_summary_reports_compile_and_tune_seconds(tmp_path):
    burn.seed(0)
    dev = adev()
    train, valid = loaders(dev)
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .num_epochs(1)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(csv=False, plots=False)
        .summary()
        .build(_CompilingMlp(dev), burn.optim.AdamConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    startup = learner.summary.startup
    assert startup["compile_s"] == pytest.approx(0.4, abs=1e-6)
    assert startup["tune_s"] >= 0.0
    line = str(learner.summary).splitlines()[1]
    assert line.startswith("Start-up: first step after") and "compiles 0.4 s" in line and "tuning" in line
    assert json.loads((tmp_path / "summary.json").read_text())["startup"]["compile_s"] == pytest.approx(0.4)
