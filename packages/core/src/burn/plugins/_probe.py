"""Running a plugin's availability check or device listing without letting it crash or hang the caller.

Probes import GPU libraries and talk to drivers, so they fail in every way: they raise, return a bare
bool, return nonsense, or block on a wedged driver. ``probe`` turns all of that into ``(ok, reason)``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_PENDING = object()


def _call(fn: Callable[[], Any], timeout: float | None) -> tuple[Any, BaseException | None, bool]:
    """``(result, exception, timed_out)`` of ``fn()``; with a timeout it runs on a daemon thread."""
    if timeout is None:
        try:
            return fn(), None, False
        except (Exception, SystemExit) as exc:
            return None, exc, False
    box: dict[str, Any] = {"result": _PENDING, "error": None}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # reported to the caller, never raised on the thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="burn-probe", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no threads (Pyodide): run inline
        return _call(fn, None)
    thread.join(timeout)
    if thread.is_alive():
        return None, None, True
    if isinstance(box["error"], KeyboardInterrupt):
        raise box["error"]
    return box["result"], box["error"], False


def probe(check: Callable[[], Any], timeout: float | None = None) -> tuple[bool, str]:
    """Run an ``is_available`` check: ``(True, "")`` or ``(False, reason)``; never raises.

    A check that raises gives ``(False, "availability check failed: <error>")``; one that runs longer
    than ``timeout`` seconds gives ``(False, "availability check timed out ...")`` (it keeps running
    on a daemon thread); a bare bool is accepted.
    """
    result, error, timed_out = _call(check, timeout)
    if timed_out:
        return False, f"availability check timed out after {timeout:g} s"
    if error is not None:
        return False, f"availability check failed: {type(error).__name__}: {error}"
    if isinstance(result, bool):
        return result, "" if result else "unavailable (the check gave no reason)"
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        ok, reason = result
        return ok, "" if ok else str(reason or "unavailable (the check gave no reason)")
    return False, f"availability check returned {result!r}; expected (bool, reason)"


def probe_devices(devices: Callable[[], Any], timeout: float | None = None) -> tuple[list[str], str]:
    """Run a ``devices()`` listing: ``(devices, "")`` or ``([], reason)``; never raises."""
    result, error, timed_out = _call(devices, timeout)
    if timed_out:
        return [], f"device enumeration timed out after {timeout:g} s"
    if error is not None:
        return [], f"device enumeration failed: {type(error).__name__}: {error}"
    if isinstance(result, str) or not hasattr(result, "__iter__"):
        return [], f"device enumeration returned {result!r}; expected a list of device strings"
    try:
        return [str(d) for d in result], ""
    except Exception as exc:  # a lazy iterable that fails half-way
        return [], f"device enumeration failed: {type(exc).__name__}: {exc}"
