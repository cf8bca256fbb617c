"""The event processor never blocks training, works without threads, and keeps events in order."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
from burn_train import _sync
from burn_train._events import EndEpochEvent, StartEvent, StatusEvent
from burn_train.processor import InlineProcessor, MetricsHub, MetricSlot, ThreadedProcessor, make_processor
from burn_train.renderer import CliRenderer

from ._helpers import CountMetric, item_event


@pytest.fixture
def no_threads(monkeypatch):
    """Threads made unavailable the way Pyodide does it: Thread.start raises."""

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    _sync.reset_thread_probe()
    yield
    _sync.reset_thread_probe()


def _hub(delay: float = 0.0, renderer=None) -> tuple[MetricsHub, CountMetric]:
    metric = CountMetric(delay)
    return MetricsHub({"train": [MetricSlot(metric)]}, renderer=renderer), metric


def test_threaded_submit_never_waits_for_slow_metrics():
    hub, metric = _hub(delay=0.02)  # 50 events x 20 ms = 1 s of processing
    proc = ThreadedProcessor(hub)
    proc.start()
    started = time.perf_counter()
    for i in range(50):
        proc.submit(item_event(i, 50))
        proc.raise_pending_error()
    submit_time = time.perf_counter() - started
    assert submit_time < 0.1, f"submitting 50 events took {submit_time:.3f} s: the training path waited"
    proc.flush()  # drains what the worker has not reached, on this thread
    assert [int(x) for x in metric.seen] == list(range(50))  # all of them, in order
    proc.close()
    assert proc._thread is None


def test_flush_without_a_worker_still_completes():
    hub, metric = _hub()
    proc = ThreadedProcessor(hub)  # never started: no worker at all
    for i in range(5):
        proc.submit(item_event(i, 5))
    proc.flush()
    assert len(metric.seen) == 5


def test_handler_error_is_reraised_on_the_training_thread():
    hub, _ = _hub()
    proc = ThreadedProcessor(hub)
    proc.start()
    proc.submit(item_event(0))
    proc.submit(object())  # unknown event type: the hub raises TypeError on the worker
    with pytest.raises(RuntimeError, match="event processor failed: TypeError"):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            proc.raise_pending_error()
            time.sleep(0.01)
    proc.close()


def test_make_processor_picks_inline_when_threads_cannot_start(no_threads):
    assert not _sync.threads_available()
    hub, metric = _hub()
    proc = make_processor(hub)
    assert isinstance(proc, InlineProcessor) and proc.mode == "inline"
    proc.start()
    proc.submit(item_event(0))
    assert len(metric.seen) == 1  # handled right away, no thread involved
    proc.close()


def test_emscripten_platform_means_inline(monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    _sync.reset_thread_probe()
    try:
        assert not _sync.threads_available()
        assert make_processor(_hub()[0]).mode == "inline"
    finally:
        _sync.reset_thread_probe()


def test_inline_processor_queues_reentrant_events_instead_of_recursing():
    hub, metric = _hub()
    proc = InlineProcessor(hub)
    order = []
    original = hub.handle

    def handle(event):
        order.append(type(event).__name__)
        if type(event).__name__ == "ItemEvent" and len(order) == 1:
            proc.submit(StatusEvent("published from inside a handler"))  # e.g. an autotune event
            assert order == ["ItemEvent"], "the nested event must wait for the outer one"
        original(event)

    hub.handle = handle
    proc.submit(item_event(0))
    assert order == ["ItemEvent", "StatusEvent"]


def test_epoch_values_and_cli_lines_in_inline_mode(capsys):
    import io

    stream = io.StringIO()
    hub, metric = _hub(renderer=CliRenderer(stream, interval=0.0))
    proc = InlineProcessor(hub)
    proc.start()
    proc.submit(StartEvent(2, 1))
    for i in range(4):
        proc.submit(item_event(i, 4))
    proc.submit(EndEpochEvent("train", 1))
    proc.flush()
    assert hub.store.value("train", "Count", 1) == 4.0
    proc.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[start] training for 2 epoch(s)")
    assert any(line.startswith("[train] epoch 1/2 iter 4 4/4 (100.0%)") for line in lines)
    assert "[train] epoch 1/2 done  Count 4" in lines


NO_NUMPY = r"""
import sys
sys.modules["numpy"] = None          # any `import numpy` now fails
import burn_train, burn_train.processor, burn_train.renderer, burn.autotune
from burn_train._events import StartEvent, EndEpochEvent
from burn_train.processor import MetricSlot, MetricsHub, make_processor
from burn_train.renderer import CliRenderer
sys.path.insert(0, {tests!r})
from _helpers import CountMetric, item_event
hub = MetricsHub({{"train": [MetricSlot(CountMetric())]}}, renderer=CliRenderer())
proc = make_processor(hub, "inline")
proc.start()
proc.submit(StartEvent(1, 1))
burn.autotune.publish(burn.autotune.AutotuneEvent("matmul", 1, 4))
for i in range(3):
    proc.submit(item_event(i, 3))
proc.submit(EndEpochEvent("train", 1))
proc.close()
import io
from rich.console import Console
from burn_train.renderer import TuiRenderer
tui = TuiRenderer(Console(record=True, width=100, height=30, file=io.StringIO(), color_system=None), keys=False)
hub2 = MetricsHub({{"train": [MetricSlot(CountMetric())]}}, renderer=tui)
proc2 = make_processor(hub2, "inline")
proc2.start()
proc2.submit(StartEvent(1, 1))
burn.autotune.publish(burn.autotune.AutotuneEvent("conv2d", 2, 5, kind="compile"))
tui.draw()
assert "compiling conv2d 2/5" in tui.last_frame, tui.last_frame
proc2.close()
assert "numpy" not in [m for m in sys.modules if sys.modules[m] is not None]
print("ok", hub.store.value("train", "Count", 1))
"""


def test_processor_and_renderers_run_without_numpy():
    import os

    code = NO_NUMPY.format(tests=os.path.dirname(__file__))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "[autotune] autotuning matmul 1/4" in result.stdout
    assert result.stdout.strip().endswith("ok 3.0")
