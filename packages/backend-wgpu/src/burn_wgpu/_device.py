"""Adapter and device selection with explicitly requested limits.

``wgpu`` / ``wgpu:N`` pick the N-th adapter in a stable order (discrete GPUs first, CPU adapters such
as lavapipe last). ``BURN_WGPU_ADAPTER`` overrides the choice with an index or a case-insensitive
substring of the adapter's name, vendor or backend (``"nvidia"``, ``"llvmpipe"``, ``"vulkan"``).

Two limit modes:

* native (default): the adapter's own limits for the few that kernels care about (binding size, buffer
  size, storage buffers per stage, workgroup memory, invocations), requested explicitly;
* browser-portable (``BURN_WGPU_PORTABLE=1`` or ``burn_wgpu.configure(portable=True)``): WebGPU's
  default limits (8 storage buffers per stage, 128 MiB bindings, 16 KiB workgroup memory), so a kernel
  that runs here also runs in a browser.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import burn

from ._buffer import GPUDevice
from ._dtypes import WIDE_FEATURES

GPUAdapter = Any  # wgpu-py's adapter (wgpu ships no type information)

# WebGPU's default limits (the spec's "default" column): what every browser grants without asking
PORTABLE_LIMITS: dict[str, int] = {
    "max-storage-buffer-binding-size": 128 * 1024 * 1024,
    "max-buffer-size": 256 * 1024 * 1024,
    "max-storage-buffers-per-shader-stage": 8,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroups-per-dimension": 65535,
}
# limits requested from the adapter in native mode (the rest stay at WebGPU's defaults)
NATIVE_LIMIT_KEYS = tuple(PORTABLE_LIMITS)

_ADAPTER_TYPE_ORDER = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3, "Unknown": 4}


@dataclass
class Options:
    """Process-wide options, read when the first wgpu device is built."""

    portable: bool = field(default_factory=lambda: os.environ.get("BURN_WGPU_PORTABLE", "") in ("1", "true"))
    adapter: str | None = field(default_factory=lambda: os.environ.get("BURN_WGPU_ADAPTER") or None)
    batch_size: int = field(default_factory=lambda: int(os.environ.get("BURN_WGPU_BATCH", "64")))
    f16: bool = True


OPTIONS = Options()
_built: list[int] = []  # device indices already built (configure() after that would be ignored)


def configure(
    portable: bool | None = None,
    adapter: str | None = None,
    batch_size: int | None = None,
    f16: bool | None = None,
) -> None:
    """Set wgpu options before the first ``burn.device("wgpu")`` is used.

    ``portable``: keep WebGPU's default limits (browser-portable kernels). ``adapter``: an index or a
    name substring, as ``BURN_WGPU_ADAPTER``. ``batch_size``: dispatches recorded per submit.
    ``f16``: request ``shader-f16`` when the adapter has it (float16 tensors).
    """
    if _built:
        raise RuntimeError(
            "burn_wgpu.configure: a wgpu device is already in use; call configure() before the first "
            "burn.device('wgpu') tensor is created"
        )
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"burn_wgpu.configure: batch_size must be a positive int, got {batch_size!r}")
    if portable is not None:
        OPTIONS.portable = bool(portable)
    if adapter is not None:
        OPTIONS.adapter = str(adapter)
    if batch_size is not None:
        OPTIONS.batch_size = batch_size
    if f16 is not None:
        OPTIONS.f16 = bool(f16)


def _private_runtime_dir() -> str | None:
    """A folder only this user can enter: ``<tmp>/burn-runtime-<uid>`` (0700), or a fresh temporary one
    when that name is taken by something else (a file, a symlink, another user's folder)."""
    uid = os.getuid()
    path = os.path.join(tempfile.gettempdir(), f"burn-runtime-{uid}")
    try:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
            if stat.S_IMODE(info.st_mode) != 0o700:
                os.chmod(path, 0o700)
            return path
        return tempfile.mkdtemp(prefix=f"burn-runtime-{uid}-")
    except OSError:  # a read-only temp dir: keep the environment as it was
        return None


def ensure_runtime_dir() -> None:
    """Give the process a private ``XDG_RUNTIME_DIR`` when it has none that is valid, before the Vulkan
    loader starts.

    Mesa's Vulkan drivers (through libwayland) print ``error: XDG_RUNTIME_DIR is invalid or not set in
    the environment.`` once per adapter they open when the variable is unset or not an absolute path:
    eight lines for one ``burn info`` on a headless server, in a container, under sudo or on CI. The XDG
    spec asks for a 0700 folder owned by the user, which is what this sets. A variable that names an
    existing absolute folder is left alone, and no output is redirected, so real driver errors still
    show.
    """
    if os.name != "posix" or sys.platform in ("darwin", "emscripten"):
        return
    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(current) and os.path.isdir(current):
        return
    path = _private_runtime_dir()
    if path is not None:
        os.environ["XDG_RUNTIME_DIR"] = path


def adapter_label(info: dict[str, Any]) -> str:
    return f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"


def list_adapters() -> list[GPUAdapter]:
    """Every adapter wgpu sees, discrete GPUs first (stable within a type)."""
    ensure_runtime_dir()  # every path to a driver comes through here
    import wgpu

    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    return sorted(adapters, key=lambda a: _ADAPTER_TYPE_ORDER.get(a.info.get("adapter_type", "Unknown"), 4))


def pick_adapter(index: int) -> GPUAdapter:
    """The adapter for device ``wgpu:index`` (``BURN_WGPU_ADAPTER`` wins when set)."""
    adapters = list_adapters()
    if not adapters:
        raise burn.BackendUnavailableError(
            "no WebGPU adapter found (install a Vulkan/Metal/DX12 driver, or Mesa lavapipe)"
        )
    choice = OPTIONS.adapter
    if choice is not None:
        if choice.isdigit():
            index = int(choice)
        else:
            needle = choice.lower()
            for a in adapters:
                text = " ".join(
                    str(a.info.get(k, "")) for k in ("device", "vendor", "description", "backend_type")
                )
                if needle in text.lower():
                    return a
            names = ", ".join(adapter_label(a.info) for a in adapters)
            raise burn.DeviceError(f"BURN_WGPU_ADAPTER={choice!r} matches no adapter (found: {names})")
    if not 0 <= index < len(adapters):
        names = ", ".join(f"wgpu:{i} {adapter_label(a.info)}" for i, a in enumerate(adapters))
        raise burn.DeviceError(f"wgpu:{index}: no such adapter ({len(adapters)} found: {names})")
    return adapters[index]


@dataclass
class GpuContext:
    """One wgpu device with the limits and features it was created with."""

    adapter: GPUAdapter
    device: GPUDevice
    limits: dict[str, int]
    features: frozenset[str]
    portable: bool

    @property
    def max_binding(self) -> int:
        return self.limits["max-storage-buffer-binding-size"]

    @property
    def label(self) -> str:
        return adapter_label(self.adapter.info)


def create_context(index: int) -> GpuContext:
    """Build the wgpu device for ``wgpu:index`` with explicit limits (see module docstring)."""
    adapter = pick_adapter(index)
    have = dict(adapter.limits)
    if OPTIONS.portable:
        limits = {k: min(v, have.get(k, v)) for k, v in PORTABLE_LIMITS.items()}
    else:
        limits = {k: have.get(k, v) for k, v in PORTABLE_LIMITS.items()}
        # a binding can never exceed the buffer it views
        limits["max-storage-buffer-binding-size"] = min(
            limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]
        )
    features = []
    if OPTIONS.f16 and "shader-f16" in adapter.features:
        features.append("shader-f16")
    if not OPTIONS.portable:  # int64/float64 storage (WebGPU has neither: portable mode leaves them out)
        features += [f for f in WIDE_FEATURES.values() if f in adapter.features]
    if "timestamp-query" in adapter.features:  # GPU-side timing for the autotuner (_timer.py)
        features.append("timestamp-query")
    device = adapter.request_device_sync(required_features=features, required_limits=dict(limits))
    _built.append(index)
    return GpuContext(adapter, device, limits, frozenset(features), OPTIONS.portable)


def probe() -> tuple[bool, str]:
    """(available, reason) without creating a device."""
    ensure_runtime_dir()
    try:
        import wgpu  # noqa: F401
    except ImportError as exc:
        return False, f"wgpu is not installed ({exc})"
    try:
        adapters = list_adapters()
    except Exception as exc:  # a broken driver install is a reason, not a crash
        return False, f"no WebGPU adapter: {type(exc).__name__}: {exc}"
    if not adapters:
        return False, "no WebGPU adapter: wgpu found none (install a GPU driver or Mesa lavapipe)"
    return True, ""
