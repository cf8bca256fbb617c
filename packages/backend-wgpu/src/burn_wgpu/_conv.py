"""2-d convolution on wgpu: im2col, implicit GEMM and the direct kernels (``_kernels.conv``), and
the tuned conv family that chooses among them (``burn.autotune``).

Candidates: "im2col" (the reference: an im2col kernel, then the tuned matmul), "implicit_<block>"
(implicit GEMM, the default), "slices" (the backend contract's default: strided slices, stack,
matmul), and the direct kernels without workgroup memory, bias fused: "direct" (any conv),
"depthwise" (groups == C_in) and "pointwise" (1x1, stride 1, no padding). Untuned and in
browser-portable mode a rule picks among them (``_untuned``); while a key tunes in the background it
runs the one ``_pick`` names. Only 2-d float convolutions come here (``WgpuOps.conv``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from burn.autotune import Candidate, Family, bucket
from burn.backend import conv_out_sizes_padded

from ._kernels import matmul as KM
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor
from ._tuning import TUNE_MIN_FLOPS, Ints, aligned, candidate, close, geometry_key, pack, tuner


def _conv_sizes(x: WgpuTensor, weight: WgpuTensor, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    return conv_out_sizes_padded(x.shape[2:], weight.shape[2:], stride, padding, dilation)


def _with_bias(backend: Any, y: WgpuTensor, bias: WgpuTensor | None) -> WgpuTensor:
    if bias is None:
        return y
    return backend.binary("add", y, backend.reshape(bias, (1, y.shape[1], 1, 1)))


def conv2d_im2col(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> WgpuTensor:
    """im2col kernel + the tuned matmul, the batch in chunks whose column matrix fits one binding."""
    from ._dtypes import ELEM_BYTES
    from ._kernels import conv as KC

    x = backend.contiguous(x)
    n, cin, h, w = x.shape
    cout, cg, kh, kw = weight.shape
    oh, ow = _conv_sizes(x, weight, stride, padding, dilation)
    length, rows = oh * ow, cg * kh * kw
    wmat = backend.reshape(weight, (1, groups, cout // groups, rows))
    pointwise = (kh, kw) == (1, 1) and stride == (1, 1) and padding == (0, 0)
    if pointwise:  # the columns are x itself
        y = backend.matmul(wmat, backend.reshape(x, (n, groups, cg, h * w)))
        return _with_bias(backend, backend.reshape(y, (n, cout, oh, ow)), bias)
    per_image = groups * rows * length * ELEM_BYTES[x.dtype]
    limit = min(backend.pool.max_binding, backend.pool.max_buffer)
    chunk = max(1, min(n, limit // max(per_image, 1)))
    kernel = KC.render_im2col(x.dtype, kh, kw)
    params = (h, w, ow, *stride, *padding, *dilation)
    parts = []
    for n0 in range(0, n, chunk):
        nc = min(chunk, n - n0)
        cols = backend.empty((nc, groups, rows, length), x.dtype)
        total = cols.numel
        if total:
            meta = pack(total, rows, length, cg, groups, x.offset + n0 * cin * h * w, *params)
            backend.ex.dispatch(kernel, [cols.buffer, x.buffer], meta, grid(total))
        parts.append(backend.matmul(wmat, cols))
    y = parts[0] if len(parts) == 1 else backend.cat(parts, 0)
    return _with_bias(backend, backend.reshape(y, (n, cout, oh, ow)), bias)


def conv2d_implicit(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    block: KM.Block = KM.BLOCKS[0],
) -> WgpuTensor:
    """Implicit-GEMM convolution (``_kernels.conv.render_implicit``): no column matrix."""
    from ._kernels import conv as KC

    x, wt = backend.contiguous(x), backend.contiguous(weight)
    n, cin, h, w = x.shape
    cout, cg, kh, kw = wt.shape
    oh, ow = _conv_sizes(x, wt, stride, padding, dilation)
    out = backend.empty((n, cout, oh, ow), x.dtype)
    m, length, k = cout // groups, oh * ow, cg * kh * kw
    count = n * groups
    if out.numel == 0:
        return out
    gx, gy = -(-length // block.bn), -(-m // block.bm)
    if max(gx, gy) > backend.ctx.limits.get("max-compute-workgroups-per-dimension", 65535):
        return conv2d_im2col(backend, x, wt, bias, stride, padding, dilation, groups)  # a huge image
    a_mode = "k4" if aligned(k, wt.offset) else "k1"
    kernel = KC.render_implicit(x.dtype, block, kh, kw, a_mode, length % 4 == 0)
    params = (h, w, ow, *stride, *padding, *dilation)
    for base in range(0, count, 65535):
        z = min(65535, count - base)
        meta = pack(
            *(m, length, k, base, wt.offset, x.offset, k, 1, 0, 1, max(k, 1), z),
            *(n, groups, 0, m * k, cin * h * w, cg * h * w),
            *params,
        )
        backend.ex.dispatch(kernel, [out.buffer, wt.buffer, x.buffer], meta, (gx, gy, z))
    return _with_bias(backend, out, bias)


def _direct_meta(
    x: WgpuTensor, wt: WgpuTensor, bias: WgpuTensor | None, groups: int, co: int, pb: int, rows: int
) -> tuple[int, ...]:
    """The fixed metadata words of the direct kernels (``_kernels.conv._DIRECT_FIXED``)."""
    n, cin = x.shape[:2]
    cout = wt.shape[0]
    cpg = cout // groups
    cb = -(-cpg // co)
    total = pb * rows * n * groups * cb
    b_off = bias.offset if bias is not None else 0
    return (total, pb, rows, cb, groups, cpg, wt.shape[1], cin, cout, x.offset, wt.offset, b_off)


def _dense_bias(backend: Any, bias: WgpuTensor | None) -> WgpuTensor | None:
    return None if bias is None else backend.contiguous(bias)


def conv2d_direct(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    co: int = 4,
    px: int = 4,
) -> WgpuTensor:
    """Direct convolution (``_kernels.conv.render_direct``): ``co`` output channels x ``px`` pixels
    of a row per invocation, no workgroup memory, the bias added in the kernel. With one input
    channel per group (depthwise) the channel loop is dropped."""
    from ._kernels import conv as KC

    x, wt, bias = backend.contiguous(x), backend.contiguous(weight), _dense_bias(backend, bias)
    n, cin, h, w = x.shape
    cout, cg, kh, kw = wt.shape
    oh, ow = _conv_sizes(x, wt, stride, padding, dilation)
    out = backend.empty((n, cout, oh, ow), x.dtype)
    if out.numel == 0:
        return out
    co = min(co, cout // groups)
    meta = _direct_meta(x, wt, bias, groups, co, -(-ow // px), oh)
    kernel = KC.render_direct(x.dtype, kh, kw, co, px, bias is not None, cg == 1)
    buffers = [out.buffer, x.buffer, wt.buffer] + ([bias.buffer] if bias is not None else [])
    params = (h, w, ow, *stride, *padding, *dilation)
    backend.ex.dispatch(kernel, buffers, pack(*meta, *params), grid(meta[0], 64))
    return out


def conv2d_pointwise(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    co: int = 4,
) -> WgpuTensor:
    """A 1x1, stride 1, unpadded convolution as ``W[g] @ X[n, g]`` per image and group
    (``_kernels.conv.render_pointwise``): no column matrix, ``co`` output channels x 4 pixels per
    invocation, vec4 where the pixel count allows, the bias added in the kernel."""
    from ._kernels import conv as KC

    if not _is_pointwise(weight, stride, padding):
        raise ValueError(
            f"conv2d_pointwise: expected a 1x1 kernel with stride 1 and no padding, got kernel "
            f"{tuple(weight.shape[2:])}, stride {stride}, padding {padding}"
        )
    x, wt, bias = backend.contiguous(x), backend.contiguous(weight), _dense_bias(backend, bias)
    n, cin, h, w = x.shape
    cout = wt.shape[0]
    out = backend.empty((n, cout, h, w), x.dtype)
    if out.numel == 0:
        return out
    co = min(co, cout // groups)
    hw = h * w
    vec = hw % 4 == 0 and x.offset % 4 == 0
    meta = _direct_meta(x, wt, bias, groups, co, -(-hw // 4), 1)
    meta = (*meta[:2], hw, *meta[3:])
    kernel = KC.render_pointwise(x.dtype, co, vec, bias is not None)
    buffers = [out.buffer, x.buffer, wt.buffer] + ([bias.buffer] if bias is not None else [])
    backend.ex.dispatch(kernel, buffers, pack(*meta), grid(meta[0], 64))
    return out


def _is_pointwise(weight: WgpuTensor, stride: Ints, padding: Ints) -> bool:
    return tuple(weight.shape[2:]) == (1, 1) and tuple(stride) == (1, 1) and tuple(padding) == (0, 0)


def _is_depthwise(x: WgpuTensor, weight: WgpuTensor, groups: int) -> bool:
    return groups == x.shape[1] and weight.shape[1] == 1


def _conv_slices(backend: Any, *args: Any) -> WgpuTensor:
    from burn.backend import Backend

    return Backend.conv(backend, *args)


def _slices_fit(backend: Any, x: WgpuTensor, weight: WgpuTensor, bias: Any, stride: Ints, *rest: Any) -> bool:
    """The stacked windows of the contract's default must fit one binding."""
    from ._dtypes import ELEM_BYTES

    oh, ow = _conv_sizes(x, weight, stride, rest[0], rest[1])
    windows = x.shape[0] * x.shape[1] * weight.shape[2] * weight.shape[3] * oh * ow * ELEM_BYTES[x.dtype]
    return windows <= min(backend.pool.max_binding, backend.pool.max_buffer)


