"""API.md, training (burn_train): the Learner snippet with resume, and the metrics."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn_api_md._helpers import _log_softmax, rng


def _digits_model_class():
    from burn_train import ClassificationOutput, TrainOutput

    class DigitsLinear(nn.Module):
        def __init__(self, device):
            self.fc = nn.LinearConfig(64, 10).init(device)

        def forward(self, images):
            return self.fc(images.flatten(1))

        def valid_step(self, batch):
            images, targets = batch
            logits = self.forward(images)
            return ClassificationOutput(F.cross_entropy(logits, targets), logits, targets)

        def train_step(self, batch):
            item = self.valid_step(batch)
            return TrainOutput(self, item=item, grads=item.loss.backward())

    return DigitsLinear


def test_training_snippet_and_resume(tmp_path):
    pytest.importorskip("burn_train", reason="training needs burn-train")
    from burn.data import DataLoaderBuilder, PartialDataset
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher
    from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput  # noqa: F401 (the snippet's import)
    from burn_train.metric import AccuracyMetric, CpuMemory, CpuUse, LossMetric  # noqa: F401

    adev = burn.device("cpu", autodiff=True)
    Model = _digits_model_class()

    def fit(artifacts: str, num_epochs: int, model_seed: int, resume: int | None = None) -> nn.Module:
        batcher = ImageClassificationBatcher()
        train = PartialDataset(DigitsDataset("train"), 0, 64)
        train_loader = DataLoaderBuilder(batcher).batch_size(16).shuffle(0).build(train)
        valid_loader = (
            DataLoaderBuilder(batcher).batch_size(32).build(PartialDataset(DigitsDataset("test"), 0, 32))
        )
        burn.seed(model_seed)
        model = Model(adev)
        opt = burn.optim.AdamConfig(
            beta1=0.9, beta2=0.999, epsilon=1e-5, weight_decay=None, grad_clipping=None
        ).init()
        lr_or_scheduler = 1e-2
        builder = (
            LearnerBuilder(artifacts)
            .metric_train_numeric(LossMetric())
            .metric_valid_numeric(AccuracyMetric())
            .with_file_checkpointer()
            .devices([adev])
            .num_epochs(num_epochs)
            .early_stopping(metric="Loss", patience=3)  # optional
            .renderer("none")  # "tui" | "cli" | "none"
        )
        if resume is not None:
            builder = builder.checkpoint(resume)
        learner = builder.summary().build(model, opt, lr_or_scheduler)
        return learner.fit(train_loader, valid_loader)  # returns the trained model

    burn.seed(0)
    untrained = Model(adev).valid().record()
    one_epoch = fit(str(tmp_path / "resumed"), 1, model_seed=0)
    assert isinstance(one_epoch, Model)
    trained = one_epoch.valid().record()
    assert any(not np.array_equal(trained[k], untrained[k]) for k in trained)
    assert (tmp_path / "resumed" / "summary.txt").exists()

    # .checkpoint(1) restores epoch 1 (model, optimizer) into a differently initialised model and
    # trains epoch 2: the result equals two uninterrupted epochs
    resumed = fit(str(tmp_path / "resumed"), 2, model_seed=1, resume=1).valid().record()
    straight = fit(str(tmp_path / "straight"), 2, model_seed=0).valid().record()
    assert any(not np.array_equal(resumed[k], trained[k]) for k in resumed)
    for name, value in straight.items():
        np.testing.assert_allclose(resumed[name], value, rtol=1e-6, atol=1e-7)


# ====================================================================== metrics
METRIC_NAMES = [
    "LossMetric",
    "AccuracyMetric",
    "TopKAccuracyMetric",
    "PrecisionMetric",
    "RecallMetric",
    "FBetaScoreMetric",
    "AurocMetric",
    "HammingScore",
    "LearningRateMetric",
    "IterationSpeedMetric",
    "CpuUse",
    "CpuMemory",
]


def _metadata():
    from burn_train import MetricMetadata, Progress

    return MetricMetadata(Progress(8, 8), 1, 1, 1, lr=0.1)


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_metric_names_importable(name):
    metric_module = pytest.importorskip("burn_train.metric")
    cls = getattr(metric_module, name)
    args = {"TopKAccuracyMetric": (2,)}.get(name, ())
    metric = cls(*args)
    assert isinstance(metric, metric_module.Metric) and isinstance(metric.name, str) and metric.name


def test_classification_metrics_against_scikit_learn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    pytest.importorskip("burn_train")
    from burn_train import ClassificationOutput
    from burn_train.metric import AccuracyMetric, AurocMetric, FBetaScoreMetric, PrecisionMetric, RecallMetric

    scores = rng(11).normal(size=(8, 3))
    targets = np.array([0, 1, 2, 2, 1, 0, 1, 2])
    item = ClassificationOutput(np.float64(0.5), scores, targets)
    predicted = scores.argmax(1)
    cases = [
        (AccuracyMetric(), sklearn_metrics.accuracy_score(targets, predicted)),
        (
            AccuracyMetric(pad_token=2),
            sklearn_metrics.accuracy_score(targets[targets != 2], predicted[targets != 2]),
        ),
        (PrecisionMetric(), sklearn_metrics.precision_score(targets, predicted, average="micro")),
        (RecallMetric(), sklearn_metrics.recall_score(targets, predicted, average="micro")),
        (
            FBetaScoreMetric(1.0, average="micro"),
            sklearn_metrics.f1_score(targets, predicted, average="micro"),
        ),
        (
            FBetaScoreMetric(2.0, average="macro"),
            sklearn_metrics.fbeta_score(targets, predicted, beta=2.0, average="macro"),
        ),
        (
            AurocMetric(),
            sklearn_metrics.roc_auc_score(targets, np.exp(_log_softmax(scores)), multi_class="ovr"),
        ),
    ]
    for metric, want in cases:
        metric.update(item, _metadata())
        assert metric.epoch_value() == pytest.approx(want), type(metric).__name__


def test_plugin_metrics_cuda_and_web():
    pytest.importorskip("burn_train")
    cuda_plugin = pytest.importorskip("burn_metrics_cuda")
    web_plugin = pytest.importorskip("burn_metrics_web")
    from burn_train.metric import Metric

    for metric in (cuda_plugin.CudaMetric(gpu=0, metric="utilization"), web_plugin.WebMetric("step_time")):
        assert isinstance(metric, Metric)
        ok, reason = metric.check_available()
        assert isinstance(ok, bool) and (ok or reason)  # where it cannot run it says why
    with pytest.raises(ValueError, match="metric"):
        cuda_plugin.CudaMetric(metric="no-such-figure")
