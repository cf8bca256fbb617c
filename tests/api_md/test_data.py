"""API.md, data (burn.data): the datasets, the DataLoaderBuilder chain, the vision datasets."""

from __future__ import annotations

import gzip
import json
import struct

import burn
import numpy as np
from burn_api_md._helpers import rng


class _TensorBatcher:
    """The Batcher protocol: ``batch(items, device)``."""

    def batch(self, items, device):
        return burn.tensor(list(items), device=device)


def test_datasets():
    from burn.data import (
        ComposedDataset,
        InMemDataset,
        MapperDataset,
        PartialDataset,
        SamplerDataset,
        ShuffledDataset,
        WindowsDataset,
    )

    base = InMemDataset(list(range(10)))
    assert len(base) == 10 and base[3] == 3
    assert [MapperDataset(base, lambda v: v * 2)[i] for i in range(3)] == [0, 2, 4]
    part = PartialDataset(base, 2, 5)
    assert [part[i] for i in range(len(part))] == [2, 3, 4]
    shuffled = [ShuffledDataset(base, seed=0)[i] for i in range(10)]
    assert sorted(shuffled) == list(range(10)) and shuffled == [
        ShuffledDataset(base, seed=0)[i] for i in range(10)
    ]
    sampled = SamplerDataset(base, size=25, replacement=False, seed=1)
    counts = np.bincount([sampled[i] for i in range(len(sampled))], minlength=10)
    assert len(sampled) == 25 and set(counts) <= {2, 3}  # each item once per pass
    windows = WindowsDataset(base, 3)
    assert len(windows) == 8 and list(windows[7]) == [7, 8, 9]
    composed = ComposedDataset([base, InMemDataset(["a", "b"])])
    assert len(composed) == 12 and composed[10] == "a"


def test_dataloader_builder_chain():
    from burn.data import DataLoaderBuilder

    class Squares:  # any object with __len__ and __getitem__ is a Dataset
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i * i

    def build(seed):
        return DataLoaderBuilder(_TensorBatcher()).batch_size(4).shuffle(seed).num_workers(2).build(Squares())

    loader = build(7)
    assert len(loader) == 3
    batches = [b.tolist() for b in loader]
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(v for b in batches for v in b) == [i * i for i in range(10)]
    assert [b.tolist() for b in build(7)] == batches  # deterministic for a seed


def _write_idx(path, array: np.ndarray, gz: bool = False) -> None:
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(">u1").tobytes()
    path.write_bytes(gzip.compress(data) if gz else data)


def _png(path, array: np.ndarray) -> None:
    from PIL import Image

    Image.fromarray(array).save(path)


def test_vision_mnist_image_folder_and_offline_digits(tmp_path):
    from burn.data.vision import DigitsDataset, ImageFolderDataset, MnistDataset

    images = rng(9).integers(0, 256, size=(3, 4, 5), dtype=np.uint8)
    labels = np.array([7, 0, 3], np.uint8)
    _write_idx(tmp_path / "train-images-idx3-ubyte", images)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images[:2], gz=True)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels[:2], gz=True)
    train = MnistDataset(tmp_path, "train")
    assert len(train) == 3 and train[2].label == 3
    np.testing.assert_array_equal(train[1].image, images[1])
    assert len(MnistDataset(root=tmp_path, split="test")) == 2

    root = tmp_path / "folders"
    pixels = {}
    for cls, name, value in (("cat", "a.png", 10), ("dog", "b.png", 20), ("dog", "c.png", 30)):
        (root / cls).mkdir(parents=True, exist_ok=True)
        pixels[name] = np.full((3, 2, 3), value, np.uint8)
        _png(root / cls / name, pixels[name])
    classified = ImageFolderDataset.new_classification(root)
    assert len(ImageFolderDataset.new_classification(root=root)) == 3
    assert classified.classes == ["cat", "dog"] and len(classified) == 3
    assert [classified[i].label for i in range(3)] == [0, 1, 1]
    np.testing.assert_array_equal(classified[2].image, pixels["c.png"])

    mask = np.array([[0, 1], [2, 1], [0, 0]], np.uint8)
    _png(tmp_path / "mask.png", mask)
    segmented = ImageFolderDataset.new_segmentation(items=[(root / "cat" / "a.png", tmp_path / "mask.png")])
    np.testing.assert_array_equal(segmented[0].annotation.mask, mask)

    coco = {
        "images": [{"id": 5, "file_name": "b.png", "width": 2, "height": 3}],
        "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}],
        "annotations": [
            {"image_id": 5, "category_id": 3, "bbox": [0, 1, 1, 2]},
            {"image_id": 5, "category_id": 1, "bbox": [1, 0, 1, 1]},
        ],
    }
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    detected = ImageFolderDataset.new_coco_detection(tmp_path / "coco.json", root / "dog")
    by_keyword = ImageFolderDataset.new_coco_detection(
        annotations_json=tmp_path / "coco.json", images_dir=root / "dog"
    )
    assert len(by_keyword) == 1 and by_keyword.classes == detected.classes
    assert detected.classes == ["person", "car"] and len(detected) == 1
    boxes = detected[0].annotation
    assert boxes.labels == [1, 0] and boxes.boxes[0].coords == (0.0, 1.0, 1.0, 2.0)

    digits = DigitsDataset("train")  # the small real dataset, available offline
    assert len(digits) + len(DigitsDataset("test")) == 1797
    item = digits[0]
    assert item.image.shape == (8, 8) and 0.0 <= item.image.min() and item.image.max() <= 1.0
    assert sorted({digits[i].label for i in range(60)}) == list(range(10))
