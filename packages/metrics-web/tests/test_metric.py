"""``WebMetric`` through burn_train's CollectorMetric and the inline event processor (fake ``js``)."""

from __future__ import annotations

import math

import pytest
from burn_metrics_web import WebMetric
from burn_train._events import MetricMetadata, Progress

from ._stream import MeanLoss, run_stream

META = MetricMetadata(Progress(8, 64), 1, 1, 1)


def test_names_aliases_and_units() -> None:
    step = WebMetric()
    assert (step.name, step.collector_name, step.unit, step.interval, step.per_step) == (
        "Step Time",
        "web-timing",
        "ms",
        0.0,
        True,
    )
    heap = WebMetric("Wasm heap", interval=2.5)
    assert (heap.name, heap.collector_name, heap.unit, heap.interval) == (
        "Wasm Heap",
        "web-wasm-heap",
        "MB",
        2.5,
    )
    assert WebMetric("WebGPU Max Buffer").collector_name == "web-gpu"
    assert WebMetric("js_heap_used").name == "JS Heap Used"


@pytest.mark.parametrize("bad", ["gpu", "", 3])
def test_unknown_metric_names_the_choices(bad) -> None:
    with pytest.raises(ValueError, match=r"WebMetric: metric must be one of \[.*'step_time'"):
        WebMetric(bad)


@pytest.mark.parametrize("bad", [-1.0, True, "1", math.nan])
def test_bad_interval(bad) -> None:
    with pytest.raises(ValueError, match="interval must be a number of seconds >= 0"):
        WebMetric("wasm_heap", interval=bad)


def test_outside_pyodide_the_metric_says_why() -> None:
    ok, reason = WebMetric().check_available()
    assert not ok and "sys.platform == 'emscripten'" in reason


def test_step_time_measures_whole_steps_only(browser) -> None:
    clock = browser.js.performance
    metric = WebMetric("step_time")
    metric.prepare()  # training starts at t = 1000 ms
    clock.t = 1250.0  # data loading, autotuning: not a step
    assert math.isnan(metric.update({}, META).value)  # the epoch's first step starts the clock
    for t, step in ((1255.0, 5.0), (1262.0, 7.0), (1271.0, 9.0)):
        clock.t = t
        entry = metric.update({}, META)
        assert entry.value == step and entry.name == "Step Time"
    assert metric.epoch_value() == 7.0
    metric.clear()
    clock.t = 1500.0  # the validation epoch ran in between
    assert math.isnan(metric.update({}, META).value)
    clock.t = 1503.0
    assert metric.update({}, META).value == 3.0 and metric.epoch_value() == 3.0


def test_other_sources_through_the_metric(browser) -> None:
    assert WebMetric("cpu_cores", interval=0).update({}, META).value == 8.0
    heap = WebMetric("js_heap_used", interval=0)
    assert heap.update({}, META).formatted == "50 MB (epoch 50 MB)"
    del browser.js.performance.memory  # the source went away: its NaN samples are skipped, not averaged
    assert heap.update({}, META).value == 50.0  # the last good sample stays shown
    assert heap.epoch_value() == 50.0


def test_processor_with_web_metrics_on_a_fake_clock(browser) -> None:
    clock = browser.js.performance
    steps = {"train": [4.0, 6.0, 8.0, 10.0], "valid": [2.0, 3.0]}

    def before_step(split: str, epoch: int, b: int) -> None:
        clock.t += steps[split][b] + (100.0 if b == 0 else 0.0)  # a gap before each epoch's first step

    hub = run_stream(
        [MeanLoss(), WebMetric("step_time"), WebMetric("wasm_heap", interval=0)],
        [MeanLoss(), WebMetric("step_time")],
        before_step=before_step,
    )
    store = hub.store
    for epoch in (1, 2):
        assert store.value("train", "Step Time", epoch) == pytest.approx((6.0 + 8.0 + 10.0) / 3, abs=1e-12)
        assert store.value("valid", "Step Time", epoch) == pytest.approx(3.0, abs=1e-12)
        assert store.value("train", "Wasm Heap", epoch) == 33.554432
        losses = [1.0 / (epoch + b) for b in range(4)]
        assert store.value("train", "Loss", epoch) == pytest.approx(sum(losses) / 4, abs=1e-15)
