"""burn_metrics_cuda: NVIDIA GPU metric collectors for burn-py through NVML (nvidia-ml-py).

``CudaCollector`` samples every visible GPU (utilization, memory used/total, temperature, power, energy
since start) on a background ``Sampler`` thread; ``CudaMetric`` shows one figure in burn_train's
dashboard. Registered as the ``cuda`` collector (group ``metrics-cuda``); where NVML or a driver is
missing it is listed as unavailable with the reason.
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

from ._collector import METRICS, CudaCollector
from ._nvml import CollectorUnavailable, is_available
from ._sampler import Sampler
from ._version import __version__

if TYPE_CHECKING:
    from ._metric import CudaMetric

__all__ = [
    "METRICS",
    "CollectorUnavailable",
    "CudaCollector",
    "CudaMetric",
    "Sampler",
    "__version__",
    "is_available",
]


# CudaMetric needs burn_train; loaded on first use only
__getattr__ = lazy_attributes(__name__, {"CudaMetric": "._metric"}, globals())
