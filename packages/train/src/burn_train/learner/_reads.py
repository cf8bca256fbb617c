"""Items of device backends read to the host in batches: one device sync for several steps.

Reading a step's item (loss, outputs, targets) is a device sync. Done every step, it stalls a GPU
twice per step: the host waits for the step to finish, then the device idles while Python dispatches
the next one. ``BatchedReads`` keeps the items of devices whose reads stay on the training thread (see
``learner._strategy.sync_on_train_thread``) and reads them all with one ``burn.Transaction`` when

* ``interval`` seconds have passed since the last read (the dashboard still moves several times a
  second; ``interval=0`` reads every item at once, as before),
* ``max_items`` items wait, or they hold ``max_bytes`` of device memory (large outputs are read
  sooner rather than piling up on the device),
* the learner needs the values: before an epoch ends, before a status line, at the end of fit.

The first ``eager`` items of each split in each epoch are read at once: the first numbers show
without delay, and a fusion backend plans streams of one step that later steps replay (it cuts a
stream that reads nothing where a planned one ended, see ``burn.fusion``).

Events keep their order and the time stamped when their step ended, so every metric sees the same
items in the same order as with a read per step, and ends each epoch with the same value; only the
moment the processor sees them moves. Items that need no read (host backends, whose items the
processor reads) still queue behind waiting ones, so the processor's order never changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .._events import ItemEvent
from .._output import sync_many

DEFAULT_INTERVAL = 0.1  # seconds between reads: the dashboard redraws ~10 times a second anyway


class BatchedReads:
    """Queues ``ItemEvent``s whose items need a device read and submits them after one read."""

    def __init__(
        self,
        submit: Callable[[Any], None],
        interval: float = DEFAULT_INTERVAL,
        max_items: int = 64,
        max_bytes: int = 64 << 20,
        eager: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.submit = submit
        self.interval = float(interval)
        self.max_items = int(max_items)
        self.max_bytes = int(max_bytes)
        self.eager = int(eager)
        self.clock = clock
        self.reads = 0  # device reads done (Transactions), for tests and benchmarks
        self._events: list[tuple[ItemEvent, bool]] = []  # (event, its item needs a read)
        self._bytes = 0
        self._last_read = clock()
        self._seen: dict[tuple[str, int], int] = {}  # (split, epoch) -> items added

    def add(self, event: ItemEvent, needs_read: bool) -> None:
        """Queue ``event`` (its item is read first when ``needs_read``), or submit it now."""
        key = (event.split, event.progress.epoch)
        seen = self._seen[key] = self._seen.get(key, 0) + 1
        if not needs_read and not self._events:
            self.submit(event)
            return
        self._events.append((event, needs_read))
        if needs_read:
            size = getattr(event.item, "device_bytes", None)
            self._bytes += int(size()) if size is not None else 0
        if (
            self.interval <= 0
            or seen <= self.eager
            or len(self._events) >= self.max_items
            or self._bytes >= self.max_bytes
            or self.clock() - self._last_read >= self.interval
        ):
            self.flush()

    def flush(self) -> None:
        """Read every queued item (one Transaction) and submit the events in order."""
        if not self._events:
            return
        events, self._events, self._bytes = self._events, [], 0
        waiting = [i for i, (_, needs) in enumerate(events) if needs]
        if waiting:
            items = sync_many([events[i][0].item for i in waiting])
            for i, item in zip(waiting, items):
                events[i][0].item = item
            self.reads += 1
        self._last_read = self.clock()
        for event, _ in events:
            self.submit(event)

    def drop(self) -> int:
        """Forget the queued events (training failed mid-step: their items may never be readable)."""
        n = len(self._events)
        self._events, self._bytes = [], 0
        return n

    def __len__(self) -> int:
        return len(self._events)
