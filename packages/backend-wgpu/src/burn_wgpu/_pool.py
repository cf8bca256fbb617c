"""1-d and 2-d pools on wgpu: the direct kernels of ``_kernels.pool`` and the tuned pool family
(``burn.autotune``) that chooses among them.

Candidates: the direct kernels ("w<workgroup size>p<outputs per invocation>") and "compose" (the
reference: the backend contract's default, strided windows + reduce + argmax + gather). Only 1-d and
2-d pools of float (max: and int) tensors come here (``WgpuOps.max_pool``). Arguments of every
candidate: (backend, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad), 1-d
pools already lifted to 2-d (height 1); max returns (values, indices).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import burn
from burn.autotune import Candidate, Family, bucket
from burn.backend import pool_out_sizes

from ._kernels.elementwise import grid
from ._primitive import WgpuTensor
from ._tuning import Ints, candidate, close, geometry_key, pack, tuner

_POOL_MIN_WORK = 1 << 22  # outputs x window taps below which a pool is not tuned
_POOL_DEFAULT = "w128p2"


def pool2d_direct(
    backend: Any,
    op: str,
    x: WgpuTensor,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    wg: int = 128,
    px: int = 2,
) -> Any:
    """A 2-d max ("max": (values, int32 indices)) or average ("avg") pool of x (N, C, H, W) with the
    direct kernel of ``_kernels.pool`` (workgroup size ``wg``, ``px`` outputs per invocation)."""
    from ._kernels import pool as KP

    x = backend.contiguous(x)
    n, c, h, w = x.shape
    oh, ow = pool_out_sizes(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    out = backend.empty((n, c, oh, ow), x.dtype)
    idx = backend.empty((n, c, oh, ow), burn.int32) if op == "max" else None
    pb = -(-ow // px)
    total = n * c * oh * pb
    if out.numel:
        kern = KP.render(op, x.dtype, wg, px)
        meta = pack(
            total, pb, oh, ow, h, w, *kernel, *stride, *padding, *dilation, x.offset, int(count_include_pad)
        )
        buffers = [out.buffer] + ([idx.buffer] if idx is not None else []) + [x.buffer]
        backend.ex.dispatch(kern, buffers, meta, grid(total, wg))
    return (out, idx) if idx is not None else out


def _pool_compose(
    backend: Any,
    op: str,
    x: WgpuTensor,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Any:
    from burn.backend import Backend

    if op == "max":
        return Backend.max_pool(backend, x, kernel, stride, padding, dilation, ceil_mode)
    return Backend.avg_pool(backend, x, kernel, stride, padding, count_include_pad, ceil_mode)


def _pool_candidate(wg: int, px: int, fast: bool) -> Candidate:
    return candidate(f"w{wg}p{px}", partial(pool2d_direct, wg=wg, px=px), fast, threads=wg)


def _pool_key(
    backend: Any,
    op: str,
    x: WgpuTensor,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
) -> str:
    n, c, h, w = x.shape
    geometry = geometry_key(kernel, stride, padding, dilation)
    flags = ("c" if ceil_mode else "") + ("i" if count_include_pad and op == "avg" else "")
    return f"{op} {x.dtype.name} nc{bucket(n * c)} h{bucket(h)} w{bucket(w)} {geometry}{' ' + flags if flags else ''}"


def _pool_close(out: Any, ref: Any) -> bool:
    """Max pools: values close and indices equal; average pools: ``_tuning.close``."""
    import numpy as np

    if isinstance(ref, tuple):
        if not isinstance(out, tuple) or len(out) != len(ref):
            return False
        return close(out[0], ref[0]) and np.array_equal(np.asarray(out[1]), np.asarray(ref[1]))
    return close(out, ref)


POOL = Family(
    "pool",
    (
        Candidate("compose", _pool_compose),
        *(
            _pool_candidate(wg, px, fast=(wg, px) in ((128, 1), (128, 2), (256, 4)))
            for px in (1, 2, 4)
            for wg in (64, 128, 256)
        ),
    ),
    key=_pool_key,
    reference="compose",
    default=_POOL_DEFAULT,
    close=_pool_close,
)


def pool2d(
    backend: Any,
    op: str,
    x: WgpuTensor,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Any:
    """A 2-d pool through the tuned candidate; pools under ``_POOL_MIN_WORK`` (outputs x taps) and
    browser-portable devices use the default direct kernel untuned."""
    args = (op, x, *map(tuple, (kernel, stride, padding, dilation)), ceil_mode, count_include_pad)
    oh, ow = pool_out_sizes(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    work = x.shape[0] * x.shape[1] * oh * ow * kernel[0] * kernel[1]
    if work >= _POOL_MIN_WORK and not backend.ctx.portable:
        return tuner(backend).run(POOL, backend, *args)
    return POOL.by_name[_POOL_DEFAULT].fn(backend, *args)
