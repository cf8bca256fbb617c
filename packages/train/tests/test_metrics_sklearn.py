"""Every metric's epoch value equals scikit-learn on the concatenated epoch, edge cases included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from burn_train import ClassificationOutput, MultiLabelClassificationOutput
from burn_train._events import MetricMetadata, Progress
from burn_train.metric import (
    AccuracyMetric,
    AurocMetric,
    FBetaScoreMetric,
    HammingScore,
    IterationSpeedMetric,
    LearningRateMetric,
    LossMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from sklearn import metrics as skm

META = MetricMetadata(Progress(0, 0), 1, 1, 1, lr=1e-3)
SIZES = [7, 7, 7, 3]  # an uneven last batch


def _feed(metric, outputs, targets, sizes=SIZES, item=ClassificationOutput):
    start = 0
    batch_values = []
    for n in sizes:
        sl = slice(start, start + n)
        loss = np.float32(0.0)
        entry = metric.update(item(loss, outputs[sl], targets[sl]), META)
        batch_values.append(entry.value)
        start += n
    assert start == len(targets)
    return metric.epoch_value(), batch_values


def _logits(rng, n=24, c=4):
    return rng.normal(size=(n, c)).astype(np.float32)


CASES = {
    # name: (targets, predictions forced?)  -- predictions come from argmax of the logits
    "random": lambda rng: (rng.integers(0, 4, 24), _logits(rng)),
    "class_never_predicted": lambda rng: (
        rng.integers(0, 4, 24),
        np.tile([3.0, 2.0, 1.0, -9.0], (24, 1)) + rng.normal(scale=0.1, size=(24, 4)),
    ),
    "all_one_class": lambda rng: (np.full(24, 2), _logits(rng)),
    "class_absent_everywhere": lambda rng: (
        rng.integers(0, 2, 24),
        np.concatenate([rng.normal(size=(24, 2)), np.full((24, 2), -9.0)], axis=1),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_accuracy_topk_precision_recall_fbeta_match_sklearn(case):
    rng = np.random.default_rng(0)
    targets, logits = CASES[case](rng)
    logits = np.asarray(logits, dtype=np.float32)
    pred = logits.argmax(1)
    acc, _ = _feed(AccuracyMetric(), logits, targets)
    assert acc == pytest.approx(skm.accuracy_score(targets, pred), abs=1e-12)
    top2, _ = _feed(TopKAccuracyMetric(2), logits, targets)
    assert top2 == pytest.approx(skm.top_k_accuracy_score(targets, logits, k=2, labels=range(4)), abs=1e-12)
    for average in ("micro", "macro"):
        for cls, ref in ((PrecisionMetric, skm.precision_score), (RecallMetric, skm.recall_score)):
            ours, _ = _feed(cls(average=average), logits, targets)
            assert ours == pytest.approx(ref(targets, pred, average=average, zero_division=0), abs=1e-12), (
                cls,
                average,
            )
        for beta in (0.5, 1.0, 2.0):
            ours, _ = _feed(FBetaScoreMetric(beta=beta, average=average), logits, targets)
            expected = skm.fbeta_score(targets, pred, beta=beta, average=average, zero_division=0)
            assert ours == pytest.approx(expected, abs=1e-12), (beta, average)


def test_epoch_value_is_not_the_mean_of_batch_values():
    # Batch 1: 1/1 right; batch 2: 0/3 right. Mean of batch values would be 0.5; the epoch is 1/4.
    outputs = np.eye(3, dtype=np.float32)[[0, 1, 1, 1]]
    targets = np.array([0, 0, 0, 0])
    epoch, batches = _feed(AccuracyMetric(), outputs, targets, sizes=[1, 3])
    assert batches == [1.0, 0.0]
    assert epoch == pytest.approx(0.25)


def test_accuracy_pad_token_excluded_like_masked_sklearn():
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 5, 24)
    logits = _logits(rng, c=5)
    keep = targets != 0
    ours, _ = _feed(AccuracyMetric(pad_token=0), logits, targets)
    assert ours == pytest.approx(skm.accuracy_score(targets[keep], logits.argmax(1)[keep]))
    ours, _ = _feed(TopKAccuracyMetric(2, pad_token=0), logits, targets)
    assert ours == pytest.approx(skm.top_k_accuracy_score(targets[keep], logits[keep], k=2, labels=range(5)))
    only_pad, batches = _feed(AccuracyMetric(pad_token=0), logits[:4], np.zeros(4, int), sizes=[4])
    assert math.isnan(only_pad) and math.isnan(batches[0])


def test_loss_epoch_is_sample_weighted_mean_equal_to_sklearn_log_loss():
    rng = np.random.default_rng(2)
    targets = rng.integers(0, 3, 24)
    logits = _logits(rng, c=3).astype(np.float64)
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    metric = LossMetric()
    start = 0
    for n in SIZES:
        sl = slice(start, start + n)
        loss = -np.log(probs[sl][np.arange(n), targets[sl]]).mean()
        metric.update(ClassificationOutput(loss, logits[sl], targets[sl]), META)
        start += n
    assert metric.epoch_value() == pytest.approx(skm.log_loss(targets, probs, labels=[0, 1, 2]), rel=1e-12)


MULTILABEL = {
    "random": lambda rng: (rng.integers(0, 2, (24, 5)), rng.random((24, 5))),
    "label_never_predicted": lambda rng: (
        rng.integers(0, 2, (24, 5)),
        np.concatenate([rng.random((24, 4)), np.zeros((24, 1))], 1),
    ),
    "label_never_positive_anywhere": lambda rng: (
        np.concatenate([rng.integers(0, 2, (24, 4)), np.zeros((24, 1), int)], 1),
        np.concatenate([rng.random((24, 4)), np.zeros((24, 1))], 1),
    ),
    "all_negative": lambda rng: (np.zeros((24, 5), int), rng.random((24, 5)) * 0.4),
}


@pytest.mark.parametrize("case", sorted(MULTILABEL))
def test_multilabel_metrics_match_sklearn(case):
    rng = np.random.default_rng(3)
    targets, scores = MULTILABEL[case](rng)
    pred = (scores >= 0.5).astype(int)
    item = MultiLabelClassificationOutput
    for average in ("micro", "macro"):
        for cls, ref in ((PrecisionMetric, skm.precision_score), (RecallMetric, skm.recall_score)):
            ours, _ = _feed(cls.multilabel(0.5).with_average(average), scores, targets, item=item)
            assert ours == pytest.approx(ref(targets, pred, average=average, zero_division=0), abs=1e-12)
        ours, _ = _feed(FBetaScoreMetric(2.0, task="multilabel", average=average), scores, targets, item=item)
        expected = skm.fbeta_score(targets, pred, beta=2.0, average=average, zero_division=0)
        assert ours == pytest.approx(expected, abs=1e-12)
    ours, _ = _feed(HammingScore(0.5), scores, targets, item=item)
    assert ours == pytest.approx(1.0 - skm.hamming_loss(targets, pred), abs=1e-12)


def test_multilabel_sigmoid_threshold_on_logits():
    rng = np.random.default_rng(4)
    targets = rng.integers(0, 2, (24, 3))
    logits = rng.normal(size=(24, 3))
    pred = (1 / (1 + np.exp(-logits)) >= 0.7).astype(int)
    ours, _ = _feed(HammingScore(0.7, sigmoid=True), logits, targets, item=MultiLabelClassificationOutput)
    assert ours == pytest.approx(1.0 - skm.hamming_loss(targets, pred))


def test_binary_precision_recall_match_sklearn_binary_average():
    rng = np.random.default_rng(5)
    targets = rng.integers(0, 2, 24)
    probs = rng.random(24)
    pred = (probs >= 0.5).astype(int)
    ours, _ = _feed(PrecisionMetric.binary(0.5), probs, targets, item=MultiLabelClassificationOutput)
    assert ours == pytest.approx(skm.precision_score(targets, pred))
    ours, _ = _feed(RecallMetric.binary(0.5), probs, targets, item=MultiLabelClassificationOutput)
    assert ours == pytest.approx(skm.recall_score(targets, pred))


def test_auroc_binary_with_ties_matches_sklearn():
    rng = np.random.default_rng(6)
    targets = rng.integers(0, 2, 24)
    scores = rng.integers(0, 4, 24).astype(np.float64)  # many ties
    ours, _ = _feed(AurocMetric(), scores, targets)
    assert ours == pytest.approx(skm.roc_auc_score(targets, scores), abs=1e-12)
    logits = rng.normal(size=(24, 2))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    ours, _ = _feed(AurocMetric(), logits, targets)
    assert ours == pytest.approx(skm.roc_auc_score(targets, probs[:, 1]), abs=1e-12)


def test_auroc_multiclass_ovr_macro_matches_sklearn():
    rng = np.random.default_rng(7)
    targets = np.concatenate([np.arange(4), rng.integers(0, 4, 20)])
    logits = rng.normal(size=(24, 4))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    ours, _ = _feed(AurocMetric(), logits, targets)
    assert ours == pytest.approx(
        skm.roc_auc_score(targets, probs, multi_class="ovr", average="macro"), abs=1e-12
    )


def test_auroc_single_class_is_nan_like_sklearn():
    targets = np.ones(24, int)
    scores = np.random.default_rng(8).random(24)
    try:  # recent sklearn warns and returns NaN; older versions raise ValueError: undefined either way
        with pytest.warns(skm._ranking.UndefinedMetricWarning):
            reference = skm.roc_auc_score(targets, scores)
    except ValueError:
        reference = math.nan
    assert math.isnan(reference)
    ours, _ = _feed(AurocMetric(), scores, targets)
    assert math.isnan(ours)


def test_learning_rate_and_iteration_speed():
    lr = LearningRateMetric()
    for i, value in enumerate([0.1, 0.2, 0.3]):
        lr.update(None, MetricMetadata(Progress(i, 3), 1, 1, i + 1, lr=value))
    assert lr.value() == pytest.approx(0.3) and lr.epoch_value() == pytest.approx(0.2)
    speed = IterationSpeedMetric()
    for i, t in enumerate([10.0, 10.5, 11.0, 12.0]):
        entry = speed.update(None, MetricMetadata(Progress(i, 4), 1, 1, i + 1, time=t))
    assert entry.value == pytest.approx(1.0)  # last batch took 1 s
    assert speed.epoch_value() == pytest.approx(3 / 2.0)  # 3 iterations in 2 s


def test_clear_starts_a_new_epoch_and_bad_input_is_named():
    metric = AccuracyMetric()
    _feed(metric, np.eye(2, dtype=np.float32)[[0, 1]], np.array([0, 0]), sizes=[2])
    metric.clear()
    assert math.isnan(metric.epoch_value())
    with pytest.raises(ValueError, match="Accuracy: item.output must be"):
        metric.update(ClassificationOutput(0.0, np.zeros(3), np.zeros(3)), META)
    with pytest.raises(TypeError, match="has no field 'output'"):
        metric.update(object(), META)
    with pytest.raises(ValueError, match="task must be one of"):
        PrecisionMetric(task="regression")
