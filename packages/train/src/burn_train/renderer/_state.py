"""What the dashboard shows, kept by the event processor and read by renderers (numpy-free).

The processor writes under ``lock``; the TUI's timer thread takes a consistent ``snapshot()`` under
the same lock, so a redraw never sees a half-applied update. Histories are thinned as they grow so a
long run keeps a bounded amount of points.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .._events import Progress, TrainingProgress
from .._sync import make_lock

MAX_POINTS = 4000  # per metric and split; older points are thinned 2:1 past this


@dataclass
class SplitView:
    """One split's live numbers: progress, the latest entry of each metric, timing for the ETA."""

    progress: Progress = field(default_factory=lambda: Progress(0, 0))
    epoch: int = 0
    iteration: int = 0
    started_at: float | None = None  # monotonic time of this epoch's first item
    entries: dict[str, Any] = field(default_factory=dict)  # name -> MetricEntry
    epoch_seconds: float | None = None  # duration of the last complete epoch of this split

    def eta_seconds(self, now: float) -> float | None:
        """Seconds left in this split's epoch, from the rate so far (None before any progress)."""
        done, total = self.progress.items_processed, self.progress.items_total
        if self.started_at is None or done <= 0 or total <= 0:
            return None
        return max(0.0, (now - self.started_at) * (total - done) / done)


