"""ImageClassificationBatcher: (image, label) items to an (N, C, H, W) float32 batch and (N,) targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._errors import ShapeError

if TYPE_CHECKING:
    from ..._device import DeviceLike
    from ..._tensor import Tensor

# Integer pixel types are scaled to [0, 1] by their maximum; float images are taken as they are.
_SCALE = {"uint8": 255.0, "uint16": 65535.0}


def _image_and_label(item: Any) -> tuple[Any, Any]:
    """Accepts items with ``.image`` and ``.label`` (MnistItem, DigitsItem, ImageDatasetItem),
    dicts with ``"image"`` and ``"label"``, and ``(image, label)`` pairs."""
    if isinstance(item, dict):
        return item["image"], item["label"]
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    return item.image, item.label


def _per_channel(name: str, value: float | Sequence[float]) -> tuple[float, ...]:
    values = (float(value),) if isinstance(value, (int, float)) else tuple(float(v) for v in value)
    if not values:
        raise ValueError(f"ImageClassificationBatcher: {name} must be a number or a non-empty sequence")
    return values


class ImageClassificationBatcher:
    """Batches classification items into ``(images, targets)`` tensors on the requested device.

    ``images``: (N, C, H, W) float32, each pixel ``(x / scale - mean[c]) / std[c]`` where ``scale`` is
    255 for uint8 images (65535 for uint16, 1 for float images); (H, W) images get C = 1 and
    (H, W, C) images are moved channel-first. ``targets``: (N,) int64 class indices (the backend's default int where int64 is unsupported, e.g. int32 on wgpu).
    ``mean``/``std`` are one number or one per channel.

    >>> from burn.data.vision import DigitsDataset
    >>> images, targets = ImageClassificationBatcher().batch([DigitsDataset()[0]], "cpu")
    >>> images.shape, targets.shape
    ((1, 1, 8, 8), (1,))
    """

    def __init__(self, mean: float | Sequence[float] = 0.0, std: float | Sequence[float] = 1.0) -> None:
        self.mean = _per_channel("mean", mean)
        self.std = _per_channel("std", std)
        if any(s <= 0 for s in self.std):
            raise ValueError(f"ImageClassificationBatcher: std must be > 0, got {self.std}")

    def _array(self, k: int, image: Any) -> Any:
        import numpy as np

        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = arr[None]
        elif arr.ndim == 3:
            arr = arr.transpose(2, 0, 1)
        else:
            raise ShapeError(
                f"ImageClassificationBatcher: item {k} image must be (H, W) or (H, W, C), got {arr.shape}"
            )
        return arr.astype(np.float32) / np.float32(_SCALE.get(arr.dtype.name, 1.0))

    def _stacked(self, pairs: list[tuple[Any, Any]]) -> Any:
        """The (N, C, H, W) float32 images scaled to [0, 1] with one stack and one conversion for the
        whole batch (the common case: every image one shape and pixel type), or None otherwise."""
        import numpy as np

        raw = [np.asarray(image) for image, _ in pairs]
        first = raw[0]
        if first.ndim not in (2, 3) or any(a.shape != first.shape or a.dtype != first.dtype for a in raw):
            return None
        stacked = np.stack(raw)
        scale = np.float32(_SCALE.get(first.dtype.name, 1.0))
        out = stacked.astype(np.float32)  # always a new array: divided in place below
        if scale != 1:
            out /= scale
        return out[:, None] if first.ndim == 2 else out.transpose(0, 3, 1, 2)

    def _normalise(self, x: Any) -> Any:
        import numpy as np

        c = x.shape[1]
        for name, v in (("mean", self.mean), ("std", self.std)):
            if len(v) not in (1, c):
                raise ShapeError(
                    f"ImageClassificationBatcher: {name} has {len(v)} values for {c}-channel images"
                )
        mean = np.asarray(self.mean, np.float32).reshape(1, -1, 1, 1)
        std = np.asarray(self.std, np.float32).reshape(1, -1, 1, 1)
        return (x - mean) / std

    def batch(self, items: Sequence[Any], device: DeviceLike) -> tuple[Tensor, Tensor]:
        """``(images (N, C, H, W) float32, targets (N,) int64 or the backend's int)`` tensors on ``device``."""
        import numpy as np

        from ... import _creation

        if not items:
            raise ValueError("ImageClassificationBatcher: cannot batch an empty list of items")
        pairs = [_image_and_label(item) for item in items]
        images = self._stacked(pairs)
        if images is None:  # images of several shapes or pixel types: item by item, naming the odd one
            arrays = [self._array(k, image) for k, (image, _) in enumerate(pairs)]
            first = arrays[0].shape
            for k, arr in enumerate(arrays):
                if arr.shape != first:
                    raise ShapeError(
                        f"ImageClassificationBatcher: item {k} image is (C, H, W) {arr.shape}, item 0 is {first}; "
                        "resize images to one size before batching"
                    )
            images = np.stack(arrays)
        images = self._normalise(images)
        targets = np.asarray([int(label) for _, label in pairs], dtype=np.int64)
        from ..._device import device as as_device

        ints = as_device(device).backend.default_int  # int64, or the backend's int where it has none
        return (
            _creation.tensor(images, dtype="float32", device=device),
            _creation.tensor(targets, dtype=ints, device=device),  # said, not narrowed with a warning
        )

    def __repr__(self) -> str:
        return f"ImageClassificationBatcher(mean={self.mean}, std={self.std})"
