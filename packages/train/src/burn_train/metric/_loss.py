"""LossMetric: the batch loss and the sample-weighted epoch mean."""

from __future__ import annotations

import math
from typing import Any

from .._events import MetricMetadata
from ._base import Metric, field_of


def batch_size_of(item: Any) -> int:
    """Samples in an item: ``len(item)`` when it defines it, else the first dim of targets/output."""
    try:
        return int(len(item))
    except TypeError:
        pass
    for name in ("targets", "output"):
        shape = getattr(getattr(item, name, None), "shape", None)
        if shape:
            return int(shape[0])
    return 1


class LossMetric(Metric):
    """The loss of each batch (``item.loss``, a scalar mean over the batch); the epoch value weighs
    each batch by its number of samples, so it is the mean loss over every sample of the epoch (an
    uneven last batch counts for what it holds)."""

    name = "Loss"
    higher_is_better = False

    def _reset(self) -> None:
        self._weighted = 0.0
        self._samples = 0

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        loss = field_of(item, "loss", self.name)
        if loss.size != 1:
            raise ValueError(
                f"{self.name}: item.loss must be a scalar (mean over the batch), got shape {loss.shape}"
            )
        value = float(loss.reshape(()))
        n = batch_size_of(item)
        self._weighted += value * n
        self._samples += n
        return value

    def _epoch(self) -> float:
        return self._weighted / self._samples if self._samples else math.nan
