"""The entry point (``[project.entry-points.burn] trace = "burn_plugin_template._plugin"``).

burn imports this module when it first needs its plugin registry, so it must stay import-light: no
numpy, no GPU library here. Heavy imports go inside the factory and the probes.
"""

from __future__ import annotations

from burn.plugins import BackendSpec, hookimpl


def _make(index: int):
    """Build the backend for device ``trace:<index>`` (called once per device, on first use)."""
    from ._backend import TraceBackend

    return TraceBackend()


def _available() -> tuple[bool, str]:
    """Can the backend run here? ``(False, reason)`` is shown by ``burn info``; never raise."""
    try:
        import numpy  # noqa: F401
    except ImportError as exc:
        return False, f"numpy is not importable: {exc}"
    return True, ""


@hookimpl
def burn_register_backends(register):
    """burn calls this once per process; register one BackendSpec per backend this package offers."""
    register(
        BackendSpec(
            name="trace",
            factory=_make,
            is_available=_available,
            devices=lambda: ["trace:0"],
            aliases=("tracer",),
            priority=-10,  # never picked by burn.device("auto") over a real backend
            description="numpy on the CPU, counting every op it runs (burn-plugin-template)",
        )
    )
