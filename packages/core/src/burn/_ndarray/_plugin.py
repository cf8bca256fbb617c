"""Entry point of the numpy backend: registered like any third-party backend (group ``burn``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..plugins import BackendSpec, hookimpl

if TYPE_CHECKING:
    from ._backend import NdArrayBackend


def _make(index: int) -> NdArrayBackend:
    from ._backend import NdArrayBackend

    return NdArrayBackend()


def _available() -> tuple[bool, str]:
    try:
        import numpy  # noqa: F401
    except ImportError as exc:  # Pyodide without numpy, for instance
        return False, f"numpy is not importable: {exc}"
    return True, ""


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
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
