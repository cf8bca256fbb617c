"""Long-row reductions on wgpu: the tree kernel of ``_kernels.reduce`` in each workgroup shape the
tuned reduce family (``burn.autotune``) chooses among.

Candidates: the tree kernel with a workgroup size of ``_kernels.reduce.TREE_SIZES`` and a chunk of
``per_invocation`` elements per invocation (one workgroup per chunk of ``wg * per_invocation``); the
partials of a second pass take the untuned path. "tree256x16" is the untuned kernel (reference).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import burn
from burn.autotune import Candidate, Family, bucket

from ._kernels import reduce as KR
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor
from ._split import dense_rows
from ._tuning import candidate, close, pack
from ._windows import window

_REDUCE_MIN_ELEMENTS = 1 << 22
_REDUCE_MIN_ROW = 4096


def reduce_rows(
    backend: Any, op: str, x: WgpuTensor, rows: int, n: int, out_dt: burn.DType, wg: int, per_invocation: int
) -> WgpuTensor:
    """``op`` over each of ``rows`` dense rows of ``n`` elements of x, with one tree shape."""
    chunk = wg * per_invocation
    chunks = -(-n // chunk)
    part_dt = out_dt if chunks == 1 else (burn.float32 if x.dtype is burn.float16 else x.dtype)
    part = backend.empty((rows, chunks), part_dt)
    kernel = KR.render(op, x.dtype, part_dt, False, wg)
    xb, offset = window(dense_rows(x, rows, n), backend.pool.max_binding)  # a window of a larger buffer
    meta = pack(rows, n, chunks, chunk, offset)
    backend.ex.dispatch(kernel, [part.buffer, xb], meta, grid(rows * chunks, 1))
    if chunks == 1:
        return backend.reshape(part, (rows,))
    return backend._reduce_rows(op, part, rows, chunks, out_dt)


def _tree(wg: int, per_invocation: int, fast: bool) -> Candidate:
    run = partial(reduce_rows, wg=wg, per_invocation=per_invocation)
    return candidate(f"tree{wg}x{per_invocation}", run, fast, threads=wg)


def _reduce_key(backend: Any, op: str, x: WgpuTensor, rows: int, n: int, out_dt: burn.DType) -> str:
    return f"{op} {x.dtype.name}->{out_dt.name} r{bucket(rows)} n{bucket(n)}"


REDUCE = Family(
    "reduce",
    tuple(
        _tree(wg, e, fast=(wg, e) in ((256, 16), (256, 64), (128, 16)))
        for wg in reversed(KR.TREE_SIZES)
        for e in (4, 16, 64)
    ),
    key=_reduce_key,
    reference="tree256x16",
    close=close,
)


def should_tune_reduce(rows: int, n: int) -> bool:
    """Long rows of a large tensor: where the tree's shape matters (many short rows take one
    workgroup per row or chunk whatever the tree, so tuning them only costs time)."""
    return n >= _REDUCE_MIN_ROW and rows * n >= _REDUCE_MIN_ELEMENTS
