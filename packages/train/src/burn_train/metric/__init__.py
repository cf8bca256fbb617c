"""burn_train.metric: metrics with a running (batch) value and an exact epoch value.

Every metric's epoch value is computed over every sample of the epoch and equals scikit-learn's
definition on the concatenated data. numpy is imported only when a metric is updated.
"""

from ._accuracy import AccuracyMetric, HammingScore, TopKAccuracyMetric
from ._auroc import AurocMetric
from ._base import Metric, MetricEntry
from ._confusion import FBetaScoreMetric, PrecisionMetric, RecallMetric
from ._loss import LossMetric
from ._speed import IterationSpeedMetric, LearningRateMetric
from ._system import CollectorMetric, CpuMemory, CpuUse, available_collectors

__all__ = [
    "AccuracyMetric",
    "AurocMetric",
    "CollectorMetric",
    "CpuMemory",
    "CpuUse",
    "FBetaScoreMetric",
    "HammingScore",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossMetric",
    "Metric",
    "MetricEntry",
    "PrecisionMetric",
    "RecallMetric",
    "TopKAccuracyMetric",
    "available_collectors",
]
