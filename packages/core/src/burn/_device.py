"""Devices: ``burn.device("cpu" | "wgpu" | "wgpu:1" | "cuda:0" | "auto", autodiff=False)``.

A device names a backend and an index; its backend instance is built on first use (through the plugin
registry) and cached, so every tensor on one device shares one backend object.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ._errors import BackendUnavailableError, DeviceError
from .plugins import probe, probe_devices, registry


@dataclass(frozen=True)
class BackendInfo:
    """One registered backend: ``burn.backends()`` lists these."""

    name: str
    available: bool
    reason: str
    devices: list[str]
    version: str
    dist: str = ""
    description: str = ""


@dataclass(frozen=True, eq=False)
class Device:
    """A device: a backend name, an index, and whether it sits behind the Autodiff decorator."""

    kind: str
    index: int = 0
    autodiff: bool = False
    options: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def backend(self) -> Any:
        """The backend instance serving this device (built and cached on first use)."""
        key = self._key()
        backend = _backends.get(key)
        if backend is None:
            backend = _build_backend(self)
            _backends[key] = backend
        return backend

    def _key(self) -> tuple:
        return (self.kind, self.index, self.autodiff, self.options)

    @property
    def inner(self) -> Device:
        """The same device without the Autodiff decorator."""
        return Device(self.kind, self.index) if self.autodiff else self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        if self.kind == "ndarray":  # "cpu" for the default device, "cpu:N" for other logical ones
            base = f"cpu:{self.index}" if self.index else "cpu"
        else:
            base = f"{self.kind}:{self.index}"
        return f"{base}+autodiff" if self.autodiff else base

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"


_backends: dict[tuple, Any] = {}
# Built backends outlive plugin reloads: tensors already made keep a working backend, and a device
# keeps one backend instance (two instances of one GPU device would not share buffers).


def _build_backend(dev: Device) -> Any:
    if dev.autodiff:
        try:
            from burn_autodiff import Autodiff
        except ImportError as exc:
            raise BackendUnavailableError(
                f"device {dev}: autodiff=True needs burn-autodiff (pip install 'burn-core[autodiff]')"
            ) from exc
        return Autodiff(dev.inner.backend, device=dev, **dict(dev.options))
    spec = registry().backend(dev.kind)
    ok, reason = probe(spec.is_available)
    if not ok:
        raise BackendUnavailableError(f"device {dev}: backend {spec.name!r} is unavailable: {reason}")
    backend = spec.factory(dev.index)
    backend.device = dev
    return backend


def _parse(spec: str) -> tuple[str, int | None]:
    name, _, idx = spec.partition(":")
    if idx == "":
        return name, None
    if not idx.isdigit():
        raise DeviceError(f"device: expected 'name' or 'name:N' with N a non-negative int, got {spec!r}")
    return name, int(idx)


def device(spec: str | Device | None = None, autodiff: bool = False, **options: Any) -> Device:
    """Pick a device by name.

    ``"cpu"`` is the numpy backend (the default, overridable with ``BURN_DEVICE``); ``"wgpu"``,
    ``"wgpu:1"``, ``"cuda:0"`` name plugin backends; ``"auto"`` takes the available backend with the
    highest priority. ``autodiff=True`` puts the device behind the Autodiff decorator; ``options``
    (``checkpointing="balanced"``) go to the decorator.

    >>> burn.device("cpu", autodiff=True)
    Device('cpu+autodiff')
    """
    if isinstance(spec, Device):
        if not autodiff and not options:
            return spec
        return Device(spec.kind, spec.index, autodiff or spec.autodiff, tuple(sorted(options.items())))
    if spec is None:
        spec = os.environ.get("BURN_DEVICE", "cpu")
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a device name such as 'cpu' or 'cuda:0', got {spec!r}")
    if options and not autodiff:
        raise ValueError(
            f"device: options {sorted(options)} apply to the autodiff decorator; pass autodiff=True"
        )
    name, index = _parse(spec.strip().lower())
    reg = registry()
    if name == "auto":
        name = _best_available(reg)
    try:
        kind = reg.backend(name).name
    except KeyError as exc:
        raise DeviceError(f"device: {exc.args[0]}") from None
    return Device(kind, index or 0, bool(autodiff), tuple(sorted(options.items())))


def _best_available(reg: Any) -> str:
    for spec in sorted(reg.backends.values(), key=lambda s: -s.priority):
        if probe(spec.is_available)[0]:  # a third-party probe that raises means "not this one"
            return spec.name
    raise DeviceError("device('auto'): no backend is available")


def default_device() -> Device:
    return _default.get("device") or device(None)


_default: dict[str, Device] = {}


def set_default_device(dev: str | Device | None) -> None:
    """Set the device tensors are created on when none is given (``None`` restores ``cpu``)."""
    if dev is None:
        _default.pop("device", None)
    else:
        _default["device"] = device(dev)


def _dist_of(spec_name: str, reg: Any) -> tuple[str, str]:
    for info in reg.plugins:
        if f"backend:{spec_name}" in info.provides:
            return info.dist, info.version
    return "", ""


def backends() -> list[BackendInfo]:
    """Every registered backend with its availability, reason and devices."""
    reg = registry()
    out = []
    for spec in reg.backends.values():
        ok, reason = probe(spec.is_available)  # a probe that crashes is a reason, not a crash
        devices: list[str] = []
        if ok:
            devices, failure = probe_devices(spec.devices)
            if failure:
                ok, reason = False, failure
        dist, version = _dist_of(spec.name, reg)
        out.append(BackendInfo(spec.name, ok, reason, devices, version, dist, spec.description))
    return out
