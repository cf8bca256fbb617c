"""``burn.fusion``: the fusion decorator (Burn's burn-fusion) and the plan its runtimes render.

``burn.device("wgpu")`` and ``burn.device("cuda")`` run behind it by default: element-wise ops are
recorded lazily, chains of element-wise ops run as one generated kernel (with the reduction they feed
or the matmul they follow, where the backend's runtime can), and a repeated stream (a
training step) replays what was planned for it the first time (``fusion=False`` or ``BURN_FUSION=0``
turns fusion off, ``BURN_FUSION_REPLAY=0`` only the replay). A backend offers kernels for it by returning a ``FusionRuntime`` from
``Backend.fusion_runtime()``; without one, plans run op by op (``ReferenceRuntime``).

>>> dev = burn.device("cpu", fusion=True)
>>> x = burn.tensor([1.0, -2.0, 3.0], device=dev)
>>> ((x * 2).relu() + 1).tolist()
[3.0, 1.0, 7.0]
"""

from ._backend import LATER, Fusion, launch, mark_step
from ._plan import FusedKernel, FusedOp, FusedReduce, FusionRuntime
from ._reference import ReferenceRuntime

__all__ = [
    "LATER",
    "FusedKernel",
    "FusedOp",
    "FusedReduce",
    "Fusion",
    "FusionRuntime",
    "ReferenceRuntime",
    "launch",
    "mark_step",
]
