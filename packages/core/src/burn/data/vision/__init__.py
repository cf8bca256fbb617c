"""burn.data.vision: image datasets and an image-classification batcher.

- ``MnistDataset(root, split)``: MNIST-format IDX files (raw or gzip), validated.
- ``ImageFolderDataset.new_classification(root)``, ``.new_segmentation(items)``,
  ``.new_coco_detection(annotations_json, images_dir)``: images decoded by Pillow (``burn-core[vision]``).
- ``DigitsDataset(split)``: 1797 8x8 handwritten digits shipped with burn-core, for offline examples.
- ``ImageClassificationBatcher(mean, std)``: items to ``(images (N, C, H, W), targets (N,))`` tensors.

Pillow and numpy are imported when first needed, never by importing this package.
"""

from ._batcher import ImageClassificationBatcher
from ._digits import DigitsDataset
from ._idx import read_idx
from ._image_folder import ImageFolderDataset
from ._items import (
    Annotation,
    BoundingBox,
    BoundingBoxes,
    DigitsItem,
    ImageDatasetItem,
    Label,
    MnistItem,
    SegmentationMask,
)
from ._mnist import MnistDataset

__all__ = [
    "Annotation",
    "BoundingBox",
    "BoundingBoxes",
    "DigitsDataset",
    "DigitsItem",
    "ImageClassificationBatcher",
    "ImageDatasetItem",
    "ImageFolderDataset",
    "Label",
    "MnistDataset",
    "MnistItem",
    "SegmentationMask",
    "read_idx",
]
