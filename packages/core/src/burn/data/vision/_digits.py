"""DigitsDataset: 1797 8x8 handwritten digits shipped with burn-core, for offline examples and tests.

Origin: the test set of the UCI "Optical Recognition of Handwritten Digits" dataset (E. Alpaydin,
C. Kaynak, 1998; CC BY 4.0), as distributed with scikit-learn; see ``_data/README.md``.
"""

from __future__ import annotations

from typing import Any

from .._dataset import DatasetBase, check_index
from ._items import DigitsItem

NUM_TRAIN = 1437  # fixed split: the first 1437 images train, the last 360 test (about 80/20, balanced)
_SPLITS = {"train": slice(0, NUM_TRAIN), "test": slice(NUM_TRAIN, None), "all": slice(None)}
_cache: dict[str, Any] = {}


def _load() -> tuple[Any, Any]:
    """(images (1797, 8, 8) uint8 in 0..16, labels (1797,) uint8), read once per process."""
    if not _cache:
        from importlib.resources import files

        import numpy as np

        with (files(__package__) / "_data" / "digits.npz").open("rb") as f, np.load(f) as data:
            _cache["images"], _cache["labels"] = data["images"], data["labels"]
    return _cache["images"], _cache["labels"]


class DigitsDataset(DatasetBase[DigitsItem]):
    """The 8x8 handwritten digits (10 classes), available offline.

    ``split``: ``"train"`` (first 1437 images), ``"test"`` (last 360) or ``"all"`` (1797). Items are
    ``DigitsItem(image (8, 8) float32 in [0, 1], label int)``; the stored pixel counts 0..16 are divided
    by 16.

    >>> ds = DigitsDataset("train")
    >>> len(ds), ds[0].image.shape, ds[0].label
    (1437, (8, 8), 0)
    """

    num_classes = 10

    def __init__(self, split: str = "train") -> None:
        part = _SPLITS.get(split)
        if part is None:
            raise ValueError(f"DigitsDataset: split must be one of {sorted(_SPLITS)}, got {split!r}")
        import numpy as np

        images, labels = _load()
        self.split = split
        self.images = (images[part].astype(np.float32) / 16.0).astype(np.float32)
        self.labels = labels[part].astype(np.int64)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> DigitsItem:
        i = check_index("DigitsDataset", index, len(self.labels))
        return DigitsItem(image=self.images[i], label=int(self.labels[i]))
