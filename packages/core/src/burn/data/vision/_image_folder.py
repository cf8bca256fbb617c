"""ImageFolderDataset: images on disk with a class (folder name), a segmentation mask, or COCO boxes.

Files are listed and checked when the dataset is built; each image is decoded (by Pillow) when its
item is read, so a dataset of any size opens instantly and holds only paths in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .._dataset import DatasetBase, check_index
from .._errors import DatasetError
from ._items import BoundingBoxes, ImageDatasetItem, Label, SegmentationMask
from ._pillow import decode_image, decode_mask, pillow

IMAGE_EXTENSIONS = frozenset(
    {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm"}
)

# One record per item: the image path and the annotation source (a Label, a mask path, BoundingBoxes).
_Record = tuple[Path, Any]


def _load_classification(image_path: Path, label: Label) -> ImageDatasetItem:
    image = decode_image(image_path, "ImageFolderDataset")
    return ImageDatasetItem(image=image, annotation=label, image_path=str(image_path))


def _load_segmentation(image_path: Path, mask_path: tuple[Path, int | None]) -> ImageDatasetItem:
    path, num_classes = mask_path
    image = decode_image(image_path, "ImageFolderDataset")
    mask = decode_mask(path, "ImageFolderDataset")
    if mask.shape != image.shape[:2]:
        raise DatasetError(
            path,
            f"mask is {mask.shape[1]}x{mask.shape[0]} (WxH), its image {image_path.name} is "
            f"{image.shape[1]}x{image.shape[0]}",
        )
    if num_classes is not None and mask.size and int(mask.max()) >= num_classes:
        raise DatasetError(
            path, f"mask holds class index {int(mask.max())}, but there are {num_classes} classes"
        )
    return ImageDatasetItem(image=image, annotation=SegmentationMask(mask), image_path=str(image_path))


def _load_detection(image_path: Path, boxes: BoundingBoxes) -> ImageDatasetItem:
    image = decode_image(image_path, "ImageFolderDataset")
    width, height = boxes.image_size
    if image.shape[:2] != (height, width):
        raise DatasetError(
            image_path,
            f"image is {image.shape[1]}x{image.shape[0]} (WxH), the annotations declare {width}x{height}",
        )
    return ImageDatasetItem(image=image, annotation=boxes, image_path=str(image_path))


class ImageFolderDataset(DatasetBase[ImageDatasetItem]):
    """Images with annotations; build one with ``new_classification``, ``new_segmentation`` or
    ``new_coco_detection``. ``classes`` lists the class names; labels index into it.

    Items are ``ImageDatasetItem(image (H, W, C) uint8, annotation, image_path)``.

    >>> import os, tempfile
    >>> from PIL import Image
    >>> with tempfile.TemporaryDirectory() as root:
    ...     for name in ("cat", "dog"):   # root/cat/1.png, root/dog/1.png
    ...         os.makedirs(os.path.join(root, name))
    ...         Image.new("RGB", (4, 3)).save(os.path.join(root, name, "1.png"))
    ...     ds = ImageFolderDataset.new_classification(root)
    ...     item = ds[1]
    >>> ds.classes, len(ds), item.image.shape, item.label
    (['cat', 'dog'], 2, (3, 4, 3), 1)
    """

    def __init__(
        self,
        records: Sequence[_Record],
        classes: Sequence[str],
        load: Callable[[Path, Any], ImageDatasetItem],
    ) -> None:
        self._records = list(records)
        self.classes = list(classes)
        self._load = load

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> ImageDatasetItem:
        path, annotation = self._records[check_index("ImageFolderDataset", index, len(self._records))]
        return self._load(path, annotation)

    @property
    def image_paths(self) -> list[str]:
        return [str(p) for p, _ in self._records]

    def __repr__(self) -> str:
        return f"ImageFolderDataset(len={len(self)}, classes={len(self.classes)})"

    @classmethod
    def new_classification(cls, root: Any, classes: Sequence[str] | None = None) -> ImageFolderDataset:
        """One class per sub-folder of ``root`` (``root/cat/1.png`` is a "cat"), images found recursively.

        Classes are the sub-folder names sorted, or ``classes`` in the given order (each must exist);
        the label of an image is its class's position. Hidden folders and non-image files are skipped.
        """
        pillow("ImageFolderDataset")
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"ImageFolderDataset.new_classification: root {root} is not a directory")
        folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if classes is None:
            classes = folders
        else:
            classes = list(classes)
            missing = [c for c in classes if c not in folders]
            if missing:
                raise DatasetError(root, f"class folders {missing} not found (found {folders})")
        records = [
            (path, Label(label))
            for label, name in enumerate(classes)
            for path in sorted((root / name).rglob("*"))
            if path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()
        ]
        if not records:
            raise DatasetError(
                root, f"no images ({', '.join(sorted(IMAGE_EXTENSIONS))}) in class folders {classes}"
            )
        return cls(records, classes, _load_classification)

    @classmethod
    def new_segmentation(
        cls, items: Iterable[tuple[Any, Any]], classes: Sequence[str] | None = None
    ) -> ImageFolderDataset:
        """Image and mask pairs ``[(image_path, mask_path), ...]``; masks hold a class index per pixel.

        With ``classes``, mask values must be below ``len(classes)`` (checked when an item is read).
        """
        pillow("ImageFolderDataset")
        num_classes = None if classes is None else len(classes)
        records = []
        for k, pair in enumerate(items):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(
                    f"ImageFolderDataset.new_segmentation: items[{k}] must be an (image_path, mask_path) pair, "
                    f"got {pair!r}"
                )
            image_path, mask_path = Path(pair[0]), Path(pair[1])
            for p in (image_path, mask_path):
                if not p.is_file():
                    raise FileNotFoundError(f"ImageFolderDataset.new_segmentation: items[{k}]: {p} not found")
            records.append((image_path, (mask_path, num_classes)))
        return cls(records, list(classes or []), _load_segmentation)

    @classmethod
    def new_coco_detection(cls, annotations_json: Any, images_dir: Any) -> ImageFolderDataset:
        """Object detection from a COCO annotation file and the folder its ``file_name``s are in.

        Each image gives one item whose annotation is ``BoundingBoxes`` (boxes as (x, y, w, h) pixels,
        labels indexing ``classes``, the image's declared (width, height)); images without objects
        have no boxes. ``classes`` are the category names in order of category id.
        """
        from ._coco import parse_coco

        pillow("ImageFolderDataset")
        records, classes = parse_coco(Path(annotations_json), Path(images_dir))
        return cls(records, classes, _load_detection)
