"""Precision, recall and F-beta from per-class confusion counts.

The epoch keeps per-class true positives, predicted positives and actual positives; micro and macro
averages are computed from those sums, which equals scikit-learn's ``precision_score`` /
``recall_score`` / ``fbeta_score`` on the concatenated epoch with ``zero_division=0``:

- multiclass (top_k=1): macro averages over labels seen in targets or predictions (sklearn's
  default ``labels``); micro equals accuracy.
- multilabel / binary: macro averages over every output column (a column never positive in either
  counts as 0, as in sklearn).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Self

from .._events import MetricMetadata
from ._accuracy import class_scores, multilabel_decisions
from ._base import Metric

if TYPE_CHECKING:
    import numpy as np

_TASKS = ("multiclass", "multilabel", "binary")
_AVERAGES = ("micro", "macro")


def _fbeta_from_counts(tp: np.ndarray, predicted: np.ndarray, actual: np.ndarray, beta2: float) -> np.ndarray:
    """(1+b2) tp / ((1+b2) tp + b2 fn + fp) with 0 where the denominator is 0 (arrays or floats)."""
    import numpy as np

    den = (1.0 + beta2) * tp + beta2 * (actual - tp) + (predicted - tp)
    return np.divide((1.0 + beta2) * tp, den, out=np.zeros_like(den, dtype="float64"), where=den > 0)


class _ConfusionMetric(Metric):
    """Shared state: per-class counts of true positives, predictions and targets."""

    kind = "precision"
    higher_is_better = True
    percent = True

    def __init__(
        self,
        task: str = "multiclass",
        average: str = "micro",
        top_k: int = 1,
        threshold: float = 0.5,
        sigmoid: bool = False,
        beta: float = 1.0,
    ) -> None:
        if task not in _TASKS:
            raise ValueError(f"{type(self).__name__}: task must be one of {_TASKS}, got {task!r}")
        if average not in _AVERAGES:
            raise ValueError(f"{type(self).__name__}: average must be one of {_AVERAGES}, got {average!r}")
        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"{type(self).__name__}: top_k must be an int >= 1, got {top_k!r}")
        if not beta > 0:
            raise ValueError(f"{type(self).__name__}: beta must be > 0, got {beta!r}")
        self.task, self.average, self.top_k = task, average, top_k
        self.threshold, self.sigmoid, self.beta = float(threshold), bool(sigmoid), float(beta)
        super().__init__()

    # Burn-style constructors: PrecisionMetric.multiclass(top_k=1).with_average("macro")
    @classmethod
    def multiclass(cls, top_k: int = 1, **kwargs: Any) -> Self:
        return cls(task="multiclass", top_k=top_k, **kwargs)

    @classmethod
    def multilabel(cls, threshold: float = 0.5, **kwargs: Any) -> Self:
        return cls(task="multilabel", threshold=threshold, **kwargs)

    @classmethod
    def binary(cls, threshold: float = 0.5, **kwargs: Any) -> Self:
        return cls(task="binary", threshold=threshold, **kwargs)

    def with_average(self, average: str) -> Self:
        return type(self)(self.task, average, self.top_k, self.threshold, self.sigmoid, self.beta)

    @property
    def name(self) -> str:  # type: ignore[override]
        base = {"precision": "Precision", "recall": "Recall", "fbeta": f"F{self.beta:g} Score"}[self.kind]
        return f"{base} ({self.average})" if self.task != "binary" else base

    def _reset(self) -> None:
        self._tp = self._pred = self._actual = None
        self._samples = 0

    def _counts(self, item: Any) -> tuple[Any, Any, Any, int]:
        import numpy as np

        if self.task == "multiclass":
            output, targets = class_scores(item, self.name)
            n, c = output.shape
            if targets.size and (targets.min() < 0 or targets.max() >= c):
                raise ValueError(
                    f"{self.name}: targets must lie in [0, {c}), got {targets.min()}..{targets.max()}"
                )
            top = np.argsort(output, axis=1, kind="stable")[:, ::-1][:, : self.top_k]
            predicted = np.zeros((n, c), dtype=bool)
            np.put_along_axis(predicted, top, True, axis=1)
            actual = np.zeros((n, c), dtype=bool)
            actual[np.arange(n), targets] = True
        else:
            predicted, actual = multilabel_decisions(item, self.name, self.threshold, self.sigmoid)
        tp = (predicted & actual).sum(axis=0).astype("int64")
        return tp, predicted.sum(axis=0).astype("int64"), actual.sum(axis=0).astype("int64"), len(actual)

    def _score(self, tp: Any, pred: Any, actual: Any, samples: int) -> float:
        import numpy as np

        if tp is None or samples == 0:
            return math.nan  # nothing seen yet
        beta2 = {"precision": None, "recall": None, "fbeta": self.beta**2}[self.kind]
        if self.average == "micro":
            tp, pred, actual = tp.sum(keepdims=True), pred.sum(keepdims=True), actual.sum(keepdims=True)
        elif self.task == "multiclass":  # sklearn averages over labels present in y_true or y_pred
            seen = (pred > 0) | (actual > 0)
            tp, pred, actual = tp[seen], pred[seen], actual[seen]
        if self.kind == "precision":
            per_class = np.divide(tp, pred, out=np.zeros(tp.shape), where=pred > 0)
        elif self.kind == "recall":
            per_class = np.divide(tp, actual, out=np.zeros(tp.shape), where=actual > 0)
        else:
            assert beta2 is not None  # kind == "fbeta"
            per_class = _fbeta_from_counts(tp, pred, actual, beta2)
        return float(per_class.mean())

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        tp, pred, actual, samples = self._counts(item)
        self._samples += samples
        if self._tp is None or self._tp.shape != tp.shape:
            if self._tp is not None:
                raise ValueError(f"{self.name}: the number of classes changed within an epoch")
            self._tp, self._pred, self._actual = tp, pred, actual
        else:
            self._tp, self._pred, self._actual = self._tp + tp, self._pred + pred, self._actual + actual
        return self._score(tp, pred, actual, samples)

    def _epoch(self) -> float:
        return self._score(self._tp, self._pred, self._actual, self._samples)


class PrecisionMetric(_ConfusionMetric):
    """Precision ``tp / (tp + fp)``: ``task`` multiclass (top-k decisions), multilabel or binary
    (threshold decisions), ``average`` micro or macro. Input: ``output`` (N, C); ``targets`` (N,)
    class indices (multiclass) or 0/1 (N, C) (multilabel/binary)."""

    kind = "precision"


class RecallMetric(_ConfusionMetric):
    """Recall ``tp / (tp + fn)``; same tasks, averages and inputs as ``PrecisionMetric``."""

    kind = "recall"


class FBetaScoreMetric(_ConfusionMetric):
    """F-beta ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)``; ``beta=1`` is F1. Same tasks,
    averages and inputs as ``PrecisionMetric``.

    >>> FBetaScoreMetric(beta=0.5, average="macro").name
    'F0.5 Score (macro)'
    """

    kind = "fbeta"

    def __init__(self, beta: float = 1.0, task: str = "multiclass", average: str = "micro", **kwargs: Any):
        super().__init__(task=task, average=average, beta=beta, **kwargs)

    def with_average(self, average: str) -> Any:
        return type(self)(
            self.beta, self.task, average, top_k=self.top_k, threshold=self.threshold, sigmoid=self.sigmoid
        )
