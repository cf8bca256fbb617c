"""The WebGPU adapter source: ``navigator.gpu.requestAdapter()`` is a Promise, so it is never awaited.

The reader asks for the adapter once, when it is built, and attaches callbacks; ``read()`` reports NaN
while the Promise is pending (the metric skips NaN samples), then the adapter's numbers. Strings
(vendor, architecture, device, description) go to ``reader.info``, since collectors report floats.
A rejected request, or an adapter that cannot be read, makes ``read()`` raise ``SourceUnavailable``
(the collector turns that into NaN values and a reason).
"""

from __future__ import annotations

import math
from typing import Any

from ._platform import Env, SourceUnavailable, describe, is_missing, lookup, number

MB = 1e6

# key -> (GPUSupportedLimits attribute, divisor)
GPU_LIMITS: dict[str, tuple[str, float]] = {
    "WebGPU Max Buffer": ("maxBufferSize", MB),
    "WebGPU Max Storage Binding": ("maxStorageBufferBindingSize", MB),
    "WebGPU Max Workgroup Invocations": ("maxComputeInvocationsPerWorkgroup", 1.0),
}
GPU_KEYS: dict[str, str] = {
    "WebGPU Adapter": "",  # 1 with an adapter, 0 when requestAdapter() resolved to null
    "WebGPU Fallback": "",  # 1 for a software (fallback) adapter
    "WebGPU Features": "",  # number of optional features the adapter supports
    **{key: ("MB" if div == MB else "") for key, (_, div) in GPU_LIMITS.items()},
}
INFO_FIELDS = ("vendor", "architecture", "device", "description")


def probe_gpu(env: Env) -> None:
    """Raise ``SourceUnavailable`` unless ``navigator.gpu.requestAdapter`` exists (requests nothing)."""
    if not callable(lookup(env.js, "navigator.gpu.requestAdapter")):
        raise SourceUnavailable("navigator.gpu.requestAdapter is not a function here")


def _optional(obj: Any, name: str) -> Any:
    try:
        value = getattr(obj, name)
    except Exception:
        return None
    return None if is_missing(value) else value


def _fallback_flag(adapter: Any, info: Any) -> float:
    # GPUAdapterInfo.isFallbackAdapter is the current spec; GPUAdapter.isFallbackAdapter the older one
    for owner in (info, adapter):
        flag = _optional(owner, "isFallbackAdapter") if owner is not None else None
        if isinstance(flag, bool):
            return 1.0 if flag else 0.0
    return math.nan


def _feature_count(adapter: Any) -> float:
    features = _optional(adapter, "features")
    size = _optional(features, "size") if features is not None else None
    return float(size) if isinstance(size, (int, float)) and not isinstance(size, bool) else math.nan


def adapter_values(adapter: Any) -> tuple[dict[str, float], dict[str, str]]:
    """The numbers and the strings of a resolved ``GPUAdapter`` (``None``/null: no adapter)."""
    values = dict.fromkeys(GPU_KEYS, math.nan)
    if is_missing(adapter):
        values["WebGPU Adapter"] = 0.0
        return values, {}
    info = _optional(adapter, "info")
    strings = {}
    if info is not None:
        for field in INFO_FIELDS:
            text = _optional(info, field)
            if isinstance(text, str):
                strings[field] = text
    values["WebGPU Adapter"] = 1.0
    values["WebGPU Fallback"] = _fallback_flag(adapter, info)
    values["WebGPU Features"] = _feature_count(adapter)
    limits = _optional(adapter, "limits")
    for key, (field, divisor) in GPU_LIMITS.items():
        raw = _optional(limits, field) if limits is not None else None
        if raw is not None:
            values[key] = number(raw, f"adapter.limits.{field}") / divisor
    return values, strings


class GpuAdapterReader:
    """Requests the WebGPU adapter once and reports it when the Promise settles; never waits."""

    def __init__(self, env: Env) -> None:
        self.state = "pending"  # pending | ready | failed
        self.values: dict[str, float] = dict.fromkeys(GPU_KEYS, math.nan)
        self.info: dict[str, str] = {}
        self.error = ""
        gpu = lookup(env.js, "navigator.gpu")
        try:
            promise = gpu.requestAdapter()
            promise.then(self._resolved, self._rejected)
        except Exception as exc:
            raise SourceUnavailable(f"navigator.gpu.requestAdapter() failed: {describe(exc)}") from exc

    # Both callbacks run from the JavaScript event loop: they must never raise (an exception there
    # would become an unhandled Promise rejection), so every failure becomes state "failed".
    def _resolved(self, adapter: Any) -> None:
        try:
            self.values, self.info = adapter_values(adapter)
            self.state = "ready"
        except Exception as exc:
            self.state, self.error = "failed", f"the WebGPU adapter could not be read: {describe(exc)}"

    def _rejected(self, error: Any) -> None:
        self.state, self.error = "failed", f"navigator.gpu.requestAdapter() was rejected: {error}"

    def read(self) -> dict[str, float]:
        if self.state == "failed":
            raise SourceUnavailable(self.error)
        return dict(self.values)
