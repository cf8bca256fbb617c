"""Early stopping on a metric's epoch value (Burn's MetricEarlyStoppingStrategy, no-improvement-since).

Stateless over the event store: the decision at epoch ``e`` looks at every recorded epoch up to ``e``,
so it is the same after resuming from a checkpoint.
"""

from __future__ import annotations

import math
from typing import Any


class EarlyStopping:
    """Stop when ``metric`` on ``split`` has not improved by more than ``min_delta`` for ``patience``
    epochs. ``higher_is_better`` defaults to the metric's own direction."""

    def __init__(
        self,
        metric: str = "Loss",
        patience: int = 3,
        split: str = "valid",
        min_delta: float = 0.0,
        higher_is_better: bool | None = None,
    ) -> None:
        if not isinstance(patience, int) or isinstance(patience, bool) or patience < 1:
            raise ValueError(f"early_stopping: patience must be an int >= 1, got {patience!r}")
        if split not in ("train", "valid"):
            raise ValueError(f"early_stopping: split must be 'train' or 'valid', got {split!r}")
        if not min_delta >= 0:
            raise ValueError(f"early_stopping: min_delta must be >= 0, got {min_delta!r}")
        self.metric, self.patience, self.split = metric, patience, split
        self.min_delta, self.higher_is_better = float(min_delta), higher_is_better

    def best_epoch(self, epoch: int, store: Any) -> int | None:
        """The epoch (<= ``epoch``) that last improved the metric by more than ``min_delta``."""
        higher = self.higher_is_better
        if higher is None:
            higher = store.higher_is_better.get(self.metric, False)
        best_epoch, best = None, math.nan
        series = store.values.get(self.split, {}).get(self.metric, {})
        for e in sorted(k for k in series if k <= epoch):
            value = series[e]
            if math.isnan(value):
                continue
            better = value > best + self.min_delta if higher else value < best - self.min_delta
            if best_epoch is None or better:
                best_epoch, best = e, value
        return best_epoch

    def should_stop(self, epoch: int, store: Any) -> bool:
        """True when ``patience`` epochs have passed since the best one."""
        if self.metric not in store.values.get(self.split, {}):
            known = store.metric_names(self.split)
            raise ValueError(
                f"early_stopping: no metric {self.metric!r} on split {self.split!r}; recorded metrics: {known}"
            )
        best = self.best_epoch(epoch, store)
        return best is not None and epoch - best >= self.patience

    def __repr__(self) -> str:
        return f"EarlyStopping({self.metric!r}, patience={self.patience}, split={self.split!r})"
