"""burn_cuda: the CUDA backend of burn-py on CuPy (device ``"cuda"`` / ``"cuda:N"``).

``import burn_cuda`` does not import CuPy; the backend loads it when a CUDA device is first used, and
``burn.backends()`` lists the backend as unavailable, with the reason, where CuPy or a GPU is missing.

The examples that need an NVIDIA GPU are skipped by the doctest run (CI has none):

>>> import burn_cuda
>>> x = burn.randn((1024, 1024), device="cuda")  # doctest: +SKIP
>>> with burn_cuda.matmul_precision("tf32"):     # doctest: +SKIP
...     y = x @ x                                 # or "fp32" (default), "bf16", "fp16"
>>> t = burn_cuda.from_dlpack(torch_tensor)      # doctest: +SKIP

Convolutions (forward, input and weight gradients, transposed) run through cuDNN where the
``burn-cuda[cudnn]`` extra is installed (``cudnn_status()`` says whether), else burn's own kernels.

``NcclCollective`` reduces gradients among GPU ranks for burn-train's data-parallel training (registered
as the ``nccl`` collective of ``cuda`` devices); ``nccl_available()`` says whether it can run here.
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

from ._cudnn import cudnn_status
from ._interop import (
    as_cupy,
    empty_cache,
    from_dlpack,
    memory_stats,
    set_memory_limit,
    stream,
    synchronize,
    to_dlpack,
)
from ._matmul import PRECISIONS, get_matmul_precision, matmul_precision, set_matmul_precision
from ._nccl import NcclCollective, nccl_available
from ._probe import device_count, devices, is_available
from ._version import __version__

if TYPE_CHECKING:
    from ._backend import CudaBackend

__all__ = [
    "PRECISIONS",
    "CudaBackend",
    "NcclCollective",
    "__version__",
    "as_cupy",
    "cudnn_status",
    "device_count",
    "devices",
    "empty_cache",
    "from_dlpack",
    "get_matmul_precision",
    "is_available",
    "matmul_precision",
    "memory_stats",
    "nccl_available",
    "set_matmul_precision",
    "set_memory_limit",
    "stream",
    "synchronize",
    "to_dlpack",
]


# importing CudaBackend imports CuPy, so only on demand
__getattr__ = lazy_attributes(__name__, {"CudaBackend": "._backend"}, globals())
