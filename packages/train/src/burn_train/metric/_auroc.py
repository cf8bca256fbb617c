"""AUROC (area under the ROC curve) from ranks, over every sample of the epoch.

AUROC is a ranking statistic, so the epoch keeps the scores and targets themselves and computes the
Mann-Whitney form ``(sum of positive ranks - P(P+1)/2) / (P N)`` with average ranks for ties, which
equals scikit-learn's ``roc_auc_score`` (trapezoids through tied points). Where sklearn raises
(targets of one class only), the value is NaN.
"""

from __future__ import annotations

import math
from typing import Any

from .._events import MetricMetadata
from ._base import Metric, field_of


def _average_ranks(values: Any) -> Any:
    """1-based ranks with ties sharing their average rank (like scipy's rankdata 'average')."""
    import numpy as np

    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    averages = ends - (counts - 1) / 2.0  # mean of ranks end-count+1 .. end
    return averages[inverse.reshape(-1)]


def binary_auroc(scores: Any, positive: Any) -> float:
    """AUROC of ``scores`` (N,) for boolean labels ``positive`` (N,); NaN if one class is missing."""
    n_pos = int(positive.sum())
    n_neg = int(positive.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = _average_ranks(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _softmax_if_needed(output: Any) -> Any:
    import numpy as np

    if (output >= 0).all() and np.allclose(output.sum(axis=1), 1.0, atol=1e-4):
        return output  # already probabilities
    shifted = output - output.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


class AurocMetric(Metric):
    """AUROC for binary or multiclass (one-vs-rest, macro) classification.

    Input: ``targets`` (N,) class indices, ``output`` one of: (N,) or (N, 1) scores of the positive
    class; (N, 2) logits or probabilities (the positive class is column 1); (N, C > 2) logits or
    probabilities (softmaxed when rows are not already probabilities), scored one-vs-rest and
    averaged over classes like ``roc_auc_score(multi_class="ovr", average="macro")``.
    """

    name = "AUROC"
    higher_is_better = True
    percent = True

    def _reset(self) -> None:
        self._outputs: list[Any] = []
        self._targets: list[Any] = []
        self._count = 0
        self._shown = (0, math.nan)  # (samples it covers, value): the running epoch value

    def _epoch_running(self) -> float:
        # Ranking all samples again after every batch is quadratic over an epoch; refresh the shown
        # value when the epoch grew by a quarter. epoch_value() always computes the exact value.
        covered, value = self._shown
        if self._count >= 1.25 * covered or covered == 0:
            value = self._epoch()
            self._shown = (self._count, value)
        return value

    def _compute(self, output: Any, targets: Any) -> float:
        import numpy as np

        if targets.size == 0:
            return math.nan
        if output.ndim == 1 or output.shape[1] == 1:
            return binary_auroc(output.reshape(-1), targets == 1)
        if output.shape[1] == 2:  # p1 and l1 - l0 rank the samples the same way
            return binary_auroc(output[:, 1] - output[:, 0], targets == 1)
        probs = _softmax_if_needed(output.astype("float64"))
        if np.unique(targets).size != output.shape[1]:
            return math.nan  # sklearn: every class must occur in y_true for one-vs-rest
        return float(np.mean([binary_auroc(probs[:, c], targets == c) for c in range(output.shape[1])]))

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        output = field_of(item, "output", self.name)
        targets = field_of(item, "targets", self.name).reshape(-1)
        if output.shape[0] != targets.shape[0]:
            raise ValueError(f"{self.name}: output has {output.shape[0]} rows, targets {targets.shape[0]}")
        if output.ndim > 2:
            raise ValueError(f"{self.name}: output must be (N,), (N, 1) or (N, C), got {output.shape}")
        if (
            output.ndim == 2
            and output.shape[1] <= 2
            and targets.size
            and not ((targets == 0) | (targets == 1)).all()
        ):
            raise ValueError(f"{self.name}: binary targets must be 0/1")
        self._outputs.append(output)
        self._targets.append(targets)
        self._count += targets.size
        return self._compute(output, targets)

    def _epoch(self) -> float:
        import numpy as np

        if not self._targets:
            return math.nan
        return self._compute(np.concatenate(self._outputs), np.concatenate(self._targets))
