"""The renderer contract: hooks the event processor calls, all optional (numpy-free).

Hooks run on the processor's side (its worker thread, or inline where threads don't exist), never
block the training loop, and read numbers from the shared ``DashboardState``.
"""

from __future__ import annotations

import sys
from typing import IO, Any


def fmt_duration(seconds: float | None) -> str:
    """``1:02:03`` / ``2:03``; ``--:--`` when unknown (None, NaN, infinite); negatives read ``0:00``."""
    if seconds is None or seconds != seconds or seconds in (float("inf"), float("-inf")):
        return "--:--"
    h, rest = divmod(int(round(max(0.0, seconds))), 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Renderer:
    """A renderer that draws nothing ("none"); others override the hooks they need."""

    name = "none"
    stream: IO[str] | None = None  # where ``_print`` writes; None: ``sys.stdout`` at the time

    def _print(self, line: str) -> None:
        """Write one line and flush: the output of renderers that print lines (CLI, web console)."""
        stream = self.stream or sys.stdout
        stream.write(line + "\n")
        stream.flush()

    def start(self, state: Any, interrupter: Any) -> None:
        """Training is about to start: draw the first frame now (before the first batch)."""
        self.state, self.interrupter = state, interrupter

    def on_item(self, split: str) -> None:
        """A batch of ``split`` was processed (its metrics are in the state)."""

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        """``split`` finished ``epoch`` with these epoch values."""

    def on_autotune(self, event: Any) -> None:
        """A kernel tuner or compiler published progress."""

    def on_status(self, text: str) -> None:
        """A status line (checkpoint saved, early stop, interrupted)."""

    def tick(self) -> None:
        """Redraw now if one is due (called from the inline processor where no timer thread exists)."""

    def close(self) -> None:
        """Training ended: draw the last frame and give the terminal back."""


class NoneRenderer(Renderer):
    """Draws nothing."""
