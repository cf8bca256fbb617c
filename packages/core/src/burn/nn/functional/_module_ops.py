"""Module ops of ``burn.nn.functional``: convolutions, transposed convolutions, unfold, embedding and
interpolate; pools live in ``_pool_ops``. Layouts are channels-first as in PyTorch.

Each family has one checked implementation (``_conv``, ``_conv_transpose``) behind its 1/2/3-d public
functions; argument checks shared with the pools are in ``_module_args``. Each function checks its
arguments once, then makes one backend call (``x.backend.conv`` and friends), so an autodiff decorator
sees one op per call.
"""

from __future__ import annotations

import math
from typing import Any

from ..._amp_state import STATE as _AMP
from ..._amp_state import to_half
from ..._errors import DeviceError, DTypeError, ShapeError
from ..._tensor import Tensor, _wrap
from ...backend._shapes import conv_transpose_out_sizes
from ._module_args import (
    LAYOUTS,
    check_bias,
    check_groups,
    check_out_size,
    int_arg,
    ints,
    spatial_input,
    tensor_arg,
    weight_and_bias,
    window_out_sizes,
)

IntOrTuple = int | tuple[int, ...]


def _autocast_args(op: str, x: Tensor, weight: Any, bias: Any) -> tuple[Tensor, Any, Any]:
    """Under ``burn.amp.autocast``: the float tensors among x, weight and bias in the half dtype (other
    values pass on to the usual checks)."""
    x = to_half(op, x)
    weight = to_half(op, weight) if isinstance(weight, Tensor) else weight
    bias = to_half(op, bias) if isinstance(bias, Tensor) else bias
    return x, weight, bias


