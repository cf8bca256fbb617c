"""Shape and layout ops: Reshape, Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice, Expand, Tile,
Pad, Shape, Size, Constant(OfShape), Range, EyeLike, Trilu, Depth/SpaceToDepth, Cast(Like), Dropout."""

from __future__ import annotations

import math
from typing import Any

import burn
import numpy as np

from .._dtypes import BURN_TO_ONNX, ONNX_NAMES, ONNX_TO_BURN, STORED_AS, numpy_dtype, on_grid
from .._graph import Node
from .._registry import attr_in, checks, op, requires
from ._common import axes_arg, axis, full, index_tensor


@op("Reshape", host=(1,))
def reshape(ctx: Any, node: Node, x: burn.Tensor, shape: Any = None) -> burn.Tensor:
    target = ctx.ints(shape) if shape is not None else list(node.attrs["shape"])
    if not node.attrs.get("allowzero", 0):
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return x.reshape(*target)


@op("Flatten")
def flatten(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    a = int(node.attrs.get("axis", 1))
    a = a + x.ndim if a < 0 else a
    return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))


@op("Transpose")
def transpose(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    perm = node.attrs.get("perm") or list(range(x.ndim))[::-1]
    return x.permute(*perm) if x.ndim > 1 else x


@op("Squeeze", host=(1,))
def squeeze(ctx: Any, node: Node, x: burn.Tensor, axes: Any = None) -> burn.Tensor:
    dims = axes_arg(ctx, node, axes if node.opset >= 13 else None, x.ndim)
    if dims is None:
        dims = [i for i, d in enumerate(x.shape) if d == 1]
    keep = [d for i, d in enumerate(x.shape) if i not in dims]
    return x.reshape(*keep) if keep or x.numel() == 1 else x.reshape(())


@op("Unsqueeze", host=(1,), check=requires("axes", before=13))
def unsqueeze(ctx: Any, node: Node, x: burn.Tensor, axes: Any = None) -> burn.Tensor:
    raw = ctx.ints(axes) if node.opset >= 13 else list(node.attrs["axes"])
    rank = x.ndim + len(raw)
    dims = sorted(axis(a, rank, node, "axes") for a in raw)
    shape = list(x.shape)
    for d in dims:
        shape.insert(d, 1)
    return x.reshape(*shape)


@op("Concat", check=requires("axis"))
def concat(ctx: Any, node: Node, *xs: burn.Tensor) -> burn.Tensor:
    parts = [x for x in xs if x is not None]
    a = axis(int(node.attrs["axis"]), parts[0].ndim, node)
    nonempty = [x for x in parts if x.shape[a] != 0] or parts[:1]
    dt = nonempty[0].dtype
    return (
        burn.cat([x if x.dtype is dt else x.cast(dt) for x in nonempty], a)
        if len(nonempty) > 1
        else nonempty[0]
    )


@op("Split", host=(1,))
def split(ctx: Any, node: Node, x: burn.Tensor, sizes: Any = None) -> tuple[burn.Tensor, ...]:
    a = axis(int(node.attrs.get("axis", 0)), x.ndim, node)
    n = x.shape[a]
    if node.opset >= 13 and sizes is not None:
        parts = ctx.ints(sizes)
    elif node.opset < 13 and node.attrs.get("split"):
        parts = list(node.attrs["split"])
    else:
        count = int(node.attrs.get("num_outputs", len(node.outputs)))
        chunk = -(-n // count)
        parts = [min(chunk, n - i * chunk) for i in range(count)]
    out, start = [], 0
    for p in parts:
        out.append(x.narrow(a, start, p))
        start += p
    return tuple(out)


@op("Slice", host=(1, 2, 3, 4), check=requires("starts", "ends", before=10))
def slice_(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    starts: Any = None,
    ends: Any = None,
    axes: Any = None,
    steps: Any = None,
) -> burn.Tensor:
    if node.opset < 10:
        st, en = list(node.attrs["starts"]), list(node.attrs["ends"])
        ax = list(node.attrs.get("axes", range(len(st))))
        sp = [1] * len(st)
    else:
        st, en = ctx.ints(starts), ctx.ints(ends)
        ax = ctx.ints(axes) if axes is not None else list(range(len(st)))
        sp = ctx.ints(steps) if steps is not None else [1] * len(st)
    index: list[Any] = [slice(None)] * x.ndim
    for s, e, a, step in zip(st, en, ax, sp):
        a = axis(a, x.ndim, node, "axes")
        dim = x.shape[a]
        if step == 0:
            raise ValueError("Slice: steps must not be 0")
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if step > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
            index[a] = slice(s, max(e, s), step)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
            index[a] = slice(s, None if e < 0 else e, step) if s > e else slice(0, 0, 1)
    return x[tuple(index)]


@op("Expand", host=(1,))
def expand(ctx: Any, node: Node, x: burn.Tensor, shape: Any) -> burn.Tensor:
    target = burn.backend.broadcast_shape(tuple(x.shape), tuple(ctx.ints(shape)), op="Expand")
    return x if target == tuple(x.shape) else x.expand(*target)


@op("Tile", host=(1,))
def tile(ctx: Any, node: Node, x: burn.Tensor, repeats: Any) -> burn.Tensor:
    reps = ctx.ints(repeats)
    return x.repeat(*reps) if any(r != 1 for r in reps) else x


_PAD_MODES = ("constant", "reflect", "edge", "wrap")


@op("Pad", host=(1, 2, 3), check=checks(attr_in("mode", _PAD_MODES, "constant"), requires("pads", before=11)))
def pad(
    ctx: Any, node: Node, x: burn.Tensor, pads: Any = None, value: Any = None, axes: Any = None
) -> burn.Tensor:
    mode = node.attrs.get("mode", "constant")
    if node.opset < 11:
        raw, fill = list(node.attrs["pads"]), float(node.attrs.get("value", 0.0))
        dims = list(range(x.ndim))
    else:
        raw, fill = ctx.ints(pads), ctx.scalar(value, 0)
        dims = axes_arg(ctx, node, axes, x.ndim) if axes is not None else list(range(x.ndim))  # type: ignore[assignment]  # axes given: a list
    n = len(dims)
    begin = dict(zip(dims, raw[:n]))
    end = dict(zip(dims, raw[n:]))
    # negative pads crop first
    crop = [slice(max(0, -begin.get(d, 0)), x.shape[d] - max(0, -end.get(d, 0))) for d in range(x.ndim)]
    if any(s.start or s.stop != x.shape[d] for d, s in enumerate(crop)):
        x = x[tuple(crop)]
    before = [max(0, begin.get(d, 0)) for d in range(x.ndim)]
    after = [max(0, end.get(d, 0)) for d in range(x.ndim)]
    if not any(before) and not any(after):
        return x
    if mode == "wrap":
        for d in range(x.ndim):
            if before[d] or after[d]:
                n_d = x.shape[d]
                idx = [(i % n_d) for i in range(-before[d], n_d + after[d])]
                x = x.select(d, index_tensor(idx, x.device))
        return x
    flat: list[int] = []
    for d in reversed(range(x.ndim)):
        flat += [before[d], after[d]]
    if x.dtype.is_bool:
        return x.cast(burn.int32).pad(flat, mode, int(fill)).bool()
    fill = fill if x.dtype.is_float else int(fill)
    return x.pad(flat, mode, fill)


@op("Shape", host=(0,))  # reads metadata only: the input stays put, the result is on the host
def shape(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    dims = list(x.shape)
    rank = len(dims)
    start = int(node.attrs.get("start", 0))
    end = node.attrs.get("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else min(max(int(end) + rank if int(end) < 0 else int(end), 0), rank)
    return ctx.tensor(np.array(dims[start:stop], dtype=np.int64))


@op("Size", host=(0,))
def size(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    return ctx.tensor(np.array(x.numel(), dtype=np.int64))


def _constant_check(node: Node) -> str | None:
    if "sparse_value" in node.attrs:
        return "sparse constants are not supported"
    if "value_string" in node.attrs or "value_strings" in node.attrs:
        return "string constants are not supported (burn tensors hold numbers)"
    return None


@op("Constant", check=_constant_check)
def constant(ctx: Any, node: Node) -> burn.Tensor:
    a = node.attrs
    if "value" in a:
        arr = np.asarray(a["value"])
    elif "value_float" in a:
        arr = np.array(a["value_float"], dtype=np.float32)
    elif "value_floats" in a:
        arr = np.array(a["value_floats"], dtype=np.float32)
    elif "value_int" in a:
        arr = np.array(a["value_int"], dtype=np.int64)
    else:
        arr = np.array(a["value_ints"], dtype=np.int64)
    return ctx.tensor(arr)


@op("ConstantOfShape", host=(0,))
def constant_of_shape(ctx: Any, node: Node, shape: Any) -> burn.Tensor:
    value = node.attrs.get("value")
    arr = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    dims = tuple(ctx.ints(shape))
    return ctx.tensor(np.full(dims, arr[0], dtype=arr.dtype))


@op("Range", host=(0, 1, 2))
def range_(ctx: Any, node: Node, start: Any, limit: Any, delta: Any) -> burn.Tensor:
    s, lim, d = ctx.array(start).reshape(()), ctx.array(limit).reshape(()), ctx.array(delta).reshape(())
    count = max(int(math.ceil((float(lim) - float(s)) / float(d))), 0)
    values = s + np.arange(count, dtype=s.dtype) * d
    return ctx.tensor(values.astype(s.dtype))


@op("EyeLike")
def eye_like(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    rows, cols = x.shape
    k = int(node.attrs.get("k", 0))
    dt = ctx.dtype(node.attrs["dtype"]) if "dtype" in node.attrs else x.dtype
    return ctx.tensor(np.eye(rows, cols, k), dt)


@op("Trilu", host=(1,))
def trilu(ctx: Any, node: Node, x: burn.Tensor, k: Any = None) -> burn.Tensor:
    diag = int(ctx.scalar(k, 0))
    if x.dtype.is_bool:
        return trilu(ctx, node, x.cast(burn.int32), k).bool()
    return x.triu(diag) if node.attrs.get("upper", 1) else x.tril(diag)


@op("DepthToSpace", check=checks(attr_in("mode", ("DCR", "CRD"), "DCR"), requires("blocksize")))
def depth_to_space(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    bs = int(node.attrs["blocksize"])
    b, c, h, w = x.shape
    if node.attrs.get("mode", "DCR") == "DCR":
        y = x.reshape(b, bs, bs, c // (bs * bs), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(b, c // (bs * bs), bs, bs, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(b, c // (bs * bs), h * bs, w * bs)


@op("SpaceToDepth", check=checks(attr_in("mode", ("DCR", "CRD"), "DCR"), requires("blocksize")))
def space_to_depth(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    bs = int(node.attrs["blocksize"])
    b, c, h, w = x.shape
    y = x.reshape(b, c, h // bs, bs, w // bs, bs)
    # DCR: channel = (block row, block col, c); CRD: (c, block row, block col)
    y = y.permute(0, 3, 5, 1, 2, 4) if node.attrs.get("mode", "DCR") == "DCR" else y.permute(0, 1, 3, 5, 2, 4)
    return y.reshape(b, c * bs * bs, h // bs, w // bs)


def _cast_check(node: Node) -> str | None:
    to = node.attrs.get("to")
    if to is None:
        return "required attribute to missing (Cast has no default)"
    if to not in ONNX_TO_BURN and to not in STORED_AS:
        return f"cast to {ONNX_NAMES.get(to, to)} is not supported"
    return None


def _cast(x: burn.Tensor, dt: burn.DType) -> burn.Tensor:
    if x.dtype.is_float and not dt.is_float and not dt.is_bool:
        # NaN/inf have no integer value; keep the cast defined
        x = burn.where(x.isnan(), burn.zeros_like(x), x)
    return x.cast(dt)


def cast_to(
    ctx: Any, x: burn.Tensor, elem_type: int, saturate: bool = True, round_mode: str = "up"
) -> burn.Tensor:
    """``x`` cast to ONNX element type ``elem_type``. Types burn holds widened (float8, float4, int4,
    int2) are rounded to their values on the host through ml_dtypes, with ONNX's saturation."""
    dt = ctx.dtype(elem_type)
    if elem_type not in STORED_AS:
        return _cast(x, dt)
    arr = x.numpy()
    if dt.is_float:
        arr = on_grid(arr, elem_type, saturate, round_mode)
    else:  # 4- and 2-bit integers keep the low bits, as a cast to int8 does (floats rounded first)
        if arr.dtype.kind == "f":
            arr = np.rint(np.nan_to_num(arr.astype(np.float64), posinf=0, neginf=0)).astype(np.int64)
        arr = arr.astype(numpy_dtype(elem_type))
    return ctx.tensor(np.asarray(arr).astype(dt.name), dt)


@op("Cast", check=_cast_check)
def cast(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    saturate = bool(node.attrs.get("saturate", 1))
    return cast_to(ctx, x, int(node.attrs["to"]), saturate, str(node.attrs.get("round_mode", "up")))


@op("CastLike")
def cast_like(ctx: Any, node: Node, x: burn.Tensor, like: burn.Tensor) -> burn.Tensor:
    code = ctx.declared_elem(1) or BURN_TO_ONNX.get(like.dtype.name)
    if code is None:
        return _cast(x, like.dtype)
    saturate = bool(node.attrs.get("saturate", 1))
    return cast_to(ctx, x, code, saturate, str(node.attrs.get("round_mode", "up")))


def _dropout_check(node: Node) -> str | None:
    if node.opset < 7 and not node.attrs.get("is_test", 0):
        return None  # old graphs exported for inference rarely set is_test; run as inference
    return None


@op("Dropout", host=(1, 2), check=checks(_dropout_check))
def dropout(ctx: Any, node: Node, x: burn.Tensor, ratio: Any = None, training: Any = None) -> Any:
    """Inference semantics: the identity (and an all-true mask). Training mode with a ratio above 0
    draws a random mask no reference reproduces: refused as unsupported when it runs."""
    if training is not None and bool(ctx.scalar(training)) and float(ctx.scalar(ratio, 0.5)) > 0:
        raise NotImplementedError(
            f"Dropout node {node.label!r}: training_mode=true draws random masks; burn-onnx runs "
            "inference graphs (train the module with burn instead)"
        )
    if len(node.outputs) > 1 and node.outputs[1]:
        return x, full(ctx, tuple(x.shape), True, burn.bool_)
    return x
