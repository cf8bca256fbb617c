"""MnistDataset: MNIST-format image/label pairs read from IDX files in a folder (no download)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._dataset import DatasetBase, check_index
from .._errors import DatasetError
from ._idx import read_idx
from ._items import MnistItem

IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dims (count, rows, cols)
LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dim (count)

# split -> (images file stem, labels file stem), the names of the original distribution
_SPLIT_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _candidates(stem: str) -> list[str]:
    # Some mirrors (Kaggle) write "train-images.idx3-ubyte"; the original uses dashes; both may be .gz.
    dotted = stem.replace("-idx", ".idx")
    return [name for base in (stem, dotted) for name in (base, base + ".gz")]


def _find(root: Path, stem: str) -> Path:
    names = _candidates(stem)
    for name in names:
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(f"MnistDataset: none of {names} found in {root}")


class MnistDataset(DatasetBase[MnistItem]):
    """MNIST (or any dataset in its IDX layout: Fashion-MNIST, KMNIST) from ``root``.

    ``split`` is ``"train"`` (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``) or ``"test"``
    (``t10k-...``); each file may be gzip-compressed (``.gz``). Files are read and validated when the
    dataset is built: magic numbers, sizes against the header, equal image and label counts.
    Items are ``MnistItem(image (H, W) uint8, label int)``.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as root:   # one 2x2 image labelled 7, in IDX files
    ...     with open(os.path.join(root, "train-images-idx3-ubyte"), "wb") as fh:
    ...         _ = fh.write(bytes([0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 64, 128, 255]))
    ...     with open(os.path.join(root, "train-labels-idx1-ubyte"), "wb") as fh:
    ...         _ = fh.write(bytes([0, 0, 8, 1, 0, 0, 0, 1, 7]))
    ...     ds = MnistDataset(root, "train")
    >>> len(ds), ds[0].image.tolist(), ds[0].label
    (1, [[0, 64], [128, 255]], 7)
    """

    def __init__(self, root: Any, split: str = "train") -> None:
        files = _SPLIT_FILES.get(split)
        if files is None:
            raise ValueError(f"MnistDataset: split must be one of {sorted(_SPLIT_FILES)}, got {split!r}")
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"MnistDataset: root {root} is not a directory")
        images_path, labels_path = (_find(root, stem) for stem in files)
        images = read_idx(images_path, expect_magic=IMAGES_MAGIC)
        labels = read_idx(labels_path, expect_magic=LABELS_MAGIC)
        if len(images) != len(labels):
            raise DatasetError(
                labels_path, f"{len(labels)} labels for {len(images)} images in {images_path.name}"
            )
        self.split = split
        self.images = images
        self.labels = labels
        self.images_path = images_path
        self.labels_path = labels_path

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> MnistItem:
        i = check_index("MnistDataset", index, len(self.labels))
        return MnistItem(image=self.images[i], label=int(self.labels[i]))

    def __repr__(self) -> str:
        h, w = self.images.shape[1:]
        return f"MnistDataset(split={self.split!r}, len={len(self)}, image=({h}, {w}))"
