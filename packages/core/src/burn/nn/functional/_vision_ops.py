"""Vision ops of ``burn.nn.functional`` with torchvision's arguments and semantics: ``deform_conv2d``
(deformable convolution v1/v2), ``roi_align`` and ``nms``. Each checks its arguments once, then makes
one backend call (``x.backend.deform_conv2d`` and friends), so an autodiff decorator sees one op."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._errors import DeviceError, DTypeError, ShapeError
from ..._tensor import Tensor, _wrap
from ._module_args import (
    check_bias,
    check_groups,
    companion,
    int_arg,
    ints,
    spatial_input,
    tensor_arg,
    weight_and_bias,
    window_out_sizes,
)

IntOrPair = int | tuple[int, ...]  # an int or one per spatial dim (two)


def deform_conv2d(
    x: Tensor,
    offset: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrPair = 1,
    padding: IntOrPair = 0,
    dilation: IntOrPair = 1,
    mask: Tensor | None = None,
    groups: int | None = None,
) -> Tensor:
    """Deformable 2-d convolution (torchvision.ops.deform_conv2d's argument order and semantics).

    Shapes: x (N, C_in, H, W); offset (N, 2 * offset_groups * kh * kw, H_out, W_out) holding a
    (dy, dx) pair per kernel tap; weight (C_out, C_in // groups, kh, kw); bias (C_out,); mask
    (N, offset_groups * kh * kw, H_out, W_out) modulates each tap (DCNv2). The number of offset groups
    is read off the offset's channels and, as torchvision does, ``groups`` (None) off the weight's:
    C_in // weight.shape[1]. Taps moved outside the image read zero-padded bilinear samples.
    Result (N, C_out, H_out, W_out) with H_out = (H + 2 * pad - dilation * (kh - 1) - 1) // stride + 1.

    >>> x = burn.ones((1, 2, 5, 5))
    >>> offset = burn.zeros((1, 2 * 3 * 3, 3, 3))      # zero offsets: a plain convolution
    >>> w = burn.ones((4, 2, 3, 3))
    >>> F.deform_conv2d(x, offset, w).shape, F.deform_conv2d(x, offset, w)[0, 0, 0, 0].item()
    ((1, 4, 3, 3), 18.0)
    """
    op = "deform_conv2d"
    x = spatial_input(op, x, 2)
    weight, bias = weight_and_bias(op, x, weight, bias, 2)
    if groups is None:  # torchvision reads the groups off the weight
        groups = x.shape[1] // weight.shape[1] if weight.shape[1] and x.shape[1] % weight.shape[1] == 0 else 1
    groups = int_arg(op, groups, "groups", 1)
    stride_t = ints(op, stride, 2, "stride", 1)
    padding_t = ints(op, padding, 2, "padding", 0)
    dilation_t = ints(op, dilation, 2, "dilation", 1)
    n, c_in, h, w = x.shape
    c_out, kernel = weight.shape[0], weight.shape[2:]
    check_groups(op, c_in, weight, groups)
    check_bias(op, bias, c_out)
    out = window_out_sizes(op, (h, w), kernel, stride_t, padding_t, dilation_t, "kernel, stride, padding")
    taps = kernel[0] * kernel[1]
    offset = companion(op, offset, "offset", x, 4)
    oc = offset.shape[1]
    if oc == 0 or oc % (2 * taps) or c_in % (oc // (2 * taps)):
        raise ShapeError(
            f"{op}: offset must have 2 * offset_groups * kh * kw channels (a multiple of {2 * taps}, with "
            f"offset_groups dividing C_in={c_in}), got shape {offset.shape}"
        )
    offset_groups = oc // (2 * taps)
    expected = (n, oc, *out)
    if offset.shape != expected:
        raise ShapeError(
            f"{op}: offset must have shape {expected} (N, 2*G*kh*kw, H_out, W_out), got {offset.shape}"
        )
    if mask is not None:
        mask = companion(op, mask, "mask", x, 4)
        expected_mask = (n, offset_groups * taps, *out)
        if mask.shape != expected_mask:
            raise ShapeError(
                f"{op}: mask must have shape {expected_mask} (N, offset_groups*kh*kw, H_out, W_out), "
                f"got {mask.shape}"
            )
    b = x.backend
    y = b.deform_conv2d(
        x.primitive,
        offset.primitive,
        weight.primitive,
        None if mask is None else mask.primitive,
        None if bias is None else bias.primitive,
        stride_t,
        padding_t,
        dilation_t,
        groups,
        offset_groups,
    )
    return _wrap(y, b, x.dtype)


def _boxes_with_index(op: str, boxes: Any, x: Tensor) -> Tensor:
    """torchvision's box formats: a (K, 5) tensor of (batch_index, x1, y1, x2, y2), or a list with
    one (L_i, 4) tensor per image."""
    if isinstance(boxes, (list, tuple)):
        from ... import _creation

        parts = []
        for i, part in enumerate(boxes):
            part = companion(op, part, f"boxes[{i}]", x, 2)
            if part.shape[1] != 4:
                raise ShapeError(f"{op}: boxes[{i}] must be (L, 4) as (x1, y1, x2, y2), got {part.shape}")
            index = _creation.full((part.shape[0], 1), float(i), dtype=x.dtype, device=x.device)
            parts.append(_creation.cat([index, part], 1))
        if not parts:
            raise ValueError(f"{op}: boxes must hold at least one tensor (one per image)")
        return _creation.cat(parts, 0)
    boxes = companion(op, boxes, "boxes", x, 2)
    if boxes.shape[1] != 5:
        raise ShapeError(f"{op}: boxes must be (K, 5) as (batch_index, x1, y1, x2, y2), got {boxes.shape}")
    return boxes


def roi_align(
    x: Tensor,
    boxes: Tensor | Sequence[Tensor],
    output_size: IntOrPair,
    spatial_scale: float = 1.0,
    sampling_ratio: int = -1,
    aligned: bool = False,
) -> Tensor:
    """RoI Align (torchvision.ops.roi_align): average bilinear samples over each bin of each box.

    Shapes: x (N, C, H, W); boxes (K, 5) rows (batch_index, x1, y1, x2, y2) in input coordinates
    (scaled by ``spatial_scale``), or a list of (L_i, 4) tensors, one per image -> (K, C, ph, pw).
    ``sampling_ratio`` <= 0 takes ceil(bin size) samples per bin (per box); ``aligned`` shifts boxes
    by half a pixel. Differentiable in x.

    >>> x = burn.arange(16, dtype=burn.float32).reshape(1, 1, 4, 4)
    >>> F.roi_align(x, burn.tensor([[0.0, 0.0, 0.0, 2.0, 2.0]]), 1, aligned=True).item()  # mean of 0, 1, 4, 5
    2.5
    """
    op = "roi_align"
    x = spatial_input(op, x, 2)
    rois = _boxes_with_index(op, boxes, x)
    size = ints(op, output_size, 2, "output_size", 1)
    if not isinstance(sampling_ratio, int) or isinstance(sampling_ratio, bool):
        raise TypeError(f"{op}: sampling_ratio must be an int, got {sampling_ratio!r}")
    scale = float(spatial_scale)
    if not scale > 0:
        raise ValueError(f"{op}: spatial_scale must be > 0, got {spatial_scale!r}")
    b = x.backend
    y = b.roi_align(x.primitive, rois.primitive, size, scale, sampling_ratio, bool(aligned))
    return _wrap(y, b, x.dtype)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Greedy non-maximum suppression (torchvision.ops.nms).

    Shapes: boxes (N, 4) as (x1, y1, x2, y2) with x1 <= x2, y1 <= y2; scores (N,) -> the int indices of
    the kept boxes, by decreasing score. A box is dropped when its IoU with a kept box of higher score
    is greater than ``iou_threshold``. The result's length depends on the values: a host read.

    >>> boxes = burn.tensor([[0.0, 0.0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]])
    >>> F.nms(boxes, burn.tensor([0.9, 0.8, 0.7]), 0.5).tolist()
    [0, 2]
    """
    op = "nms"
    boxes = tensor_arg(op, boxes, "boxes")
    scores = tensor_arg(op, scores, "scores")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ShapeError(f"{op}: boxes must be (N, 4) as (x1, y1, x2, y2), got shape {boxes.shape}")
    if scores.shape != (boxes.shape[0],):
        raise ShapeError(f"{op}: scores must be ({boxes.shape[0]},) (one per box), got shape {scores.shape}")
    if not boxes.dtype.is_float or not scores.dtype.is_float:
        raise DTypeError(
            f"{op}: boxes and scores must be float tensors, got {boxes.dtype} and {scores.dtype}"
        )
    if scores.backend is not boxes.backend:
        raise DeviceError(f"{op}: scores are on {scores.device} but boxes on {boxes.device}")
    if scores.dtype is not boxes.dtype:
        scores = scores.cast(boxes.dtype)
    b = boxes.backend
    import numpy as np

    from ... import _creation

    keep = np.asarray(_wrap(b.nms(boxes.primitive, scores.primitive, float(iou_threshold)), b).numpy())
    order = np.argsort(-np.asarray(scores.numpy(), dtype=np.float64), kind="stable")
    kept = order[keep[order]]
    return _creation.tensor(kept, dtype=b.default_int, device=boxes.device)
