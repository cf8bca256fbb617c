"""The shape rules of the op vocabulary: each formula defined once, here, and asked by everyone else.

- ``broadcast_shape`` / ``broadcast_shapes``: NumPy broadcasting (the frontend's checks, every backend's
  element-wise output, capture and fusion). A pair of shapes is worked out once and remembered, so the
  frontend's check and the backend's sizing of one ``x + y`` cost one computation.
- ``reduced_shape``: a reduction's result; ``matmul_shape``: a batched matmul's.
- ``pool_out_size`` / ``pool_out_sizes``, ``conv_out_sizes`` / ``conv_out_sizes_padded``,
  ``conv_transpose_out_sizes``: sliding windows (PyTorch's rules).
- ``SHAPE_RULES``: backend method -> its result's shape from the call's arguments (tensors given as
  their shapes); ``burn.backend.op_def(kind).out_shape`` reads it. ``OUTPUT_SHAPES``: the shape of each
  result, for the ops whose results differ in shape (attention's output and log-sum-exp, its backward's
  three gradients); ``op_def(kind).out_shapes`` reads both.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import ShapeError

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=4096)
def _broadcast_pair(a: Ints, b: Ints) -> Ints | None:
    """The broadcast of two shapes, None when they do not broadcast (remembered per pair)."""
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def broadcast_shapes(op: str, a: Ints, b: Ints, names: str = "lhs/rhs") -> Ints:
    """The broadcast of shapes ``a`` and ``b``; a ``ShapeError`` naming ``op`` and the operands
    (``names``: "left/right") at the first dim that does not broadcast.

    >>> broadcast_shapes("add", (2, 1), (3,))
    (2, 3)
    """
    if a == b:
        return a
    out = _broadcast_pair(a, b)
    if out is None:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
        i, x, y = next((i, x, y) for i, (x, y) in enumerate(zip(pa, pb)) if x != y and 1 not in (x, y))
        left, right = names.split("/")
        raise ShapeError(
            f"shape mismatch in {op}: {left} {a} and {right} {b} do not broadcast (dim {i - n}: {x} vs {y})"
        )
    return out


def broadcast_shape(*shapes: Sequence[int], op: str = "broadcast") -> Ints:
    """The NumPy broadcast of any number of shapes; a ``ShapeError`` naming ``op`` when they do not
    broadcast. The one broadcast rule of burn: the frontend checks with it and backends use it to size
    their outputs (``burn.backend.broadcast_shape``).

    >>> burn.backend.broadcast_shape((2, 1, 3), (4, 1), (3,))
    (2, 4, 3)
    """
    out: Ints = tuple(shapes[0]) if shapes else ()
    for shape in shapes[1:]:
        out = broadcast_shapes(op, out, tuple(shape), "shape/shape")
    return out


def reduced_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> Ints:
    """A reduction's result over ``dims`` (non-negative): dropped, or kept as size 1 with ``keepdim``.

    >>> burn.backend.reduced_shape((2, 3, 4), (1,), keepdim=True)
    (2, 1, 4)
    """
    return tuple(1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims)


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> Ints:
    """A batched matmul's result: the broadcast batch dims, then (rows of ``a``, columns of ``b``).

    >>> burn.backend.matmul_shape((5, 1, 2, 3), (4, 3, 6))
    (5, 4, 2, 6)
    """
    return broadcast_shape(a[:-2], b[:-2], op="matmul (batch dims)") + (a[-2], b[-1])


def pool_out_size(size: int, k: int, st: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's output size of a sliding window (pools; convolutions and unfold with ``ceil_mode``
    False); with ``ceil_mode`` the last window must start inside the input or its left padding. The one
    home of this rule: backends, shape inference and argument checks call it.

    >>> burn.backend.pool_out_size(112, 3, 2, 1, 1, ceil_mode=False)   # 3x3, stride 2, padding 1
    56
    """
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (st - 1 if ceil_mode else 0)) // st + 1
    if ceil_mode and (out - 1) * st >= size + p:
        out -= 1
    return out


