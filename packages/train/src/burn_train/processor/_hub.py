"""What the event processor does with each event: sync the item, update metrics, record the epoch
values in the event store, feed the dashboard state, the renderer and the metric loggers.

Dispatch is a table from event type to handler. This module imports no numpy; metrics import it
when they update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._events import (
    SPLITS,
    AutotuneEvent,
    EndEpochEvent,
    EndEvent,
    ItemEvent,
    MetricMetadata,
    StartEvent,
    StatusEvent,
)
from ..renderer._base import Renderer
from ..renderer._state import DashboardState


@dataclass
class MetricSlot:
    """A metric registered for one split; ``numeric`` ones are plotted and logged as numbers."""

    metric: Any
    numeric: bool = True


class MetricsHub:
    """Handles events one at a time (the processor guarantees that): see ``handle``."""

    def __init__(
        self,
        metrics: dict[str, list[MetricSlot]],
        renderer: Renderer | None = None,
        loggers: list[Any] | None = None,
        interrupter: Any = None,
        state: DashboardState | None = None,
    ) -> None:
        self.metrics = {split: list(metrics.get(split, [])) for split in SPLITS}
        self.renderer = renderer or Renderer()
        self.loggers = list(loggers or [])
        self.interrupter = interrupter
        self.state = state or DashboardState()
        self.store = self.state.store  # the epoch values: recorded here, shown by the state's snapshots
        for slots in self.metrics.values():
            for slot in slots:
                self.store.higher_is_better[slot.metric.name] = slot.metric.higher_is_better
        self._handlers: dict[type, Callable[[Any], None]] = {
            StartEvent: self._on_start,
            ItemEvent: self._on_item,
            EndEpochEvent: self._on_end_epoch,
            AutotuneEvent: self._on_autotune,
            StatusEvent: self._on_status,
            EndEvent: self._on_end,
        }

    def units(self) -> dict[str, tuple[str, float]]:
        """``{metric name: (unit, scale)}`` of every registered metric (see ``metric.display_unit``)."""
        from ..metric._base import display_unit

        return {
            slot.metric.name: display_unit(slot.metric) for slots in self.metrics.values() for slot in slots
        }

    def handle(self, event: Any) -> None:
        handler = self._handlers.get(type(event))
        if handler is None:
            raise TypeError(f"event processor: unknown event type {type(event).__name__}")
        handler(event)

    # ---------------------------------------------------------------- handlers
    def _on_start(self, event: StartEvent) -> None:
        numeric: list[str] = []
        text: list[str] = []
        formatters: dict[str, Any] = {}
        for slots in self.metrics.values():
            for slot in slots:
                slot.metric.clear()  # a metric reused by a second fit starts from nothing
                prepare = getattr(slot.metric, "prepare", None)
                if prepare is not None:
                    prepare()
                formatters[slot.metric.name] = slot.metric.format_value
                (numeric if slot.numeric else text).append(slot.metric.name)
        units = self.units()
        for logger in self.loggers:
            if hasattr(logger, "set_units"):
                logger.set_units(units)
        self.state.start(
            event.epoch_total,
            event.starting_epoch,
            numeric,
            text,
            formatters,
            event.items_total,
            units,
            device=event.device,
        )
        self.renderer.start(self.state, self.interrupter)

    def _on_item(self, event: ItemEvent) -> None:
        item = event.item.sync() if hasattr(event.item, "sync") else event.item
        metadata = MetricMetadata.of(event.progress, event.lr, event.time)
        entries = []
        for slot in self.metrics[event.split]:
            entry = slot.metric.update(item, metadata)
            if entry.name != slot.metric.name:  # collectors learn their display name on first sample
                self.state.formatters[entry.name] = slot.metric.format_value
                self.state.units.setdefault(entry.name, self.state.unit(slot.metric.name))
                self.store.higher_is_better[entry.name] = slot.metric.higher_is_better
            entries.append(entry if slot.numeric else _as_text(entry))
        self.state.item(event.split, event.progress, entries, event.time)
        for logger in self.loggers:
            logger.log_item(event.split, event.progress, entries)
        self.renderer.on_item(event.split)

    def _on_end_epoch(self, event: EndEpochEvent) -> None:
        values: dict[str, float] = {}
        for slot in self.metrics[event.split]:
            values[slot.metric.name] = value = slot.metric.epoch_value()
            self.store.record(event.split, event.epoch, slot.metric.name, value)
            slot.metric.clear()
        self.state.end_epoch(event.split, time.monotonic())
        for logger in self.loggers:
            logger.end_epoch(event.split, event.epoch, values)
        self.renderer.on_epoch_end(event.split, event.epoch, values)

    def _on_autotune(self, event: AutotuneEvent) -> None:
        self.state.autotune(event)
        self.renderer.on_autotune(event)

    def _on_status(self, event: StatusEvent) -> None:
        self.state.add_status(event.text)
        self.renderer.on_status(event.text)

    def _on_end(self, event: EndEvent) -> None:
        self.state.set_mode("done" if event.reason == "completed" else event.reason)
        for slots in self.metrics.values():
            for slot in slots:
                close = getattr(slot.metric, "close", None)
                if close is not None:
                    close()
        for logger in self.loggers:
            logger.close()


def _as_text(entry: Any) -> Any:
    from dataclasses import replace

    return replace(entry, numeric=False)
