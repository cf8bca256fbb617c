"""ImageClassificationBatcher stacks a batch of same-shaped images at once: the same bits as item by item."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.data.vision import DigitsDataset, ImageClassificationBatcher


def _item_by_item(batcher: ImageClassificationBatcher, images: list[np.ndarray]) -> np.ndarray:
    return batcher._normalise(np.stack([batcher._array(k, image) for k, image in enumerate(images)]))


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.integers(0, 256, size=(5, 6), dtype=np.uint8),  # grey, scaled by 255
        lambda rng: rng.integers(0, 65536, size=(4, 4, 3), dtype=np.uint16),  # channels last, by 65535
        lambda rng: rng.random((3, 7, 2), dtype=np.float32),  # float: taken as it is
        lambda rng: rng.random((6, 6)),  # float64
    ],
)
def test_whole_batch_equals_item_by_item_bit_for_bit(make):
    rng = np.random.default_rng(0)
    images = [make(rng) for _ in range(9)]
    channels = 1 if images[0].ndim == 2 else images[0].shape[2]
    batcher = ImageClassificationBatcher(mean=[0.2] * channels, std=[0.3] * channels)
    x, y = batcher.batch([(image, k % 4) for k, image in enumerate(images)], burn.device("cpu"))
    ref = _item_by_item(batcher, images)
    assert x.shape == ref.shape and x.dtype == burn.float32
    np.testing.assert_array_equal(x.numpy(), ref.astype(np.float32))
    assert y.numpy().tolist() == [k % 4 for k in range(9)]


def test_digits_batches_equal_item_by_item():
    ds = DigitsDataset("test")
    batcher = ImageClassificationBatcher(mean=0.3, std=0.4)
    items = [ds[i] for i in range(32)]
    x, _ = batcher.batch(items, "cpu")
    np.testing.assert_array_equal(x.numpy(), _item_by_item(batcher, [it.image for it in items]))
