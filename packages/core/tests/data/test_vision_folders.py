"""ImageFolderDataset: classification folders, segmentation pairs and COCO detection, on files the
tests write with Pillow; malformed inputs give errors naming the file and the problem."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from burn.data import DatasetError
from burn.data.vision import BoundingBox, BoundingBoxes, ImageDatasetItem, ImageFolderDataset, Label
from PIL import Image


def save(path, array: np.ndarray, mode: str | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode=mode).save(path)
    return path


def pattern(h: int, w: int, channels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (h, w) if channels == 1 else (h, w, channels)
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


@pytest.fixture
def class_tree(tmp_path):
    root = tmp_path / "pets"
    arrays = {
        "cat/a.png": pattern(4, 5, 3, 0),
        "cat/sub/b.PNG": pattern(4, 5, 1, 1),
        "dog/c.png": pattern(6, 2, 4, 2),
    }
    for name, arr in arrays.items():
        save(root / name, arr)
    (root / "dog" / "notes.txt").write_text("not an image")
    (root / ".cache").mkdir()
    (root / "stray.png").write_bytes(b"")  # outside any class folder: ignored
    return root, arrays


def test_classification_labels_from_folders(class_tree):
    root, arrays = class_tree
    ds = ImageFolderDataset.new_classification(root)
    assert ds.classes == ["cat", "dog"] and len(ds) == 3
    items = list(ds)
    assert [it.annotation for it in items] == [Label(0), Label(0), Label(1)]
    assert all(isinstance(it, ImageDatasetItem) for it in items) and items[2].label == 1
    np.testing.assert_array_equal(items[0].image, arrays["cat/a.png"])  # RGB: (H, W, 3)
    np.testing.assert_array_equal(items[1].image, arrays["cat/sub/b.PNG"][:, :, None])  # grey: (H, W, 1)
    np.testing.assert_array_equal(items[2].image, arrays["dog/c.png"])  # RGBA: (H, W, 4)
    assert items[1].image_path.endswith("b.PNG") and ds.image_paths[2].endswith("c.png")


def test_classification_with_given_classes_and_errors(class_tree, tmp_path):
    root, _ = class_tree
    ds = ImageFolderDataset.new_classification(root, classes=["dog", "cat"])
    assert ds.classes == ["dog", "cat"] and [it.label for it in ds] == [0, 1, 1]
    with pytest.raises(DatasetError, match=r"class folders \['bird'\] not found \(found \['cat', 'dog'\]\)"):
        ImageFolderDataset.new_classification(root, classes=["cat", "bird"])
    (tmp_path / "empty" / "a").mkdir(parents=True)
    with pytest.raises(DatasetError, match="empty: no images"):
        ImageFolderDataset.new_classification(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        ImageFolderDataset.new_classification(tmp_path / "missing")


def test_corrupt_image_is_named_when_read(tmp_path):
    save(tmp_path / "c" / "good.png", pattern(2, 2, 3, 0))
    (tmp_path / "c" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nthis is not a png")
    ds = ImageFolderDataset.new_classification(tmp_path)
    with pytest.raises(DatasetError, match=r"bad.png: ImageFolderDataset: not an image Pillow can decode"):
        ds[0]
    assert ds[1].image.shape == (2, 2, 3)


def test_segmentation_pairs(tmp_path):
    image = pattern(5, 6, 3, 3)
    mask = np.random.default_rng(4).integers(0, 3, size=(5, 6), dtype=np.uint8)
    pairs = [(save(tmp_path / "img0.png", image), save(tmp_path / "mask0.png", mask))]
    palette_mask = Image.fromarray(mask, mode="L").convert("P")
    palette_mask.save(tmp_path / "mask1.png")
    pairs.append((tmp_path / "img0.png", tmp_path / "mask1.png"))
    save(tmp_path / "mask2.png", np.repeat(mask[:, :, None], 3, axis=2))  # RGB mask with equal channels
    pairs.append((tmp_path / "img0.png", tmp_path / "mask2.png"))
    ds = ImageFolderDataset.new_segmentation(pairs, classes=["bg", "road", "car"])
    assert len(ds) == 3 and ds.classes == ["bg", "road", "car"]
    for item in ds:
        np.testing.assert_array_equal(item.image, image)
        assert item.annotation.mask.dtype == np.int64
        np.testing.assert_array_equal(item.annotation.mask, mask)


def test_segmentation_errors(tmp_path):
    img = save(tmp_path / "img.png", pattern(5, 6, 3, 0))
    small = save(tmp_path / "small.png", np.zeros((4, 6), np.uint8))
    with pytest.raises(DatasetError, match=r"small.png: mask is 6x4 \(WxH\), its image img.png is 6x5"):
        ImageFolderDataset.new_segmentation([(img, small)])[0]
    high = save(tmp_path / "high.png", np.full((5, 6), 7, np.uint8))
    with pytest.raises(DatasetError, match="high.png: mask holds class index 7, but there are 2 classes"):
        ImageFolderDataset.new_segmentation([(img, high)], classes=["a", "b"])[0]
    colour = save(tmp_path / "colour.png", pattern(5, 6, 3, 9))
    with pytest.raises(DatasetError, match="colour.png: ImageFolderDataset: mask has colour pixels"):
        ImageFolderDataset.new_segmentation([(img, colour)])[0]
    with pytest.raises(FileNotFoundError, match=r"items\[0\]: .*nope.png not found"):
        ImageFolderDataset.new_segmentation([(img, tmp_path / "nope.png")])
    with pytest.raises(TypeError, match=r"items\[0\] must be an \(image_path, mask_path\) pair"):
        ImageFolderDataset.new_segmentation([img])


def coco_doc():
    return {
        "images": [
            {"id": 10, "file_name": "a.png", "width": 6, "height": 4},
            {"id": 11, "file_name": "sub/b.png", "width": 3, "height": 5},
            {"id": 12, "file_name": "c.png", "width": 2, "height": 2},
        ],
        "categories": [{"id": 7, "name": "dog"}, {"id": 3, "name": "cat"}],
        "annotations": [
            {"id": 1, "image_id": 10, "category_id": 7, "bbox": [1, 0.5, 2, 3]},
            {"id": 2, "image_id": 11, "category_id": 3, "bbox": [0, 0, 3, 5], "iscrowd": 0},
            {"id": 3, "image_id": 10, "category_id": 3, "bbox": [4.25, 1, 1.5, 2]},
        ],
    }


@pytest.fixture
def coco(tmp_path):
    images = tmp_path / "images"
    save(images / "a.png", pattern(4, 6, 3, 0))
    save(images / "sub" / "b.png", pattern(5, 3, 3, 1))
    save(images / "c.png", pattern(2, 2, 1, 2))
    ann = tmp_path / "instances.json"
    ann.write_text(json.dumps(coco_doc()))
    return ann, images


def test_coco_detection(coco):
    ann, images = coco
    ds = ImageFolderDataset.new_coco_detection(ann, images)
    assert ds.classes == ["cat", "dog"] and len(ds) == 3  # category-id order: 3 then 7
    a, b, c = ds
    assert a.annotation == BoundingBoxes(
        (BoundingBox((1.0, 0.5, 2.0, 3.0), label=1, category_id=7), BoundingBox((4.25, 1.0, 1.5, 2.0), 0, 3)),
        image_size=(6, 4),
    )
    assert a.annotation.labels == [1, 0] and a.image.shape == (4, 6, 3)
    assert b.annotation.boxes == (BoundingBox((0.0, 0.0, 3.0, 5.0), 0, 3),) and b.annotation.image_size == (
        3,
        5,
    )
    assert b.image_path.endswith("sub/b.png")
    assert c.annotation.boxes == () and c.image.shape == (2, 2, 1)
    np.testing.assert_array_equal(a.image, pattern(4, 6, 3, 0))


def _edit(doc, where, value):
    keys = where.split(".")
    target = doc
    for k in keys[:-1]:
        target = target[int(k)] if k.isdigit() else target[k]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return doc


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("images", {"a": 1}, "expected a list under 'images', got dict"),
        ("categories.0.id", "7", r"categories\[0\].id must be int, got '7'"),
        ("categories.1.id", 7, r"categories\[1\]: duplicate category id 7"),
        ("images.1.file_name", KeyError, r"images\[1\] has no 'file_name'"),
        ("images.1.id", 10, r"images\[1\]: duplicate image id 10"),
        ("images.0.width", 0, r"images\[0\]: width and height must be positive, got 0x4"),
        ("images.2.file_name", "zzz.png", r"images\[2\]: image file .*zzz.png not found"),
        ("annotations.1.image_id", 99, r"annotations\[1\]: image_id 99 is not among the images' ids"),
        (
            "annotations.0.category_id",
            5,
            r"annotations\[0\]: category_id 5 is not among the categories' ids \[3, 7\]",
        ),
        ("annotations.2.bbox", [1, 2, 3], r"annotations\[2\].bbox must be 4 finite numbers"),
        ("annotations.2.bbox", [1, 2, -3, 4], r"annotations\[2\].bbox has a negative width or height"),
        ("annotations.2.bbox", KeyError, r"annotations\[2\].bbox must be 4 finite numbers .* got None"),
        ("annotations.1", [1, 2], r"annotations\[1\] must be an object, got list"),
    ],
)
def test_coco_malformed(coco, where, value, message):
    ann, images = coco
    ann.write_text(json.dumps(_edit(coco_doc(), where, value)))
    with pytest.raises(DatasetError, match=message) as info:
        ImageFolderDataset.new_coco_detection(ann, images)
    assert str(info.value).startswith(str(ann))


def test_coco_invalid_json_and_size_mismatch(coco):
    ann, images = coco
    ann.write_text('{"images": [}')
    with pytest.raises(DatasetError, match=r"instances.json: invalid JSON: .* \(line 1, column 13\)"):
        ImageFolderDataset.new_coco_detection(ann, images)
    ann.write_text("[]")
    with pytest.raises(DatasetError, match="top level must be a JSON object, got list"):
        ImageFolderDataset.new_coco_detection(ann, images)
    ann.write_text(json.dumps(_edit(coco_doc(), "images.1.height", 6)))
    ds = ImageFolderDataset.new_coco_detection(ann, images)
    with pytest.raises(DatasetError, match=r"b.png: image is 3x5 \(WxH\), the annotations declare 3x6"):
        ds[1]
    with pytest.raises(FileNotFoundError, match="annotations file"):
        ImageFolderDataset.new_coco_detection(ann.with_name("none.json"), images)


def test_missing_pillow_names_the_extra(monkeypatch, class_tree):
    root, _ = class_tree
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(
        ImportError, match=r"needs Pillow to decode images: pip install 'burn-core\[vision\]'"
    ):
        ImageFolderDataset.new_classification(root)
