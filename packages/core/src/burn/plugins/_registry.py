"""The registry of what plugins provide, and the staging area one plugin registers into.

A plugin's hooks register into a ``_Batch``; the batch is committed only when every hook of that plugin
has returned. A plugin whose second hook raises therefore leaves nothing behind from its first, and a
name that another plugin already took is an error of the later plugin, not a silent override.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._specs import (
    BackendSpec,
    BrokenPlugin,
    CollectiveSpec,
    CommandSpec,
    DecoratorSpec,
    MetricCollectorSpec,
    PluginInfo,
)

# burn.device(spec, autodiff=False, **keywords): the decorator named "autodiff" is switched by the
# parameter of that name; no other decorator name or option may take either name
_DEVICE_PARAMETERS = frozenset({"spec", "autodiff"})


@dataclass
class Registry:
    """What the loaded plugins registered, which plugins loaded, which broke and which were disabled."""

    backends: dict[str, BackendSpec] = field(default_factory=dict)
    collectors: dict[str, MetricCollectorSpec] = field(default_factory=dict)
    renderers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    decorators: dict[str, DecoratorSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    collectives: dict[str, CollectiveSpec] = field(default_factory=dict)
    custom_ops: dict[str, Any] = field(default_factory=dict)  # name -> burn.custom.CustomOp
    plugins: list[PluginInfo] = field(default_factory=list)
    broken: list[BrokenPlugin] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)  # entry points skipped by BURN_DISABLE_PLUGINS
    autoload: bool = True  # False when BURN_DISABLE_PLUGIN_AUTOLOAD was set

    def backend(self, name: str) -> BackendSpec:
        """The backend registered under ``name`` or one of its aliases.

        A KeyError names the registered ones, and for a first-party backend that is missing says why
        (``backend 'wgpu' is not installed: pip install 'burn-core[wgpu]'``).
        """
        spec = self.backends.get(name)
        if spec is not None:
            return spec
        for candidate in self.backends.values():
            if name in candidate.aliases:
                return candidate
        raise self._missing("backend", "backends", name, self.backends)

    def collector(self, name: str) -> MetricCollectorSpec:
        """The metric collector registered under ``name`` (KeyError as for ``backend``)."""
        spec = self.collectors.get(name)
        if spec is None:
            raise self._missing("collector", "collectors", name, self.collectors, "metric collector")
        return spec

    def decorator(self, name: str) -> DecoratorSpec:
        """The backend decorator registered under ``name`` (KeyError as for ``backend``: ``decorator
        'autodiff' is not installed: pip install 'burn-core[autodiff]'``)."""
        spec = self.decorators.get(name)
        if spec is None:
            raise self._missing("decorator", "decorators", name, self.decorators)
        return spec

    def collective(self, name: str) -> CollectiveSpec:
        """The collective registered under ``name`` (KeyError as for ``backend``: ``collective 'nccl' is
        not installed: pip install 'burn-core[cuda]'``)."""
        spec = self.collectives.get(name)
        if spec is None:
            raise self._missing("collective", "collectives", name, self.collectives)
        return spec

    def _missing(self, kind: str, plural: str, name: str, table: dict, noun: str = "") -> KeyError:
        """The KeyError for a name not in ``table``: why (for a first-party name: not installed, with
        the extra to install, or not loaded) and what is registered."""
        from ._known import missing_reason  # only on this error path: keeps `import burn` light

        known = ", ".join(sorted(table)) or "none"
        why = missing_reason(kind, name, self) or f"unknown {noun or kind} {name!r}"
        return KeyError(f"{why}; registered {plural}: {known}")

    def decorator_keywords(self) -> dict[str, str]:
        """Every keyword the registered decorators add to ``burn.device()``: the decorator names
        themselves and their options, each mapped to the decorator it belongs to."""
        words = {}
        for spec in self.decorators.values():
            words[spec.name] = spec.name
            words.update(dict.fromkeys(spec.options, spec.name))
        return words

    def provider(self, kind: str, name: str) -> PluginInfo | None:
        """The plugin that registered ``kind`` (``"backend"``, ``"collector"``, ``"decorator"``,
        ``"renderer"``, ``"command"``, ``"collective"``) ``name``."""
        tag = f"{kind}:{name}"
        for info in self.plugins:
            if tag in info.provides:
                return info
        return None

    def _backend_owner(self, name: str) -> str | None:
        """The backend that already uses ``name`` as its name or alias, if any."""
        for spec in self.backends.values():
            if name == spec.name or name in spec.aliases:
                return spec.name
        return None


class _Batch:
    """What one plugin registers, checked against the registry and committed all at once."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self.backends: dict[str, BackendSpec] = {}
        self.collectors: dict[str, MetricCollectorSpec] = {}
        self.renderers: dict[str, Callable[..., Any]] = {}
        self.decorators: dict[str, DecoratorSpec] = {}
        self.commands: dict[str, CommandSpec] = {}
        self.collectives: dict[str, CollectiveSpec] = {}
        self.custom_ops: dict[str, Any] = {}

    def _taken_by(self, kind: str, name: str) -> str:
        info = self._registry.provider(kind, name)
        return f"plugin {info.name!r} ({info.dist})" if info is not None else "another plugin"

    def add_backend(self, spec: BackendSpec) -> None:
        if not isinstance(spec, BackendSpec):
            raise TypeError(f"burn_register_backends: register() expects a BackendSpec, got {spec!r}")
        for name in (spec.name, *spec.aliases):
            owner = self._registry._backend_owner(name)
            if owner is not None:
                raise ValueError(
                    f"backend name {name!r} is already used by backend {owner!r} of "
                    f"{self._taken_by('backend', owner)}; disable one with BURN_DISABLE_PLUGINS"
                )
            for mine in self.backends.values():
                if name == mine.name or name in mine.aliases:
                    raise ValueError(f"backend name {name!r} registered twice by the same plugin")
        self.backends[spec.name] = spec

    def add_collector(self, spec: MetricCollectorSpec) -> None:
        if not isinstance(spec, MetricCollectorSpec):
            raise TypeError(
                f"burn_register_metric_collectors: register() expects a MetricCollectorSpec, got {spec!r}"
            )
        if spec.name in self._registry.collectors:
            raise ValueError(
                f"metric collector {spec.name!r} is already registered by "
                f"{self._taken_by('collector', spec.name)}"
            )
        if spec.name in self.collectors:
            raise ValueError(f"metric collector {spec.name!r} registered twice by the same plugin")
        self.collectors[spec.name] = spec

    def add_renderer(self, name: str, factory: Callable[..., Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"burn_register_renderers: register(name, factory) needs a name, got {name!r}")
        if not callable(factory):
            raise TypeError(
                f"burn_register_renderers: factory of {name!r} must be callable, got {type(factory).__name__}"
            )
        if name in self._registry.renderers:
            raise ValueError(f"renderer {name!r} is already registered by {self._taken_by('renderer', name)}")
        if name in self.renderers:
            raise ValueError(f"renderer {name!r} registered twice by the same plugin")
        self.renderers[name] = factory

    def add_decorator(self, spec: DecoratorSpec) -> None:
        if not isinstance(spec, DecoratorSpec):
            raise TypeError(f"burn_register_decorators: register() expects a DecoratorSpec, got {spec!r}")
        taken = self._registry.decorator_keywords()
        for word in (spec.name, *spec.options):
            if word in _DEVICE_PARAMETERS and not (word == spec.name == "autodiff"):
                raise ValueError(f"decorator {spec.name!r}: {word!r} is a parameter of burn.device() itself")
            owner = taken.get(word)
            if owner is not None:
                raise ValueError(
                    f"decorator keyword {word!r} is already used by decorator {owner!r} of "
                    f"{self._taken_by('decorator', owner)}; disable one with BURN_DISABLE_PLUGINS"
                )
            if any(word == mine.name or word in mine.options for mine in self.decorators.values()):
                raise ValueError(f"decorator keyword {word!r} registered twice by the same plugin")
        self.decorators[spec.name] = spec

    def add_command(self, spec: CommandSpec) -> None:
        if not isinstance(spec, CommandSpec):
            raise TypeError(f"burn_register_commands: register() expects a CommandSpec, got {spec!r}")
        if spec.name in self._registry.commands:
            raise ValueError(
                f"command {spec.name!r} is already registered by {self._taken_by('command', spec.name)}; "
                "disable one with BURN_DISABLE_PLUGINS"
            )
        if spec.name in self.commands:
            raise ValueError(f"command {spec.name!r} registered twice by the same plugin")
        self.commands[spec.name] = spec

    def add_collective(self, spec: CollectiveSpec) -> None:
        if not isinstance(spec, CollectiveSpec):
            raise TypeError(f"burn_register_collectives: register() expects a CollectiveSpec, got {spec!r}")
        if spec.name in self._registry.collectives:
            raise ValueError(
                f"collective {spec.name!r} is already registered by "
                f"{self._taken_by('collective', spec.name)}; disable one with BURN_DISABLE_PLUGINS"
            )
        if spec.name in self.collectives:
            raise ValueError(f"collective {spec.name!r} registered twice by the same plugin")
        self.collectives[spec.name] = spec

    def add_custom_op(self, op: Any) -> None:
        from ..custom._op import CustomOp  # only when a plugin registers one: keeps `import burn` light

        if not isinstance(op, CustomOp):
            raise TypeError(f"burn_register_custom_ops: register() expects a burn.custom op, got {op!r}")
        if op.name in self._registry.custom_ops:
            raise ValueError(
                f"custom op {op.name!r} is already registered by {self._taken_by('custom_op', op.name)}; "
                "disable one with BURN_DISABLE_PLUGINS"
            )
        if op.name in self.custom_ops:
            raise ValueError(f"custom op {op.name!r} registered twice by the same plugin")
        self.custom_ops[op.name] = op

    def commit(self) -> list[str]:
        """Add everything to the registry; return the ``kind:name`` tags for ``PluginInfo.provides``."""
        self._registry.backends.update(self.backends)
        self._registry.collectors.update(self.collectors)
        self._registry.renderers.update(self.renderers)
        self._registry.decorators.update(self.decorators)
        self._registry.commands.update(self.commands)
        self._registry.collectives.update(self.collectives)
        self._registry.custom_ops.update(self.custom_ops)
        return (
            [f"backend:{n}" for n in self.backends]
            + [f"collector:{n}" for n in self.collectors]
            + [f"decorator:{n}" for n in self.decorators]
            + [f"renderer:{n}" for n in self.renderers]
            + [f"command:{n}" for n in self.commands]
            + [f"collective:{n}" for n in self.collectives]
            + [f"custom_op:{n}" for n in self.custom_ops]
        )
