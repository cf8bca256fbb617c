"""Launching element-wise kernels: broadcasting by strides, dim collapsing, scalar packing."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from burn import DType

from . import _windows as W
from ._dtypes import ELEM_BYTES, WIDE, scalar_bits
from ._kernels import elementwise as K
from ._primitive import WgpuTensor, contiguous_strides, numel

if TYPE_CHECKING:
    from ._backend import WgpuBackend


def broadcast_strides(x: WgpuTensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """x's strides seen from ``shape`` (x's shape right-aligned; stretched dims get stride 0)."""
    pad = len(shape) - len(x.shape)
    out = [0] * pad
    for s, st, n in zip(x.shape, x.strides, shape[pad:]):
        out.append(0 if s == 1 and n != 1 else st)
    return tuple(out)


def collapse(
    shape: tuple[int, ...], stride_sets: list[tuple[int, ...]]
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Merge adjacent dims that every operand walks as one (and drop size-1 dims): a dense or
    simply broadcast op usually ends as 1-d, so few kernel variants are ever compiled."""
    dims = [d for d, s in enumerate(shape) if s != 1]
    new_shape: list[int] = []
    new_strides: list[list[int]] = [[] for _ in stride_sets]
    for d in dims:
        if new_shape and all(ss[-1] == st[d] * shape[d] for ss, st in zip(new_strides, stride_sets)):
            new_shape[-1] *= shape[d]
            for ss, st in zip(new_strides, stride_sets):
                ss[-1] = st[d]
        else:
            new_shape.append(shape[d])
            for ss, st in zip(new_strides, stride_sets):
                ss.append(st[d])
    return tuple(new_shape), [tuple(s) for s in new_strides]


def run(
    backend: WgpuBackend,
    kind: str,
    op: str,
    compute: DType,
    out_dtype: DType,
    operands: list[WgpuTensor | float | int | bool],
    shape: tuple[int, ...],
    out: WgpuTensor | None = None,
) -> WgpuTensor:
    """Apply one table expression over ``operands`` (WgpuTensors or Python scalars of ``compute``'s
    kind) broadcast to ``shape``. ``out``: write into this view instead of a fresh tensor."""
    if K.runs_on_host(kind, op, compute):
        return _on_host(backend, kind, op, out_dtype, operands, shape, out)
    expr, is_bool = K.expression(kind, op, compute, out_dtype)
    if compute in WIDE:  # metadata words are 32-bit: a 64-bit scalar travels as a one-element tensor
        operands = [x if isinstance(x, WgpuTensor) else backend.scalar_tensor(x, compute) for x in operands]
    if out is None:
        out = backend.empty(shape, out_dtype)
    n = numel(shape)
    if n == 0:
        return out
    tensors = [x for x in operands if isinstance(x, WgpuTensor)]
    limit = backend.pool.max_binding
    if any(t.storage.nbytes > limit for t in (out, *tensors)):  # a buffer over one binding (``_windows``)
        views = [W.broadcast_view(t, shape) for t in (out, *tensors)]
        if not all(W.fits(v, limit) for v in views):
            for region in W.regions(shape, views, limit):
                parts = iter([W.sliced(v, region) for v in views[1:]])
                sub = [next(parts) if isinstance(x, WgpuTensor) else x for x in operands]
                target = W.sliced(views[0], region)
                run(backend, kind, op, compute, out_dtype, sub, target.shape, target)
            return out
    bound = [W.window(t, limit) for t in (out, *tensors)]  # (buffer or window, element offset)
    strides = [broadcast_strides(out, shape)] + [broadcast_strides(t, shape) for t in tensors]
    cshape, cstrides = collapse(shape, strides)
    dense = contiguous_strides(cshape)
    contig = all(s == dense for s in cstrides)
    nd = len(cshape)
    spec = tuple((x.dtype, True) if isinstance(x, WgpuTensor) else (compute, False) for x in operands)
    if contig and n % 4 == 0 and _vec4_ok([out, *tensors]):  # 16-byte loads and stores
        vwords = [n // 4, *(offset // 4 for _, offset in bound)]
        vwords += [scalar_bits(compute, x) for x in operands if not isinstance(x, WgpuTensor)]
        backend.ex.dispatch(
            K.render_vec4(expr, is_bool, out_dtype, spec),
            [buffer for buffer, _ in bound],
            struct.pack(f"<{len(vwords)}I", *vwords),
            K.grid(n // 4),
        )
        return out
    kernel = K.render(expr, is_bool, out_dtype, spec, nd, contig)
    words = [n, *cshape]
    for st, (_, offset) in zip(cstrides, bound):
        words += [*st, offset]
    for x in operands:
        if not isinstance(x, WgpuTensor):  # a scalar of the compute dtype (spec above)
            words.append(scalar_bits(compute, x))
    meta = struct.pack(f"<{len(words)}I", *words)
    backend.ex.dispatch(kernel, [buffer for buffer, _ in bound], meta, K.grid(n))
    return out


def _on_host(
    backend: WgpuBackend,
    kind: str,
    op: str,
    out_dtype: DType,
    operands: list[WgpuTensor | float | int | bool],
    shape: tuple[int, ...],
    out: WgpuTensor | None,
) -> WgpuTensor:
    """A float64 transcendental op computed by the numpy reference backend (one read, one upload):
    exact to float64, where an f32 kernel would not be (``_kernels.elementwise.runs_on_host``)."""
    import burn
    import numpy as np

    ref = burn.device("cpu").backend
    host = [backend.to_numpy(x) if isinstance(x, WgpuTensor) else x for x in operands]
    result = ref.unary(op, *host) if kind == "unary" else ref.binary(op, *host)  # no ternary is f32-only
    value = backend.from_numpy(np.broadcast_to(np.asarray(result), shape), out_dtype)
    if out is None:
        return value
    return run(backend, "copy", "copy", out_dtype, out_dtype, [value], shape, out)


def _vec4_ok(tensors: list[WgpuTensor]) -> bool:
    """Every tensor 4-byte typed with an offset that is a multiple of 4 elements (vec4-aligned)."""
    return all(t.offset % 4 == 0 and K.WGSL[t.dtype] in K.VEC4_DTYPES for t in tensors)


def nbytes(shape: tuple[int, ...], dtype: DType) -> int:
    return numel(shape) * ELEM_BYTES[dtype]
