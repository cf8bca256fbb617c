"""Items the vision datasets return: small dataclasses holding numpy images and annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MnistItem:
    """One MNIST-format image: ``image`` (H, W) uint8 in 0..255, ``label`` an int."""

    image: Any
    label: int


@dataclass(frozen=True)
class DigitsItem:
    """One 8x8 handwritten digit: ``image`` (8, 8) float32 in [0, 1], ``label`` 0..9."""

    image: Any
    label: int


@dataclass(frozen=True)
class Label:
    """Classification annotation: the class index (into the dataset's ``classes``)."""

    label: int


@dataclass(frozen=True)
class SegmentationMask:
    """Segmentation annotation: ``mask`` (H, W) int64, one class index per pixel."""

    mask: Any


@dataclass(frozen=True)
class BoundingBox:
    """One object: ``coords`` (x, y, width, height) in pixels from the top-left corner (COCO order),
    ``label`` the class index (into the dataset's ``classes``), ``category_id`` the id in the file."""

    coords: tuple[float, float, float, float]
    label: int
    category_id: int


@dataclass(frozen=True)
class BoundingBoxes:
    """Detection annotation: the image's boxes and its size ``(width, height)`` as the file declares."""

    boxes: tuple[BoundingBox, ...]
    image_size: tuple[int, int]

    @property
    def labels(self) -> list[int]:
        return [b.label for b in self.boxes]


Annotation = Label | SegmentationMask | BoundingBoxes


@dataclass(frozen=True)
class ImageDatasetItem:
    """One item of an ImageFolderDataset: ``image`` (H, W, C) uint8 (C = 1 grey, 3 RGB, 4 RGBA),
    its annotation, and the path it was read from."""

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
