"""``burn.fusion``: the fusion decorator (Burn's burn-fusion) and the plan its runtimes render.

``burn.device("wgpu")`` and ``burn.device("cuda")`` run behind it by default: element-wise ops are
deferred and chains of them run as one generated kernel (``fusion=False`` or ``BURN_FUSION=0`` turns
it off). A backend offers kernels for it by returning a ``FusionRuntime`` from
``Backend.fusion_runtime()``; without one, plans run op by op (``ReferenceRuntime``).

>>> dev = burn.device("cpu", fusion=True)
>>> x = burn.tensor([1.0, -2.0, 3.0], device=dev)
>>> ((x * 2).relu() + 1).tolist()
[3.0, 1.0, 7.0]
"""

from ._backend import Fusion
from ._plan import FusedKernel, FusedOp, FusionRuntime
from ._reference import ReferenceRuntime

__all__ = ["FusedKernel", "FusedOp", "Fusion", "FusionRuntime", "ReferenceRuntime"]
