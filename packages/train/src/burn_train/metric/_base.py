"""The metric contract: a running value per batch and an epoch value over every sample of the epoch.

A metric keeps sufficient statistics (counts, sums, or the samples themselves for ranking metrics),
so ``epoch_value()`` is the metric of the concatenated epoch, never an average of batch values.
numpy is imported inside functions: this module loads where numpy does not exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._events import MetricMetadata


@dataclass(frozen=True)
class MetricEntry:
    """What one update produced: the running (batch) value, the epoch value so far, and text."""

    name: str
    value: float
    epoch_value: float
    formatted: str
    numeric: bool = True
    unit: str = ""


def as_numpy(value: Any, what: str) -> Any:
    """``value`` (Tensor, numpy array, list, scalar) as a numpy array."""
    import numpy as np

    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    try:
        return np.asarray(value)
    except Exception as exc:
        raise TypeError(f"{what}: expected an array-like, got {type(value).__name__}") from exc


def field_of(item: Any, name: str, metric: str) -> Any:
    """``item.name`` as numpy, with an error naming the metric when the item lacks it."""
    if isinstance(item, dict):
        if name not in item:
            raise TypeError(f"{metric}: the item has no {name!r} (got keys {sorted(item)})")
        value = item[name]
    elif hasattr(item, name):
        value = getattr(item, name)
    else:
        raise TypeError(f"{metric}: the item ({type(item).__name__}) has no field {name!r}")
    return as_numpy(value, f"{metric}: item.{name}")


def safe_div(num: float, den: float, empty: float = math.nan) -> float:
    return num / den if den else empty


def display_unit(metric: Any) -> tuple[str, float]:
    """``(unit, scale)`` a metric's values are shown in: ``("%", 100.0)`` for percent metrics (their
    values are fractions), else ``(metric.unit, 1.0)`` (``""`` when unitless, like a loss). Plots and
    CSV logs multiply values by ``scale`` and label them with ``unit``; duck-typed plugin metrics
    without these attributes are unitless."""
    if getattr(metric, "percent", False):
        return "%", 100.0
    return str(getattr(metric, "unit", "") or ""), 1.0


class Metric:
    """Base class of burn_train metrics.

    Subclasses implement ``_update(item, metadata) -> float`` (the batch value, and they accumulate
    epoch statistics), ``_epoch() -> float`` and ``_reset()``. ``higher_is_better`` tells early
    stopping and keep-best which way is better. ``percent`` metrics show as percentages.
    """

    name: str = "Metric"
    higher_is_better: bool = True
    percent: bool = False
    unit: str = ""

    def __init__(self) -> None:
        self._last = math.nan
        self._reset()

    # -- what subclasses provide
    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        raise NotImplementedError

    def _epoch(self) -> float:
        raise NotImplementedError

    def _reset(self) -> None:
        raise NotImplementedError

    def _epoch_running(self) -> float:
        """The epoch value shown while the epoch runs; expensive metrics may refresh it less often."""
        return self._epoch()

    # -- the public contract
    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Add one batch; returns the batch value and the epoch value so far."""
        self._last = float(self._update(item, metadata))
        epoch = float(self._epoch_running())
        return MetricEntry(self.name, self._last, epoch, self.format(self._last, epoch), True, self.unit)

    def value(self) -> float:
        """The value of the last batch."""
        return self._last

    def epoch_value(self) -> float:
        """The value over every sample since the last ``clear()`` (NaN before any update)."""
        return float(self._epoch())

    def clear(self) -> None:
        """Start a new epoch."""
        self._last = math.nan
        self._reset()

    def format_value(self, value: float) -> str:
        if math.isnan(value):
            return "n/a"
        if self.percent:
            return f"{100.0 * value:.2f} %"
        text = f"{value:.4g}" if abs(value) < 1e4 else f"{value:.3e}"
        return f"{text} {self.unit}".rstrip()

    def format(self, value: float, epoch: float) -> str:
        return f"{self.format_value(value)} (epoch {self.format_value(epoch)})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
