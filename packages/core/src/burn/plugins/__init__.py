"""burn's plugin system: pluggy markers, hook specs, and the registry of backends, decorators,
collectors, commands and collectives.

A third-party package adds a backend by exposing a module under the ``burn`` entry-point group::

    # pyproject.toml
    [project.entry-points.burn]
    mybackend = "my_package._plugin"

    # my_package/_plugin.py  (import-light: import heavy libraries inside the factory)
    from burn.plugins import BackendSpec, hookimpl

    @hookimpl
    def burn_register_backends(register):
        register(BackendSpec(name="mybackend", factory=make_backend, is_available=probe))

A package publishes ``burn.custom`` ops through ``burn_register_custom_ops(register)`` (``register(op)``
each, ops built with ``register=False``); ``burn.custom.get(name)`` finds them. A backend decorator
(autodiff, fusion) registers a ``DecoratorSpec`` through
``burn_register_decorators(register)``; ``burn.device(name, **{decorator: True})`` then wraps that device's
backend in it. A subcommand of the ``burn`` command line (``burn onnx ...``) is a ``CommandSpec`` registered
through ``burn_register_commands(register)``; it raises ``CommandError`` for a usage error, which ``burn``
prints as one line (exit status 2). Commands (and scripts) parse their arguments with ``OneLineParser`` and
the ``type=`` helpers ``int_at_least``, ``int_between`` and ``positive_float`` (loaded lazily: they import
argparse). A collective for the devices of a backend (NCCL for ``cuda``) is a ``CollectiveSpec``
registered through ``burn_register_collectives(register)``; multi-process training finds it with
``burn.distributed.device_collectives(device)``. burn-core itself imports no other burn package:
everything reaches it through these hooks.

A package that loads its public names on first use (so importing it stays light) sets
``__getattr__ = lazy_attributes(__name__, {name: "._module"}, globals())``.

``BURN_DISABLE_PLUGINS=a,b`` skips entry points (by entry-point or distribution name);
``BURN_DISABLE_PLUGIN_AUTOLOAD=1`` loads only burn-core's built-ins and plugins added with
``register_plugin``. Broken plugins are listed in ``registry().broken`` and by ``burn info``.

This package imports neither numpy nor importlib.metadata at import time, and runs under Pyodide.
"""

from typing import TYPE_CHECKING

from ._discovery import BUILTINS
from ._lazy import lazy_attributes
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
    CollectiveSpec,
    CommandError,
    CommandSpec,
    DecoratorSpec,
    MetricCollectorSpec,
    PluginInfo,
)

if TYPE_CHECKING:  # loaded on first use by __getattr__ below (argparse stays out of `import burn`)
    from ._arguments import OneLineParser, int_at_least, int_between, positive_float

_LAZY = dict.fromkeys(("OneLineParser", "int_at_least", "int_between", "positive_float"), "._arguments")
__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "BUILTINS",
    "ENTRY_POINT_GROUP",
    "PROJECT",
    "BackendSpec",
    "BrokenPlugin",
    "CollectiveSpec",
    "CommandError",
    "CommandSpec",
    "DecoratorSpec",
    "MetricCollectorSpec",
    "OneLineParser",
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Registry",
    "check_pending",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "int_at_least",
    "int_between",
    "lazy_attributes",
    "positive_float",
    "probe",
    "probe_devices",
    "register_plugin",
    "registry",
    "reload",
    "unregister_plugin",
]
