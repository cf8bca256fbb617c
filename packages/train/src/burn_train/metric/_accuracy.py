"""Accuracy-type metrics from counts: AccuracyMetric, TopKAccuracyMetric, HammingScore.

Each keeps (correct, total) for the epoch, so the epoch value equals scikit-learn's score on the
concatenated epoch (``accuracy_score``, ``top_k_accuracy_score``, ``1 - hamming_loss``).
"""

from __future__ import annotations

from typing import Any

from .._events import MetricMetadata
from ._base import Metric, field_of, safe_div


def class_scores(item: Any, metric: str) -> tuple[Any, Any]:
    """(scores (N, C), targets (N,) ints) of a classification item, checked."""
    output = field_of(item, "output", metric)
    targets = field_of(item, "targets", metric).reshape(-1)
    if output.ndim != 2:
        raise ValueError(f"{metric}: item.output must be (batch, classes), got shape {output.shape}")
    if output.shape[0] != targets.shape[0]:
        raise ValueError(
            f"{metric}: item.output has {output.shape[0]} rows but item.targets has {targets.shape[0]} values"
        )
    if targets.dtype.kind not in "iub":
        if targets.size and not (targets == targets.round()).all():
            raise ValueError(f"{metric}: item.targets must hold class indices, got dtype {targets.dtype}")
        targets = targets.astype("int64")
    return output, targets


class _HitRate(Metric):
    """A fraction of hits over the epoch from (hits, cases) counts; subclasses count one batch in
    ``_count(item) -> (hits, cases)``. The batch and epoch values are NaN where there are no cases."""

    def _count(self, item: Any) -> tuple[int, int]:
        raise NotImplementedError

    def _reset(self) -> None:
        self._correct = 0
        self._total = 0

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        correct, total = self._count(item)
        self._correct += correct
        self._total += total
        return safe_div(correct, total)

    def _epoch(self) -> float:
        return safe_div(self._correct, self._total)


class AccuracyMetric(_HitRate):
    """Fraction of samples whose argmax class equals the target; targets equal to ``pad_token`` are
    left out of both counts (sequence padding). Input: ``output`` (N, C), ``targets`` (N,).

    >>> AccuracyMetric(pad_token=0)
    AccuracyMetric(name='Accuracy')
    """

    name = "Accuracy"
    percent = True

    def __init__(self, pad_token: int | None = None) -> None:
        if pad_token is not None and not isinstance(pad_token, int):
            raise TypeError(f"AccuracyMetric: pad_token must be an int or None, got {pad_token!r}")
        self.pad_token = pad_token
        super().__init__()

    def _count(self, item: Any) -> tuple[int, int]:
        output, targets = class_scores(item, self.name)
        predicted = output.argmax(axis=1)
        keep = targets != self.pad_token if self.pad_token is not None else slice(None)
        return int((predicted[keep] == targets[keep]).sum()), int(targets[keep].size)


class TopKAccuracyMetric(_HitRate):
    """Fraction of samples whose target is among the ``k`` highest scores (ties broken like
    scikit-learn: the higher class index ranks first). ``pad_token`` targets are left out."""

    higher_is_better = True
    percent = True

    def __init__(self, k: int, pad_token: int | None = None) -> None:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be an int >= 1, got {k!r}")
        self.k = k
        self.pad_token = pad_token
        self.name = f"Top-{k} Accuracy"
        super().__init__()

    def _count(self, item: Any) -> tuple[int, int]:
        import numpy as np

        output, targets = class_scores(item, self.name)
        if self.k > output.shape[1]:
            raise ValueError(f"{self.name}: k={self.k} exceeds the number of classes {output.shape[1]}")
        if self.pad_token is not None:
            keep = targets != self.pad_token
            output, targets = output[keep], targets[keep]
        top = np.argsort(output, axis=1, kind="stable")[:, ::-1][:, : self.k]
        return int((top == targets[:, None]).any(axis=1).sum()), int(targets.size)


class HammingScore(_HitRate):
    """Multilabel: the fraction of (sample, label) pairs predicted right, ``1 - hamming_loss``.

    Input: ``output`` scores (N, C), ``targets`` 0/1 (N, C); a label is predicted when its score
    (after a sigmoid if ``sigmoid=True``) is ``>= threshold``.
    """

    name = "Hamming Score"
    percent = True

    def __init__(self, threshold: float = 0.5, sigmoid: bool = False) -> None:
        self.threshold = float(threshold)
        self.sigmoid = bool(sigmoid)
        super().__init__()

    def _count(self, item: Any) -> tuple[int, int]:
        predicted, targets = multilabel_decisions(item, self.name, self.threshold, self.sigmoid)
        return int((predicted == targets).sum()), int(targets.size)


def multilabel_decisions(item: Any, metric: str, threshold: float, sigmoid: bool) -> tuple[Any, Any]:
    """(predicted bool (N, C), targets bool (N, C)) for a multilabel/binary item."""
    import numpy as np

    output = field_of(item, "output", metric)
    targets = field_of(item, "targets", metric)
    if output.ndim == 1:
        output = output[:, None]
    if targets.ndim == 1:
        targets = targets[:, None]
    if output.shape != targets.shape:
        raise ValueError(
            f"{metric}: multilabel item.output {output.shape} and item.targets {targets.shape} must match"
        )
    if not np.isin(targets, (0, 1)).all():
        raise ValueError(f"{metric}: multilabel item.targets must be 0/1")
    scores = 1.0 / (1.0 + np.exp(-output.astype("float64"))) if sigmoid else output
    return scores >= threshold, targets.astype(bool)
