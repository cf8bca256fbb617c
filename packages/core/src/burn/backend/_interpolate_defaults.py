"""Core-only default for interpolate: nearest, bilinear and bicubic resizing, one spatial dim at a time.

All three are separable: along each dim an output sample is a weighted sum of a few input taps
(1 for nearest, 2 for linear, 4 for cubic). The tap indices and weights depend only on the sizes,
so they are computed on the host in float64 and uploaded; the data is gathered with ``select``,
weighted with ``mul`` and summed with ``reduce``. Taps outside the input are clamped to the border,
as PyTorch does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ._base import Backend

Prim = Any
Ints = tuple[int, ...]

CUBIC_A = -0.75  # PyTorch's (and Keys') cubic convolution coefficient


def _nearest(size: int, out: int, align_corners: bool) -> tuple[np.ndarray, None]:
    import numpy as np

    # PyTorch's "nearest": src = floor(dst * in / out), computed exactly in integers
    idx = np.minimum((np.arange(out) * size) // out, size - 1)
    return idx[None, :], None


def _source(size: int, out: int, align_corners: bool) -> np.ndarray:
    """Continuous source coordinate of each output sample (float64)."""
    import numpy as np

    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        return dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    return (dst + 0.5) * (size / out) - 0.5


def _linear(size: int, out: int, align_corners: bool) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    src = np.maximum(_source(size, out, align_corners), 0.0)  # PyTorch clamps negative sources for linear
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    lam = src - i0
    i1 = np.minimum(i0 + 1, size - 1)
    return np.stack([i0, i1]), np.stack([1.0 - lam, lam])


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(src)."""
    import numpy as np

    a = CUBIC_A

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])


def _cubic(size: int, out: int, align_corners: bool) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    src = _source(size, out, align_corners)  # no clamping for cubic
    base = np.floor(src).astype(np.int64)
    taps = np.clip(base[None, :] + np.arange(-1, 3)[:, None], 0, size - 1)
    return taps, _cubic_weights(src - base)


TAPS = {"nearest": _nearest, "bilinear": _linear, "bicubic": _cubic}


def interpolate(b: Backend, x: Prim, size: Ints, mode: str, align_corners: bool) -> Prim:
    """Resize the spatial dims of x (N, C, *S) to ``size``: "nearest", "bilinear" or "bicubic", with
    PyTorch's coordinate rules (ratio in / out; ``align_corners`` ignored for nearest). The frontend
    sends 4-d inputs only (1-d resizes arrive with a unit height); this default handles any number of
    spatial dims, one at a time."""
    for d, out in enumerate(size):
        axis = 2 + d
        shape = tuple(b.shape_of(x))
        if shape[axis] == out and mode == "nearest":
            continue  # nearest with equal sizes is the identity
        index, weight = TAPS[mode](shape[axis], out, align_corners)
        picked = b.select(x, axis, b.from_numpy(index.reshape(-1), b.default_int))
        x = b.reshape(picked, shape[:axis] + tuple(index.shape) + shape[axis + 1 :])
        if weight is not None:
            rank = len(shape) + 1
            w_shape = (1,) * axis + tuple(weight.shape) + (1,) * (rank - axis - 2)
            x = b.binary("mul", x, b.reshape(b.from_numpy(weight, b.dtype_of(x)), w_shape))
            x = b.reduce("sum", x, (axis,), False)
        else:
            x = b.reshape(x, shape[:axis] + (out,) + shape[axis + 1 :])
    return x
