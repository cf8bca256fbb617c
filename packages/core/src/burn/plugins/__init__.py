"""burn's plugin system: pluggy markers, hook specs, and the registry of backends, decorators and
collectors.

A third-party package adds a backend by exposing a module under the ``burn`` entry-point group::

    # pyproject.toml
    [project.entry-points.burn]
    mybackend = "my_package._plugin"

    # my_package/_plugin.py  (import-light: import heavy libraries inside the factory)
    from burn.plugins import BackendSpec, hookimpl

    @hookimpl
    def burn_register_backends(register):
        register(BackendSpec(name="mybackend", factory=make_backend, is_available=probe))

A backend decorator (autodiff, fusion) registers a ``DecoratorSpec`` through
``burn_register_decorators(register)``; ``burn.device(name, **{decorator: True})`` then wraps that device's
backend in it. A subcommand of the ``burn`` command line (``burn onnx ...``) is a ``CommandSpec`` registered
through ``burn_register_commands(register)``; it raises ``CommandError`` for a usage error, which ``burn``
prints as one line (exit status 2). burn-core itself imports no other burn package: everything reaches it through these hooks.

``BURN_DISABLE_PLUGINS=a,b`` skips entry points (by entry-point or distribution name);
``BURN_DISABLE_PLUGIN_AUTOLOAD=1`` loads only burn-core's built-ins and plugins added with
``register_plugin``. Broken plugins are listed in ``registry().broken`` and by ``burn info``.

This package imports neither numpy nor importlib.metadata at import time, and runs under Pyodide.
"""

from ._discovery import BUILTINS
from ._manager import (
    ENTRY_POINT_GROUP,
    PluginError,
    PluginWarning,
    check_pending,
    get_plugin_manager,
    register_plugin,
    registry,
    reload,
    unregister_plugin,
)
from ._markers import PROJECT, hookimpl, hookspec
from ._probe import probe, probe_devices
from ._registry import Registry
from ._specs import (
    BackendSpec,
    BrokenPlugin,
    CommandError,
    CommandSpec,
    DecoratorSpec,
    MetricCollectorSpec,
    PluginInfo,
)

__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUP",
    "PROJECT",
    "BackendSpec",
    "BrokenPlugin",
    "CommandError",
    "CommandSpec",
    "DecoratorSpec",
    "MetricCollectorSpec",
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Registry",
    "check_pending",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "probe",
    "probe_devices",
    "register_plugin",
    "registry",
    "reload",
    "unregister_plugin",
]
