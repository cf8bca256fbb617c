"""The browser sources, one row each: what a source reads, the keys (and units) it reports, and how.

Each source is one collector (``web-timing``, ``web-js-heap``, ...). ``probe(env)`` raises
``SourceUnavailable`` with the reason when the JavaScript API is missing here (``performance.memory``
exists only in Chromium, ``navigator`` only in browsers and Node >= 21, ``navigator.gpu`` only where
WebGPU is enabled); ``make(env)`` builds a reader whose ``read()`` returns ``{key: value}``.

Units: times in ms (``Step Time``) or s (``Page Time``), memory in MB (1e6 bytes), counts as numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._gpu import GPU_KEYS, GpuAdapterReader, probe_gpu
from ._platform import Env, SourceUnavailable, lookup, number

MB = 1e6


class _Timing:
    """The browser's clock: ``Page Time`` is ``performance.now()`` in s (since the page, or the Node
    process, started); ``Step Time`` is the time since the previous read (or ``restart()``) in ms.

    ``Page Time`` comes first, so a collector metric sampled every second (burn_train's automatic
    system metrics) shows a clock, not "a step" of one second. ``WebMetric("step_time")`` reads this
    source on every training step and restarts it when an epoch starts, so each ``Step Time``
    sample is exactly one step.
    """

    def __init__(self, env: Env) -> None:
        self._performance = lookup(env.js, "performance")
        self.last = self._now()

    def _now(self) -> float:
        return number(self._performance.now(), "performance.now()")

    def restart(self) -> None:
        """Start the next ``Step Time`` interval now."""
        self.last = self._now()

    def read(self) -> dict[str, float]:
        now = self._now()
        step, self.last = now - self.last, now
        return {"Page Time": now / 1000.0, "Step Time": step}


def _probe_timing(env: Env) -> None:
    if not callable(lookup(env.js, "performance.now")):
        raise SourceUnavailable("performance.now is not a function here")


# key -> attribute of performance.memory (Chromium only; Firefox, Safari and Node do not have it)
JS_HEAP_FIELDS = {
    "JS Heap Used": "usedJSHeapSize",
    "JS Heap Total": "totalJSHeapSize",
    "JS Heap Limit": "jsHeapSizeLimit",
}


def _read_js_heap(env: Env) -> dict[str, float]:
    memory = lookup(env.js, "performance.memory")
    return {
        key: number(lookup(memory, field), f"performance.memory.{field}") / MB
        for key, field in JS_HEAP_FIELDS.items()
    }


# where the wasm linear memory's size can be read, most direct first
WASM_HEAP_PATHS = ("_module.wasmMemory.buffer.byteLength", "_module.HEAP8.length")


def _read_wasm_heap(env: Env) -> dict[str, float]:
    if env.pyodide_js is None:
        raise SourceUnavailable("the pyodide_js module is not importable (the wasm heap is read from it)")
    reasons = []
    for path in WASM_HEAP_PATHS:
        try:
            return {"Wasm Heap": number(lookup(env.pyodide_js, path), f"pyodide.{path}") / MB}
        except SourceUnavailable as exc:
            reasons.append(f"pyodide.{exc}")
    raise SourceUnavailable("the wasm heap size is not readable: " + "; ".join(reasons))


def _read_cpu_cores(env: Env) -> dict[str, float]:
    cores = number(lookup(env.js, "navigator.hardwareConcurrency"), "navigator.hardwareConcurrency")
    if cores < 1:
        raise SourceUnavailable(f"navigator.hardwareConcurrency is {cores:g}, expected a positive count")
    return {"CPU Cores": cores}


class _Stateless:
    """A reader that calls ``fn(env)`` on every read."""

    def __init__(self, fn: Callable[[Env], dict[str, float]], env: Env) -> None:
        self._fn, self._env = fn, env

    def read(self) -> dict[str, float]:
        return self._fn(self._env)


def _stateless(fn: Callable[[Env], dict[str, float]]) -> Callable[[Env], Any]:
    return lambda env: _Stateless(fn, env)


def _probe_by_reading(fn: Callable[[Env], dict[str, float]]) -> Callable[[Env], None]:
    """A probe for a cheap, side-effect-free source: read it once and let the reason propagate."""

    def probe(env: Env) -> None:
        fn(env)

    return probe


@dataclass(frozen=True)
class Source:
    """One browser source: the collector ``name``, its ``keys`` (key -> unit), and how to read it."""

    name: str
    keys: dict[str, str]
    description: str
    probe: Callable[[Env], None]
    make: Callable[[Env], Any]


SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source(
            "web-timing",
            {"Page Time": "s", "Step Time": "ms"},
            "step timing on the browser's clock (performance.now())",
            _probe_timing,
            _Timing,
        ),
        Source(
            "web-js-heap",
            {key: "MB" for key in JS_HEAP_FIELDS},
            "JavaScript heap (performance.memory, Chromium only)",
            _probe_by_reading(_read_js_heap),
            _stateless(_read_js_heap),
        ),
        Source(
            "web-wasm-heap",
            {"Wasm Heap": "MB"},
            "size of Pyodide's WebAssembly memory",
            _probe_by_reading(_read_wasm_heap),
            _stateless(_read_wasm_heap),
        ),
        Source(
            "web-cpu-cores",
            {"CPU Cores": ""},
            "logical processors (navigator.hardwareConcurrency)",
            _probe_by_reading(_read_cpu_cores),
            _stateless(_read_cpu_cores),
        ),
        Source(
            "web-gpu",
            GPU_KEYS,
            "WebGPU adapter: limits, features, fallback (navigator.gpu.requestAdapter())",
            probe_gpu,
            GpuAdapterReader,
        ),
    )
}

# metric key -> the source that reports it
KEY_SOURCE: dict[str, str] = {key: s.name for s in SOURCES.values() for key in s.keys}
