"""``WebCollector``: browser metrics from one source or from all of them, each failing soft.

A collector has ``name``, ``collect() -> dict[str, float]`` and ``close()`` (burn's collector contract).
A source that cannot be read never raises out of ``collect()``: its keys read NaN (which burn_train's
metrics skip) and the reason is kept in ``collector.unsupported[source]``. The combined ``web``
collector leaves out, from the start, the sources whose API this browser lacks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from ._platform import Env, SourceUnavailable, current_env, describe, platform_reason
from ._sources import SOURCES, Source

ALL = "web"  # the collector that reports every source available here


def _check_sources(sources: Sequence[str]) -> list[Source]:
    if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
        raise TypeError(f"WebCollector: sources must be a list of source names, got {sources!r}")
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"WebCollector: unknown source(s) {unknown}; expected some of {list(SOURCES)}")
    if not sources:
        raise ValueError("WebCollector: sources must name at least one source")
    return [SOURCES[s] for s in sources]


class WebCollector:
    """Reads browser metrics through Pyodide's ``js`` module.

    ``WebCollector()`` is the ``web`` collector: every source this browser has. ``WebCollector
    (["web-timing"])`` reads the sources named (see ``SOURCES``), reporting NaN for one that fails.
    ``env`` overrides where JavaScript is read from (tests); by default it is Pyodide's.

    In a browser only (outside Pyodide there is no ``js`` module), so the doctest run skips it:

    >>> collector = WebCollector(["web-timing", "web-wasm-heap"])   # doctest: +SKIP
    >>> collector.collect()                                          # doctest: +SKIP
    {'Page Time': 12.5, 'Step Time': 3.2, 'Wasm Heap': 20.97}
    """

    def __init__(self, sources: Sequence[str] | None = None, env: Env | None = None) -> None:
        chosen = list(SOURCES.values()) if sources is None else _check_sources(sources)
        self.name = ALL if sources is None else ("+".join(s.name for s in chosen))
        self.unsupported: dict[str, str] = {}
        self._env = env if env is not None else current_env()
        self._readers: dict[str, Any] = {}
        self._sources: dict[str, Source] = {}
        for source in chosen:
            try:
                if sources is None:
                    source.probe(self._env)  # the combined collector skips what this browser lacks
                self._readers[source.name] = source.make(self._env)
            except Exception as exc:
                self.unsupported[source.name] = describe(exc)
                if sources is None:
                    continue
                self._readers[source.name] = None
            self._sources[source.name] = source

    @property
    def keys(self) -> list[str]:
        """The keys ``collect()`` returns, in order."""
        return [key for source in self._sources.values() for key in source.keys]

    @property
    def units(self) -> dict[str, str]:
        """key -> unit (``ms``, ``s``, ``MB`` or ``""`` for counts and flags)."""
        return {key: unit for source in self._sources.values() for key, unit in source.keys.items()}

    @property
    def info(self) -> dict[str, str]:
        """Text the sources found (the WebGPU adapter's vendor, architecture, device, description)."""
        merged: dict[str, str] = {}
        for reader in self._readers.values():
            merged.update(getattr(reader, "info", None) or {})
        return merged

    def collect(self) -> dict[str, float]:
        """One sample of every source: ``{key: value}``; NaN for a source that cannot be read now."""
        out: dict[str, float] = {}
        for name, source in self._sources.items():
            reader = self._readers[name]
            try:
                if reader is None:
                    raise SourceUnavailable(self.unsupported[name])
                values = reader.read()
                out.update({key: float(values.get(key, math.nan)) for key in source.keys})
                self.unsupported.pop(name, None)
            except Exception as exc:  # soft: one failing source never hides the others
                self.unsupported[name] = describe(exc)
                out.update(dict.fromkeys(source.keys, math.nan))
        return out

    def restart(self) -> None:
        """Restart the sources that measure intervals (``Step Time``) from now."""
        for reader in self._readers.values():
            restart = getattr(reader, "restart", None)
            if restart is not None:
                with suppress(Exception):  # the next collect() fails the same way and says why
                    restart()

    def close(self) -> None:
        """Drop the readers (a pending WebGPU request just resolves into nothing)."""
        self._readers = dict.fromkeys(self._readers)
        for name in self._sources:
            self.unsupported.setdefault(name, "the collector is closed")

    def __repr__(self) -> str:
        return f"WebCollector(name={self.name!r}, keys={self.keys})"


def source_available(name: str) -> tuple[bool, str]:
    """``(True, "")`` when source ``name`` can be read here, else ``(False, reason)``; never raises."""
    reason = platform_reason()
    if reason:
        return False, reason
    try:
        SOURCES[name].probe(current_env())
    except Exception as exc:
        return False, describe(exc)
    return True, ""
