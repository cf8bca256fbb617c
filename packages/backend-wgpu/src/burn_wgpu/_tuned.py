"""The wgpu kernel families the autotuner chooses among (``burn.autotune``).

matmul: the tiled kernel in the tile shapes of ``_kernels.matmul.CONFIGS`` (those whose workgroup memory
fits the device's limit; browser-portable mode keeps WebGPU's 16 KiB). Keys bucket M, N and K (powers
of two above 64) and name the dtype, whether a batch is present and which operands are transposed.
Matmuls under ``_TUNE_MIN_FLOPS`` use the default tile: tuning them costs more than it could save.
"""

from __future__ import annotations

from typing import Any

from burn.autotune import Autotuner, Candidate, Family, bucket, median_timer, tuner_for

from ._kernels import matmul as KM
from ._primitive import WgpuTensor

_TUNE_MIN_FLOPS = 1 << 24


def _layout(x: WgpuTensor) -> str:
    """ "n" when rows are contiguous (the last dim has stride 1), "t" when columns are, else "s"."""
    return "n" if x.strides[-1] == 1 else ("t" if x.strides[-2] == 1 else "s")


def _matmul_key(backend: Any, a: WgpuTensor, b: WgpuTensor) -> str:
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batched = "b" if len(a.shape) > 2 or len(b.shape) > 2 else "1"
    return f"{a.dtype.name} m{bucket(m)} n{bucket(n)} k{bucket(k)} {batched} {_layout(a)}{_layout(b)}"


def _config(tile: int, tk: int) -> Candidate:
    def fits(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        limit = backend.ctx.limits.get("max-compute-workgroup-storage-size", 16384)
        return KM.workgroup_bytes(tile, tk) <= limit

    return Candidate(
        f"tile{tile}_k{tk}",
        lambda backend, a, b: backend.matmul_tiled(a, b, tile, tk),
        fast=(tile, tk) in ((64, 16), (128, 8)),
        applies=fits,
    )


MATMUL = Family(
    "matmul",
    tuple(_config(tile, tk) for tile, tk in KM.CONFIGS),
    key=_matmul_key,
    reference=f"tile{KM.TILE}_k{KM.TK}",
    rtol=1e-3,
    atol=1e-3,
)


def should_tune(a: WgpuTensor, b: WgpuTensor) -> bool:
    m, k = a.shape[-2:]
    return 2 * m * k * b.shape[-1] >= _TUNE_MIN_FLOPS


def tuner(backend: Any) -> Autotuner:
    """The backend's tuner: its cache is keyed by the adapter, driver and versions."""
    from ._version import __version__

    info = backend.ctx.adapter.info
    parts = (
        str(info.get("device", "") or backend.ctx.label),
        f"{info.get('backend_type', '')} {info.get('driver', '')} {info.get('driver_description', '')}".strip(),
        f"burn-wgpu {__version__}",
        "portable" if backend.ctx.portable else "native",
    )
    return tuner_for(backend, parts, median_timer(backend.sync, warmup=1, reps=5))
