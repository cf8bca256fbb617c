"""Train a small CNN on the offline 8x8 digits with the live dashboard.

    python -m burn_train.examples.digits                      # numpy backend, dashboard, 8 epochs
    python -m burn_train.examples.digits --backend wgpu --epochs 5 --artifacts /tmp/digits
    python -m burn_train.examples.digits --devices cpu,wgpu   # data-parallel: a model replica per device

Writes under ``--artifacts``: checkpoints, per-epoch CSV logs, summary.txt/json, experiment.log, and
plots/*.png when matplotlib is installed. Prints the final validation accuracy.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput

BACKENDS = ("cpu", "wgpu", "cuda", "auto")


__all__ = ["build", "main", "make_model_class", "parse_args"]


class _ClassifierSteps:
    """The learner's steps for a classifier on ``(images, targets)`` batches: cross-entropy of
    ``self.forward(images)`` (logits (N, classes)) against the int targets (N,). A mixin, so that this
    module needs no ``burn.nn`` at import."""

    def _output(self, batch: Any) -> ClassificationOutput:
        from burn.nn import functional as F

        images, targets = batch
        logits = self.forward(images)
        return ClassificationOutput(F.cross_entropy(logits, targets), logits, targets)

    def train_step(self, batch: Any) -> TrainOutput:
        item = self._output(batch)
        return TrainOutput(self, item=item, grads=item.loss.backward())

    def valid_step(self, batch: Any) -> ClassificationOutput:
        return self._output(batch)


def make_model_class() -> type:
    """The CNN class (built lazily so importing this module stays light)."""
    from burn import nn
    from burn.nn import functional as F

    class DigitsCnn(_ClassifierSteps, nn.Module):
        """Conv2d(1->16, 3x3, pad 1) -> relu -> max-pool 2 -> Conv2d(16->32) -> relu -> max-pool 2 -> Linear(128->10).

        Input (N, 1, 8, 8) float32, output logits (N, 10).
        """

        def __init__(self, device: Any) -> None:
            self.conv1 = nn.Conv2dConfig((1, 16), 3, padding=1).init(device)
            self.conv2 = nn.Conv2dConfig((16, 32), 3, padding=1).init(device)
            self.pool = nn.MaxPool2dConfig(2, stride=2).init(device)
            self.fc = nn.LinearConfig(32 * 2 * 2, 10).init(device)

        def forward(self, images: Any) -> Any:
            x = self.pool(F.relu(self.conv1(images)))
            x = self.pool(F.relu(self.conv2(x)))
            return self.fc(x.flatten(1))

    return DigitsCnn


def build(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(learner, train loader, valid loader) for the parsed arguments."""
    import burn
    from burn.data import DataLoaderBuilder
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher

    from burn_train.metric import (
        AccuracyMetric,
        FBetaScoreMetric,
        IterationSpeedMetric,
        LearningRateMetric,
        LossMetric,
        TopKAccuracyMetric,
    )

    burn.seed(args.seed)
    names = args.devices.split(",") if args.devices else [args.backend]
    devices = [burn.device(name.strip(), autodiff=True) for name in names]
    adev = devices[0]  # the main device: model, optimizer and validation live here
    batcher = ImageClassificationBatcher(mean=0.3, std=0.4)
    train_ds, valid_ds = DigitsDataset("train"), DigitsDataset("test")
    if args.limit:
        from burn.data import PartialDataset

        train_ds = PartialDataset(train_ds, 0, min(args.limit, len(train_ds)))
        valid_ds = PartialDataset(valid_ds, 0, min(args.limit, len(valid_ds)))
    train = (
        DataLoaderBuilder(batcher)
        .batch_size(args.batch_size)
        .shuffle(args.seed)
        .set_device(adev)
        .build(train_ds)
    )
    valid = DataLoaderBuilder(batcher).batch_size(128).set_device(adev.inner).build(valid_ds)
    # one scheduler step per optimizer step: with several devices, one per step of the longest part
    steps = args.epochs * max(len(part) for part in train.split(len(devices)))
    scheduler = burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(args.lr, steps, min_lr=args.lr / 20).init()
    model = make_model_class()(adev)
    optim = burn.optim.AdamConfig().init()
    builder = (
        LearnerBuilder(args.artifacts)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(TopKAccuracyMetric(2))
        .metric_valid_numeric(FBetaScoreMetric(1.0, average="macro"))
        .metric_train_numeric(LearningRateMetric())
        .metric_train(IterationSpeedMetric())
        .with_file_checkpointer(keep_last=2, keep_best="Loss")
        .devices(devices)
        .num_epochs(args.epochs)
        .renderer(args.renderer)
        .summary()
    )
    if args.patience:
        builder = builder.early_stopping(metric="Loss", patience=args.patience)
    if args.resume:
        builder = builder.checkpoint(args.resume)
    return builder.build(model, optim, scheduler), train, valid


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m burn_train.examples.digits", description=__doc__.split("\n")[0]
    )
    p.add_argument("--backend", choices=BACKENDS, default="cpu", help="device to train on (default: cpu)")
    p.add_argument(
        "--devices",
        default="",
        help="comma-separated devices for data-parallel training, e.g. cpu,wgpu or cpu,cpu:1 (overrides --backend)",
    )
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--artifacts", default="artifacts/digits", help="output folder (default: artifacts/digits)"
    )
    p.add_argument("--renderer", choices=("auto", "tui", "cli", "none"), default="auto")
    p.add_argument("--patience", type=int, default=0, help="early stopping patience on valid loss (0: off)")
    p.add_argument("--resume", type=int, default=0, help="resume from the checkpoint of this epoch")
    p.add_argument("--limit", type=int, default=0, help="use only the first N train/valid items (quick runs)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> float:
    """Train and return the final validation accuracy (a fraction)."""
    args = parse_args(argv)
    learner, train, valid = build(args)
    learner.fit(train, valid)
    accuracy = learner.store.value("valid", "Accuracy", max(learner.store.values["valid"]["Accuracy"]))
    print(f"final valid accuracy: {100 * accuracy:.2f} %  (artifacts in {args.artifacts})")
    return accuracy


if __name__ == "__main__":
    main(sys.argv[1:])
