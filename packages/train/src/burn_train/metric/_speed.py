"""Metrics that read the loop, not the item: LearningRateMetric and IterationSpeedMetric."""

from __future__ import annotations

import math
import time
from typing import Any

from .._events import MetricMetadata
from ._base import Metric


class LearningRateMetric(Metric):
    """The learning rate used for each batch; the epoch value is its mean over the epoch's batches."""

    name = "Learning Rate"
    higher_is_better = False

    def _reset(self) -> None:
        self._sum = 0.0
        self._count = 0

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        if metadata.lr is None:
            return math.nan
        self._sum += float(metadata.lr)
        self._count += 1
        return float(metadata.lr)

    def _epoch(self) -> float:
        return self._sum / self._count if self._count else math.nan

    def format_value(self, value: float) -> str:
        return "n/a" if math.isnan(value) else f"{value:.3e}"


class IterationSpeedMetric(Metric):
    """Iterations per second: the batch value over the last batch, the epoch value over the epoch
    (iterations since the first batch divided by the time they took). Times come from the training
    loop's event timestamps, so a busy processor does not distort them."""

    name = "Iteration Speed"
    higher_is_better = True
    unit = "iter/s"

    def _reset(self) -> None:
        self._first: float | None = None
        self._previous: float | None = None
        self._iterations = 0

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        now = metadata.time if metadata.time is not None else time.monotonic()
        batch = math.nan
        if self._previous is not None and now > self._previous:
            batch = 1.0 / (now - self._previous)
        if self._first is None:
            self._first = now
        else:
            self._iterations += 1
        self._previous = now
        return batch

    def _epoch(self) -> float:
        if self._first is None or self._previous is None or self._previous <= self._first:
            return math.nan
        return self._iterations / (self._previous - self._first)