def _conv_key(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> str:
    n, cin, h, w = x.shape
    geometry = geometry_key(weight.shape[2:], stride, padding, dilation)
    return (
        f"{x.dtype.name} n{bucket(n)} c{bucket(cin)} h{bucket(h)} w{bucket(w)} o{bucket(weight.shape[0])} "
        f"{geometry} g{groups}"
    )


def _depthwise_applies(backend: Any, x: WgpuTensor, weight: WgpuTensor, *rest: Any) -> bool:
    return _is_depthwise(x, weight, rest[-1])


def _pointwise_applies(
    backend: Any, x: WgpuTensor, weight: WgpuTensor, bias: Any, stride: Ints, padding: Ints, *rest: Any
) -> bool:
    return _is_pointwise(weight, stride, padding)


def _pointwise(backend: Any, *args: Any) -> WgpuTensor:
    # the tuner runs it only where it applies; called on another geometry it is the direct kernel
    if not _is_pointwise(args[1], args[3], args[4]):
        return conv2d_direct(backend, *args)
    return conv2d_pointwise(backend, *args)


def _implicit(block: KM.Block, fast: bool) -> Candidate:
    run = partial(conv2d_implicit, block=block)
    return candidate(
        f"implicit_{block.name}", run, fast, threads=block.threads, storage=block.workgroup_bytes()
    )


def _pick(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> str:
    """The conv kernel a key runs while it tunes in the background (``Family.pick``).

    * depthwise: the depthwise kernel (``_untuned`` says why);
    * an output of fewer pixels per image than the implicit GEMM's tile is wide (64), or a reduction
      (``C_in/groups * kh * kw``) shorter than its K step (16): the direct kernel. Implicit GEMM tiles
      each image's pixels by 64 and K by 16, so a 4x4 output fills a quarter of each tile and the first
      layer of an image model (1 or 3 channels, 3x3) a little over half of each K step; on lavapipe the
      direct kernel was 6.6x faster than any other on the digits CNN's 16->32 ch 4x4 3x3, batch 128;
    * otherwise the default implicit GEMM, whose tiles reuse each load across 64 outputs.
    """
    if _is_depthwise(x, weight, groups):
        return "depthwise"
    oh, ow = _conv_sizes(x, weight, stride, padding, dilation)
    block = KM.BLOCKS[0]
    if oh * ow < block.bn or weight.shape[1] * weight.shape[2] * weight.shape[3] < block.bk:
        return "direct"
    return CONV2D.default


_IMPLICIT_BLOCKS = (KM.BLOCKS[0], KM.BLOCKS[4], KM.BLOCKS[5], KM.BLOCKS[2])
CONV2D = Family(
    "conv2d",
    (
        Candidate("im2col", conv2d_im2col),
        *(_implicit(blk, fast=blk is KM.BLOCKS[0]) for blk in _IMPLICIT_BLOCKS),
        Candidate("slices", _conv_slices, fast=False, applies=_slices_fit),
        Candidate("direct", conv2d_direct),
        Candidate("depthwise", partial(conv2d_direct, co=1, px=4), applies=_depthwise_applies),
        Candidate("pointwise", _pointwise, applies=_pointwise_applies),
    ),
    key=_conv_key,
    reference="im2col",
    default=f"implicit_{KM.BLOCKS[0].name}",
    close=close,
    pick=_pick,
)


def conv2d(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> WgpuTensor:
    """A 2-d float convolution through the tuned candidate, or the rule's (``_untuned``) when it is
    too small to be worth tuning or the device is browser-portable; split into pieces where a tensor
    is over one storage binding (``_split.conv2d``)."""
    from . import _split

    args = (x, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)
    pieces = _split.conv2d(backend, *args, run=partial(conv2d, backend))
    if pieces is not None:
        return pieces
    n, _, kh, kw = weight.shape
    oh, ow = _conv_sizes(x, weight, args[3], args[4], args[5])
    flops = 2 * x.shape[0] * n * oh * ow * weight.shape[1] * kh * kw
    if flops >= TUNE_MIN_FLOPS and not backend.ctx.portable:
        return tuner(backend).run(CONV2D, backend, *args)
    return CONV2D.by_name[_untuned(x, weight, args[3], args[4], groups, flops)].fn(backend, *args)


def _untuned(x: WgpuTensor, weight: WgpuTensor, stride: Ints, padding: Ints, groups: int, flops: int) -> str:
    """The conv candidate used without tuning: below the tuning threshold and in browser-portable
    mode (web export), where nothing is timed because the page's adapter is unknown.

    * depthwise: always the depthwise kernel. Implicit GEMM gives each group a 1-row matmul, so all
      but one row of every 64-row tile is wasted: on lavapipe 16 ch 8x8 3x3 0.63 ms against 11 ms
      (64x64 tiles), 128 ch 56x56 44 ms against 1977 ms, 512 ch 7x7 3.5 ms against 143 ms.
    * under ``TUNE_MIN_FLOPS``: the pointwise kernel for 1x1 / stride 1 / no padding, else the
      direct kernel. Such convolutions are bound by latency and barriers, not arithmetic: on lavapipe
      the direct kernel took 0.5-0.9 ms where implicit GEMM took 1.1-5.9 ms (3->8 ch 16x16 3x3:
      0.90 against 5.9; 8->8 ch 8x8: 0.67 against 3.5; 16->8 ch 8x8 1x1: 0.47 against 1.2), and in
      SwiftShader (the exported pages) the mobilenet and resnet pages ran 2-4x faster with them.
    * larger ones: the default implicit GEMM, whose workgroup tiles reuse each load across 64
      outputs; a real GPU needs that reuse (the direct kernels stay tuning candidates natively).
    """
    if _is_depthwise(x, weight, groups):
        return "depthwise"
    if flops < TUNE_MIN_FLOPS:
        return "pointwise" if _is_pointwise(weight, stride, padding) else "direct"
    return CONV2D.default or CONV2D.reference
