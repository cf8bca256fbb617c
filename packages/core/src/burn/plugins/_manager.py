"""The lazily built plugin manager and the process-wide registry.

Plugins load on first use of ``registry()`` (``burn.device()``, ``burn.backends()``, ``burn info``), one
at a time, each inside try/except: a plugin that fails to import or to register is reported (a
``PluginWarning`` and ``burn info``) and never hides the others. ``reload()`` forgets everything so the
next use loads again (after an install or an env change).
"""

from __future__ import annotations

import threading
import traceback
import warnings
from typing import Any

import pluggy

from .._errors import BurnError
from . import _discovery, _hookspecs
from ._discovery import Candidate
from ._markers import PROJECT
from ._registry import Registry, _Batch
from ._specs import BrokenPlugin, PluginInfo

ENTRY_POINT_GROUP = _discovery.ENTRY_POINT_GROUP


class PluginWarning(UserWarning):
    """A plugin could not be loaded; the others still were."""


class PluginError(BurnError, RuntimeError):
    """A plugin registered from code failed, or the registry was used while plugins were loading."""


_lock = threading.RLock()
_state: tuple[pluggy.PluginManager, Registry] | None = None  # replaced whole, so readers need no lock
_loading = threading.local()
_extra: list[tuple[str, object]] = []  # (name, plugin) added by register_plugin, in order
IN_CODE = "(registered in code)"  # the dist shown for plugins added by register_plugin


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(_hookspecs)
    return pm


def _run_hooks(pm: pluggy.PluginManager, plugin: object, batch: _Batch) -> None:
    """Call this plugin's register hooks only (the others already ran when they loaded)."""
    others = [p for p in pm.get_plugins() if p is not plugin]
    for hook, register in (
        ("burn_register_backends", batch.add_backend),
        ("burn_register_metric_collectors", batch.add_collector),
        ("burn_register_decorators", batch.add_decorator),
        ("burn_register_renderers", batch.add_renderer),
        ("burn_register_commands", batch.add_command),
        ("burn_register_collectives", batch.add_collective),
        ("burn_register_custom_ops", batch.add_custom_op),
    ):
        pm.subset_hook_caller(hook, others)(register=register)


def _load_one(pm: pluggy.PluginManager, reg: Registry, cand: Candidate) -> PluginInfo | BrokenPlugin:
    stage = "import"
    try:
        plugin = cand.load()
        stage = "register"
        if pm.has_plugin(cand.name):
            taken = next((p for p in reg.plugins if p.name == cand.name), None)
            where = f" by {taken.value} ({taken.dist})" if taken else ""
            raise ValueError(f"plugin name {cand.name!r} is already taken{where}")
        if pm.is_registered(plugin):  # two entry points naming one module
            raise ValueError(f"{cand.value} is already registered as plugin {pm.get_name(plugin)!r}")
        try:
            pm.register(plugin, name=cand.name)
            pm.check_pending()  # a hook name no spec declares: a typo, or a hook of a newer burn
            batch = _Batch(reg)
            _run_hooks(pm, plugin, batch)
        except BaseException:
            if pm.is_registered(plugin):
                pm.unregister(plugin)
            raise
        provided = batch.commit()
    except (Exception, SystemExit) as exc:  # a broken plugin is reported, never fatal to the others
        broken = BrokenPlugin(
            cand.name,
            cand.value,
            cand.dist,
            f"{type(exc).__name__}: {exc}",
            cand.version,
            stage,
            traceback.format_exc(),
        )
        reg.broken.append(broken)
        if cand.dist == IN_CODE:  # register_plugin raises instead
            return broken
        warnings.warn(
            f"burn plugin {cand.name!r} ({cand.value}, from {cand.dist}) failed to "
            f"{'import' if stage == 'import' else 'register'}: {broken.error}; the other plugins are loaded",
            PluginWarning,
            stacklevel=5,
        )
        return broken
    info = PluginInfo(cand.name, cand.value, cand.dist, cand.version, provided)
    reg.plugins.append(info)
    return info


def _extra_candidate(name: str, plugin: object) -> Candidate:
    return Candidate(name, getattr(plugin, "__name__", repr(plugin)), IN_CODE, "", lambda: plugin)


def _load() -> tuple[pluggy.PluginManager, Registry]:
    pm = _new_manager()
    autoload = _discovery.autoload_enabled()
    candidates, skipped = _discovery.discover(autoload, _discovery.disabled_names())
    reg = Registry(disabled=skipped, autoload=autoload)
    for cand in candidates + [_extra_candidate(n, p) for n, p in _extra]:
        _load_one(pm, reg, cand)
    return pm, reg


def _ensure() -> tuple[pluggy.PluginManager, Registry]:
    global _state
    state = _state
    if state is not None:
        return state
    with _lock:
        if getattr(_loading, "active", False):
            # a plugin's import or hook called burn.device()/registry(): loading again would recurse
            raise PluginError(
                "the burn plugin registry was used while plugins were loading (from a plugin's import "
                "or register hook); plugins must not call burn.device() or burn.plugins.registry() "
                "at load time"
            )
        if _state is None:
            _loading.active = True
            try:
                _state = _load()
            finally:
                _loading.active = False
        return _state


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide ``pluggy.PluginManager``, built (and entry points loaded) on first use."""
    return _ensure()[0]


def registry() -> Registry:
    """What the plugins registered: backends, metric collectors, renderers, and broken plugins."""
    return _ensure()[1]


def check_pending() -> None:
    """Raise ``pluggy.PluginValidationError`` if a loaded plugin implements a hook no spec declares.

    Loading already runs this per plugin (and reports offenders as broken); call it after adding
    plugins to ``get_plugin_manager()`` by hand.
    """
    get_plugin_manager().check_pending()


def reload() -> None:
    """Forget the loaded plugins; the next use loads entry points again (after installs, env changes)."""
    global _state
    with _lock:
        _state = None


def _plugin_name(plugin: object, name: str | None) -> str:
    if name is not None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"register_plugin: name must be a non-empty string, got {name!r}")
        return name
    return getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{id(plugin):x}"


def register_plugin(plugin: Any, name: str | None = None) -> PluginInfo:
    """Register a plugin object (a module or any object with ``@hookimpl`` methods) from code.

    The registry reloads with the plugin added after the entry points; the plugin stays registered
    across later reloads until ``unregister_plugin``. Unlike an entry point, a plugin registered
    from code that fails raises ``PluginError`` (and is not kept), since its caller is right here.
    Returns what it registered.
    """
    plugin_name = _plugin_name(plugin, name)
    with _lock:
        if any(p is plugin for _, p in _extra):
            raise PluginError(f"register_plugin: {plugin_name!r} is already registered")
        _extra.append((plugin_name, plugin))
        reload()
        reg = registry()
        result = next((b for b in reg.broken if b.name == plugin_name and b.dist == IN_CODE), None)
        if result is not None:
            _extra[:] = [(n, p) for n, p in _extra if p is not plugin]
            reload()
            raise PluginError(f"register_plugin: plugin {plugin_name!r} failed: {result.error}")
        return next(p for p in reg.plugins if p.name == plugin_name and p.dist == IN_CODE)


def unregister_plugin(plugin: Any) -> None:
    """Forget a plugin registered with ``register_plugin`` (the object or its name) and reload."""
    with _lock:
        before = len(_extra)
        _extra[:] = [(n, p) for n, p in _extra if p is not plugin and n != plugin]
        if len(_extra) == before:
            raise PluginError(f"unregister_plugin: {plugin!r} was not registered with register_plugin")
        reload()
