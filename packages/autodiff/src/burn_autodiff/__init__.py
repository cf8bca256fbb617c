"""burn_autodiff (work in progress)."""

from ._version import __version__

__all__ = ["__version__"]
