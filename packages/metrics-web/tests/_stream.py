"""A synthetic training event stream for burn_train's processor (no model, no numpy)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from burn_train._events import (
    EndEpochEvent,
    EndEvent,
    ItemEvent,
    Progress,
    StartEvent,
    StatusEvent,
    TrainingProgress,
)
from burn_train.metric import Metric
from burn_train.processor import MetricsHub, MetricSlot, make_processor


class MeanLoss(Metric):
    """Sample-weighted mean of ``item["loss"]`` (pure Python)."""

    name = "Loss"
    higher_is_better = False

    def _reset(self) -> None:
        self._sum, self._n = 0.0, 0

    def _update(self, item: Any, metadata: Any) -> float:
        self._sum += item["loss"] * item["n"]
        self._n += item["n"]
        return item["loss"]

    def _epoch(self) -> float:
        return self._sum / self._n if self._n else math.nan


def run_stream(
    train: list[Any],
    valid: list[Any],
    renderer: Any = None,
    epochs: int = 2,
    batches: dict[str, int] | None = None,
    batch: int = 8,
    before_step: Callable[[str, int, int], None] | None = None,
    status: str | None = None,
) -> MetricsHub:
    """Feed ``epochs`` epochs of train then valid batches through an inline processor; returns the hub.

    ``before_step(split, epoch, b)`` runs before each item is submitted (tests move a fake clock there).
    The loss of batch ``b`` of ``epoch`` is ``1 / (epoch + b)``.
    """
    batches = batches or {"train": 4, "valid": 2}
    hub = MetricsHub(
        {"train": [MetricSlot(m) for m in train], "valid": [MetricSlot(m) for m in valid]}, renderer=renderer
    )
    processor = make_processor(hub, "inline")
    processor.start()
    processor.submit(StartEvent(epochs, 1, {s: n * batch for s, n in batches.items()}))
    iteration = 0
    for epoch in range(1, epochs + 1):
        for split, count in batches.items():
            for b in range(count):
                if before_step is not None:
                    before_step(split, epoch, b)
                iteration += split == "train"
                tp = TrainingProgress(Progress((b + 1) * batch, count * batch), epoch, epochs, iteration)
                processor.submit(ItemEvent(split, {"loss": 1.0 / (epoch + b), "n": batch}, tp, lr=0.1))
            processor.submit(EndEpochEvent(split, epoch))
    if status is not None:
        processor.submit(StatusEvent(status))
    processor.submit(EndEvent())
    processor.close()
    processor.raise_pending_error()
    return hub