def pool_out_sizes(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> Ints:
    """``pool_out_size`` per spatial dim: a pool's (or, with ``ceil_mode`` False, a convolution's)
    output sizes.

    >>> burn.backend.pool_out_sizes((7, 8), (2, 2), (2, 2), (0, 0), (1, 1), ceil_mode=True)
    (4, 4)
    """
    return tuple(pool_out_size(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation))


def conv_out_sizes(spatial: Ints, kernel: Ints, stride: Ints, pads: Pads, dilation: Ints) -> Ints:
    """Output sizes of a sliding window over ``spatial`` padded by ``pads`` (floor division)."""
    return tuple(
        pool_out_size(s + lo + hi, k, st, 0, d, False)
        for s, k, st, (lo, hi), d in zip(spatial, kernel, stride, pads, dilation)
    )


def conv_out_sizes_padded(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> Ints:
    """Output sizes of a convolution with symmetric ``padding`` per spatial dim (PyTorch's rule).

    >>> burn.backend.conv_out_sizes_padded((224, 224), (7, 7), (2, 2), (3, 3), (1, 1))
    (112, 112)
    """
    return pool_out_sizes(spatial, kernel, stride, padding, dilation, False)


def conv_transpose_out_sizes(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
) -> Ints:
    """Output sizes of a transposed convolution, PyTorch's rule: ``(L - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1`` per spatial dim. The one home of this rule.

    >>> burn.backend.conv_transpose_out_sizes((7, 7), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1))
    (14, 14)
    """
    return tuple(
        (s - 1) * st - 2 * p + d * (k - 1) + op + 1
        for s, k, st, p, op, d in zip(spatial, kernel, stride, padding, output_padding, dilation)
    )


def _with(shape: Ints, dim: int, size: int) -> Ints:
    return shape[:dim] + (size,) + shape[dim + 1 :]


def _reshape(shape: Ints, new: Sequence[int]) -> Ints:
    new = tuple(new)
    if -1 in new:
        known = math.prod(s for s in new if s != -1)
        new = tuple(math.prod(shape) // known if s == -1 else s for s in new)
    return new


def _arange_len(start: float, stop: float, step: float) -> int:
    return max(0, math.ceil((stop - start) / step))


def _repeat(shape: Ints, reps: Sequence[int]) -> Ints:
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + tuple(shape)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(s * r for s, r in zip(shape, reps))


def _attention_shapes(q: Ints, k: Ints, v: Ints, *rest: Any) -> tuple[Ints, Ints]:
    """attention: out (B, H, L, Ev) and the float32 row log-sum-exp (B, H, L)."""
    return q[:3] + v[3:], q[:3]


def _attention_backward_shapes(q: Ints, k: Ints, v: Ints, *rest: Any) -> tuple[Ints, Ints, Ints]:
    """attention_backward: the gradients of q, k and v, shaped as they are."""
    return q, k, v


def _custom_shape(name: str, xs: list[Ints], attrs: tuple[tuple[str, Any], ...]) -> Ints:
    """custom: the shape rule the registered op ``name`` declares (``burn.custom``)."""
    from ..custom._registry import lookup  # burn.custom imports this package: bind at call time

    return lookup(name).out_shape(xs, attrs)


def _tensor_shapes(*args: Any) -> Ints:
    """The broadcast of the tensor arguments' shapes (Python scalars among them take no part)."""
    return broadcast_shape(*(s for s in args if isinstance(s, tuple)))


# method -> shape rule over the call's arguments after the op kind (tensor arguments as their shapes),
# giving the output shape (or both output shapes for two-output ops, which share one here)
SHAPE_RULES: dict[str, Callable[..., Ints]] = {
    "unary": lambda x: x,
    "activation": lambda x: x,
    "binary": _tensor_shapes,
    "where": _tensor_shapes,
    "clamp": lambda x, lo, hi: x,
    "leaky_relu": lambda x, slope: x,
    "cast": lambda x, dtype: x,
    "reduce": lambda x, dims, keepdim: reduced_shape(x, dims, keepdim),
    "arg_reduce": lambda x, dim, keepdim: reduced_shape(x, (dim,), keepdim),
    "var": lambda x, dims, correction, keepdim: reduced_shape(x, dims, keepdim),
    "matmul": matmul_shape,
    "reshape": _reshape,
    "permute": lambda x, dims: tuple(x[d] for d in dims),
    "expand": lambda x, shape: tuple(shape),
    "slice": lambda x, index: tuple(len(range(a, b, s)) for a, b, s in index) + x[len(index) :],
    "slice_assign": lambda x, index, value: x,
    "cat": lambda xs, dim: _with(xs[0], dim, sum(s[dim] for s in xs)),
    "stack": lambda xs, dim: xs[0][:dim] + (len(xs),) + xs[0][dim:],
    "flip": lambda x, dims: x,
    "repeat": _repeat,
    "pad": lambda x, pads, mode, value: tuple(s + lo + hi for s, (lo, hi) in zip(x, pads)) + x[len(pads) :],
    "tril": lambda x, k: x,
    "triu": lambda x, k: x,
    "gather": lambda x, dim, index: index,
    "scatter_add": lambda x, dim, index, src: x,
    "select": lambda x, dim, indices: _with(x, dim, indices[0]),
    "select_add": lambda x, dim, indices, values: x,
    "check_index": lambda index, size, negative, message: index,
    "mask_fill": lambda x, mask, value: x,
    "one_hot": lambda x, n, dtype: x + (n,),
    "embedding": lambda weight, indices: indices + (weight[1],),
    "sort": lambda x, dim, descending: x,
    "argsort": lambda x, dim, descending: x,
    "topk": lambda x, k, dim: _with(x, dim, k),
    "cumsum": lambda x, dim: x,
    "cumprod": lambda x, dim: x,
    "softmax": lambda x, dim: x,
    "log_softmax": lambda x, dim: x,
    "conv": lambda x, w, bias, stride, padding, dilation, groups: (
        (x[0], w[0]) + conv_out_sizes_padded(x[2:], w[2:], stride, padding, dilation)
    ),
    "conv_transpose": lambda x, w, bias, stride, padding, output_padding, dilation, groups: (
        (x[0], w[1] * groups)
        + conv_transpose_out_sizes(x[2:], w[2:], stride, padding, output_padding, dilation)
    ),
    "conv_weight_grad": lambda x, g, wshape, stride, padding, dilation, groups: tuple(wshape),
    "unfold4d": lambda x, kernel, stride, padding, dilation: (
        x[0],
        x[1] * math.prod(kernel),
        math.prod(conv_out_sizes_padded(x[2:], kernel, stride, padding, dilation)),
    ),
    "max_pool": lambda x, kernel, stride, padding, dilation, ceil_mode: (
        x[:2] + pool_out_sizes(x[2:], kernel, stride, padding, dilation, ceil_mode)
    ),
    "avg_pool": lambda x, kernel, stride, padding, count_include_pad, ceil_mode: (
        x[:2] + pool_out_sizes(x[2:], kernel, stride, padding, (1,) * len(kernel), ceil_mode)
    ),
    "adaptive_avg_pool": lambda x, size: x[:2] + tuple(size),
    "adaptive_max_pool": lambda x, size: x[:2] + tuple(size),
    "interpolate": lambda x, size, mode, align_corners: x[:2] + tuple(size),
    "deform_conv2d": lambda x, offset, weight, mask, bias, *a: (x[0], weight[0]) + offset[2:],
    "roi_align": lambda x, boxes, size, *a: (boxes[0], x[1]) + tuple(size),
    "nms": lambda boxes, scores, iou_threshold: boxes[:1],
    "quantize": lambda x, scale, zero_point, qmin, qmax, dtype: x,
    "dequantize": lambda q, scale, zero_point, dtype: q,
    "quantized_matmul": matmul_shape,
    "from_numpy": lambda array, dtype: tuple(array.shape),
    "full": lambda shape, value, dtype: tuple(shape),
    "arange": lambda start, stop, step, dtype: (_arange_len(start, stop, step),),
    "attention": lambda q, k, v, *a: _attention_shapes(q, k, v)[0],
    "attention_backward": lambda q, k, v, *a: q,
    "random_uniform": lambda shape, *a: tuple(shape),
    "random_normal": lambda shape, *a: tuple(shape),
    "random_int": lambda shape, *a: tuple(shape),
    "random_bernoulli": lambda shape, *a: tuple(shape),
    "custom": lambda name, xs, attrs: _custom_shape(name, xs, attrs),
}

# method -> the shape of each result, for multi-result ops whose results differ in shape (the others
# share ``SHAPE_RULES``'s one shape); the first is always ``SHAPE_RULES``'s
OUTPUT_SHAPES: dict[str, Callable[..., tuple[Ints, ...]]] = {
    "attention": _attention_shapes,
    "attention_backward": _attention_backward_shapes,
}