class DashboardState:
    """Everything a renderer draws. Written by the processor, read through ``snapshot()``."""

    def __init__(self) -> None:
        self.lock = make_lock()
        self.started_at = time.monotonic()
        self.mode = "starting"  # starting | train | valid | done | interrupted
        self.epoch_total = 0
        self.epoch = 0
        self.splits: dict[str, SplitView] = {"train": SplitView(), "valid": SplitView()}
        self.numeric: list[str] = []  # metric names that get plots, in registration order
        self.text_only: set[str] = set()
        self.history: dict[str, dict[str, list[tuple[float, float]]]] = {}  # name -> split -> (x, y)
        self.epochs: dict[str, dict[str, list[tuple[int, float]]]] = {}  # name -> split -> (epoch, y)
        self.autotune_active: dict[tuple[str, str], Any] = {}  # (kernel, key) -> latest AutotuneEvent
        self.autotune_recent: deque[Any] = deque(maxlen=6)
        self.autotune_count = 0
        self.status: deque[str] = deque(maxlen=4)
        self.formatters: dict[str, Any] = {}  # metric name -> value formatter (percent, units)
        self.units: dict[str, tuple[str, float]] = {}  # metric name -> (unit, scale), see display_unit
        self.higher_is_better: dict[str, bool] = {}
        self.version = 0  # bumps on every change so renderers can skip identical frames

    # ---------------------------------------------------------------- writers (processor side)
    def start(
        self,
        epoch_total: int,
        starting_epoch: int,
        numeric: list[str],
        text_only: list[str],
        formatters: dict[str, Any] | None = None,
        items_total: dict[str, int] | None = None,
        units: dict[str, tuple[str, float]] | None = None,
    ) -> None:
        with self.lock:
            self.formatters.update(formatters or {})
            self.units.update(units or {})
            for split, total in (items_total or {}).items():
                if split in self.splits:
                    self.splits[split].progress = Progress(0, total)
            self.epoch_total, self.epoch = epoch_total, starting_epoch
            for name in numeric:
                if name not in self.numeric:
                    self.numeric.append(name)
            self.text_only.update(text_only)
            self.version += 1

    def item(self, split: str, tp: TrainingProgress, entries: list[Any], now: float) -> None:
        with self.lock:
            view = self.splits[split]
            if view.started_at is None or tp.epoch != view.epoch:
                view.started_at, view.entries = now, {}
            view.progress, view.epoch, view.iteration = tp.progress, tp.epoch, tp.iteration
            self.mode, self.epoch, self.epoch_total = split, tp.epoch, tp.epoch_total
            x = (tp.epoch - 1) + tp.progress.fraction
            for entry in entries:
                view.entries[entry.name] = entry
                if entry.numeric and entry.name not in self.text_only:
                    if entry.name not in self.numeric:
                        self.numeric.append(entry.name)
                    points = self.history.setdefault(entry.name, {}).setdefault(split, [])
                    points.append((x, entry.value))
                    if len(points) > MAX_POINTS:
                        points[:] = points[::2]
            self.version += 1

    def end_epoch(self, split: str, epoch: int, values: dict[str, float], now: float) -> None:
        with self.lock:
            view = self.splits[split]
            if view.started_at is not None:
                view.epoch_seconds = now - view.started_at
            view.started_at = None
            for name, value in values.items():
                self.epochs.setdefault(name, {}).setdefault(split, []).append((epoch, value))
            self.version += 1

    def autotune(self, event: Any) -> None:
        with self.lock:
            key = (event.kernel, event.key)
            if event.done:
                self.autotune_active.pop(key, None)
            else:
                self.autotune_active[key] = event
            self.autotune_recent.append(event)
            self.autotune_count += 1
            self.version += 1

    def add_status(self, text: str) -> None:
        with self.lock:
            self.status.append(text)
            self.version += 1

    def set_mode(self, mode: str) -> None:
        with self.lock:
            self.mode = mode
            self.version += 1

    # ---------------------------------------------------------------- readers (renderer side)
    def format(self, name: str, value: float) -> str:
        """``value`` as metric ``name`` shows it (percent, units); plain ``.4g`` for unknown names."""
        formatter = self.formatters.get(name)
        if formatter is not None:
            return formatter(value)
        return "n/a" if value != value else f"{value:.4g}"

    def unit(self, name: str) -> tuple[str, float]:
        """``(unit, scale)`` of metric ``name`` (``("", 1.0)`` when unknown or unitless)."""
        return self.units.get(name, ("", 1.0))

    def format_axis(self, name: str, value: float) -> str:
        """A short ``value unit`` for a chart axis: ``95.1 %``, ``0.51 GiB``, ``0.3127``."""
        if value != value:
            return "n/a"
        unit, scale = self.unit(name)
        value *= scale
        text = f"{value:.4g}" if abs(value) < 1e4 else f"{value:.2e}"
        return f"{text} {unit}".rstrip()

    def snapshot(self, history_of: str | None = None) -> dict[str, Any]:
        """A consistent copy of what a frame needs (plain containers, safe to use without the lock).

        Only the history of metric ``history_of`` is copied (the one the chart shows).
        """
        with self.lock:
            return {
                "now": time.monotonic(),
                "elapsed": time.monotonic() - self.started_at,
                "mode": self.mode,
                "epoch": self.epoch,
                "epoch_total": self.epoch_total,
                "splits": {
                    name: SplitView(
                        v.progress, v.epoch, v.iteration, v.started_at, dict(v.entries), v.epoch_seconds
                    )
                    for name, v in self.splits.items()
                },
                "numeric": list(self.numeric),
                "history": {
                    n: {s: list(p) for s, p in d.items()} for n, d in self.history.items() if n == history_of
                },
                "epochs": {n: {s: list(p) for s, p in d.items()} for n, d in self.epochs.items()},
                "autotune_active": list(self.autotune_active.values()),
                "autotune_recent": list(self.autotune_recent),
                "autotune_count": self.autotune_count,
                "status": list(self.status),
                "version": self.version,
            }

    def total_eta_seconds(self, now: float) -> float | None:
        """Rough time left for the whole run: this epoch's remainder plus the remaining epochs."""
        with self.lock:
            view = self.splits.get(self.mode)
            if view is None:
                return None
            left = view.eta_seconds(now)
            if left is None:
                return None
            train, valid = self.splits["train"], self.splits["valid"]
            per_epoch = (train.epoch_seconds or 0.0) + (valid.epoch_seconds or 0.0)
            if self.mode == "train" and valid.epoch_seconds:
                left += valid.epoch_seconds
            return left + per_epoch * max(0, self.epoch_total - self.epoch)