def _padding(
    op: str,
    x: Tensor,
    padding: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
) -> tuple[Tensor, tuple[int, ...]]:
    """Numeric padding, or "valid" (none) / "same" (stride 1; an odd total pads one more at the end,
    as PyTorch, by padding x itself)."""
    nd = len(kernel)
    if padding == "valid":
        return x, (0,) * nd
    if padding != "same":
        return x, ints(op, padding, nd, "padding", 0)
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' needs stride 1, got stride {stride}")
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if all(t % 2 == 0 for t in total):
        return x, tuple(t // 2 for t in total)
    pads = ((0, 0), (0, 0)) + tuple((0, t % 2) for t in total)
    x = _wrap(x.backend.pad(x.primitive, pads, "constant", 0.0), x.backend)
    return x, tuple(t // 2 for t in total)


def _conv(
    op: str,
    nd: int,
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntOrTuple,
    padding: Any,
    dilation: IntOrTuple,
    groups: int,
) -> Tensor:
    x = spatial_input(op, x, nd)
    if _AMP.on:  # autocast: input, weight and bias in the half dtype
        x, weight, bias = _autocast_args(op, x, weight, bias)
    weight, bias = weight_and_bias(op, x, weight, bias, nd)
    groups = int_arg(op, groups, "groups", 1)
    stride = ints(op, stride, nd, "stride", 1)
    dilation = ints(op, dilation, nd, "dilation", 1)
    c_in, c_out, kernel = x.shape[1], weight.shape[0], weight.shape[2:]
    check_groups(op, c_in, weight, groups)
    check_bias(op, bias, c_out)
    x, pad = _padding(op, x, padding, kernel, stride, dilation)
    window_out_sizes(
        op,
        x.shape[2:],
        kernel,
        stride,
        pad,
        dilation,
        lambda: f"kernel {kernel}, padding {pad}, dilation {dilation}, stride {stride}",
    )
    b = x.backend
    prim = b.conv(
        x.primitive, weight.primitive, None if bias is None else bias.primitive, stride, pad, dilation, groups
    )
    return _wrap(prim, b)


def conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """1-d convolution: x (N, C_in, L), weight (C_out, C_in / groups, k), bias (C_out,) -> (N, C_out, L_out).

    ``padding`` is an int, a tuple, ``"valid"`` or ``"same"`` (stride 1), as in PyTorch.

    >>> F.conv1d(burn.ones((1, 2, 5)), burn.ones((3, 2, 3)), padding=1).shape
    (1, 3, 5)
    """
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """2-d convolution: x (N, C_in, H, W), weight (C_out, C_in / groups, kh, kw) -> (N, C_out, H_out, W_out).

    ``H_out = (H + 2 * padding - dilation * (kh - 1) - 1) // stride + 1`` (likewise W).

    >>> F.conv2d(burn.ones((1, 3, 8, 8)), burn.ones((4, 3, 3, 3)), stride=2, padding=1).shape
    (1, 4, 4, 4)
    """
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple | str = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """3-d convolution: x (N, C_in, D, H, W), weight (C_out, C_in / groups, kd, kh, kw).

    >>> F.conv3d(burn.ones((1, 1, 4, 4, 4)), burn.ones((2, 1, 3, 3, 3))).shape
    (1, 2, 2, 2, 2)
    """
    return _conv("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    op: str,
    nd: int,
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple,
    output_padding: IntOrTuple,
    groups: int,
    dilation: IntOrTuple,
) -> Tensor:
    x = spatial_input(op, x, nd)
    if _AMP.on:  # autocast: input, weight and bias in the half dtype
        x, weight, bias = _autocast_args(op, x, weight, bias)
    weight, bias = weight_and_bias(op, x, weight, bias, nd)
    groups = int_arg(op, groups, "groups", 1)
    stride = ints(op, stride, nd, "stride", 1)
    padding = ints(op, padding, nd, "padding", 0)
    output_padding = ints(op, output_padding, nd, "output_padding", 0)
    dilation = ints(op, dilation, nd, "dilation", 1)
    c_in, kernel = x.shape[1], weight.shape[2:]
    if c_in % groups:
        raise ValueError(f"{op}: groups={groups} must divide the input channels ({c_in})")
    if weight.shape[0] != c_in:
        raise ShapeError(
            f"{op}: input has {c_in} channels but weight expects {weight.shape[0]} "
            f"(groups={groups}; weight shape {weight.shape} is (C_in, C_out / groups, *kernel))"
        )
    check_bias(op, bias, weight.shape[1] * groups)
    for op_, st, d in zip(output_padding, stride, dilation):
        if op_ >= max(st, d):
            raise ValueError(
                f"{op}: output_padding {output_padding} must be smaller than stride {stride} or dilation "
                f"{dilation} in each dim"
            )
    spatial = x.shape[2:]
    out = conv_transpose_out_sizes(spatial, kernel, stride, padding, output_padding, dilation)
    check_out_size(op, out, spatial, f"kernel {kernel}, stride {stride}, padding {padding}")
    b = x.backend
    prim = b.conv_transpose(
        x.primitive,
        weight.primitive,
        None if bias is None else bias.primitive,
        stride,
        padding,
        output_padding,
        dilation,
        groups,
    )
    return _wrap(prim, b)


def conv_transpose1d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """1-d transposed convolution: x (N, C_in, L), weight (C_in, C_out / groups, k) -> (N, C_out, L_out)
    with ``L_out = (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    >>> F.conv_transpose1d(burn.ones((1, 2, 4)), burn.ones((2, 3, 3)), stride=2).shape
    (1, 3, 9)
    """
    return _conv_transpose(
        "conv_transpose1d", 1, x, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """2-d transposed convolution: x (N, C_in, H, W), weight (C_in, C_out / groups, kh, kw).

    >>> F.conv_transpose2d(burn.ones((1, 4, 5, 5)), burn.ones((4, 2, 3, 3)), stride=2, padding=1,
    ...                    output_padding=1).shape
    (1, 2, 10, 10)
    """
    return _conv_transpose(
        "conv_transpose2d", 2, x, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose3d(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """3-d transposed convolution: x (N, C_in, D, H, W), weight (C_in, C_out / groups, kd, kh, kw).

    >>> F.conv_transpose3d(burn.ones((1, 1, 2, 2, 2)), burn.ones((1, 1, 2, 2, 2)), stride=2).shape
    (1, 1, 4, 4, 4)
    """
    return _conv_transpose(
        "conv_transpose3d", 3, x, weight, bias, stride, padding, output_padding, groups, dilation
    )


def unfold4d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """Sliding patches (im2col) as ``torch.nn.functional.unfold``: x (N, C, H, W) -> (N, C * kh * kw, L)
    with L the number of patch positions; rows run channel-major, then kernel row, then column.

    >>> F.unfold4d(burn.ones((1, 2, 4, 4)), 2).shape
    (1, 8, 9)
    """
    op = "unfold4d"
    x = spatial_input(op, x, 2, kind="num")
    kernel = ints(op, kernel_size, 2, "kernel_size", 1)
    stride = ints(op, stride, 2, "stride", 1)
    padding = ints(op, padding, 2, "padding", 0)
    dilation = ints(op, dilation, 2, "dilation", 1)
    detail = f"kernel {kernel}, padding {padding}, dilation {dilation}"
    window_out_sizes(op, x.shape[2:], kernel, stride, padding, dilation, detail)
    return _wrap(x.backend.unfold4d(x.primitive, kernel, stride, padding, dilation), x.backend)


def embedding(indices: Tensor, weight: Tensor) -> Tensor:
    """Rows of ``weight`` (V, D) picked by int ``indices`` of any shape: result ``indices.shape + (D,)``.

    >>> F.embedding(burn.tensor([[0, 2]]), burn.eye(3)).shape
    (1, 2, 3)
    """
    op = "embedding"
    indices = tensor_arg(op, indices, "indices")
    weight = tensor_arg(op, weight, "weight")
    if weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be 2-d (num_embeddings, dim), got shape {weight.shape}")
    if weight.backend is not indices.backend:
        raise DeviceError(f"{op}: weight is on {weight.device} but indices on {indices.device}")
    if not indices.dtype.is_int:
        raise DTypeError(f"{op}: indices must be an integer tensor, got {indices.dtype}")
    indices = _check_rows(op, indices, weight.shape[0])
    return _wrap(weight.backend.embedding(weight.primitive, indices.primitive), weight.backend)


def _check_rows(op: str, indices: Tensor, rows: int) -> Tensor:
    """Index values in [0, rows) (``Backend.check_index``: at once on host backends, at the next read
    or sync on device backends, which use row 0 in the meantime)."""
    if indices.numel() == 0:
        return indices
    message = f"{op}: index {{value}} out of range for a weight with {rows} rows"
    return _wrap(indices.backend.check_index(indices.primitive, rows, False, message), indices.backend)


_MODES = {3: ("nearest", "linear"), 4: ("nearest", "bilinear", "bicubic")}


def interpolate(
    x: Tensor,
    size: IntOrTuple | None = None,
    scale_factor: float | tuple[float, ...] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Resize the spatial dims of x (N, C, W) or (N, C, H, W) to ``size`` (or ``floor(in * scale_factor)``).

    Modes as PyTorch: ``"nearest"`` (src = floor(dst * in / out)), ``"linear"`` (3-d), ``"bilinear"``
    and ``"bicubic"`` (4-d, a = -0.75, border taps clamped). ``align_corners`` (default False) maps
    corner pixel centres onto each other; it must stay None for nearest. Source coordinates use the
    ratio in / out (PyTorch's ``recompute_scale_factor=True``).

    >>> F.interpolate(burn.ones((1, 1, 4, 4)), scale_factor=2, mode="bilinear").shape
    (1, 1, 8, 8)
    """
    op = "interpolate"
    x = tensor_arg(op, x, "x")
    if x.ndim not in _MODES:
        raise ShapeError(f"{op}: x must be 3-d {LAYOUTS[1]} or 4-d {LAYOUTS[2]}, got shape {x.shape}")
    x = spatial_input(op, x, x.ndim - 2)
    if mode not in _MODES[x.ndim]:
        raise ValueError(f"{op}: mode must be one of {_MODES[x.ndim]} for a {x.ndim}-d input, got {mode!r}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError(f"{op}: align_corners only applies to linear modes; leave it None for 'nearest'")
    spatial, nd = x.shape[2:], x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError(
            f"{op}: give exactly one of size and scale_factor, got size={size!r}, "
            f"scale_factor={scale_factor!r}"
        )
    if size is not None:
        out = ints(op, size, nd, "size", 1)
    else:
        scales = (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)  # type: ignore[arg-type]  # size is None: scale_factor is given
        if len(scales) != nd or not all(isinstance(s, (int, float)) and s > 0 for s in scales):
            raise ValueError(
                f"{op}: scale_factor must be a positive number or {nd} of them, got {scale_factor!r}"
            )
        out = tuple(math.floor(s * f) for s, f in zip(spatial, scales))
        check_out_size(op, out, spatial, f"scale_factor {scale_factor}")
    b, prim = x.backend, x.primitive
    if nd == 1:  # backends resize 4-d NCHW: run the 3-d case with a unit height
        prim = b.reshape(prim, x.shape[:2] + (1,) + spatial)
        out4 = (1,) + tuple(out)
        y = b.interpolate(prim, out4, "bilinear" if mode == "linear" else mode, bool(align_corners))
        return _wrap(b.reshape(y, x.shape[:2] + tuple(out)), b)
    return _wrap(b.interpolate(prim, tuple(out), mode, bool(align_corners)), b)
