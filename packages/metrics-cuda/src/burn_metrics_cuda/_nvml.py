"""Loading NVML (``pynvml`` from the nvidia-ml-py distribution) and the availability probe.

Import-light: pynvml is imported inside functions, so the plugin entry point loads anywhere. NVML's
init/shutdown are reference counted by the driver, so each user pairs its own ``init`` with ``shutdown``.
"""

from __future__ import annotations

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


def init() -> tuple[Any, int]:
    """Start NVML; return ``(pynvml, device_count)``. Raises CollectorUnavailable with the reason."""
    nvml = load()
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
    return nvml, count


def _quiet_shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:  # shutting down a half-started NVML must not hide the real reason
        pass


def shutdown(nvml: Any) -> None:
    _quiet_shutdown(nvml)


def is_available() -> tuple[bool, str]:
    """``(True, "")`` when NVML starts and sees a GPU, else ``(False, reason)``; never raises."""
    try:
        nvml, _ = init()
    except CollectorUnavailable as exc:
        return False, str(exc).removeprefix("unavailable: ")
    except Exception as exc:
        return False, f"availability check failed: {type(exc).__name__}: {exc}"
    _quiet_shutdown(nvml)
    return True, ""


def is_not_supported(nvml: Any, exc: BaseException) -> bool:
    """Whether ``exc`` is NVML's NotSupported (this GPU or driver lacks the query)."""
    cls = getattr(nvml, "NVMLError_NotSupported", None)
    if cls is not None and isinstance(exc, cls):
        return True
    code = getattr(exc, "value", None)
    return code is not None and code == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", 3)
