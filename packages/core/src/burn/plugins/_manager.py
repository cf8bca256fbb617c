"""The lazily built plugin manager and the registry of what plugins provide.

Entry points of group ``burn`` are loaded one at a time, each inside try/except: a plugin that fails to
import or to register is reported (a warning and ``burn info``) and never hides the others.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field
from importlib import metadata

import pluggy

from . import _hookspecs
from ._markers import PROJECT
from ._specs import BackendSpec, BrokenPlugin, MetricCollectorSpec, PluginInfo

ENTRY_POINT_GROUP = "burn"


class PluginWarning(UserWarning):
    """A plugin could not be loaded; the others still were."""


@dataclass
class Registry:
    """What the loaded plugins registered."""

    backends: dict[str, BackendSpec] = field(default_factory=dict)
    collectors: dict[str, MetricCollectorSpec] = field(default_factory=dict)
    renderers: dict[str, object] = field(default_factory=dict)
    plugins: list[PluginInfo] = field(default_factory=list)
    broken: list[BrokenPlugin] = field(default_factory=list)

    def backend(self, name: str) -> BackendSpec:
        spec = self.backends.get(name)
        if spec is None:
            for candidate in self.backends.values():
                if name in candidate.aliases:
                    return candidate
            known = ", ".join(sorted(self.backends)) or "none"
            raise KeyError(f"unknown backend {name!r}; registered backends: {known}")
        return spec


_lock = threading.RLock()
_state: dict[str, object] = {}


def _disabled_names() -> set[str]:
    raw = os.environ.get("BURN_DISABLE_PLUGINS", "")
    return {part.strip() for part in raw.split(",") if part.strip()}


def _autoload_disabled() -> bool:
    return os.environ.get("BURN_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower() in {"1", "true", "yes", "on"}


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(_hookspecs)
    return pm


def _collect(pm: pluggy.PluginManager, plugin: object, registry: Registry) -> list[str]:
    """Run one plugin's register hooks and return the names it provided."""
    provided: list[str] = []

    def add_backend(spec: BackendSpec) -> None:
        if not isinstance(spec, BackendSpec):
            raise TypeError(f"register(spec): expected a BackendSpec, got {type(spec).__name__}")
        registry.backends[spec.name] = spec
        provided.append(f"backend:{spec.name}")

    def add_collector(spec: MetricCollectorSpec) -> None:
        if not isinstance(spec, MetricCollectorSpec):
            raise TypeError(f"register(spec): expected a MetricCollectorSpec, got {type(spec).__name__}")
        registry.collectors[spec.name] = spec
        provided.append(f"collector:{spec.name}")

    def add_renderer(name: str, factory: object) -> None:
        registry.renderers[name] = factory
        provided.append(f"renderer:{name}")

    hooks = pm.subset_hook_caller  # call only this plugin's implementations
    others = [p for p in pm.get_plugins() if p is not plugin]
    hooks("burn_register_backends", others)(register=add_backend)
    hooks("burn_register_metric_collectors", others)(register=add_collector)
    hooks("burn_register_renderers", others)(register=add_renderer)
    return provided


def _load(extra_plugins: list[object]) -> tuple[pluggy.PluginManager, Registry]:
    pm = _new_manager()
    registry = Registry()
    disabled = _disabled_names()
    candidates: list[tuple[str, str, str, str, object]] = []  # name, value, dist, version, loader
    if not _autoload_disabled():
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in disabled:
                continue
            dist = ep.dist.metadata["Name"] if ep.dist is not None else "?"
            version = ep.dist.version if ep.dist is not None else "?"
            candidates.append((ep.name, ep.value, dist, version, ep.load))
    for plugin in extra_plugins:
        name = getattr(plugin, "__name__", type(plugin).__name__)
        candidates.append((name, name, "(registered in code)", "", lambda p=plugin: p))
    for name, value, dist, version, loader in candidates:
        try:
            plugin = loader()
            pm.register(plugin, name=name)
            try:
                pm.check_pending()
                provided = _collect(pm, plugin, registry)
            except BaseException:
                pm.unregister(plugin)
                raise
        except Exception as exc:  # a broken plugin is reported, never fatal to the others
            registry.broken.append(BrokenPlugin(name, value, dist, f"{type(exc).__name__}: {exc}"))
            warnings.warn(
                f"burn plugin {name!r} ({value}, from {dist}) failed to load: {exc}",
                PluginWarning,
                stacklevel=3,
            )
            continue
        registry.plugins.append(PluginInfo(name, value, dist, version, provided))
    return pm, registry


_extra: list[object] = []


def _ensure() -> tuple[pluggy.PluginManager, Registry]:
    if "registry" not in _state:
        with _lock:
            if "registry" not in _state:
                _state["pm"], _state["registry"] = _load(list(_extra))
    return _state["pm"], _state["registry"]  # type: ignore[return-value]


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide PluginManager, built (and entry points loaded) on first use."""
    return _ensure()[0]


def registry() -> Registry:
    """What the plugins registered: backends, metric collectors, renderers, and broken plugins."""
    return _ensure()[1]


def check_pending() -> None:
    """Raise if any registered plugin implements a hook that no spec declares (a typo in a hook name)."""
    get_plugin_manager().check_pending()


def register_plugin(plugin: object) -> None:
    """Register a plugin object from code (tests, notebooks) and reload the registry."""
    _extra.append(plugin)
    reload()


def unregister_plugin(plugin: object) -> None:
    """Forget a plugin registered with ``register_plugin`` and reload the registry."""
    _extra[:] = [p for p in _extra if p is not plugin]
    reload()


def reload() -> None:
    """Forget the loaded plugins; the next use loads entry points again (after installs, env changes)."""
    _state.clear()
    for hook in _reload_hooks:
        hook()


_reload_hooks: list = []


def on_reload(hook) -> None:
    """Call ``hook()`` whenever the registry is reloaded (device caches use this)."""
    _reload_hooks.append(hook)
