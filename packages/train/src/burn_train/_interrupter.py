"""Stop training from code or from the dashboard: a flag the loop polls, never a wait. And a guard
that keeps a second Ctrl-C from cutting the summary and plots short."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TrainingInterrupter:
    """``stop()`` asks the learner to stop after the current batch; ``should_stop()`` polls it.

    A plain attribute (no threading.Event) so it works where threads don't exist; setting a bool is
    atomic under the GIL, so the dashboard thread may call ``stop`` while the loop polls.

    >>> i = TrainingInterrupter(); i.stop("from a test"); i.should_stop(), i.reason
    (True, 'from a test')
    """

    def __init__(self) -> None:
        self._stop = False
        self.reason = ""

    def stop(self, reason: str = "interrupted") -> None:
        """Request a graceful stop; the learner finishes the batch, checkpoints, and returns."""
        if not self._stop:
            self.reason = reason
        self._stop = True

    def should_stop(self) -> bool:
        return self._stop

    def reset(self) -> None:
        self._stop = False
        self.reason = ""

    def __repr__(self) -> str:
        return f"TrainingInterrupter(stopped={self._stop}, reason={self.reason!r})"


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """While the summary and plots are written: a Ctrl-C prints a note and is otherwise ignored; a
    second one interrupts. Only where Python's default handler is installed, on the main thread."""
    try:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            raise ValueError("not the main thread")
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.default_int_handler:
            raise ValueError("a custom SIGINT handler is installed")
    except (ImportError, AttributeError, ValueError):
        yield
        return
    presses = []

    def handler(signum: int, frame: Any) -> None:
        presses.append(signum)
        if len(presses) > 1:
            raise KeyboardInterrupt
        print("\nstill writing the summary and plots; Ctrl-C again to abort", file=sys.stderr, flush=True)

    try:
        signal.signal(signal.SIGINT, handler)
    except (ValueError, OSError):  # e.g. Pyodide: no signals to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
