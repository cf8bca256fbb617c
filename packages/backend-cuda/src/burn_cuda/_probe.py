"""Is CUDA usable here? Import-light: CuPy is imported inside the probe, never at module import.

The answer is computed once and cached (``burn.backends()`` asks often); ``reset_probe()`` forgets it
(tests, or after a driver install). The probe never raises: every failure becomes a reason string.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from ._kernel_cache import use_burn_kernel_cache

INSTALL_HINT = "cupy is not installed (pip install 'burn-cuda[cuda12]' or 'burn-cuda[cuda13]')"

_lock = threading.Lock()
_cache: dict[str, Any] = {}


def _import_cupy() -> ModuleType:
    import cupy

    return cupy


def _probe_uncached() -> tuple[bool, str, int]:
    use_burn_kernel_cache()  # before CuPy compiles anything (every path to CuPy comes through here)
    try:
        cupy = _import_cupy()
    except ImportError:
        return False, INSTALL_HINT, 0
    except Exception as exc:  # a broken wheel (missing CUDA libraries) is a reason, not a crash
        return False, f"cupy failed to import: {type(exc).__name__}: {exc}", 0
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDARuntimeError: no driver, insufficient driver, no device
        return False, f"no CUDA device/driver: {exc}", 0
    if count <= 0:
        return False, "no CUDA device/driver: the CUDA driver reports 0 devices", 0
    return True, "", count


def probe() -> tuple[bool, str, int]:
    """``(available, reason, device_count)``; cached after the first call."""
    result = _cache.get("result")
    if result is None:
        with _lock:
            result = _cache.get("result")
            if result is None:
                result = _probe_uncached()
                _cache["result"] = result
    return result


def reset_probe() -> None:
    """Forget the cached answer so the next ``probe()`` looks again."""
    _cache.clear()


def is_available() -> tuple[bool, str]:
    """``(True, "")`` when CuPy imports and sees at least one GPU, else ``(False, reason)``."""
    ok, reason, _ = probe()
    return ok, reason


def device_count() -> int:
    """Number of visible CUDA devices (0 when unavailable)."""
    return probe()[2]


def devices() -> list[str]:
    """Device names ``["cuda:0", "cuda:1", ...]`` (empty when unavailable)."""
    return [f"cuda:{i}" for i in range(device_count())]


def require(what: str) -> ModuleType:
    """Import and return cupy, or raise ``BackendUnavailableError`` naming ``what`` and the reason."""
    ok, reason, _ = probe()
    if not ok:
        from burn import BackendUnavailableError

        raise BackendUnavailableError(f"{what}: the CUDA backend is unavailable: {reason}")
    return _import_cupy()
