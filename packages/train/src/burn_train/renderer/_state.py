"""What the dashboard shows, kept by the event processor and read by renderers (numpy-free).

The processor writes under ``lock``; renderers read a ``Snapshot``, a frozen copy that
``snapshot()`` takes under the same lock, so a redraw on the TUI's timer thread never sees a
half-applied update. Epoch values are not kept here: they live in the ``EventStore`` the state is
given, and a snapshot copies them from there. Histories are thinned as they grow so a long run keeps
a bounded amount of points.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._events import Progress, TrainingProgress
from .._store import EventStore
from .._sync import make_lock

if TYPE_CHECKING:
    from burn.autotune import AutotuneEvent

    from ..metric import MetricEntry

MAX_POINTS = 4000  # per metric and split; older points are thinned 2:1 past this

Points = tuple[tuple[float, float], ...]  # (x in epochs, value) of each batch
EpochPoints = tuple[tuple[int, float], ...]  # (epoch, value) of each epoch


@dataclass(frozen=True)
class SplitView:
    """One split's live numbers: progress, the latest entry of each metric, timing for the ETA.

    Immutable: the state replaces a split's view on every update, so a ``Snapshot`` shares views
    without copying them.
    """

    progress: Progress = field(default_factory=lambda: Progress(0, 0))
    epoch: int = 0
    iteration: int = 0
    started_at: float | None = None  # monotonic time of this epoch's first item
    entries: Mapping[str, MetricEntry] = field(default_factory=lambda: MappingProxyType({}))  # name -> latest
    epoch_seconds: float | None = None  # duration of the last complete epoch of this split

    def eta_seconds(self, now: float) -> float | None:
        """Seconds left in this split's epoch, from the rate so far (None before any progress)."""
        done, total = self.progress.items_processed, self.progress.items_total
        if self.started_at is None or done <= 0 or total <= 0:
            return None
        return max(0.0, (now - self.started_at) * (total - done) / done)


@dataclass(frozen=True)
class Snapshot:
    """What one frame draws: a consistent, read-only copy of the dashboard state.

    ``splits`` maps ``"train"``/``"valid"`` to their ``SplitView``; ``numeric`` names the plotted
    metrics in registration order; ``history`` holds the batch points of the metric asked for
    (``{name: {split: ((x, value), ...)}}``, x in epochs); ``epochs`` every epoch value
    (``{name: {split: ((epoch, value), ...)}}``); ``version`` changes whenever anything shown does.
    """

    now: float  # time.monotonic() when the snapshot was taken
    elapsed: float  # seconds since the state was made
    mode: str  # starting | train | valid | done | interrupted | ...
    epoch: int
    epoch_total: int
    splits: Mapping[str, SplitView]
    numeric: tuple[str, ...]
    history: Mapping[str, Mapping[str, Points]]
    epochs: Mapping[str, Mapping[str, EpochPoints]]
    autotune_active: tuple[AutotuneEvent, ...]
    autotune_recent: tuple[AutotuneEvent, ...]
    autotune_count: int
    status: tuple[str, ...]
    version: int
    device: str = ""  # what the run trains on
    compile_waited: float = 0.0  # seconds training waited for kernel compiles so far
    compile_share: float | None = None  # the share of the last training step spent waiting for them


