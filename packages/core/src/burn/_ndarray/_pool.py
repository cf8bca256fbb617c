"""numpy overrides of the pooling ops: max pool as element-wise ops over the kernel's taps (strided
views), or an argmax over window rows where the output is small against the kernel; avg pool as a sum
of taps; adaptive pools with equal windows as a reshape (else the core defaults). 2-d max and avg pools
(and a max pool's values alone, ``max_pool_values``) run compiled kernels (``burn._native._ops_pool``, the same results) where a C compiler works and the
pool is large enough.

Shape bookkeeping (output sizes, pads, divisors) is shared with the core-only defaults in
``burn.backend._pool_defaults``, so the two agree by construction on everything but the arithmetic.
"""

from __future__ import annotations

import functools
import itertools
import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..backend import Backend, pool_out_sizes
from ..backend import _pool_defaults as P
from ..backend._conv_defaults import fill_value
from ._conv_plans import _pad, _windows

if TYPE_CHECKING:
    import numpy as np

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one: these formulations run on either namespace (``xp``)


# A window max as a chain of element-wise ops over the kernel's taps (strided views of x, one per
# kernel offset) costs a few passes over the output per tap; argmax over contiguous window rows costs
# one copy of every window. The taps win unless the output is small against the kernel (global pools):
# measured crossover between 130 and 220 outputs per tap (float32, one core).
_TAPS_MIN_OUTPUTS = 200


def _offsets(kernel: Ints) -> list[Ints]:
    return list(itertools.product(*(range(k) for k in kernel)))


def _tap(offset: Ints, stride: Ints, dilation: Ints, out: Ints) -> tuple[slice, ...]:
    """Index of the (N, C, *out) view of the padded input seen by kernel ``offset`` in every window."""
    return (slice(None), slice(None)) + tuple(
        slice(k * d, k * d + (o - 1) * st + 1, st) for k, d, o, st in zip(offset, dilation, out, stride)
    )


def _first_match(xp: ModuleType, taps: list[Array], values: Array) -> Array:
    """Kernel offset (row-major) of the first tap equal to ``values``: the count of leading taps that
    differ from the max. Branch-free (masked copies and ``where`` mispredict on random data); exact
    when no value is NaN. uint8 counts while the kernel has at most 256 taps."""
    miss = taps[0] != values
    arg = miss.astype(xp.uint8 if len(taps) <= 256 else xp.int32)
    for tap in taps[1:-1]:  # the last tap matches whenever all before it missed
        miss &= tap != values
        arg += miss
    return arg


@functools.lru_cache(maxsize=64)
def _pool_index_tables(
    kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, spatial: Ints, out: Ints
) -> tuple[np.ndarray, np.ndarray]:
    """Flat input index of window o's kernel offset k as ``base[o] + table[k]`` (int64, read-only):
    base (*out) is the window origin, table (prod(kernel),) the offset, both in unpadded coordinates."""
    import numpy as np

    nd = len(kernel)
    inner = [math.prod(spatial[d + 1 :]) for d in range(nd)]
    base = np.zeros(out, dtype=np.int64)
    for d in range(nd):
        origin = np.arange(out[d], dtype=np.int64) * stride[d] - padding[d]
        base = base + (origin * inner[d]).reshape((out[d],) + (1,) * (nd - 1 - d))
    table = np.array(
        [sum(k * dl * s for k, dl, s in zip(off, dilation, inner)) for off in _offsets(kernel)],
        dtype=np.int64,
    )
    base.flags.writeable = table.flags.writeable = False
    return base, table


