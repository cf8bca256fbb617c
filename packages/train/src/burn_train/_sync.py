"""Threads where they exist, nothing where they don't.

Under Pyodide (``sys.platform == "emscripten"``) the ``threading`` module imports but a thread cannot
start. Everything in burn_train that would use a thread asks ``threads_available()`` first and falls
back to doing the work inline; locks degrade to no-ops when ``threading`` itself is missing.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_cache: dict[str, bool] = {}

# Platforms where starting a thread is known to fail (so we do not even try).
_THREADLESS_PLATFORMS = ("emscripten", "wasi")


def _probe() -> bool:
    if sys.platform in _THREADLESS_PLATFORMS:
        return False
    if os.environ.get("BURN_TRAIN_THREADS", "").strip().lower() in {"0", "off", "false", "no"}:
        return False
    try:
        import threading
    except ImportError:
        return False
    try:  # starting a thread is the only honest test: some builds import threading but cannot start one
        probe = threading.Thread(target=lambda: None, name="burn-train-probe", daemon=True)
        probe.start()
        probe.join(1.0)
    except Exception:
        return False
    return True


def threads_available() -> bool:
    """True when a worker thread can be started here (cached after the first probe)."""
    if "threads" not in _cache:
        _cache["threads"] = _probe()
    return _cache["threads"]


def reset_thread_probe() -> None:
    """Forget the cached answer (tests that disable threads call this)."""
    _cache.clear()


class _NullLock:
    """A lock for a single-threaded world: entering never waits."""

    def __enter__(self) -> _NullLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        return None


def make_lock() -> Any:
    """A ``threading.Lock`` where threading imports, else a no-op lock."""
    try:
        import threading
    except ImportError:
        return _NullLock()
    return threading.Lock()
