"""burn_wgpu: the WebGPU backend of burn-py (wgpu-py + WGSL compute shaders).

Use it through ``burn.device("wgpu")`` / ``burn.device("wgpu:1")``; ``configure`` sets process-wide
options (browser-portable limits, adapter, batch size) before the first device is built.

>>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device="wgpu")
>>> (x @ x).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

from ._device import configure
from ._version import __version__

if TYPE_CHECKING:
    from ._backend import WgpuBackend


# the backend class pulls in the kernels; keep ``import burn_wgpu`` light
__getattr__ = lazy_attributes(__name__, {"WgpuBackend": "._backend"}, globals())


__all__ = ["WgpuBackend", "__version__", "configure"]