class DashboardState:
    """Everything a renderer draws. Written by the processor, read through ``snapshot()``.

    ``store`` holds the epoch values (the hub records them there); a new one when not given.
    """

    def __init__(self, store: EventStore | None = None) -> None:
        self.lock = make_lock()
        self.store = store if store is not None else EventStore()
        self.started_at = time.monotonic()
        self.mode = "starting"  # starting | train | valid | done | interrupted
        self.epoch_total = 0
        self.device = ""  # what the run trains on
        self.epoch = 0
        self.splits: dict[str, SplitView] = {"train": SplitView(), "valid": SplitView()}
        self.numeric: list[str] = []  # metric names that get plots, in registration order
        self.text_only: set[str] = set()
        self.history: dict[str, dict[str, list[tuple[float, float]]]] = {}  # name -> split -> (x, y)
        self.autotune_active: dict[tuple[str, str], Any] = {}  # (kernel, key) -> latest AutotuneEvent
        self.autotune_recent: deque[Any] = deque(maxlen=6)
        self.autotune_count = 0
        self.status: deque[str] = deque(maxlen=4)
        self.compile_waited = 0.0
        self.compile_share: float | None = None
        self._step_compiles = 0.0  # compile waits since the last training item
        self._last_item: float | None = None  # when the last training item (or the start) arrived
        self.formatters: dict[str, Any] = {}  # metric name -> value formatter (percent, units)
        self.units: dict[str, tuple[str, float]] = {}  # metric name -> (unit, scale), see display_unit
        self._changes = 0  # bumps on every change of this state (the store counts its own)

    @property
    def version(self) -> int:
        """Changes whenever anything a frame shows does, so renderers can skip identical frames."""
        return self._changes + self.store.version

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
        device: str = "",
    ) -> None:
        with self.lock:
            self.device = device
            self.formatters.update(formatters or {})
            self.units.update(units or {})
            for split, total in (items_total or {}).items():
                if split in self.splits:
                    self.splits[split] = replace(self.splits[split], progress=Progress(0, total))
            self.epoch_total, self.epoch = epoch_total, starting_epoch
            for name in numeric:
                if name not in self.numeric:
                    self.numeric.append(name)
            self.text_only.update(text_only)
            self._last_item = time.monotonic()
            self._changes += 1

    def item(self, split: str, tp: TrainingProgress, entries: list[Any], now: float) -> None:
        with self.lock:
            view = self.splits[split]
            new_epoch = view.started_at is None or tp.epoch != view.epoch
            started_at = now if new_epoch else view.started_at
            latest = {} if new_epoch else dict(view.entries)
            self.mode, self.epoch, self.epoch_total = split, tp.epoch, tp.epoch_total
            if split == "train":
                self._compile_share(now)
            x = (tp.epoch - 1) + tp.progress.fraction
            for entry in entries:
                latest[entry.name] = entry
                if entry.numeric and entry.name not in self.text_only:
                    if entry.name not in self.numeric:
                        self.numeric.append(entry.name)
                    points = self.history.setdefault(entry.name, {}).setdefault(split, [])
                    points.append((x, entry.value))
                    if len(points) > MAX_POINTS:
                        points[:] = points[::2]
            self.splits[split] = replace(
                view,
                progress=tp.progress,
                epoch=tp.epoch,
                iteration=tp.iteration,
                started_at=started_at,
                entries=MappingProxyType(latest),
            )
            self._changes += 1

    def end_epoch(self, split: str, now: float) -> None:
        """``split`` finished an epoch (its values are in the store): time it for the ETA."""
        with self.lock:
            view = self.splits[split]
            seconds = view.epoch_seconds if view.started_at is None else now - view.started_at
            self.splits[split] = replace(view, started_at=None, epoch_seconds=seconds)
            self._changes += 1

    def _compile_share(self, now: float) -> None:
        """A training step ended at ``now``: the share of it spent waiting for compiles."""
        if self._last_item is not None and now > self._last_item:
            self.compile_share = min(1.0, self._step_compiles / (now - self._last_item))
        self._last_item, self._step_compiles = now, 0.0

    def autotune(self, event: Any) -> None:
        with self.lock:
            if event.kind == "compile" and event.done:
                waited = getattr(event, "waited", 0.0)
                self.compile_waited += waited
                self._step_compiles += waited
            key = (event.kernel, event.key)
            if event.done:
                self.autotune_active.pop(key, None)
            else:
                self.autotune_active[key] = event
            self.autotune_recent.append(event)
            self.autotune_count += 1
            self._changes += 1

    def add_status(self, text: str) -> None:
        with self.lock:
            self.status.append(text)
            self._changes += 1

    def set_mode(self, mode: str) -> None:
        with self.lock:
            self.mode = mode
            self._changes += 1

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

    def snapshot(self, history_of: str | None = None) -> Snapshot:
        """A consistent, frozen copy of what a frame needs, safe to use without the lock.

        Only the history of metric ``history_of`` is copied (the one the chart shows).
        """
        with self.lock:
            now = time.monotonic()
            history = {
                name: MappingProxyType({s: tuple(p) for s, p in per_split.items()})
                for name, per_split in self.history.items()
                if name == history_of
            }
            epochs = {name: MappingProxyType(per_split) for name, per_split in self.store.by_metric().items()}
            return Snapshot(
                now=now,
                elapsed=now - self.started_at,
                mode=self.mode,
                epoch=self.epoch,
                epoch_total=self.epoch_total,
                device=self.device,
                splits=MappingProxyType(dict(self.splits)),
                numeric=tuple(self.numeric),
                history=MappingProxyType(history),
                epochs=MappingProxyType(epochs),
                autotune_active=tuple(self.autotune_active.values()),
                autotune_recent=tuple(self.autotune_recent),
                autotune_count=self.autotune_count,
                status=tuple(self.status),
                compile_waited=self.compile_waited,
                compile_share=self.compile_share,
                version=self.version,
            )

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


def tuning_line(event: Any) -> str:
    """``tuning conv2d (3 of 7 candidates)``: what the Status panel says while a kernel is tuned, so a
    cold run's seconds of autotuning never read as a stalled 100 %; tuning between steps while the op
    runs a picked kernel reads ``tuning matmul 3/7 (background)``, and ``(background, 2 more queued)``
    while other keys wait for their turn."""
    total = getattr(event, "total", 0) or 0
    step = min(getattr(event, "step", 0) or 0, total) if total else 0
    counted = f" ({step} of {total} candidates)" if total else ""
    if getattr(event, "background", False):
        others = max(0, (getattr(event, "pending", 0) or 0) - 1)  # ``pending`` counts this job too
        queued = f", {others} more queued" if others else ""
        return f"tuning {event.kernel}{f' {step}/{total}' if total else ''} (background{queued})"
    verb = "compiling" if getattr(event, "kind", "") == "compile" else "tuning"
    return f"{verb} {event.kernel}{counted}"


def blocking_tuning(active: Any) -> Any:
    """The first event of ``active`` that holds a step up (compiling, or tuning before the op returns);
    None when all of them tune in the background (the steps go on, and so do the ETAs)."""
    return next((e for e in active if not getattr(e, "background", False)), None)


def compile_line(snap: Snapshot) -> str:
    """``Compiles  : 1.2 s waited, 64 % of the last step``: what waiting for kernel compiles has cost
    training ('' before any wait)."""
    if snap.compile_waited <= 0:
        return ""
    share = "" if snap.compile_share is None else f", {100 * snap.compile_share:.0f} % of the last step"
    return f"Compiles  : {snap.compile_waited:.1f} s waited{share}"


def latest(active: Any) -> Any:
    """The most recent of ``active`` (its ``pending`` count is the current one); None when empty."""
    return max(active, key=lambda e: getattr(e, "timestamp", 0.0), default=None)
