"""``CudaMetric``: one GPU figure as a burn_train numeric metric (shown in the dashboard).

It reads the ``cuda`` collector through burn_train's ``CollectorMetric`` (sampled on the event
processor, off the training thread, at most every ``interval`` seconds); the epoch value is the mean of
the samples. Needs burn-train; importing this module without it raises ImportError with the fix.
"""

from __future__ import annotations

import math

try:
    from burn_train.metric import CollectorMetric
except ImportError as exc:  # pragma: no cover - exercised only where burn-train is absent
    raise ImportError("CudaMetric needs burn-train (pip install burn-train)") from exc

from ._collector import METRICS

_UNITS = {
    "Utilization": "%",
    "Memory Utilization": "%",
    "Memory Used": "GB",
    "Memory Total": "GB",
    "Temperature": "°C",
    "Power": "W",
    "Energy": "J",
}
_ALIASES = {
    "usage": "Utilization",
    "utilization": "Utilization",
    "memory": "Memory Used",
    "memory_used": "Memory Used",
    "memory_total": "Memory Total",
    "memory_utilization": "Memory Utilization",
    "temperature": "Temperature",
    "power": "Power",
    "energy": "Energy",
}


class CudaMetric(CollectorMetric):
    """GPU ``gpu``'s ``metric`` (utilization %, memory GB, temperature °C, power W, energy J).

    >>> from burn_train import LearnerBuilder
    >>> metric = CudaMetric(gpu=0, metric="utilization")   # reads NVML when sampled, not when built
    >>> metric.name
    'GPU 0 Utilization'
    >>> builder = LearnerBuilder("artifacts").metric_train_numeric(metric)
    """

    higher_is_better = False

    def __init__(self, gpu: int = 0, metric: str = "utilization", interval: float = 1.0) -> None:
        if not isinstance(gpu, int) or isinstance(gpu, bool) or gpu < 0:
            raise ValueError(f"CudaMetric: gpu must be a non-negative int, got {gpu!r}")
        canonical = _ALIASES.get(str(metric).lower().replace(" ", "_"), metric)
        if canonical not in METRICS:
            raise ValueError(
                f"CudaMetric: metric must be one of {sorted(_ALIASES)} (or {list(METRICS)}), got {metric!r}"
            )
        self.gpu = gpu
        self.metric = canonical
        self._total = math.nan
        super().__init__("cuda", f"GPU {gpu} {canonical}", interval, unit=_UNITS[canonical])

    def _read(self, values: dict[str, float]) -> float:
        self._total = float(values.get(f"GPU {self.gpu} Memory Total", math.nan))
        if self.key not in values:  # this GPU lacks the query (NotSupported) or does not exist
            return math.nan
        return super()._read(values)

    def format_value(self, value: float) -> str:
        if math.isnan(value):
            return "n/a"
        if self.metric == "Memory Used" and not math.isnan(self._total):
            return f"{value:.2f} / {self._total:.2f} GB"
        return f"{value:.1f} {self.unit}"
