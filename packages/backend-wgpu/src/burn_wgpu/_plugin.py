"""Entry point of burn_wgpu (group ``burn``). Import-light: wgpu is imported only when a device is
built or availability is probed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.plugins import BackendSpec, hookimpl

if TYPE_CHECKING:
    from ._backend import WgpuBackend


def _make(index: int) -> WgpuBackend:
    from ._backend import WgpuBackend

    return WgpuBackend(index)


def _available() -> tuple[bool, str]:
    from ._device import probe

    return probe()


def _auto_available() -> tuple[bool, str]:
    """``burn.device("auto")`` takes wgpu only with a hardware adapter: a software one (llvmpipe,
    lavapipe, SwiftShader) trains slower than the numpy backend (``burn.device("wgpu")`` still uses it)."""
    ok, reason = _available()
    if not ok:
        return ok, reason
    from ._device import adapter_label, list_adapters

    labels = [adapter_label(a.info) for a in list_adapters()]
    if all(a.info.get("adapter_type") == "CPU" for a in list_adapters()):
        return False, f"only software adapters ({'; '.join(labels)}): slower than cpu"
    return True, ""


def _devices() -> list[str]:
    from ._device import list_adapters

    return [f"wgpu:{i}" for i in range(len(list_adapters()))]


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="wgpu",
            factory=_make,
            is_available=_available,
            auto_available=_auto_available,
            devices=_devices,
            priority=10,
            default_decorators=("fusion",),
            description="WebGPU through wgpu-py (Vulkan, Metal, DX12; lavapipe on CI) with WGSL kernels",
        )
    )
