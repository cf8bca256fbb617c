"""Devices: ``burn.device("cpu" | "wgpu" | "wgpu:1" | "cuda:0" | "auto", autodiff=False, **decorators)``.

A device names a backend, an index and the backend decorators it sits behind; its backend instance is
built on first use (through the plugin registry) and cached, so every tensor on one device shares one
backend object. Decorators (``autodiff``, and any a plugin registers with ``burn_register_decorators``)
are switched on by keyword and take their own keyword options (``checkpointing="balanced"``); burn-core
imports none of them, it finds them in the registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._errors import BackendUnavailableError, DeviceError
from .plugins import probe, probe_devices, registry

if TYPE_CHECKING:
    from .backend import Backend
    from .plugins import DecoratorSpec, Registry

AUTODIFF = "autodiff"  # the decorator behind ``autodiff=True``; it always wraps outermost


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
    """A device: a backend name, an index, and the backend decorators it sits behind.

    ``autodiff`` says whether the Autodiff decorator wraps it; ``decorators`` names the other decorators
    (innermost first), and ``options`` holds the decorators' keyword options, sorted by name.
    ``backend_options`` holds the backend's own keyword options (``url=`` of ``remote``), sorted by name.
    """

    kind: str
    index: int = 0
    autodiff: bool = False
    options: tuple[tuple[str, Any], ...] = field(default=())
    decorators: tuple[str, ...] = field(default=())
    backend_options: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def backend(self) -> Backend:
        """The backend instance serving this device (built and cached on first use)."""
        key = self._key()
        backend = _backends.get(key)
        if backend is None:
            backend = _build_backend(self)
            _backends[key] = backend
        return backend

    def _key(self) -> tuple[Any, ...]:
        return (self.kind, self.index, self.autodiff, self.options, self.decorators, self.backend_options)

    @property
    def inner(self) -> Device:
        """The same device without the Autodiff decorator."""
        return _below(self, AUTODIFF) if self.autodiff else self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        if self.kind == "ndarray":  # "cpu" for the default device, "cpu:N" for other logical ones
            base = f"cpu:{self.index}" if self.index else "cpu"
        else:
            base = f"{self.kind}:{self.index}"
        names = (*self.decorators, AUTODIFF) if self.autodiff else self.decorators
        return "".join((base, *(f"+{name}" for name in names)))

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"


# what every ``device=`` argument accepts: a Device, a name such as "cpu" or "wgpu:1", or None (the default)
DeviceLike = str | Device | None

_backends: dict[tuple[Any, ...], Backend] = {}
# Built backends outlive plugin reloads: tensors already made keep a working backend, and a device
# keeps one backend instance (two instances of one GPU device would not share buffers).


def _decorator(name: str, dev: Device | str, reg: Registry | None = None) -> DecoratorSpec:
    """The registered DecoratorSpec ``name``; a missing one names the extra that installs it."""
    try:
        return (reg or registry()).decorator(name)
    except KeyError as exc:
        raise BackendUnavailableError(f"device {dev}: {name}=True: {exc.args[0]}") from None


def _below(dev: Device, name: str) -> Device:
    """``dev`` without its outermost decorator ``name``, keeping the options of the decorators left."""
    rest = tuple(d for d in dev.decorators if d != name)
    if not dev.options:
        options = dev.options
    elif not rest:
        options = ()
    else:  # only devices with several decorators need the registry to know whose options are whose
        owners = registry().decorator_keywords()
        options = tuple((k, v) for k, v in dev.options if owners.get(k) in rest)
    return Device(dev.kind, dev.index, False, options, rest, dev.backend_options)


def _build_backend(dev: Device) -> Backend:
    if dev.autodiff or dev.decorators:
        name = AUTODIFF if dev.autodiff else dev.decorators[-1]
        decorator = _decorator(name, dev)
        options = {k: v for k, v in dev.options if k in decorator.options}
        return decorator.factory(_below(dev, name).backend, dev, **options)
    spec = registry().backend(dev.kind)
    ok, reason = probe(spec.is_available)
    if not ok:
        raise BackendUnavailableError(f"device {dev}: backend {spec.name!r} is unavailable: {reason}")
    backend = spec.factory(dev.index, **dict(dev.backend_options))
    backend.device = dev
    return backend


def _parse(spec: str) -> tuple[str, int | None]:
    name, _, idx = spec.partition(":")
    if idx == "":
        return name, None
    if not idx.isdigit():
        raise DeviceError(f"device: expected 'name' or 'name:N' with N a non-negative int, got {spec!r}")
    return name, int(idx)


def _decorate(
    reg: Registry,
    label: str,
    autodiff: bool,
    keywords: dict[str, Any],
    base: Device | None = None,
    defaults: tuple[str, ...] = (),
) -> tuple[bool, tuple[tuple[str, Any], ...], tuple[str, ...]]:
    """``burn.device()``'s keywords as Device fields ``(autodiff, options, decorators)``, checked: every
    decorator switched on is registered, every option belongs to one of them. A ``base`` device's
    decorators and options carry over (its options only while their decorator stays on); ``defaults``
    are the backend's decorators on unless switched off (keyword or ``BURN_<NAME>=0``)."""
    owners = reg.decorator_keywords()
    on = set(base.decorators if base else ()) | ({AUTODIFF} if autodiff else set())
    on |= {d for d in defaults if d in reg.decorators and os.environ.get(f"BURN_{d.upper()}", "1") != "0"}
    options: dict[str, Any] = {}
    unknown = []
    for key, value in keywords.items():
        if owners.get(key) == key:  # a decorator's own name: a switch
            if not isinstance(value, bool):
                raise TypeError(f"device: {key}= switches the {key!r} decorator on or off, got {value!r}")
            (on.add if value else on.discard)(key)
        elif key in owners:
            options[key] = value
        else:
            unknown.append(key)
    for name in sorted(on):  # first: a decorator that is not installed says which extra installs it
        _decorator(name, label, reg)
    if unknown:
        raise ValueError(
            f"device: unknown keyword {unknown[0]!r}; the registered decorators take {_offered(reg)}"
        )
    for owner in sorted({owners[k] for k in options} - on):
        mine = sorted(k for k in options if owners[k] == owner)
        raise ValueError(f"device: options {mine} apply to the {owner} decorator; pass {owner}=True")
    if base is not None:
        options = {k: v for k, v in base.options if owners.get(k) in on} | options
    return AUTODIFF in on, tuple(sorted(options.items())), tuple(sorted(on - {AUTODIFF}))


