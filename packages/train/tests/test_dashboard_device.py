"""The dashboard names the device in full sight (issue 32): a software adapter's "software" and the rank
are never cut off, on an 80-column terminal too; where the full adapter label does not fit, its nested
details are dropped first."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("rich")  # the TUI extra; burn-train's dev install has it

from burn_train import TrainingInterrupter
from burn_train._events import StartEvent
from burn_train.learner._describe import compact_device
from burn_train.processor import MetricsHub, MetricSlot, ThreadedProcessor
from burn_train.renderer import TuiRenderer
from rich.console import Console

from ._helpers import CountMetric

LAVAPIPE = "wgpu:0 (llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, CPU), software), float32, rank 1 of 2"


def _frame(device: str, width: int, height: int) -> list[str]:
    console = Console(record=True, width=width, height=height, file=io.StringIO(), color_system=None)
    renderer = TuiRenderer(console=console, keys=False, live=False)
    hub = MetricsHub({"train": [MetricSlot(CountMetric())]}, renderer, [], TrainingInterrupter())
    proc = ThreadedProcessor(hub)
    proc.start()
    proc.submit(StartEvent(2, 1, {"train": 10}, device=device))
    proc.flush()
    renderer.draw()
    proc.close()
    return renderer.last_frame.splitlines()


def test_compact_device_drops_only_the_adapter_details():
    assert compact_device(LAVAPIPE) == "wgpu:0 (llvmpipe, software), float32, rank 1 of 2"
    assert (
        compact_device("wgpu:0 (NVIDIA H200 (Vulkan, DiscreteGPU)), float32")
        == "wgpu:0 (NVIDIA H200), float32"
    )
    for plain in (
        "cpu (numpy), float32",
        "cuda:0 (NVIDIA H200), cuda:1 (NVIDIA H200), float16 mixed precision",
    ):
        assert compact_device(plain) == plain


@pytest.mark.parametrize("width,height", [(80, 24), (120, 40), (200, 50)])
def test_the_progress_title_names_the_device_without_cutting_it(width, height):
    lines = _frame(LAVAPIPE, width, height)
    assert len(lines) <= height and all(len(line) <= width for line in lines)
    titles = [line for line in lines if "Progress on " in line]
    assert len(titles) == 1, lines
    shown = titles[0].split("Progress on ", 1)[1]
    full = LAVAPIPE + " "
    expected = full if len("Progress on " + LAVAPIPE) <= width - 4 else compact_device(LAVAPIPE) + " "
    assert shown.startswith(expected), (shown, expected)
    assert "(q: quit)" in "".join(lines)  # the Status title keeps its key hint


def test_without_a_device_the_title_is_plain_progress():
    lines = _frame("", 80, 24)
    assert any(line.startswith("╭─ Progress ─") for line in lines), lines


def test_while_a_kernel_is_tuned_the_progress_row_says_so_instead_of_an_eta():
    import burn.autotune as autotune

    console = Console(record=True, width=100, height=30, file=io.StringIO(), color_system=None)
    renderer = TuiRenderer(console=console, keys=False, live=False)
    hub = MetricsHub({"train": [MetricSlot(CountMetric())]}, renderer, [], TrainingInterrupter())
    proc = ThreadedProcessor(hub)
    proc.start()
    proc.submit(StartEvent(2, 1, {"train": 10}, device="cpu (numpy), float32"))
    proc.flush()
    autotune.publish(autotune.AutotuneEvent("conv2d", 3, 7, key="f32 3x3"))
    proc.flush()
    renderer.draw()
    tuning = [line for line in renderer.last_frame.splitlines() if "[train] epoch 1/2" in line]
    autotune.publish(autotune.AutotuneEvent("conv2d", 7, 7, done=True, best="direct", key="f32 3x3"))
    proc.flush()
    renderer.draw()
    after = [line for line in renderer.last_frame.splitlines() if "[train] epoch 1/2" in line]
    proc.close()
    assert len(tuning) == 1 and "tuning conv2d (3 of 7 candidates)" in tuning[0] and "ETA" not in tuning[0]
    assert len(after) == 1 and "ETA" in after[0] and "tuning" not in after[0]
