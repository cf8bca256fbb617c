"""burn_plugin_template: the ``trace`` backend, a numpy backend that counts the ops it runs.

Use it through burn: ``burn.device("trace")``. Importing this package does not import numpy; the
backend class loads when the first ``trace`` device is built.
"""

from ._version import __version__

__all__ = ["TraceBackend", "__version__"]


def __getattr__(name: str):
    if name == "TraceBackend":  # lazy: numpy loads with the backend, not with the package
        from ._backend import TraceBackend

        return TraceBackend
    raise AttributeError(f"module 'burn_plugin_template' has no attribute {name!r}")
