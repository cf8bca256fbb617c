"""Event processors: a worker thread where threads exist, inline where they don't.

Neither ever makes the training loop wait on a queue (Burn's blocking receive broke metrics in wasm,
tracel-ai/burn#2766): ``submit`` appends to a deque and returns. The threaded processor's worker
polls the deque; ``flush()`` (epoch ends, the end of fit) drains what is left on the calling thread
itself instead of waiting for the worker, so it cannot deadlock even with no worker at all. An error
raised while handling an event is kept and re-raised on the training thread (``raise_pending_error``).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from .._sync import make_lock, threads_available
from ._hub import MetricsHub


class EventProcessor:
    """Common part: the hub, the pending deque, error hand-over, the autotune subscription."""

    mode = "base"

    def __init__(self, hub: MetricsHub) -> None:
        self.hub = hub
        self._pending: deque[Any] = deque()
        self._lock = make_lock()  # one drainer at a time, in submission order; never re-entered
        self._error: BaseException | None = None
        self._unsubscribe: Any = None
        self.handled = 0

    def start(self) -> None:
        """Subscribe to ``burn.autotune`` events (delivered like any other event)."""
        from burn.autotune import subscribe

        self._unsubscribe = subscribe(self.submit)

    def submit(self, event: Any) -> None:
        """Queue ``event``; never waits (the training loop calls ``raise_pending_error`` itself)."""
        self._pending.append(event)
        self._after_submit()

    def _after_submit(self) -> None:
        return None

    def raise_pending_error(self) -> None:
        """Re-raise, on the calling (training) thread, the first error a handler raised."""
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"event processor failed: {type(error).__name__}: {error}") from error

    def _drain(self, blocking: bool = True) -> None:
        """Handle every pending event in order (under the lock: one drainer at a time)."""
        if not self._lock.acquire(blocking):
            return
        try:
            while True:
                try:
                    event = self._pending.popleft()
                except IndexError:
                    return
                try:
                    self.hub.handle(event)
                    self.handled += 1
                except Exception as exc:  # keep going; the training thread re-raises it
                    if self._error is None:
                        self._error = exc
        finally:
            self._lock.release()

    def flush(self, raise_errors: bool = True) -> None:
        """Handle everything submitted so far, on this thread; then re-raise any handler error
        (unless ``raise_errors`` is False: the end of fit, where an error is already propagating)."""
        self._drain()
        if raise_errors:
            self.raise_pending_error()

    def close(self) -> None:
        """Stop listening, handle what is left, stop the worker, close the renderer."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._stop_worker()
        self._drain()
        self.hub.renderer.close()

    def _stop_worker(self) -> None:
        return None


class InlineProcessor(EventProcessor):
    """No threads: events are handled right where they are submitted (never waiting on anything).

    An event submitted while another is being handled (an autotune event published from inside a
    metric's device read) is queued and handled by the outer call, so handlers never re-enter.
    """

    mode = "inline"

    def _after_submit(self) -> None:
        self._drain(blocking=False)
        self.hub.renderer.tick()


class ThreadedProcessor(EventProcessor):
    """A daemon worker thread drains the deque every ``poll`` seconds (no lock on the submit path)."""

    mode = "thread"

    def __init__(self, hub: MetricsHub, poll: float = 0.01) -> None:
        super().__init__(hub)
        self.poll = float(poll)
        self._running = False
        self._thread: Any = None

    def start(self) -> None:
        import threading

        super().start()
        self._running = True
        self._thread = threading.Thread(target=self._work, name="burn-train-events", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while self._running:
            if self._pending:
                self._drain()
            else:
                time.sleep(self.poll)

    def _stop_worker(self) -> None:
        self._running = False
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None


def make_processor(hub: MetricsHub, mode: str = "auto") -> EventProcessor:
    """``"auto"``: a worker thread where one can start, inline otherwise; or force ``"thread"``/``"inline"``."""
    if mode not in ("auto", "thread", "inline"):
        raise ValueError(f"event processor: mode must be 'auto', 'thread' or 'inline', got {mode!r}")
    if mode == "auto":
        mode = "thread" if threads_available() else "inline"
    return ThreadedProcessor(hub) if mode == "thread" else InlineProcessor(hub)
