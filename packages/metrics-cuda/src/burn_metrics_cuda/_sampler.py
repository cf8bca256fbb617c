"""``Sampler``: call a sampling function on a background thread every ``interval`` seconds and keep the
latest result, so readers (the training event processor, the dashboard) never wait on a driver call.

Where threads do not exist (Pyodide), ``start()`` leaves the sampler inline: ``latest()`` then samples
on the caller's thread, at most once per interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class Sampler:
    """Background sampling of ``fn() -> dict[str, float]`` every ``interval`` seconds (daemon thread)."""

    def __init__(self, fn: Callable[[], dict[str, float]], interval: float = 1.0) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not interval > 0:
            raise ValueError(f"Sampler: interval must be a positive number of seconds, got {interval!r}")
        self.fn = fn
        self.interval = float(interval)
        self.samples = 0
        self.last_error: str = ""
        self._latest: dict[str, float] | None = None
        self._taken_at = -float("inf")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _take(self) -> None:
        try:
            value = self.fn()
        except Exception as exc:  # a failed sample is recorded; the previous one stays readable
            self.last_error = f"{type(exc).__name__}: {exc}"
            return
        with self._lock:
            self._latest = dict(value)
            self._taken_at = time.monotonic()
            self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def start(self) -> Sampler:
        """Take one sample now, then keep sampling on a daemon thread (inline where threads are absent)."""
        self._take()
        try:
            self._thread = threading.Thread(target=self._run, name="burn-metrics-cuda-sampler", daemon=True)
            self._thread.start()
        except RuntimeError:  # no threads here (wasm): sample lazily in latest()
            self._thread = None
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def latest(self) -> dict[str, float] | None:
        """A copy of the most recent sample (None before the first one succeeded)."""
        if self._thread is None and not self._stop.is_set():
            if time.monotonic() - self._taken_at >= self.interval:
                self._take()
        with self._lock:
            return None if self._latest is None else dict(self._latest)

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the thread and wait for it (idempotent)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
