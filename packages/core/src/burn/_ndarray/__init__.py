"""The numpy backend: name ``ndarray``, device ``cpu``; the reference every other backend is checked
against.

``NdArrayBackend`` loads on first access, so the entry module ``burn._ndarray._plugin`` imports where
numpy does not exist (Pyodide without numpy): the backend is then listed as unavailable, not broken.
"""

from typing import TYPE_CHECKING

from ..plugins._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._backend import NdArrayBackend


__getattr__ = lazy_attributes(__name__, {"NdArrayBackend": "._backend"}, globals())


__all__ = ["NdArrayBackend"]
