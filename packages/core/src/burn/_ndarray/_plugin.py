"""Entry point of the numpy backend: registered like any third-party backend (group ``burn``)."""

from ..plugins import BackendSpec, hookimpl


def _make(index: int):
    from ._backend import NdArrayBackend

    return NdArrayBackend()


def _available() -> tuple[bool, str]:
    try:
        import numpy  # noqa: F401
    except ImportError as exc:  # Pyodide without numpy, for instance
        return False, f"numpy is not importable: {exc}"
    return True, ""


@hookimpl
def burn_register_backends(register):
    register(
        BackendSpec(
            name="ndarray",
            factory=_make,
            is_available=_available,
            devices=lambda: ["cpu"],
            aliases=("cpu", "numpy"),
            priority=0,
            description="numpy on the CPU (the embedded default)",
        )
    )
