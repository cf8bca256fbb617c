"""Loading NVML (``pynvml`` from the nvidia-ml-py distribution) and the availability probe.

Import-light: pynvml is imported inside functions, so the plugin entry point loads anywhere.

NVML is started once per process and stays started until the interpreter exits: each user pairs its
own ``init`` with ``shutdown``, and the last ``shutdown`` leaves NVML running for the next user (a
collector per training run, the availability probe). Starting and stopping NVML each cost up to
0.3 s on the H200 machine, and a Learner's end waited for that stop (``benchmarks/bench_digits.py``
measured it in burn's training time); PyTorch's NVML use never stops it either. ``close_session``
stops it (at exit, or in tests).
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

LIBRARY_MISSING = "nvidia-ml-py is not installed (pip install 'burn-metrics-cuda' or 'nvidia-ml-py')"


class CollectorUnavailable(RuntimeError):
    """NVML cannot run here; the message is ``unavailable: <reason>``."""


def load() -> Any:
    """Import and return ``pynvml``, or raise CollectorUnavailable with the reason."""
    try:
        import pynvml
    except ImportError as exc:
        raise CollectorUnavailable(f"unavailable: {LIBRARY_MISSING}") from exc
    return pynvml


class _Session:
    """The process's NVML: the module it was started through, the GPU count and the users now."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.nvml: Any = None
        self.count = 0
        self.users = 0
        self.at_exit = False


_SESSION = _Session()


def _start(nvml: Any) -> int:
    """``nvmlInit`` and the GPU count (NVML stopped again when it sees none)."""
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound / DriverNotLoaded / anything else
        raise CollectorUnavailable(f"unavailable: NVML could not start (no NVIDIA driver?): {exc}") from exc
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except Exception as exc:
        _quiet_shutdown(nvml)
        raise CollectorUnavailable(f"unavailable: NVML could not count GPUs: {exc}") from exc
    if count <= 0:
        _quiet_shutdown(nvml)
        raise CollectorUnavailable("unavailable: NVML sees no NVIDIA GPU")
    return count


def init() -> tuple[Any, int]:
    """Start NVML (once per process; see the module docstring) and take a use of it; return
    ``(pynvml, device_count)``. Raises CollectorUnavailable with the reason."""
    nvml = load()
    s = _SESSION
    with s.lock:
        if s.nvml is not nvml:  # first use, or another pynvml module than the session's (tests)
            count = _start(nvml)
            s.nvml, s.count, s.users = nvml, count, 0
            if not s.at_exit:
                atexit.register(close_session)
                s.at_exit = True
        s.users += 1
        return nvml, s.count


def _quiet_shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:  # shutting down a half-started NVML must not hide the real reason
        pass


def shutdown(nvml: Any) -> None:
    """Give back a use ``init`` took; NVML itself keeps running (``close_session`` stops it)."""
    s = _SESSION
    with s.lock:
        if s.nvml is nvml and s.users:
            s.users -= 1


def close_session() -> None:
    """Stop the process's NVML (at interpreter exit; a later ``init`` starts it again)."""
    s = _SESSION
    with s.lock:
        nvml, s.nvml, s.users = s.nvml, None, 0
    if nvml is not None:
        _quiet_shutdown(nvml)


def is_available() -> tuple[bool, str]:
    """``(True, "")`` when NVML starts and sees a GPU, else ``(False, reason)``; never raises."""
    try:
        nvml, _ = init()
    except CollectorUnavailable as exc:
        return False, str(exc).removeprefix("unavailable: ")
    except Exception as exc:
        return False, f"availability check failed: {type(exc).__name__}: {exc}"
    shutdown(nvml)
    return True, ""


def is_not_supported(nvml: Any, exc: BaseException) -> bool:
    """Whether ``exc`` is NVML's NotSupported (this GPU or driver lacks the query)."""
    cls = getattr(nvml, "NVMLError_NotSupported", None)
    if cls is not None and isinstance(exc, cls):
        return True
    code = getattr(exc, "value", None)
    return code is not None and code == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", 3)
