"""Export rules of layout, indexing, module and creation ops (the element-wise and reduction rules are
in ``_rules``, which joins both tables into ``RULES``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from burn.ir import OpRecord

from ._builder import Builder, OpUnsupported, Rule, onnx_type, reduce_node
from ._builder import output_name as _out

INT64_MIN = -(2**63)


# ---------------------------------------------------------------- layout
def _reshape(b: Builder, op: OpRecord) -> list[str]:
    return [b.node("Reshape", [b.name(op.args[0]), b.ints(op.outputs[0].shape)], [_out(op)])]


def _permute(b: Builder, op: OpRecord) -> list[str]:
    x, dims = op.args
    return [b.node("Transpose", [b.name(x)], [_out(op)], perm=list(dims))]


def _expand(b: Builder, op: OpRecord) -> list[str]:
    x, shape = op.args
    return [b.node("Expand", [b.name(x), b.ints(shape)], [_out(op)])]


def _slice(b: Builder, op: OpRecord) -> list[str]:
    x, index = op.args
    # a negative step's stop of -1 means "past index 0", which ONNX writes as INT64_MIN
    ends = [INT64_MIN if st < 0 and stop < 0 else stop for _, stop, st in index]
    inputs = [b.ints([s for s, _, _ in index]), b.ints(ends), b.ints(range(len(index)))]
    return [b.node("Slice", [b.name(x), *inputs, b.ints([st for _, _, st in index])], [_out(op)])]


def _flip(b: Builder, op: OpRecord) -> list[str]:
    x, dims = op.args
    n = len(dims)
    inputs = [b.ints([-1] * n), b.ints([INT64_MIN] * n), b.ints(dims), b.ints([-1] * n)]
    return [b.node("Slice", [b.name(x), *inputs], [_out(op)])]


def _cat(b: Builder, op: OpRecord) -> list[str]:
    xs, dim = op.args
    return [b.node("Concat", [b.name(x) for x in xs], [_out(op)], axis=dim)]


def _stack(b: Builder, op: OpRecord) -> list[str]:
    xs, dim = op.args
    axes = b.ints([dim])
    parts = [b.node("Unsqueeze", [b.name(x), axes]) for x in xs]
    return [b.node("Concat", parts, [_out(op)], axis=dim)]


def _repeat(b: Builder, op: OpRecord) -> list[str]:
    x, reps = op.args
    return [b.node("Tile", [b.name(x), b.ints(reps)], [_out(op)])]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad(b: Builder, op: OpRecord) -> list[str]:
    x, pads, mode, value = op.args
    ref = b.ref(x)
    full = list(pads) + [(0, 0)] * (len(ref.shape) - len(pads))
    inputs = [b.name(x), b.ints([lo for lo, _ in full] + [hi for _, hi in full])]
    if mode == "constant":
        inputs.append(b.scalar(value, ref.dtype))
    return [b.node("Pad", inputs, [_out(op)], mode=_PAD_MODES[mode])]


def _trilu(upper: int) -> Rule:
    def rule(b: Builder, op: OpRecord) -> list[str]:
        x, k = op.args
        return [b.node("Trilu", [b.name(x), b.const(np.int64(k))], [_out(op)], upper=upper)]

    return rule


# ---------------------------------------------------------------- indexing
def _gather(b: Builder, op: OpRecord) -> list[str]:
    x, dim, index = op.args
    return [b.node("GatherElements", [b.name(x), b.name(index)], [_out(op)], axis=dim)]


def _select(b: Builder, op: OpRecord) -> list[str]:
    x, dim, indices = op.args
    return [b.node("Gather", [b.name(x), b.name(indices)], [_out(op)], axis=dim)]


def _embedding(b: Builder, op: OpRecord) -> list[str]:
    weight, indices = op.args
    return [b.node("Gather", [b.name(weight), b.name(indices)], [_out(op)], axis=0)]


def _check_index(b: Builder, op: OpRecord) -> list[str]:
    index, size, negative, _ = op.args
    note = (
        f"burn check_index (size {size}, negative={negative}): an index check has no ONNX form, the "
        "index passes through (Gather/GatherElements take negative indices and wrap them themselves)"
    )
    return [b.node("Identity", [b.name(index)], [_out(op)], doc_string=note)]


def _scatter_add(b: Builder, op: OpRecord) -> list[str]:
    x, dim, index, src = op.args
    if b.opset < 16:
        raise OpUnsupported("ScatterElements with reduction='add' needs opset 16")
    names = [b.name(x), b.name(index), b.name(src)]
    return [b.node("ScatterElements", names, [_out(op)], axis=dim, reduction="add")]


def _mask_fill(b: Builder, op: OpRecord) -> list[str]:
    x, mask, value = op.args
    fill = b.scalar(value, b.ref(x).dtype)
    return [b.node("Where", [b.name(mask), fill, b.name(x)], [_out(op)])]


def _one_hot(b: Builder, op: OpRecord) -> list[str]:
    x, n, dtype = op.args
    ref = b.ref(x)
    from burn.backend import NUMPY_DTYPES

    classes = b.const(np.arange(n, dtype=NUMPY_DTYPES[ref.dtype]).reshape((1,) * len(ref.shape) + (n,)))
    eq = b.node("Equal", [b.node("Unsqueeze", [b.name(x), b.ints([-1])]), classes])
    return [b.node("Cast", [eq], [_out(op)], to=onnx_type(dtype))]


def _cumsum(b: Builder, op: OpRecord) -> list[str]:
    x, dim = op.args
    return [b.node("CumSum", [b.name(x), b.const(np.int64(dim))], [_out(op)])]


CUMPROD_MAX_ELEMENTS = 1 << 24  # the composed cumprod holds dim_size times the input's elements


def _cumprod(b: Builder, op: OpRecord) -> list[str]:
    """ONNX has no CumProd: out[..., i, ...] = ReduceProd over j of where(j <= i, x[..., j, ...], 1),
    an exact composition (the same factors) that holds an (n, n) window per position of ``dim``."""
    x, dim = op.args
    ref = b.ref(x)
    n = ref.shape[dim]
    if n * math.prod(ref.shape) > CUMPROD_MAX_ELEMENTS:
        raise OpUnsupported(
            f"ONNX has no CumProd; the composed form needs {n} x {math.prod(ref.shape)} elements, over the "
            f"limit of {CUMPROD_MAX_ELEMENTS}"
        )
    if ref.dtype.is_bool:
        raise OpUnsupported("cumprod of bool has no ONNX form")
    tail = (1,) * (len(ref.shape) - dim - 1)
    mask = np.tril(np.ones((n, n), dtype=bool)).reshape((n, n) + tail)
    spread = b.node("Unsqueeze", [b.name(x), b.ints([dim])])  # [..., 1, n, ...]: j on axis dim + 1
    kept = b.node("Where", [b.const(mask), spread, b.scalar(1, ref.dtype)])
    return [reduce_node(b, "ReduceProd", kept, [dim + 1], False, _out(op))]


def _index_out(b: Builder, op: OpRecord, idx: str, i: int = 1) -> str:
    """TopK/MaxPool int64 indices as the record's ``i``-th output (cast where its dtype differs)."""
    want = op.outputs[i].dtype
    if want.name == "int64":
        return b.node("Identity", [idx], [_out(op, i)])
    return b.node("Cast", [idx], [_out(op, i)], to=onnx_type(want))


