"""Shared test helpers: numpy-free fake metrics and items, event builders."""

from __future__ import annotations

import time

from burn_train._events import ItemEvent, Progress, TrainingProgress
from burn_train.metric import Metric


class CountMetric(Metric):
    """Counts items (numpy-free); ``delay`` seconds of work per update simulate an expensive metric."""

    name = "Count"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.seen: list[object] = []
        super().__init__()

    def _reset(self) -> None:
        self._n = 0

    def _update(self, item, metadata) -> float:
        if self.delay:
            time.sleep(self.delay)
        self.seen.append(item)
        self._n += 1
        return float(item) if isinstance(item, (int, float)) else 1.0

    def _epoch(self) -> float:
        return float(self._n)


def item_event(
    i: int, total: int = 10, epoch: int = 1, split: str = "train", item: object = None
) -> ItemEvent:
    tp = TrainingProgress(Progress(i + 1, total), epoch, 2, i + 1)
    return ItemEvent(split, i if item is None else item, tp, lr=0.1)
