"""Plain log lines for when stdout is not a terminal (CI logs, pipes, notebooks).

Progress lines are rate-limited (``interval`` seconds, and at most every ``step`` of the epoch);
epoch summaries, autotune start/finish and status lines are always printed.
"""

from __future__ import annotations

import time
from typing import IO, Any

from ._base import Renderer, fmt_duration


class CliRenderer(Renderer):
    """Prints ``[train] epoch 1/5 iter 20 640/1437 (44.5%) Loss 0.35 Accuracy 89.1 % eta 0:12`` lines."""

    name = "cli"

    def __init__(self, stream: IO[str] | None = None, interval: float = 5.0, step: float = 0.25) -> None:
        self.stream = stream
        self.interval = float(interval)
        self.step = float(step)
        self._last_time = -float("inf")
        self._last_fraction: dict[str, float] = {}
        self._announced: set[tuple[str, str]] = set()

    def start(self, state: Any, interrupter: Any) -> None:
        super().start(state, interrupter)
        snap = state.snapshot()
        names = ", ".join(snap.numeric) or "none"
        on = f" on {snap.device}" if snap.device else ""
        self._print(
            f"[start] training{on} for {snap.epoch_total} epoch(s) from epoch {snap.epoch}; metrics: {names}"
        )

    def on_item(self, split: str) -> None:
        snap = self.state.snapshot()
        view = snap.splits[split]
        fraction = view.progress.fraction
        last = self._last_fraction.get(split, -1.0)
        new_epoch = fraction < last
        due = time.monotonic() - self._last_time >= self.interval and fraction - last >= 0.01
        if not (new_epoch or last < 0 or due or fraction - last >= self.step or fraction >= 1.0 > last):
            return
        self._last_fraction[split] = fraction
        self._last_time = time.monotonic()
        metrics = "  ".join(f"{e.name} {e.formatted}" for e in view.entries.values())
        eta = fmt_duration(view.eta_seconds(snap.now))
        self._print(
            f"[{split}] epoch {view.epoch}/{snap.epoch_total} iter {view.iteration} "
            f"{view.progress.items_processed}/{view.progress.items_total} ({100 * fraction:.1f}%)  "
            f"{metrics}  eta {eta}"
        )

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        total = self.state.snapshot().epoch_total
        parts = [f"{name} {self.state.format(name, value)}" for name, value in values.items()]
        self._print(f"[{split}] epoch {epoch}/{total} done  " + "  ".join(parts))
        self._last_fraction[split] = -1.0

    def on_autotune(self, event: Any) -> None:
        key = (event.kernel, event.key)
        if event.done:
            self._announced.discard(key)
            self._print(f"[{event.kind}] {event.describe()}")
        elif key not in self._announced:  # one line when a kernel starts tuning, one when it ends
            self._announced.add(key)
            self._print(f"[{event.kind}] {event.describe()}")

    def on_status(self, text: str) -> None:
        self._print(f"[status] {text}")

    def close(self) -> None:
        if hasattr(self, "state"):  # only when start() ran
            # the end's reason (set from EndEvent), so an interrupted run's log does not read "finished"
            mode = self.state.snapshot().mode
            ended = {"done": "finished", "failed": "failed", "early stopped": "ended by early stopping"}.get(
                mode, f"ended early ({mode})"
            )
            self._print(f"[end] training {ended}")