def _top_k(b: Builder, x: Any, k: int, dim: int, largest: bool) -> tuple[str, str]:
    """TopK (sorted; equal values keep their order: the lower index first, as burn's stable sort)."""
    if b.ref(x).dtype.is_bool:
        raise OpUnsupported("sorting bool has no ONNX form (TopK takes numbers)")
    outs = [b.fresh(), b.fresh()]
    b.node("TopK", [b.name(x), b.ints([k])], outs, axis=dim, largest=int(largest), sorted=1)
    return outs[0], outs[1]


def _sort(b: Builder, op: OpRecord) -> list[str]:
    x, dim, descending = op.args
    values, idx = _top_k(b, x, b.ref(x).shape[dim], dim, bool(descending))
    return [b.node("Identity", [values], [_out(op)]), _index_out(b, op, idx)]


def _argsort(b: Builder, op: OpRecord) -> list[str]:
    x, dim, descending = op.args
    _, idx = _top_k(b, x, b.ref(x).shape[dim], dim, bool(descending))
    return [_index_out(b, op, idx, 0)]


def _topk(b: Builder, op: OpRecord) -> list[str]:
    x, k, dim = op.args
    values, idx = _top_k(b, x, int(k), dim, True)
    return [b.node("Identity", [values], [_out(op)]), _index_out(b, op, idx)]


# ---------------------------------------------------------------- module ops
def _conv(b: Builder, op: OpRecord) -> list[str]:
    x, w, bias, stride, padding, dilation, groups = op.args
    inputs = [b.name(x), b.name(w)] + ([b.name(bias)] if bias is not None else [])
    attrs = {"pads": list(padding) * 2, "strides": list(stride), "dilations": list(dilation)}
    return [b.node("Conv", inputs, [_out(op)], group=groups, **attrs)]


