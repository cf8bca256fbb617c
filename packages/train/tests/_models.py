"""A tiny digits classifier and loaders for the learner tests (a few batches, well under a second)."""

from __future__ import annotations

from typing import Any

import burn
from burn import nn
from burn.data import DataLoaderBuilder, PartialDataset
from burn.data.vision import DigitsDataset, ImageClassificationBatcher
from burn.nn import functional as F
from burn_train.examples.digits import _ClassifierSteps


class TinyMlp(_ClassifierSteps, nn.Module):
    """(N, 1, 8, 8) -> flatten -> Linear(64, 32) -> relu -> dropout -> Linear(32, 10); the train and
    valid steps are the digits example's (cross-entropy on (images, targets) batches)."""

    def __init__(self, device: Any, dropout: float = 0.2) -> None:
        self.fc1 = nn.LinearConfig(64, 32).init(device)
        self.drop = nn.DropoutConfig(dropout).init(device)
        self.fc2 = nn.LinearConfig(32, 10).init(device)
        self.steps_seen = 0

    def forward(self, images: Any) -> Any:
        return self.fc2(self.drop(F.relu(self.fc1(images.flatten(1)))))


def loaders(adev: Any, n_train: int = 128, n_valid: int = 64, batch_size: int = 32, seed: int = 0):
    batcher = ImageClassificationBatcher()
    train = PartialDataset(DigitsDataset("train"), 0, n_train)
    valid = PartialDataset(DigitsDataset("test"), 0, n_valid)
    train_loader = (
        DataLoaderBuilder(batcher).batch_size(batch_size).shuffle(seed).set_device(adev).build(train)
    )
    valid_loader = DataLoaderBuilder(batcher).batch_size(batch_size).set_device(adev.inner).build(valid)
    return train_loader, valid_loader


def adev() -> Any:
    return burn.device("cpu", autodiff=True)