class NdArrayPoolOps(Backend):  # a mixin of NdArrayModuleOps
    xp: ModuleType  # the array namespace: numpy (or cupy)

    def max_pool(
        self, x: Array, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Array, Array]:
        xp = self.xp
        if xp.__name__ == "numpy" and x.ndim == 4:  # compiled where a C compiler works and it pays
            from .._native import _ops_pool

            done = _ops_pool.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
            if done is not None:
                return done
        spatial = tuple(x.shape[2:])
        out = pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)
        pads = P.pool_pads(spatial, kernel, stride, padding, dilation, out)
        xpad = _pad(xp, x, pads, fill_value(self.dtype_of(x), lowest=True))
        base, table = (
            xp.asarray(t) for t in _pool_index_tables(kernel, stride, padding, dilation, spatial, out)
        )
        kp = math.prod(kernel)
        if kp > 1 and math.prod(out) * x.shape[0] * x.shape[1] >= _TAPS_MIN_OUTPUTS * kp:
            taps = [xpad[_tap(offset, stride, dilation, out)] for offset in _offsets(kernel)]
            values = xp.maximum(taps[0], taps[1])
            for tap in taps[2:]:
                xp.maximum(values, tap, out=values)
            # a NaN max equals no tap: then the whole pool takes the argmax path (first NaN wins)
            if x.dtype.kind != "f" or not xp.isnan(values).any():
                return values, xp.add(base, xp.take(table, _first_match(xp, taps, values)))
        view = _windows(xp, xpad, kernel, stride, dilation, out)
        # window axes last: each window is one contiguous row for argmax (a copy of the strided view)
        last = (0, 1) + tuple(range(2 + len(kernel), view.ndim)) + tuple(range(2, 2 + len(kernel)))
        cols = view.transpose(last).reshape(x.shape[:2] + out + (kp,))
        arg = xp.argmax(cols, axis=-1)
        values = xp.take_along_axis(cols, arg[..., None], axis=-1)[..., 0]
        return values, xp.add(base, xp.take(table, arg))

    def max_pool_values(
        self, x: Array, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> Array:
        """``max_pool``'s values alone, for callers that never read the indices (ONNX inference): a
        2-d pool runs the compiled values kernel where a C compiler works and it pays (no argmax, no
        padded copy), else the running maximum over the kernel's taps of a padded copy."""
        xp = self.xp
        if xp.__name__ == "numpy" and x.ndim == 4:
            from .._native import _ops_pool

            done = _ops_pool.max_pool2d_values(x, kernel, stride, padding, dilation, ceil_mode)
            if done is not None:
                return done
        spatial = tuple(x.shape[2:])
        out = pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)
        pads = P.pool_pads(spatial, kernel, stride, padding, dilation, out)
        xpad = _pad(xp, x, pads, fill_value(self.dtype_of(x), lowest=True))
        taps = [xpad[_tap(offset, stride, dilation, out)] for offset in _offsets(kernel)]
        if len(taps) == 1:
            return xp.ascontiguousarray(taps[0])
        values = xp.maximum(taps[0], taps[1])
        for tap in taps[2:]:
            xp.maximum(values, tap, out=values)
        return values

    def avg_pool(
        self, x: Array, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Array:
        xp = self.xp
        if xp.__name__ == "numpy" and x.ndim == 4:
            from .._native import _ops_pool

            pooled = _ops_pool.avg_pool2d(x, kernel, stride, padding, count_include_pad, ceil_mode)
            if pooled is not None:
                return pooled
        spatial = tuple(x.shape[2:])
        ones = (1,) * len(spatial)
        out = pool_out_sizes(spatial, kernel, stride, padding, ones, ceil_mode)
        xpad = _pad(xp, x, P.pool_pads(spatial, kernel, stride, padding, ones, out), 0)
        total = xp.zeros(x.shape[:2] + out, dtype=x.dtype)
        for offset in _offsets(kernel):
            total += xpad[_tap(offset, stride, ones, out)]
        divisor = P.avg_divisor(spatial, kernel, stride, padding, out, count_include_pad)
        total /= xp.asarray(divisor, dtype=x.dtype)
        return total

    def adaptive_avg_pool(self, x: Array, output_size: Ints) -> Array:
        shape = x.shape
        if any(s % o for s, o in zip(shape[2:], output_size)):
            return super().adaptive_avg_pool(x, output_size)
        # equal windows: a reshape into (O, k) pairs and one mean
        split = shape[:2] + tuple(v for o, s in zip(output_size, shape[2:]) for v in (o, s // o))
        axes = tuple(range(3, len(split), 2))
        return x.reshape(split).mean(axis=axes, dtype=x.dtype)

    def adaptive_max_pool(self, x: Array, output_size: Ints) -> tuple[Array, Array]:
        spatial = tuple(x.shape[2:])
        if any(s % o for s, o in zip(spatial, output_size)):
            return super().adaptive_max_pool(x, output_size)
        kernel = tuple(s // o for s, o in zip(spatial, output_size))
        zeros = (0,) * len(spatial)
        return self.max_pool(x, kernel, kernel, zeros, (1,) * len(spatial), False)
