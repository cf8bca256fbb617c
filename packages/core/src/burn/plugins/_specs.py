"""Import-light descriptions of what plugins provide.

A spec names a thing and says how to build it, but building (and importing its heavy libraries) waits
until it is used. ``is_available()`` answers ``(True, "")`` or ``(False, reason)`` at run time, so a
plugin can be installed everywhere and picked only where it can run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _always() -> tuple[bool, str]:
    return True, ""


def _no_devices() -> list[str]:
    return []


@dataclass(frozen=True)
class BackendSpec:
    """A tensor backend a plugin offers.

    ``factory(index)`` builds a ``burn.backend.Backend`` for device ``index`` (called lazily, once per
    device). ``devices()`` lists device strings such as ``["wgpu:0"]`` and may import the backend's
    library; it is only called when the backend is available. ``priority`` orders backends for
    ``burn.device("auto")`` (higher wins).
    """

    name: str
    factory: Callable[[int], Any]
    is_available: Callable[[], tuple[bool, str]] = _always
    devices: Callable[[], list[str]] = _no_devices
    aliases: tuple[str, ...] = ()
    priority: int = 0
    description: str = ""


@dataclass(frozen=True)
class MetricCollectorSpec:
    """A system metric collector a plugin offers.

    ``factory()`` builds a collector: an object with ``name``, ``collect() -> dict[str, float]`` and
    optionally ``close()``. ``group`` names the extra that installs it (``metrics-basic``,
    ``metrics-cuda``, ``metrics-wasm``).
    """

    name: str
    factory: Callable[[], Any]
    is_available: Callable[[], tuple[bool, str]] = _always
    group: str = ""
    description: str = ""


@dataclass
class BrokenPlugin:
    """An entry point that failed to load or register, with the error that stopped it."""

    name: str
    value: str
    dist: str
    error: str


@dataclass
class PluginInfo:
    """A plugin that loaded, with the distribution that provides it."""

    name: str
    value: str
    dist: str
    version: str
    provides: list[str] = field(default_factory=list)
