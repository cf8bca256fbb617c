"""The epoch values of a fit, kept in one place (numpy-free).

The event processor records each split's epoch values here; early stopping, checkpoint keep-best, the
summary and the plots read them, and the dashboard's ``Snapshot`` copies them. Writers (the processor
at epoch ends, the learner restoring a resumed run) and the snapshot take ``lock``, so a redraw on the
dashboard's timer thread never sees a half-applied update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._events import SPLITS
from ._sync import make_lock


@dataclass
class EventStore:
    """Epoch values per split and metric: ``values[split][name][epoch] = value``."""

    values: dict[str, dict[str, dict[int, float]]] = field(default_factory=lambda: {s: {} for s in SPLITS})
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    version: int = field(default=0, compare=False)  # bumps on every write: renderers see a change
    lock: Any = field(default_factory=make_lock, repr=False, compare=False)

    def record(self, split: str, epoch: int, name: str, value: float) -> None:
        """Store the epoch value ``value`` of metric ``name`` on ``split`` for ``epoch``."""
        with self.lock:
            self.values.setdefault(split, {}).setdefault(name, {})[epoch] = value
            self.version += 1

    def restore(self, values: Mapping[str, Mapping[str, Mapping[int, float]]]) -> None:
        """Put back the epoch values of an earlier run (``values[split][name][epoch]``), on resume."""
        with self.lock:
            for split, metrics in values.items():
                for name, series in metrics.items():
                    self.values.setdefault(split, {}).setdefault(name, {}).update(series)
            self.version += 1

    def value(self, split: str, name: str, epoch: int) -> float | None:
        return self.values.get(split, {}).get(name, {}).get(epoch)

    def metric_names(self, split: str) -> list[str]:
        return list(self.values.get(split, {}))

    def by_metric(self) -> dict[str, dict[str, tuple[tuple[int, float], ...]]]:
        """A copy as ``{name: {split: ((epoch, value), ...)}}`` in epoch order (what dashboards show)."""
        with self.lock:
            out: dict[str, dict[str, tuple[tuple[int, float], ...]]] = {}
            for split, metrics in self.values.items():
                for name, series in metrics.items():
                    if series:
                        out.setdefault(name, {})[split] = tuple(sorted(series.items()))
            return out
