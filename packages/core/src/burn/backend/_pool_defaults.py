"""Core-only defaults for pooling: max/avg pools over strided windows, adaptive pools over gathered
windows. Index tables and divisors depend only on shapes, so they are built on the host (small
numpy arrays) and uploaded once with ``from_numpy``; the data never leaves the device.

Max-pool indices follow PyTorch: the flat index into the input's spatial dims of the first maximum
in row-major kernel order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ._base import Backend

from .._dtype import bool_
from ._conv_defaults import fill_value, im2col
from ._shapes import conv_transpose_out_sizes, pool_out_sizes

Prim = Any
Ints = tuple[int, ...]


def pool_pads(
    spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, out: Ints
) -> tuple[tuple[int, int], ...]:
    """(before, after) pads so every window of a ceil-mode output fits in the padded input."""
    # last index the windows touch, + 1, in padded coordinates: a transposed conv's rule without padding
    zeros = (0,) * len(out)
    reach = conv_transpose_out_sizes(out, kernel, stride, zeros, zeros, dilation)
    return tuple((p, max(p, r - s - p)) for s, p, r in zip(spatial, padding, reach))


def _flat_positions(per_dim: list[np.ndarray], spatial: Ints) -> np.ndarray:
    """Flat input indices (K1*...*Kn, O1, ..., On) from per-dim positions of shape (K_d, O_d)."""
    import numpy as np

    nd = len(per_dim)
    table = np.zeros([t.shape[0] for t in per_dim] + [t.shape[1] for t in per_dim], dtype=np.int64)
    inner = 1
    for d in range(nd - 1, -1, -1):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = per_dim[d].shape
        table = table + per_dim[d].reshape(shape) * inner
        inner *= spatial[d]
    return table.reshape((-1,) + table.shape[nd:])


def _arg_max_windows(b: Backend, cols: Prim, positions: np.ndarray) -> tuple[Prim, Prim]:
    """Max over dim 2 of cols (N, C, K, *O) and the flat input index of the first maximum."""
    shape = tuple(b.shape_of(cols))
    values = b.reduce("max", cols, (2,), False)
    arg = b.arg_reduce("argmax", cols, 2, True)
    table = b.reshape(b.from_numpy(positions, b.default_int), (1, 1) + tuple(positions.shape))
    indices = b.gather(b.expand(table, shape), 2, arg)
    return values, b.reshape(indices, shape[:2] + shape[3:])


def max_pool(
    b: Backend, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
) -> tuple[Prim, Prim]:
    """N-d max pool: (values, indices); indices point into the flattened spatial input (PyTorch)."""
    import numpy as np

    spatial = tuple(b.shape_of(x)[2:])
    out = pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)
    pads = pool_pads(spatial, kernel, stride, padding, dilation, out)
    lowest = fill_value(b.dtype_of(x), lowest=True)
    cols, _ = im2col(b, x, kernel, stride, pads, dilation, out, lowest)
    per_dim = [
        np.arange(k)[:, None] * d + np.arange(o)[None, :] * st - p
        for k, st, p, d, o in zip(kernel, stride, padding, dilation, out)
    ]
    return _arg_max_windows(b, cols, _flat_positions(per_dim, spatial))


def avg_pool(
    b: Backend, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
) -> Prim:
    """N-d average pool; the divisor counts padding when ``count_include_pad`` (PyTorch)."""
    spatial = tuple(b.shape_of(x)[2:])
    ones = (1,) * len(spatial)
    out = pool_out_sizes(spatial, kernel, stride, padding, ones, ceil_mode)
    pads = pool_pads(spatial, kernel, stride, padding, ones, out)
    cols, _ = im2col(b, x, kernel, stride, pads, ones, out, 0.0)
    total = b.reduce("sum", cols, (2,), False)
    divisor = avg_divisor(spatial, kernel, stride, padding, out, count_include_pad)
    return b.binary("div", total, b.from_numpy(divisor, b.dtype_of(x)))


def avg_divisor(
    spatial: Ints, kernel: Ints, stride: Ints, padding: Ints, out: Ints, count_include_pad: bool
) -> np.ndarray:
    """Divisor per output, as PyTorch: the window clipped to the padded input (``count_include_pad``)
    or to the input itself; a float64 numpy array of shape ``out``."""
    import numpy as np

    divisor = np.ones(out, dtype=np.float64)
    for d, (s, k, st, p, o) in enumerate(zip(spatial, kernel, stride, padding, out)):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        count = end - start if count_include_pad else np.minimum(end, s) - np.maximum(start, 0)
        divisor = divisor * count.reshape([o if i == d else 1 for i in range(len(out))])
    return divisor


def adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows [floor(i*in/out), ceil((i+1)*in/out)) as a (K, out) index table
    (short windows repeat their last index), a (K, out) validity mask and the window lengths."""
    import numpy as np

    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    length = end - start
    k = np.arange(int(length.max()))[:, None]
    return start + np.minimum(k, length - 1), k < length, length


def _take_windows(b: Backend, x: Prim, axis: int, table: np.ndarray) -> Prim:
    """x with ``axis`` (size S) replaced by two axes (K, O): x[..., table[k, o], ...]."""
    shape = tuple(b.shape_of(x))
    picked = b.select(x, axis, b.from_numpy(table.reshape(-1), b.default_int))
    return b.reshape(picked, shape[:axis] + tuple(table.shape) + shape[axis + 1 :])


def adaptive_avg_pool(b: Backend, x: Prim, output_size: Ints) -> Prim:
    """Mean over PyTorch's adaptive windows [floor(i*in/out), ceil((i+1)*in/out)) per dim."""
    # a box mean is a mean over each dim in turn; invalid (repeated) taps are zeroed with where, not
    # multiplied by 0, so an inf in one window cannot turn into nan
    for d, o in enumerate(output_size):
        axis = 2 + d
        size = b.shape_of(x)[axis]
        table, valid, length = adaptive_windows(size, o)
        x = _take_windows(b, x, axis, table)
        rank = len(b.shape_of(x))
        mask_shape = (1,) * axis + tuple(valid.shape) + (1,) * (rank - axis - 2)
        mask = b.reshape(b.from_numpy(valid, bool_), mask_shape)
        x = b.where(mask, x, fill_value(b.dtype_of(x)))
        x = b.reduce("sum", x, (axis,), False)
        lengths = b.from_numpy(length.reshape((o,) + (1,) * (rank - axis - 2)), b.dtype_of(x))
        x = b.binary("div", x, lengths)
    return x


def adaptive_max_pool(b: Backend, x: Prim, output_size: Ints) -> tuple[Prim, Prim]:
    """Max over adaptive windows: (values, flat spatial indices) as ``max_pool``."""
    # repeated taps are earlier taps of the same window, so they change neither the max nor the
    # first-maximum index in row-major order
    spatial = tuple(b.shape_of(x)[2:])
    nd = len(spatial)
    per_dim = []
    for d, o in enumerate(output_size):
        table = adaptive_windows(spatial[d], o)[0]
        x = _take_windows(b, x, 2 + 2 * d, table)  # (N, C, K1, O1, ..., Kd, Od, S_d+1, ...)
        per_dim.append(table)
    shape = b.shape_of(x)
    x = b.permute(x, (0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2)))
    kp = math.prod(shape[2 : 2 + 2 * nd : 2])
    cols = b.reshape(x, (shape[0], shape[1], kp) + tuple(output_size))
    return _arg_max_windows(b, cols, _flat_positions(per_dim, spatial))
