"""Core-only defaults for the vision ops: deformable convolution (torchvision's ``deform_conv2d``, with
its backward), ``roi_align`` (with its backward) and ``nms``.

deform_conv2d samples the input bilinearly at the kernel taps moved by the offsets: each of the four
corners of a sample is one ``gather`` of x by a flat index, weighted by its bilinear weight (zero for a
corner outside the image, so samples off the image read zeros), then the sampled columns go through one
matmul per group, as im2col convolution. The backward scatters the column gradient back through the same
corners (``scatter_add``) and differentiates the bilinear weights for the offsets.

roi_align is separable: every bin's samples average bilinear reads along y and x independently, so each
box is two small interpolation matrices (built by comparing sample corners with ``arange``) and the
pooled output is ``Ay @ x[box's image] @ Ax^T``; its backward is the transposed product.

nms reads the boxes to the host (its output length depends on the data) and returns the keep mask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import Backend

Prim = Any
Ints = tuple[int, ...]


def _host(b: Backend, values: Any, like: Prim) -> Prim:
    import numpy as np

    return b.from_numpy(np.asarray(values), b.dtype_of(like))


def _part(b: Backend, x: Prim, dim: int, start: int, stop: int) -> Prim:
    shape = b.shape_of(x)
    return b.slice(x, tuple((start, stop, 1) if d == dim else (0, n, 1) for d, n in enumerate(shape)))


# ---------------------------------------------------------------- deform_conv2d
class _Corners:
    """The four bilinear corners of every sample: flat indices into (H*W) and weights, both
    (N, G, 1, K*L); plus what the offset gradient needs (signed partial weights)."""

    def __init__(
        self,
        b: Backend,
        xshape: Ints,
        offset: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        offset_groups: int,
    ) -> None:
        import numpy as np

        n, _, h, w = xshape
        kh, kw = kernel
        k = kh * kw
        ho, wo = b.shape_of(offset)[2:]
        og = offset_groups
        self.flat = (n, og, 1, k * ho * wo)
        off = b.reshape(offset, (n, og, k, 2, ho, wo))
        dy = b.reshape(_part(b, off, 3, 0, 1), (n, og, k, ho, wo))
        dx = b.reshape(_part(b, off, 3, 1, 2), (n, og, k, ho, wo))
        taps = np.arange(k)
        base_y = (taps // kw * dilation[0])[:, None, None] + (np.arange(ho) * stride[0] - padding[0])[:, None]
        base_x = (taps % kw * dilation[1])[:, None, None] + (np.arange(wo) * stride[1] - padding[1])[None, :]
        py = b.binary("add", dy, _host(b, base_y.reshape(1, 1, k, ho, 1), offset))
        px = b.binary("add", dx, _host(b, base_x.reshape(1, 1, k, 1, wo), offset))
        y0, x0 = b.unary("floor", py), b.unary("floor", px)
        ly, lx = b.binary("sub", py, y0), b.binary("sub", px, x0)
        hy, hx = b.binary("sub", 1.0, ly), b.binary("sub", 1.0, lx)
        y1, x1 = b.binary("add", y0, 1.0), b.binary("add", x0, 1.0)
        self.items: list[tuple[Prim, Prim, Prim, Prim]] = []  # (index, weight, d weight/dy, d weight/dx)
        for cy, cx, wy, wx, sy, sx in (
            (y0, x0, hy, hx, -1.0, -1.0),
            (y0, x1, hy, lx, -1.0, 1.0),
            (y1, x0, ly, hx, 1.0, -1.0),
            (y1, x1, ly, lx, 1.0, 1.0),
        ):
            inside = b.binary(
                "and",
                b.binary("and", b.binary("ge", cy, 0.0), b.binary("le", cy, float(h - 1))),
                b.binary("and", b.binary("ge", cx, 0.0), b.binary("le", cx, float(w - 1))),
            )
            valid = b.cast(inside, b.dtype_of(offset))
            flat = b.binary(
                "add",
                b.binary("mul", b.clamp(cy, 0.0, float(h - 1)), float(w)),
                b.clamp(cx, 0.0, float(w - 1)),
            )
            index = b.reshape(b.cast(flat, b.default_int), self.flat)
            wyv, wxv = b.binary("mul", wy, valid), b.binary("mul", wx, valid)
            weight = b.reshape(b.binary("mul", wyv, wx), self.flat)
            d_dy = b.reshape(b.binary("mul", wxv, sy), self.flat)
            d_dx = b.reshape(b.binary("mul", wyv, sx), self.flat)
            self.items.append((index, weight, d_dy, d_dx))


def _sample(b: Backend, x: Prim, corners: _Corners, og: int) -> tuple[Prim, list[Prim], Prim]:
    """Bilinear samples of x (N, C, H, W) at every corner set: (values (N, G, C/G, K*L), the gathered
    corner values, x's (N, G, C/G, H*W) view with the expanded index shape)."""
    n, c, h, w = b.shape_of(x)
    xg = b.reshape(x, (n, og, c // og, h * w))
    full = (n, og, c // og, corners.flat[-1])
    reads, total = [], None
    for index, weight, _, _ in corners.items:
        v = b.gather(xg, 3, b.expand(index, full))
        reads.append(v)
        term = b.binary("mul", v, weight)
        total = term if total is None else b.binary("add", total, term)
    return total, reads, full


def deform_conv2d(
    b: Backend,
    x: Prim,
    offset: Prim,
    weight: Prim,
    mask: Prim | None,
    bias: Prim | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    offset_groups: int,
) -> Prim:
    """Deformable 2-d convolution (torchvision's deform_conv2d; v2 with a modulation ``mask``).

    x (N, C_in, H, W), offset (N, 2 * offset_groups * kh * kw, H_out, W_out) as (dy, dx) pairs per tap,
    weight (C_out, C_in // groups, kh, kw), mask (N, offset_groups * kh * kw, H_out, W_out) or None,
    bias (C_out,) or None -> (N, C_out, H_out, W_out)."""
    from ._conv_defaults import add_bias

    cols = _columns(b, x, offset, weight, mask, stride, padding, dilation, offset_groups)[0]
    n, c = b.shape_of(x)[:2]
    c_out, _, kh, kw = b.shape_of(weight)
    ho, wo = b.shape_of(offset)[2:]
    depth = (c // groups) * kh * kw
    w = b.reshape(weight, (1, groups, c_out // groups, depth))
    y = b.matmul(w, b.reshape(cols, (n, groups, depth, ho * wo)))
    return add_bias(b, b.reshape(y, (n, c_out, ho, wo)), bias)


def _columns(
    b: Backend,
    x: Prim,
    offset: Prim,
    weight: Prim,
    mask: Prim | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    og: int,
) -> tuple[Prim, Prim, _Corners, list[Prim], Prim, Prim | None]:
    """(columns (N, C, K, L) masked, unmasked samples (N, G, C/G, K*L), corners, corner reads, gather
    shape, mask as (N, G, 1, K*L) or None)."""
    n, c = b.shape_of(x)[:2]
    kernel = tuple(b.shape_of(weight)[2:])
    corners = _Corners(b, tuple(b.shape_of(x)), offset, kernel, stride, padding, dilation, og)
    vals, reads, full = _sample(b, x, corners, og)
    m = None if mask is None else b.reshape(mask, corners.flat)
    cols = vals if m is None else b.binary("mul", vals, m)
    k = kernel[0] * kernel[1]
    return b.reshape(cols, (n, c, k, corners.flat[-1] // k)), vals, corners, reads, full, m


def deform_conv2d_backward(
    b: Backend,
    x: Prim,
    offset: Prim,
    weight: Prim,
    mask: Prim | None,
    grad: Prim,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    offset_groups: int,
) -> tuple[Prim, Prim, Prim, Prim | None, Prim]:
    """Gradients of ``deform_conv2d`` for the output gradient ``grad`` (N, C_out, H_out, W_out):
    (x, offset, weight, mask (None without a mask), bias), each of its input's shape.

    Offsets exactly on integer coordinates take the one-sided derivative of the upper cell (the
    bilinear weights' kink), as torchvision."""
    og = offset_groups
    cols, vals, corners, reads, full, m = _columns(b, x, offset, weight, mask, stride, padding, dilation, og)
    n, c, h, w = b.shape_of(x)
    c_out, c_in_g, kh, kw = b.shape_of(weight)
    ho, wo = b.shape_of(offset)[2:]
    length, depth = ho * wo, c_in_g * kh * kw
    gg = b.reshape(grad, (n, groups, c_out // groups, length))
    cols_g = b.reshape(cols, (n, groups, depth, length))
    gw = b.reduce("sum", b.matmul(gg, b.permute(cols_g, (0, 1, 3, 2))), (0,), False)
    gw = b.reshape(gw, (c_out, c_in_g, kh, kw))
    gb = b.reduce("sum", grad, (0, 2, 3), False)
    w_t = b.permute(b.reshape(weight, (1, groups, c_out // groups, depth)), (0, 1, 3, 2))
    gcols = b.reshape(b.matmul(w_t, gg), full)  # (N, G, C/G, K*L)
    gmask = None
    if m is not None:
        gm = b.reduce("sum", b.binary("mul", gcols, vals), (2,), True)
        gmask = b.reshape(gm, b.shape_of(mask))
        gcols = b.binary("mul", gcols, m)
    gx = b.full((n, og, c // og, h * w), 0.0, b.dtype_of(x))
    gy_sum = gx_sum = None
    for (index, weight_c, d_dy, d_dx), v in zip(corners.items, reads):
        gx = b.scatter_add(gx, 3, b.expand(index, full), b.binary("mul", gcols, weight_c))
        gv = b.binary("mul", gcols, v)
        ty, tx = b.binary("mul", gv, d_dy), b.binary("mul", gv, d_dx)
        gy_sum = ty if gy_sum is None else b.binary("add", gy_sum, ty)
        gx_sum = tx if gx_sum is None else b.binary("add", gx_sum, tx)
    k = kh * kw
    parts = [b.reshape(b.reduce("sum", s, (2,), False), (n, og, k, 1, ho, wo)) for s in (gy_sum, gx_sum)]
    goffset = b.reshape(b.cat(parts, 3), (n, 2 * og * k, ho, wo))
    return b.reshape(gx, (n, c, h, w)), goffset, gw, gmask, gb


# ---------------------------------------------------------------- roi_align
def _interp_matrices(
    b: Backend,
    boxes: Prim,
    size: Ints,
    output_size: Ints,
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
) -> tuple[Prim, Prim, Prim]:
    """(Ay (K, 1, ph, H), Ax (K, 1, pw, W), batch index (K,)) with the bin averages folded in."""
    import math

    import numpy as np

    h, w = size
    ph, pw = output_size
    k = b.shape_of(boxes)[0]
    dt = b.dtype_of(boxes)
    col = [b.reshape(_part(b, boxes, 1, i, i + 1), (k, 1, 1)) for i in range(5)]
    shift = 0.5 if aligned else 0.0
    start_x, start_y, end_x, end_y = (
        b.binary("sub", b.binary("mul", v, float(spatial_scale)), shift) for v in col[1:]
    )
    roi_w, roi_h = b.binary("sub", end_x, start_x), b.binary("sub", end_y, start_y)
    if not aligned:
        roi_w, roi_h = b.binary("maximum", roi_w, 1.0), b.binary("maximum", roi_h, 1.0)
    mats = []
    for start, extent, pooled, limit in ((start_y, roi_h, ph, h), (start_x, roi_w, pw, w)):
        bin_size = b.binary("div", extent, float(pooled))
        if sampling_ratio > 0:
            grid: Prim | float = float(sampling_ratio)
            most = sampling_ratio
        else:
            grid = b.unary("ceil", bin_size)
            most = int(np.max(b.to_numpy(grid))) if k else 0  # the one host read: the sample count
            if not math.isfinite(most):
                raise ValueError("roi_align: boxes must be finite")
        most = max(most, 1)
        steps = _host(b, (np.arange(most, dtype=np.float64) + 0.5).reshape(1, 1, most), boxes)
        bins = _host(b, np.arange(pooled, dtype=np.float64).reshape(1, pooled, 1), boxes)
        # sample coordinates (K, pooled, most)
        pos = b.binary(
            "add",
            b.binary("add", start, b.binary("mul", bins, bin_size)),
            b.binary("div", b.binary("mul", steps, bin_size), grid),
        )
        taken = b.binary("lt", b.binary("sub", steps, 0.5), grid)  # samples past this box's own count
        inside = b.binary("and", b.binary("ge", pos, -1.0), b.binary("le", pos, float(limit)))
        keep = b.cast(b.binary("and", inside, taken), dt)
        p = b.clamp(pos, 0.0, float(limit - 1))
        lo = b.unary("floor", p)
        hi = b.binary("minimum", b.binary("add", lo, 1.0), float(limit - 1))
        frac = b.binary("sub", p, lo)
        grid_ix = _host(b, np.arange(limit, dtype=np.float64).reshape(1, 1, 1, limit), boxes)

        def onto(corner: Prim, wt: Prim, grid_ix: Prim = grid_ix, shape: Ints = (k, pooled, most, 1)) -> Prim:
            hit = b.cast(b.binary("eq", b.reshape(corner, shape), grid_ix), dt)
            return b.binary("mul", hit, b.reshape(wt, shape))

        lo_w = b.binary("mul", b.binary("sub", 1.0, frac), keep)
        hi_w = b.binary("mul", frac, keep)
        mat = b.reduce("sum", b.binary("add", onto(lo, lo_w), onto(hi, hi_w)), (2,), False)
        count = b.binary("maximum", grid if not isinstance(grid, float) else b.full((k, 1, 1), grid, dt), 1.0)
        mats.append(b.reshape(b.binary("div", mat, count), (k, 1, pooled, limit)))
    index = b.cast(b.reshape(col[0], (k,)), b.default_int)
    return mats[0], mats[1], index


def roi_align(
    b: Backend,
    x: Prim,
    boxes: Prim,
    output_size: Ints,
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
) -> Prim:
    """torchvision's roi_align: x (N, C, H, W), boxes (K, 5) rows ``(batch_index, x1, y1, x2, y2)`` in
    x's dtype -> (K, C, ph, pw); ``sampling_ratio`` <= 0 takes ``ceil(box size / output size)`` samples
    per bin for each box."""
    n, c, h, w = b.shape_of(x)
    ay, ax, index = _interp_matrices(b, boxes, (h, w), output_size, spatial_scale, sampling_ratio, aligned)
    picked = b.select(x, 0, index)  # (K, C, H, W)
    return b.matmul(b.matmul(ay, picked), b.permute(ax, (0, 1, 3, 2)))


def roi_align_backward(
    b: Backend,
    grad: Prim,
    boxes: Prim,
    x_shape: Ints,
    output_size: Ints,
    spatial_scale: float,
    sampling_ratio: int,
    aligned: bool,
) -> Prim:
    """The gradient of ``roi_align`` for x (of shape ``x_shape``) given the output gradient ``grad``
    (K, C, ph, pw); boxes get no gradient (as torchvision)."""
    n, c, h, w = x_shape
    ay, ax, index = _interp_matrices(b, boxes, (h, w), output_size, spatial_scale, sampling_ratio, aligned)
    per_box = b.matmul(b.matmul(b.permute(ay, (0, 1, 3, 2)), grad), ax)  # (K, C, H, W)
    zeros = b.full(tuple(x_shape), 0.0, b.dtype_of(grad))
    return b.select_add(zeros, 0, index, per_box)


# ---------------------------------------------------------------- nms
def nms(b: Backend, boxes: Prim, scores: Prim, iou_threshold: float) -> Prim:
    """Greedy non-maximum suppression (torchvision's nms): boxes (N, 4) as (x1, y1, x2, y2), scores (N,)
    -> bool (N,), True for the boxes kept. Boxes are visited by decreasing score (ties: lower index
    first); a box is dropped when its IoU with a kept box is greater than ``iou_threshold``."""
    import numpy as np

    bx = np.asarray(b.to_numpy(boxes), dtype=np.float64)
    sc = np.asarray(b.to_numpy(scores), dtype=np.float64)
    order = np.argsort(-sc, kind="stable")
    area = (bx[:, 2] - bx[:, 0]) * (bx[:, 3] - bx[:, 1])
    keep = np.zeros(len(sc), dtype=bool)
    dropped = np.zeros(len(sc), dtype=bool)
    for i in order:
        if dropped[i]:
            continue
        keep[i] = True
        iw = np.clip(np.minimum(bx[i, 2], bx[:, 2]) - np.maximum(bx[i, 0], bx[:, 0]), 0, None)
        ih = np.clip(np.minimum(bx[i, 3], bx[:, 3]) - np.maximum(bx[i, 1], bx[:, 1]), 0, None)
        inter = iw * ih
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (area[i] + area - inter)
        dropped |= iou > iou_threshold
    from .._dtype import bool_

    return b.from_numpy(keep, bool_)
