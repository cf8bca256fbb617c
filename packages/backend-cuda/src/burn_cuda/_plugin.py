"""Entry point of burn_cuda (group ``burn``). Import-light: CuPy loads only when a device is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.plugins import BackendSpec, CollectiveSpec, hookimpl

from . import _probe

if TYPE_CHECKING:
    from burn import Device
    from burn.distributed import Collective

    from ._backend import CudaBackend
    from ._nccl import NcclCollective


def _make(index: int) -> CudaBackend:
    from ._backend import CudaBackend

    return CudaBackend(index)


def _available() -> tuple[bool, str]:
    try:
        return _probe.is_available()
    except Exception as exc:  # the probe never raises, but a registry must never see a crash
        return False, f"availability check failed: {type(exc).__name__}: {exc}"


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="cuda",
            factory=_make,
            is_available=_available,
            devices=_probe.devices,
            aliases=("cupy",),
            priority=20,
            default_decorators=("fusion",),
            description="CUDA on NVIDIA GPUs through CuPy (cuBLAS matmul, cuDNN convolutions with the cudnn extra, generated kernels)",
        )
    )


def _make_nccl(host: Collective, device: Device) -> NcclCollective:
    from ._nccl import NcclCollective

    return NcclCollective(host, device.index)


def _nccl_available() -> tuple[bool, str]:
    from ._nccl import nccl_available

    return nccl_available()


def _nccl_installed() -> tuple[bool, str]:
    from importlib import util

    if util.find_spec("cupy") is None:
        return False, "CuPy is not installed (pip install 'burn-core[cuda]')"
    return True, "CuPy installed"


@hookimpl
def burn_register_collectives(register: Callable[[CollectiveSpec], None]) -> None:
    register(
        CollectiveSpec(
            name="nccl",
            backends=("cuda",),
            factory=_make_nccl,
            is_available=_nccl_available,
            is_installed=_nccl_installed,
            description="NCCL among the GPUs of the ranks, on burn-cuda's streams (CuPy's cupy.cuda.nccl)",
        )
    )
