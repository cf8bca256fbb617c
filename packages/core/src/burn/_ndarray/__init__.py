"""The numpy backend: name ``ndarray``, device ``cpu``; the reference every other backend is checked
against."""

from ._backend import NdArrayBackend

__all__ = ["NdArrayBackend"]
