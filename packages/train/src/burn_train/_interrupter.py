"""Stop training from code or from the dashboard: a flag the loop polls, never a wait."""

from __future__ import annotations


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
