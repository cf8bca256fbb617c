"""burn-py's own optional distributions: what each provides and the burn-core extra that installs it.

A first-party name that is missing from the registry (``burn.device("wgpu")`` in a bare ``pip install
burn-core``) is then reported with the command that installs it, or with why its installed plugin did not
load, instead of as an unknown name. Third-party plugins are found through their entry points only and
never listed here, and the installed packages ``burn info`` lists come from the entry points' distributions,
not from this table: it is only for hints about what is *not* installed. Keep this the one table of
first-party names (a test checks it against the plugins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._discovery import normalize

if TYPE_CHECKING:
    from ._registry import Registry


@dataclass(frozen=True)
class KnownDist:
    """A first-party distribution: its import module, its burn-core extra, and the ``kind:name`` tags it
    provides (as in ``PluginInfo.provides``)."""

    dist: str
    module: str
    extra: str
    provides: tuple[str, ...]

    @property
    def install(self) -> str:
        return f"pip install 'burn-core[{self.extra}]'"


WEB_SOURCES = ("web-timing", "web-js-heap", "web-wasm-heap", "web-cpu-cores", "web-gpu")

KNOWN: tuple[KnownDist, ...] = (
    KnownDist("burn-autodiff", "burn_autodiff", "autodiff", ("decorator:autodiff",)),
    KnownDist("burn-wgpu", "burn_wgpu", "wgpu", ("backend:wgpu",)),
    KnownDist("burn-cuda", "burn_cuda", "cuda", ("backend:cuda", "collective:nccl")),
    KnownDist(
        "burn-train", "burn_train", "train", ("collector:cpu-use", "collector:cpu-memory", "command:launch")
    ),
    KnownDist("burn-metrics-cuda", "burn_metrics_cuda", "metrics-cuda", ("collector:cuda",)),
    KnownDist(
        "burn-metrics-web",
        "burn_metrics_web",
        "metrics-web",
        (*(f"collector:{name}" for name in WEB_SOURCES), "renderer:web"),
    ),
    KnownDist("burn-onnx", "burn_onnx", "onnx", ("command:onnx", "command:web")),
    KnownDist("burn-remote", "burn_remote", "remote", ("backend:remote", "command:remote")),
)


def known(kind: str, name: str) -> KnownDist | None:
    """The first-party distribution that provides ``kind`` ``name``, if any."""
    tag = f"{kind}:{name}"
    return next((k for k in KNOWN if tag in k.provides), None)


def _entry_point_names(dist: str) -> list[str] | None:
    """The ``burn`` entry points of an installed ``dist``; None when it has no installed metadata."""
    from importlib import metadata

    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return None
    return [ep.name for ep in found.entry_points if ep.group == "burn"]


def missing_reason(kind: str, name: str, reg: Registry) -> str | None:
    """Why the first-party ``kind`` ``name`` is not in ``reg``, with what to do; None for other names.

    In a bare ``pip install burn-core``, ``("backend", "wgpu")`` gives ``backend 'wgpu' is not installed:
    pip install 'burn-core[wgpu]'``.
    """
    dist = known(kind, name)
    if dist is None:
        return None
    entry_points = _entry_point_names(dist.dist)
    if entry_points is None:
        return f"{kind} {name!r} is not installed: {dist.install}"
    what = f"{kind} {name!r} (from {dist.dist})"
    broken = next((b for b in reg.broken if normalize(b.dist) == normalize(dist.dist)), None)
    if broken is not None:
        return f"{what} failed to load: {broken.error}; `burn info -v` shows the traceback"
    if set(entry_points) & set(reg.disabled):  # skipping a distribution lists its entry points
        return f"{what} is disabled by BURN_DISABLE_PLUGINS"
    if not reg.autoload:
        return f"{what} is not loaded: BURN_DISABLE_PLUGIN_AUTOLOAD is set"
    return None  # installed and loaded, yet it did not register this name (a version mismatch)


def _registered(reg: Registry, kind: str) -> dict[str, Any] | None:
    tables: dict[str, dict[str, Any]] = {
        "backend": reg.backends,
        "collector": reg.collectors,
        "decorator": reg.decorators,
        "command": reg.commands,
        "collective": reg.collectives,
    }
    return tables.get(kind)


def missing(reg: Registry) -> list[dict[str, Any]]:
    """Every first-party backend, decorator, collector, command and collective that ``reg`` lacks, with why (not installed:
    the command that installs it; disabled, broken, or autoload off)."""
    rows = []
    for dist in KNOWN:
        for tag in dist.provides:
            kind, _, name = tag.partition(":")
            registered = _registered(reg, kind)
            if registered is None or name in registered:
                continue
            reason = missing_reason(kind, name, reg)
            if reason is not None:
                installed = _entry_point_names(dist.dist) is not None
                rows.append(
                    {
                        "kind": kind,
                        "name": name,
                        "dist": dist.dist,
                        "installed": installed,
                        "install": "" if installed else dist.install,
                        "reason": reason,
                    }
                )
    return rows