def _conv_transpose(b: Builder, op: OpRecord) -> list[str]:
    x, w, bias, stride, padding, output_padding, dilation, groups = op.args
    inputs = [b.name(x), b.name(w)] + ([b.name(bias)] if bias is not None else [])
    attrs = {
        "pads": list(padding) * 2,
        "strides": list(stride),
        "dilations": list(dilation),
        "output_padding": list(output_padding),
    }
    return [b.node("ConvTranspose", inputs, [_out(op)], group=groups, **attrs)]


def _max_pool(b: Builder, op: OpRecord) -> list[str | None]:
    x, kernel, stride, padding, dilation, ceil_mode = op.args
    attrs = {"kernel_shape": list(kernel), "strides": list(stride), "dilations": list(dilation)}
    flat = b.fresh()
    out = b.node(
        "MaxPool", [b.name(x)], [_out(op), flat], pads=list(padding) * 2, ceil_mode=int(ceil_mode), **attrs
    )
    # ONNX's indices count over N and C too ((n * C + c) * H * W + spatial); burn's are spatial only
    spatial = math.prod(b.ref(x).shape[2:])
    return [out, _index_out(b, op, b.node("Mod", [flat, b.const(np.int64(spatial))]))]


def _avg_pool(b: Builder, op: OpRecord) -> list[str]:
    x, kernel, stride, padding, count_include_pad, ceil_mode = op.args
    attrs = {"kernel_shape": list(kernel), "strides": list(stride), "pads": list(padding) * 2}
    flags = {"count_include_pad": int(count_include_pad), "ceil_mode": int(ceil_mode)}
    return [b.node("AveragePool", [b.name(x)], [_out(op)], **attrs, **flags)]


def _adaptive(global_op: str, pool_op: str) -> Rule:
    """Adaptive pools: Global*Pool for a 1x1 output; a fixed pool when each size divides evenly."""

    def rule(b: Builder, op: OpRecord) -> list[str | None]:
        x, size = op.args
        spatial = b.ref(x).shape[2:]
        if all(s == 1 for s in size):
            out = b.node(global_op, [b.name(x)], [_out(op)])
        elif all(n % s == 0 for n, s in zip(spatial, size)):
            kernel = [n // s for n, s in zip(spatial, size)]
            out = b.node(pool_op, [b.name(x)], [_out(op)], kernel_shape=kernel, strides=kernel)
        else:
            raise OpUnsupported(f"output size {tuple(size)} does not divide the input's {tuple(spatial)}")
        return [out] + [None] * (len(op.outputs) - 1)

    return rule


def _interpolate(b: Builder, op: OpRecord) -> list[str]:
    x, size, mode, align_corners = op.args
    sizes = b.ints(b.ref(x).shape[:2] + tuple(size))
    if mode == "nearest":  # floor(dst * in / out), as PyTorch's "nearest"
        attrs: dict[str, Any] = {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        }
    elif mode in ("bilinear", "bicubic", "linear"):
        attrs = {
            "mode": "cubic" if mode == "bicubic" else "linear",
            "coordinate_transformation_mode": "align_corners" if align_corners else "pytorch_half_pixel",
        }
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    else:
        raise OpUnsupported(f"interpolate mode {mode!r}")
    return [b.node("Resize", [b.name(x), "", "", sizes], [_out(op)], **attrs)]


# ---------------------------------------------------------------- creation
def _full(b: Builder, op: OpRecord) -> list[str]:
    from burn.backend import NUMPY_DTYPES

    shape, value, dtype = op.args
    return [b.const(np.full(tuple(shape), value, dtype=NUMPY_DTYPES[dtype]), name=_out(op))]


def _arange(b: Builder, op: OpRecord) -> list[str]:
    from burn.backend import NUMPY_DTYPES

    start, stop, step, dtype = op.args
    return [b.const(np.arange(start, stop, step).astype(NUMPY_DTYPES[dtype]), name=_out(op))]


SHAPE_RULES: dict[str, Rule] = {
    "reshape": _reshape,
    "permute": _permute,
    "expand": _expand,
    "slice": _slice,
    "flip": _flip,
    "cat": _cat,
    "stack": _stack,
    "repeat": _repeat,
    "pad": _pad,
    "tril": _trilu(0),
    "triu": _trilu(1),
    "gather": _gather,
    "select": _select,
    "embedding": _embedding,
    "check_index": _check_index,
    "scatter_add": _scatter_add,
    "mask_fill": _mask_fill,
    "one_hot": _one_hot,
    "cumsum": _cumsum,
    "cumprod": _cumprod,
    "sort": _sort,
    "argsort": _argsort,
    "topk": _topk,
    "conv": _conv,
    "conv_transpose": _conv_transpose,
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "adaptive_avg_pool": _adaptive("GlobalAveragePool", "AveragePool"),
    "adaptive_max_pool": _adaptive("GlobalMaxPool", "MaxPool"),
    "interpolate": _interpolate,
    "full": _full,
    "arange": _arange,
}
