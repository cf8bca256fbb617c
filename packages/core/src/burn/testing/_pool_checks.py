"""A check GPU backends' pool tests share: max and average pools of a strided view against burn's numpy
backend on the same values."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_strided_pools(backend: Any, ref: Any, x: np.ndarray, case: tuple[Any, ...]) -> np.ndarray:
    """``case`` = (shape, kernel, stride, padding, dilation, ceil_mode); ``x`` is float32 of ``shape`` with
    its last dim doubled. The backend's ``max_pool`` (values and indices, exactly) and ``avg_pool``
    (count_include_pad, within 1e-6) of every other column of ``x``, taken as a strided slice on the
    device, against ``ref``'s (the numpy backend) on the same values made dense. Returns those dense
    values."""
    import burn

    shape, k, s, p, d, ceil = case
    steps = (1,) * (len(shape) - 1) + (2,)
    strided = backend.slice(
        backend.from_numpy(x, burn.float32), tuple((0, n, st) for n, st in zip(x.shape, steps))
    )
    xs = np.ascontiguousarray(x[(slice(None),) * (len(shape) - 1) + (slice(None, None, 2),)])
    dense = ref.from_numpy(xs, burn.float32)
    want_v, want_i = (ref.to_numpy(t) for t in ref.max_pool(dense, k, s, p, d, ceil))
    values, index = backend.max_pool(strided, k, s, p, d, ceil)
    np.testing.assert_array_equal(backend.to_numpy(values), want_v)
    np.testing.assert_array_equal(backend.to_numpy(index), want_i)
    want = ref.to_numpy(ref.avg_pool(dense, k, s, p, True, ceil))
    np.testing.assert_allclose(
        backend.to_numpy(backend.avg_pool(strided, k, s, p, True, ceil)), want, rtol=1e-6, atol=1e-6
    )
    return xs
