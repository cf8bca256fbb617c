"""Events the training loop hands to the event processor (numpy-free).

The loop only builds these small objects and appends them to the processor; metrics, loggers and
renderers see them later, on the processor's side. ``AutotuneEvent`` comes from ``burn.autotune``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from burn.autotune import AutotuneEvent

TRAIN, VALID = "train", "valid"
SPLITS = (TRAIN, VALID)


@dataclass(frozen=True)
class Progress:
    """How far through one split's epoch: items (samples) processed out of the total."""

    items_processed: int
    items_total: int

    @property
    def fraction(self) -> float:
        return self.items_processed / self.items_total if self.items_total else 0.0


@dataclass(frozen=True)
class TrainingProgress:
    """Where training stands: the split's progress, epoch (1-based) of epoch_total, iteration."""

    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int


@dataclass(frozen=True)
class MetricMetadata:
    """What a metric may need besides the item: progress, epoch, iteration, learning rate."""

    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None = None
    time: float | None = None  # when the training loop produced the item (time.monotonic())

    @classmethod
    def of(cls, tp: TrainingProgress, lr: float | None, time: float | None = None) -> MetricMetadata:
        return cls(tp.progress, tp.epoch, tp.epoch_total, tp.iteration, lr, time)


@dataclass
class ItemEvent:
    """One processed batch: the model's output item (tensors, synced later) and where it happened."""

    split: str
    item: Any
    progress: TrainingProgress
    lr: float | None = None
    time: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class EndEpochEvent:
    """A split finished an epoch: aggregates are computed, loggers flushed, metrics cleared."""

    split: str
    epoch: int


@dataclass(frozen=True)
class StartEvent:
    """Training starts (sent before the first batch so the dashboard draws at once)."""

    epoch_total: int
    starting_epoch: int = 1
    items_total: dict[str, int] = field(default_factory=dict)
    device: str = ""  # what the run trains on (``learner._describe.describe_run``)


@dataclass(frozen=True)
class StatusEvent:
    """A status line for the dashboard and the CLI log ("saving checkpoint", "early stop")."""

    text: str


@dataclass(frozen=True)
class EndEvent:
    """Training finished (normally, interrupted, or stopped early)."""

    reason: str = "completed"


__all__ = [
    "SPLITS",
    "TRAIN",
    "VALID",
    "AutotuneEvent",
    "EndEpochEvent",
    "EndEvent",
    "ItemEvent",
    "MetricMetadata",
    "Progress",
    "StartEvent",
    "StatusEvent",
    "TrainingProgress",
]
