"""Pillow, imported only when an image is first needed, and image decoding to numpy arrays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import DatasetError

_EXTRA_HINT = "pip install 'burn-core[vision]'"

# What each Pillow mode is converted to before becoming an array: grey stays one channel, anything
# with transparency becomes RGBA, every other colour mode RGB.
_MODE_TARGET = {"1": "L", "L": "L", "I;16": "I;16", "LA": "RGBA", "PA": "RGBA", "RGBA": "RGBA", "La": "RGBA"}


def pillow(what: str) -> Any:
    """The ``PIL.Image`` module, or an ImportError that names the extra to install."""
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError(f"{what} needs Pillow to decode images: {_EXTRA_HINT}") from exc
    return Image


def _open(path: Path, what: str) -> Any:
    Image = pillow(what)
    try:
        img = Image.open(path)
        img.load()
    except FileNotFoundError:
        raise
    except (Image.UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise DatasetError(
            path, f"{what}: not an image Pillow can decode ({type(exc).__name__}: {exc})"
        ) from exc
    return img


def decode_image(path: Path, what: str) -> Any:
    """The image at ``path`` as an (H, W, C) array: uint8 (uint16 for 16-bit grey), C = 1, 3 or 4."""
    import numpy as np

    img = _open(path, what)
    target = _MODE_TARGET.get(img.mode)
    if target is None:
        target = "RGBA" if img.mode == "P" and "transparency" in img.info else "RGB"
    if img.mode != target:
        img = img.convert(target)
    arr = np.asarray(img)
    return arr[:, :, None] if arr.ndim == 2 else arr


def decode_mask(path: Path, what: str) -> Any:
    """A segmentation mask as an (H, W) int64 array of class indices.

    Grey and palette masks hold the index directly; an RGB mask is accepted when its channels agree.
    """
    import numpy as np

    img = _open(path, what)
    arr = np.asarray(img)
    if arr.ndim == 3:
        if arr.shape[2] == 4:
            arr = arr[:, :, :3]
        if not (arr == arr[:, :, :1]).all():
            raise DatasetError(
                path,
                f"{what}: mask has colour pixels (mode {img.mode}); expected one class index per pixel "
                "(a grey 'L' or palette 'P' image)",
            )
        arr = arr[:, :, 0]
    return arr.astype(np.int64)
