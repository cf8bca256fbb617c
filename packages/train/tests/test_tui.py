"""The dashboard rendered headless: a fixed-size recording rich Console captures each frame."""

from __future__ import annotations

import io
import threading
import time

import pytest

pytest.importorskip("rich")  # the TUI extra; burn-train's dev install has it

import burn.autotune as autotune
from burn_train import TrainingInterrupter
from burn_train._events import EndEpochEvent, StartEvent
from burn_train.processor import MetricsHub, MetricSlot, ThreadedProcessor
from burn_train.renderer import TuiRenderer, chart_text, parse_keys
from rich.console import Console

from ._helpers import CountMetric, item_event


def _tui(width: int = 120, height: int = 34, **kwargs) -> TuiRenderer:
    console = Console(record=True, width=width, height=height, file=io.StringIO(), color_system=None)
    return TuiRenderer(console=console, keys=False, **kwargs)


def _start(renderer, metrics=None):
    hub = MetricsHub(
        {"train": [MetricSlot(m) for m in (metrics or [CountMetric()])]}, renderer, [], TrainingInterrupter()
    )
    proc = ThreadedProcessor(hub)
    proc.start()
    proc.submit(StartEvent(2, 1, {"train": 10}))
    proc.flush()
    return hub, proc


def test_autotune_panel_shows_a_fake_tuner_while_the_first_batch_runs():
    renderer = _tui(fps=20)
    hub, proc = _start(renderer)
    assert renderer.frame_count >= 1 and "waiting for the first batch" in renderer.last_frame  # frame 0
    seen_frames = []

    def slow_first_batch():  # the training thread: stuck in kernel autotuning, no batch done yet
        for step in range(1, 9):
            autotune.publish(autotune.AutotuneEvent("matmul", step, 8, key="f32 64x64"))
            time.sleep(0.06)
            seen_frames.append(renderer.last_frame)
        autotune.publish(autotune.AutotuneEvent("matmul", 8, 8, done=True, best="tiled-4x4", key="f32 64x64"))

    worker = threading.Thread(target=slow_first_batch)
    worker.start()
    worker.join()
    assert any(
        "autotuning matmul [f32 64x64] 3/8" in frame or "autotuning matmul [f32 64x64] 4/8" in frame
        for frame in seen_frames
    ), seen_frames[-1]
    assert all("Iteration : 0" in frame for frame in seen_frames if frame)  # no batch has finished
    time.sleep(0.15)
    final = renderer.last_frame
    assert "✓ autotuning matmul [f32 64x64] done" in final
    assert "Autotune (0 active)" in final and "9 events" in final
    proc.close()


def test_redraws_on_a_timer_at_least_5_hz_without_any_training_step():
    renderer = _tui(fps=8)
    hub, proc = _start(renderer)
    before = renderer.frame_count
    time.sleep(1.0)
    drawn = renderer.frame_count - before
    proc.close()
    assert drawn >= 5, f"only {drawn} frames in 1 s with no events"


def test_status_progress_and_text_metrics_are_on_screen():
    renderer = _tui()
    hub, proc = _start(renderer)
    for i in range(4):
        proc.submit(item_event(i, 10, item=float(i)))
    proc.flush()
    renderer.draw()
    frame = renderer.last_frame
    proc.close()
    for text in (
        "Mode      : train",
        "Epoch     : 1/2",
        "Iteration : 4",
        "Items     : 4/10",
        "[train] epoch 1/2",
        "40.0%",
        "ETA",
    ):
        assert text in frame, text
    assert "Count" in frame and "3 (epoch 4)" in frame  # text metric panel: batch value and epoch so far
    assert any(ch in frame for ch in "⠁⠂⠄⡀⠈⠐⠠⢀"), "the plot should draw braille dots"


def test_keys_switch_metric_and_plot_and_q_stops_training():
    renderer = _tui()
    a, b = CountMetric(), CountMetric()
    b.name = "Other"
    hub, proc = _start(renderer, [a, b])
    proc.submit(item_event(0))
    proc.flush()
    assert renderer.selected_metric(hub.state.snapshot().numeric) == "Count"
    renderer.handle_key("right")
    assert renderer.selected_metric(hub.state.snapshot().numeric) == "Other"
    renderer.handle_key("up")
    assert renderer.plot_kind == "full"
    renderer.handle_key("q")
    renderer.draw()
    assert "Quit training?" in renderer.last_frame
    renderer.handle_key("c")  # cancel
    assert not renderer.popup and not hub.interrupter.should_stop()
    renderer.handle_key("q")
    renderer.handle_key("s")  # stop
    assert hub.interrupter.should_stop() and hub.interrupter.reason == "stopped from the dashboard"
    proc.close()


