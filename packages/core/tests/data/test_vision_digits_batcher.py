"""DigitsDataset (the offline 8x8 digits) and ImageClassificationBatcher, end to end with the loader."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.data import DataLoaderBuilder
from burn.data.vision import (
    DigitsDataset,
    DigitsItem,
    ImageClassificationBatcher,
    ImageDatasetItem,
    Label,
    MnistItem,
)


def test_digits_splits_and_items():
    train, test, full = DigitsDataset("train"), DigitsDataset("test"), DigitsDataset("all")
    assert (len(train), len(test), len(full)) == (1437, 360, 1797)
    item = train[0]
    assert isinstance(item, DigitsItem) and item.image.shape == (8, 8) and item.image.dtype == np.float32
    assert 0.0 <= item.image.min() and item.image.max() <= 1.0 and type(item.label) is int
    np.testing.assert_array_equal(test[0].image, full[1437].image)
    counts = np.bincount([it.label for it in train], minlength=10)
    assert counts.min() >= 140  # every class well represented in the fixed split
    with pytest.raises(ValueError, match="split must be one of"):
        DigitsDataset("valid")


def test_digits_match_the_uci_copy_in_scikit_learn():
    datasets = pytest.importorskip("sklearn.datasets")
    ref = datasets.load_digits()
    full = DigitsDataset("all")
    np.testing.assert_array_equal(full.images * 16.0, ref.images)
    np.testing.assert_array_equal(full.labels, ref.target)


def test_batcher_normalises_and_moves_channels_first():
    rng = np.random.default_rng(0)
    rgb = [rng.integers(0, 256, size=(3, 4, 3), dtype=np.uint8) for _ in range(2)]
    items = [ImageDatasetItem(rgb[0], Label(2)), {"image": rgb[1], "label": 0}]
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.5)
    images, targets = ImageClassificationBatcher(mean, std).batch(items, burn.device("cpu"))
    ref = (
        np.stack([a.transpose(2, 0, 1) for a in rgb]) / 255.0 - np.reshape(mean, (1, 3, 1, 1))
    ) / np.reshape(std, (1, 3, 1, 1))
    assert images.shape == (2, 3, 3, 4) and images.dtype == burn.float32
    np.testing.assert_allclose(images.numpy(), ref, rtol=1e-6, atol=1e-6)
    assert targets.dtype == burn.int64 and targets.numpy().tolist() == [2, 0]


def test_batcher_grey_items_of_every_kind():
    grey = np.arange(16, dtype=np.uint8).reshape(4, 4)
    items = [MnistItem(grey, 3), (grey.astype(np.float32) / 255.0, 1)]
    images, targets = ImageClassificationBatcher(mean=0.1307, std=0.3081).batch(items, "cpu")
    ref = (grey / 255.0 - 0.1307) / 0.3081
    np.testing.assert_allclose(images.numpy(), np.stack([ref[None], ref[None]]), rtol=1e-5, atol=1e-6)
    assert targets.numpy().tolist() == [3, 1]


def test_batcher_errors():
    b = ImageClassificationBatcher()
    with pytest.raises(
        burn.ShapeError, match=r"item 1 image is \(C, H, W\) \(1, 3, 3\), item 0 is \(1, 2, 2\)"
    ):
        b.batch([(np.zeros((2, 2)), 0), (np.zeros((3, 3)), 1)], "cpu")
    with pytest.raises(burn.ShapeError, match=r"item 0 image must be \(H, W\) or \(H, W, C\), got \(2,\)"):
        b.batch([(np.zeros(2), 0)], "cpu")
    with pytest.raises(burn.ShapeError, match="mean has 3 values for 1-channel images"):
        ImageClassificationBatcher(mean=(0, 0, 0)).batch([(np.zeros((2, 2)), 0)], "cpu")
    with pytest.raises(ValueError, match="std must be > 0"):
        ImageClassificationBatcher(std=0)
    with pytest.raises(ValueError, match="cannot batch an empty list"):
        b.batch([], "cpu")


def test_digits_loader_with_workers_matches_the_main_thread():
    ds = DigitsDataset("test")
    batcher = ImageClassificationBatcher(mean=0.5, std=0.5)
    build = DataLoaderBuilder(batcher).batch_size(64).shuffle(3).set_device(burn.device("cpu"))
    inline, threaded = build.build(ds), build.num_workers(2).build(ds)
    assert len(inline) == 6
    batches = list(threaded)
    for (xa, ya), (xb, yb) in zip(list(inline), batches, strict=True):
        np.testing.assert_array_equal(xa.numpy(), xb.numpy())
        np.testing.assert_array_equal(ya.numpy(), yb.numpy())
    order = np.random.default_rng([3, 0]).permutation(360)[:64]
    np.testing.assert_allclose(batches[0][0].numpy()[:, 0], (ds.images[order] - 0.5) / 0.5, atol=1e-6)
    np.testing.assert_array_equal(batches[0][1].numpy(), ds.labels[order])
