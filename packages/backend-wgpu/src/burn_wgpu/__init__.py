"""burn_wgpu: the WebGPU backend of burn-py (wgpu-py + WGSL compute shaders).

Use it through ``burn.device("wgpu")`` / ``burn.device("wgpu:1")``; ``configure`` sets process-wide
options (browser-portable limits, adapter, batch size) before the first device is built.

>>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device="wgpu")
>>> (x @ x).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from typing import TYPE_CHECKING

from ._device import configure
from ._version import __version__

if TYPE_CHECKING:
    from ._backend import WgpuBackend


def __getattr__(name: str) -> object:
    # the backend class pulls in the kernels; keep ``import burn_wgpu`` light
    if name == "WgpuBackend":
        from ._backend import WgpuBackend

        return WgpuBackend
    raise AttributeError(f"module 'burn_wgpu' has no attribute {name!r}")


__all__ = ["WgpuBackend", "__version__", "configure"]
