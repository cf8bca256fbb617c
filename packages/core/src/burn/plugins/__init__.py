"""burn's plugin system: pluggy markers, hook specs, and the registry of backends and collectors.

A third-party package adds a backend by exposing a module under the ``burn`` entry-point group::

    # pyproject.toml
    [project.entry-points.burn]
    mybackend = "my_package._plugin"

    # my_package/_plugin.py  (import-light: import heavy libraries inside the factory)
    from burn.plugins import BackendSpec, hookimpl

    @hookimpl
    def burn_register_backends(register):
        register(BackendSpec(name="mybackend", factory=make_backend, is_available=probe))

This module imports neither numpy nor threads at import time, so it runs under Pyodide as it is.
"""

from ._manager import (
    ENTRY_POINT_GROUP,
    PluginWarning,
    Registry,
    check_pending,
    get_plugin_manager,
    register_plugin,
    registry,
    reload,
    unregister_plugin,
)
from ._markers import PROJECT, hookimpl, hookspec
from ._specs import BackendSpec, BrokenPlugin, MetricCollectorSpec, PluginInfo

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROJECT",
    "BackendSpec",
    "BrokenPlugin",
    "MetricCollectorSpec",
    "PluginInfo",
    "PluginWarning",
    "Registry",
    "check_pending",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "register_plugin",
    "registry",
    "reload",
    "unregister_plugin",
]