def device(spec: str | Device | None = None, autodiff: bool = False, **options: Any) -> Device:
    """Pick a device by name.

    ``"cpu"`` is the numpy backend (the default, overridable with ``BURN_DEVICE``); ``"wgpu"``,
    ``"wgpu:1"``, ``"cuda:0"`` name plugin backends; ``"auto"`` takes the available backend with the
    highest priority. ``autodiff=True`` puts the device behind the Autodiff decorator (burn-autodiff,
    ``pip install 'burn-core[autodiff]'``); other registered decorators are switched on the same way
    (``name=True``), and ``options`` (``checkpointing="balanced"``) go to the decorator that declares them.

    >>> burn.device("cpu", autodiff=True)
    Device('cpu+autodiff')
    """
    if isinstance(spec, Device):
        if not autodiff and not options:
            return spec
        reg = registry()
        mine, options = _split_backend_options(reg, spec.kind, options)
        flags = _decorate(reg, str(spec), autodiff or spec.autodiff, options, spec)
        merged = tuple(sorted((dict(spec.backend_options) | mine).items()))
        return Device(spec.kind, spec.index, *flags, merged)
    if spec is None:
        spec = os.environ.get("BURN_DEVICE", "cpu")
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a device name such as 'cpu' or 'cuda:0', got {spec!r}")
    name, *switched = spec.strip().lower().split("+")  # "cpu+fusion": the form str(device) prints
    for deco in switched:
        if deco == AUTODIFF:
            autodiff = True
        else:
            options.setdefault(deco, True)
    name, index = _parse(name)
    reg = registry()
    if name == "auto":
        name = _best_available(reg)
    try:
        kind = reg.backend(name).name
    except KeyError as exc:
        raise DeviceError(f"device: {exc.args[0]}") from None
    defaults = reg.backend(kind).default_decorators
    mine, options = _split_backend_options(reg, kind, options)
    flags = _decorate(reg, spec, bool(autodiff), options, defaults=defaults)
    return Device(kind, index or 0, *flags, tuple(sorted(mine.items())))


def _split_backend_options(
    reg: Registry, kind: str, keywords: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``burn.device()``'s keywords split into the backend's own options (``BackendSpec.options``) and
    the rest (decorator switches and options). A keyword neither takes is an error naming both."""
    offered = reg.backend(kind).options
    if not offered:
        return {}, keywords
    mine = {k: v for k, v in keywords.items() if k in offered}
    rest = {k: v for k, v in keywords.items() if k not in offered}
    owners = reg.decorator_keywords()
    unknown = [k for k in rest if k not in owners]
    if unknown:
        raise ValueError(
            f"device: unknown keyword {unknown[0]!r}; backend {kind!r} takes {', '.join(offered)}, and "
            f"the registered decorators take {_offered(reg)}"
        )
    return mine, rest


def _offered(reg: Registry) -> str:
    """What the registered decorators accept, for an unknown-keyword message."""
    offered = "; ".join(
        f"{d.name}=True" + (f" with {', '.join(d.options)}" if d.options else "")
        for d in sorted(reg.decorators.values(), key=lambda d: d.name)
    )
    return offered or "nothing (none is registered)"


def _best_available(reg: Registry) -> str:
    for spec in sorted(reg.backends.values(), key=lambda s: -s.priority):
        check = spec.auto_available or spec.is_available
        if probe(check)[0]:  # a third-party probe that raises means "not this one"
            return spec.name
    raise DeviceError("device('auto'): no backend is available")


def default_device() -> Device:
    """The device tensors are created on when none is given (``set_default_device``, else ``BURN_DEVICE``,
    else ``cpu``).

    >>> burn.zeros(1).device == burn.default_device()
    True
    """
    return _default.get("device") or device(None)


_default: dict[str, Device] = {}


def set_default_device(dev: str | Device | None) -> None:
    """Set the device tensors are created on when none is given (``None`` restores ``cpu``, or
    ``BURN_DEVICE`` when set).

    >>> burn.set_default_device("cpu")
    >>> burn.zeros(2).device
    Device('cpu')
    >>> burn.set_default_device(None)
    """
    if dev is None:
        _default.pop("device", None)
    else:
        _default["device"] = device(dev)


def _dist_of(spec_name: str, reg: Registry) -> tuple[str, str]:
    for info in reg.plugins:
        if f"backend:{spec_name}" in info.provides:
            return info.dist, info.version
    return "", ""


def backends() -> list[BackendInfo]:
    """Every registered backend with its availability, reason and devices (``BackendInfo`` records).

    >>> cpu = [b for b in burn.backends() if b.name == "ndarray"][0]
    >>> cpu.available, cpu.devices
    (True, ['cpu'])
    """
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