def test_parse_keys_and_chart_text():
    assert parse_keys("q\x1b[A\x1b[Dx\x1b") == ["q", "up", "left", "x", "escape"]
    chart = chart_text({"train": [(0.0, 0.0), (1.0, 1.0)]}, width=4, height=2).splitlines()
    assert len(chart) == 2 and all(len(row) == 4 for row in chart)
    assert chart[0][-1] != " " and chart[1][0] != " "  # a rising diagonal: bottom-left to top-right
    assert chart[0][0] == " " and chart[1][-1] == " "


def test_tui_fps_below_5_is_refused():
    with pytest.raises(ValueError, match="fps must be >= 5"):
        TuiRenderer(fps=2)


def test_end_epoch_values_reach_the_state():
    renderer = _tui()
    hub, proc = _start(renderer)
    proc.submit(item_event(0))
    proc.submit(EndEpochEvent("train", 1))
    proc.close()
    assert hub.state.snapshot().epochs["Count"]["train"] == ((1, 1.0),)


def _digits_metrics():
    """The digits example's numeric metrics: long names, percent and memory units."""
    metrics = []
    for name, unit, percent in [
        ("Loss", "", False),
        ("Accuracy", "", True),
        ("Top-2 Accuracy", "", True),
        ("F1 Score (macro)", "", True),
        ("Learning Rate", "", False),
        ("CPU Usage", "%", False),
        ("CPU Memory", "GiB", False),
    ]:
        metric = CountMetric()
        metric.name, metric.unit, metric.percent = name, unit, percent
        metrics.append(metric)
    return metrics


@pytest.mark.parametrize("width,height", [(80, 24), (100, 30), (200, 50)])
def test_metric_title_and_key_hints_fit_standard_terminals(width, height):
    renderer = _tui(width, height, live=False)
    hub, proc = _start(renderer, _digits_metrics())
    for i in range(3):
        proc.submit(item_event(i, 10, item=0.5))
    proc.flush()
    for presses in range(8):  # every metric in turn, and back to the first
        renderer.draw()
        frame = renderer.last_frame
        lines = frame.splitlines()
        assert len(lines) <= height and all(len(line) <= width for line in lines)
        selected = renderer.selected_metric(hub.state.snapshot().numeric)
        assert selected in lines[0], (selected, lines[0])  # the title names the plotted metric
        hints = [line for line in lines if "←→ metric" in line and "↑↓ plot: recent" in line]
        assert hints and hints[0].startswith("╰"), frame  # on the plot panel's bottom border
        if width >= 200:  # room for every metric's tab
            assert all(slot.metric.name in lines[0] for slot in hub.metrics["train"])
        else:
            assert f"[{presses % 7 + 1}/7]" in lines[0]
        renderer.handle_key("right")
    renderer.handle_key("up")
    renderer.draw()
    assert "↑↓ plot: full" in renderer.last_frame
    proc.close()


def test_chart_axis_labels_carry_the_unit():
    renderer = _tui(80, 24, live=False)
    hub, proc = _start(renderer, _digits_metrics())
    for i in range(3):
        proc.submit(item_event(i, 10, item=0.25 * (i + 1)))
    proc.flush()
    labels = {}
    for _ in range(7):
        renderer.draw()
        name = renderer.selected_metric(hub.state.snapshot().numeric)
        labels[name] = [line.split("│")[1].strip() for line in renderer.last_frame.splitlines()[1:4]]
        renderer.handle_key("right")
    proc.close()
    assert labels["Accuracy"][0] == "75 %"  # fractions shown as percent
    assert labels["CPU Memory"][0] == "0.75 GiB"
    assert labels["CPU Usage"][0] == "0.75 %"
    assert labels["Loss"][0] == "0.75"


def test_status_says_plots_are_being_written():
    from burn_train._events import EndEvent, StatusEvent

    renderer = _tui(80, 24)
    hub, proc = _start(renderer)
    proc.submit(item_event(0))
    proc.submit(EndEvent("completed"))
    proc.submit(StatusEvent("writing plots…"))
    proc.flush()
    renderer.draw()
    assert "Mode      : done" in renderer.last_frame and "» writing plots…" in renderer.last_frame
    proc.close()
