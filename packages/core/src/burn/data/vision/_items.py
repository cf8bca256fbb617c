"""Items the vision datasets return: small dataclasses holding numpy images and annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MnistItem:
    """One MNIST-format image: ``image`` (H, W) uint8 in 0..255, ``label`` an int.

    >>> item = MnistItem(np.zeros((28, 28), dtype=np.uint8), label=3)
    >>> item.image.shape, item.label
    ((28, 28), 3)
    """

    image: Any
    label: int


@dataclass(frozen=True)
class DigitsItem:
    """One 8x8 handwritten digit: ``image`` (8, 8) float32 in [0, 1], ``label`` 0..9.

    >>> item = burn.data.vision.DigitsDataset("test")[0]
    >>> type(item).__name__, item.image.shape, item.image.dtype
    ('DigitsItem', (8, 8), dtype('float32'))
    """

    image: Any
    label: int


@dataclass(frozen=True)
class Label:
    """Classification annotation: the class index (into the dataset's ``classes``).

    >>> ImageDatasetItem(np.zeros((2, 2, 3), dtype=np.uint8), Label(4)).label
    4
    """

    label: int


@dataclass(frozen=True)
class SegmentationMask:
    """Segmentation annotation: ``mask`` (H, W) int64, one class index per pixel.

    >>> SegmentationMask(np.zeros((4, 5), dtype=np.int64)).mask.shape
    (4, 5)
    """

    mask: Any


@dataclass(frozen=True)
class BoundingBox:
    """One object: ``coords`` (x, y, width, height) in pixels from the top-left corner (COCO order),
    ``label`` the class index (into the dataset's ``classes``), ``category_id`` the id in the file.

    >>> box = BoundingBox((10.0, 20.0, 30.0, 40.0), label=0, category_id=18)
    >>> box.coords[2] * box.coords[3]   # area
    1200.0
    """

    coords: tuple[float, float, float, float]
    label: int
    category_id: int


@dataclass(frozen=True)
class BoundingBoxes:
    """Detection annotation: the image's boxes and its size ``(width, height)`` as the file declares.

    >>> boxes = BoundingBoxes(
    ...     (BoundingBox((0.0, 0.0, 5.0, 5.0), 1, 18), BoundingBox((2.0, 3.0, 4.0, 4.0), 0, 3)), (640, 480)
    ... )
    >>> boxes.labels, boxes.image_size
    ([1, 0], (640, 480))
    """

    boxes: tuple[BoundingBox, ...]
    image_size: tuple[int, int]

    @property
    def labels(self) -> list[int]:
        return [b.label for b in self.boxes]


Annotation = Label | SegmentationMask | BoundingBoxes


@dataclass(frozen=True)
class ImageDatasetItem:
    """One item of an ImageFolderDataset: ``image`` (H, W, C) uint8 (C = 1 grey, 3 RGB, 4 RGBA),
    its annotation, and the path it was read from.

    >>> item = ImageDatasetItem(np.zeros((3, 4, 3), dtype=np.uint8), Label(1), "cat/1.png")
    >>> item.image.shape, item.label, item.image_path
    ((3, 4, 3), 1, 'cat/1.png')
    """

    image: Any
    annotation: Annotation
    image_path: str = field(default="")

    @property
    def label(self) -> int:
        """The class index of a classification item."""
        if not isinstance(self.annotation, Label):
            raise TypeError(
                f"ImageDatasetItem.label: {type(self.annotation).__name__} annotation has no label"
            )
        return self.annotation.label
