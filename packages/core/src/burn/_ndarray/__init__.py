"""The numpy backend: name ``ndarray``, device ``cpu``; the reference every other backend is checked
against.

``NdArrayBackend`` loads on first access, so the entry module ``burn._ndarray._plugin`` imports where
numpy does not exist (Pyodide without numpy): the backend is then listed as unavailable, not broken.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._backend import NdArrayBackend


def __getattr__(name: str) -> object:
    if name == "NdArrayBackend":
        from ._backend import NdArrayBackend

        return NdArrayBackend
    raise AttributeError(f"module 'burn._ndarray' has no attribute {name!r}")


__all__ = ["NdArrayBackend"]
