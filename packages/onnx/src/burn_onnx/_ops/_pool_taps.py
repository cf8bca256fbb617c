"""Average pooling as a sum of strided slices (one per kernel tap), for what the backends' pools do not
take: dilated windows. Each tap is a strided slice of the padded input, so it runs on every backend."""

from __future__ import annotations

import itertools
import math

import burn
from burn.backend import conv_transpose_out_sizes, pool_out_sizes


def _pad_spatial(x: burn.Tensor, begin: list[int], end: list[int]) -> burn.Tensor:
    flat: list[int] = []
    for b, e in zip(reversed(begin), reversed(end)):
        flat += [b, e]
    return x.pad(flat, "constant", 0.0)


def _tap_sum(
    x: burn.Tensor, kernel: tuple[int, ...], stride: list[int], dilation: list[int], out: list[int]
) -> burn.Tensor:
    total = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, dilation, out, stride)
        )
        part = x[where]
        total = part if total is None else total + part
    assert total is not None
    return total


def dilated_average_pool(
    x: burn.Tensor,
    kernel: tuple[int, ...],
    stride: list[int],
    dilation: list[int],
    begin: list[int],
    end: list[int],
    ceil: bool,
    include_pad: bool,
) -> burn.Tensor:
    """ONNX AveragePool with dilations: each window's mean over its cells inside the input (or, with
    ``include_pad``, inside the padded input); cells a ceil-mode window reaches past the padding never
    count."""
    spatial = list(x.shape[2:])
    padded = [n + b + e for n, b, e in zip(spatial, begin, end)]
    out = list(pool_out_sizes(padded, kernel, stride, [0] * len(kernel), dilation, ceil))
    if any(o <= 0 for o in out):
        raise ValueError(
            f"AveragePool: kernel {kernel} (dilation {dilation}) is larger than the input {spatial}"
        )
    zeros = [0] * len(kernel)  # the input extent the windows reach: a transposed conv's output size
    reach = conv_transpose_out_sizes(out, kernel, stride, zeros, zeros, dilation)
    extra = [max(r - p, 0) for r, p in zip(reach, padded)]
    xp = _pad_spatial(x, begin, [e + m for e, m in zip(end, extra)])
    if include_pad:
        ones = burn.ones((1, 1, *padded), dtype=x.dtype, device=x.device)
        share = _pad_spatial(ones, [0] * len(kernel), extra)
    else:
        ones = burn.ones((1, 1, *spatial), dtype=x.dtype, device=x.device)
        share = _pad_spatial(ones, begin, [e + m for e, m in zip(end, extra)])
    count = _tap_sum(share, kernel, stride, dilation, out)
    total = _tap_sum(xp, kernel, stride, dilation, out)
    if math.prod(kernel) == 0:
        return total
    return total / count
