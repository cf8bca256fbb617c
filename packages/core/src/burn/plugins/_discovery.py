"""Finding plugins: entry points of group ``burn``, burn-core's built-ins, and the two env switches.

``BURN_DISABLE_PLUGINS=a,b`` skips the entry points named ``a`` and ``b`` (an entry point's name, or a
distribution name to skip all of that distribution's entry points). ``BURN_DISABLE_PLUGIN_AUTOLOAD=1``
loads no entry point at all; burn-core's own built-ins (the numpy backend) still load, so ``burn.device
("cpu")`` keeps working, and ``register_plugin()`` adds the rest from code.

The built-ins are also the fallback when burn-core runs without installed metadata (a source checkout on
``PYTHONPATH``, Pyodide with copied files): they are imported by module name instead.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "burn"
CORE_DIST = "burn-core"

# entry-point name -> module of burn-core's own plugins; kept equal to [project.entry-points.burn] in
# packages/core/pyproject.toml (a test checks it)
BUILTINS: dict[str, str] = {
    "ndarray": "burn._ndarray._plugin",
    "autotune": "burn.autotune._commands",
    "fusion": "burn.fusion._plugin",
}

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class Candidate:
    """A plugin to load: its name, what it points at, who ships it, and how to import it."""

    name: str
    value: str
    dist: str
    version: str
    load: Callable[[], object]


def normalize(name: str) -> str:
    """A distribution or plugin name in PEP 503 form, so ``Burn_Core`` matches ``burn-core``."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def disabled_names() -> frozenset[str]:
    """The names in ``BURN_DISABLE_PLUGINS`` (comma separated), normalised."""
    raw = os.environ.get("BURN_DISABLE_PLUGINS", "")
    return frozenset(normalize(part.strip()) for part in raw.split(",") if part.strip())


def autoload_enabled() -> bool:
    """False when ``BURN_DISABLE_PLUGIN_AUTOLOAD`` is ``1``/``true``/``yes``/``on``."""
    return os.environ.get("BURN_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower() not in _TRUE


def _entry_points() -> Iterator[EntryPoint]:
    # importlib.metadata costs ~25 ms to import; it loads on first registry use, not on `import burn`
    from importlib import metadata

    return iter(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _is_disabled(disabled: frozenset[str], name: str, dist: str) -> bool:
    return normalize(name) in disabled or normalize(dist) in disabled


def _core_version() -> str:
    from .._version import __version__

    return __version__


@dataclass(frozen=True)
class PluginDist:
    """An installed distribution that ships ``burn`` entry points: its name, version and import module."""

    name: str
    version: str
    module: str


def distributions() -> list[PluginDist]:
    """Every installed distribution with an entry point in group ``burn``, burn-core first, then by name.

    burn's own packages and third parties' are found the same way, whether or not ``BURN_DISABLE_PLUGINS``
    skips their plugins (disabled is not uninstalled). ``module`` is the top-level module of the first
    entry point (``burn_wgpu`` for ``burn_wgpu._plugin``).
    """
    found: dict[str, PluginDist] = {}
    for ep in _entry_points():
        dist = getattr(ep, "dist", None)
        if dist is None or normalize(dist.name) in found:
            continue
        module = ep.value.partition(":")[0].strip().partition(".")[0]
        found[normalize(dist.name)] = PluginDist(dist.name, dist.version, module)
    return [found[key] for key in sorted(found, key=lambda key: (key != CORE_DIST, key))]


def discover(autoload: bool, disabled: frozenset[str]) -> tuple[list[Candidate], list[str]]:
    """The plugins to load, in order, and the names that ``BURN_DISABLE_PLUGINS`` skipped.

    Entry points come first (sorted by distribution then name so the order does not depend on
    ``sys.path`` order), then any built-in that no entry point already provided.
    """
    candidates: list[Candidate] = []
    skipped: list[str] = []
    if autoload:
        found = []
        for ep in _entry_points():
            d = getattr(ep, "dist", None)
            dist = d.name if d is not None else "?"
            version = d.version if d is not None else ""
            found.append(Candidate(ep.name, ep.value, dist, version, ep.load))
        for cand in sorted(found, key=lambda c: (normalize(c.dist) != CORE_DIST, normalize(c.dist), c.name)):
            if _is_disabled(disabled, cand.name, cand.dist):
                skipped.append(cand.name)
            else:
                candidates.append(cand)
    seen = {c.value for c in candidates}
    for name, module in BUILTINS.items():
        if module in seen or name in skipped:
            continue
        if _is_disabled(disabled, name, CORE_DIST):
            skipped.append(name)
            continue
        candidates.append(
            Candidate(name, module, CORE_DIST, _core_version(), functools.partial(import_module, module))
        )
    return candidates, skipped
