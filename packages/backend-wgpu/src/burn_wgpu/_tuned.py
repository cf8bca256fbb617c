"""The wgpu kernel families the autotuner chooses among (``burn.autotune``).

matmul candidates (each only where its workgroup memory and invocations fit the device's limits, so
browser-portable mode keeps WebGPU's 16 KiB and 256):

* ``tile64_k16`` (the reference every candidate is checked against) and ``tile128_k8``: the original
  tiled kernel (``_kernels.matmul.render``);
* the register-blocked tiles of ``_kernels.matmul.BLOCKS`` (4x4 to 8x8 outputs per invocation, vec4
  loads where shapes allow, vec4 stores when N % 4 == 0); ``b64x64k16r4x4`` is the default (used
  untuned and with ``BURN_AUTOTUNE=off``);
* ``..._pf``: the same with register prefetching (the next K step's global loads in flight while
  the current one computes);
* ``..._h``: the same with f16 workgroup tiles and accumulators, for float16 operands (the device has
  ``shader-f16`` whenever float16 tensors exist);
* ``..._h2<layout>``: k-pair packed float16 kernels (``_kernels.matmul_pairs.render_pairs``): one vec2<f16>
  FMA per output per two K steps, workgroup tiles of ``PAIR_LAYOUTS[layout]`` elements (``f2``: f32
  accumulation every second K step); the 64-K 64x128 tiles need 24 KiB of workgroup memory;
* ``splitk4_...`` / ``splitk16_...``: split-K for outputs of few tiles over a long K.

Keys bucket M, N and K (powers of two above 64) and name the dtype, whether a batch is present, which
operands are transposed, and ``u`` when a dim is not a multiple of 4 (no vec4 paths). Matmuls under
``_TUNE_MIN_FLOPS`` use the reference kernel untuned: tuning them costs more than it could save.
Timing is on the GPU (timestamp queries) where the device has them (``_timer``).
"""

from __future__ import annotations

import struct
from typing import Any

import burn
from burn.autotune import Autotuner, Candidate, Family, bucket, tuner_for
from burn.backend import broadcast_shape, pool_out_size

from . import _elementwise as EW
from ._kernels import matmul as KM
from ._kernels import matmul_pairs as KMP
from ._kernels import reduce as KR
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor, numel
from ._timer import timer_for

_TUNE_MIN_FLOPS = 1 << 24


def _layout(x: WgpuTensor) -> str:
    """ "n" when rows are contiguous (the last dim has stride 1), "t" when columns are, else "s"."""
    return "n" if x.strides[-1] == 1 else ("t" if x.strides[-2] == 1 else "s")


def _matmul_key(backend: Any, a: WgpuTensor, b: WgpuTensor) -> str:
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batched = "b" if len(a.shape) > 2 or len(b.shape) > 2 else "1"
    unaligned = " u" if (m % 4 or n % 4 or k % 4) else ""  # scalar loads and stores: tuned apart
    return (
        f"{a.dtype.name} m{bucket(m)} n{bucket(n)} k{bucket(k)} {batched} {_layout(a)}{_layout(b)}{unaligned}"
    )


def _aligned(*values: int) -> bool:
    return all(v % 4 == 0 for v in values)


def _modes(a: WgpuTensor, b: WgpuTensor, sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[str, str]:
    """How each operand tile loads: vec4 along its contiguous dim where sizes, strides and offsets are
    multiples of 4 (so every vec4 is aligned and wholly inside or outside the matrix)."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    a_sm, a_sk = a.strides[-2:]
    b_sk, b_sn = b.strides[-2:]
    if a_sk == 1 or a_sm != 1:
        a_mode = "k4" if a_sk == 1 and _aligned(k, a_sm, a.offset, *sa) else "k1"
    else:
        a_mode = "m4" if _aligned(m, a_sk, a.offset, *sa) else "m1"
    if b_sn == 1 or b_sk != 1:
        b_mode = "n4" if b_sn == 1 and _aligned(n, b_sk, b.offset, *sb) else "n1"
    else:
        b_mode = "k4" if _aligned(k, b_sn, b.offset, *sb) else "k1"
    return a_mode, b_mode


def _grid_fits(backend: Any, block: KM.Block, m: int, n: int) -> bool:
    limit = backend.ctx.limits.get("max-compute-workgroups-per-dimension", 65535)
    return -(-n // block.bn) <= limit and -(-m // block.bm) <= limit


def matmul_blocked(
    backend: Any,
    a: WgpuTensor,
    b: WgpuTensor,
    block: KM.Block,
    acc16: bool = False,
    splits: int = 1,
    prefetch: bool = False,
    epilogue: tuple[KM.Epilogue, list[WgpuTensor], list[WgpuTensor], bytes] | None = None,
    pairs: str = "",
    fold: int = 1,
) -> WgpuTensor:
    """Batched matmul with a register-blocked kernel (``_kernels.matmul.render_blocked``); ``splits``
    > 1 runs K in that many slices into float32 partials, then adds them (split-K). ``epilogue``:
    (kernel part, its outputs (the first one is returned), its other inputs, its metadata words): a
    fused epilogue (``burn_wgpu._fusion``), one dispatch, the caller having checked ``fits_epilogue``.
    ``pairs``: a k-pair layout of ``_kernels.matmul_pairs.PAIR_LAYOUTS`` (float16; ``fold``: K steps per f32
    accumulation): ``render_pairs``'s kernel, which takes the same metadata (not with split-K)."""
    if pairs and (splits > 1 or epilogue is not None or acc16 or prefetch):
        raise ValueError("matmul: the k-pair kernels take no split-K, epilogue, acc16 or prefetch")
    *ba, m, k = a.shape
    *bb, _, n = b.shape
    batch = broadcast_shape(tuple(ba), tuple(bb))
    if epilogue is not None:
        part, outs, ins, tail = epilogue
        sa = EW.broadcast_strides(backend._batch_view(a, len(ba)), batch)
        sb = EW.broadcast_strides(backend._batch_view(b, len(bb)), batch)
        cshape, (sa, sb) = EW.collapse(batch, [sa, sb])
        a_mode, b_mode = _modes(a, b, sa, sb)
        inner = (a.offset, b.offset, a.strides[-2], a.strides[-1], b.strides[-2], b.strides[-1])
        kernel = KM.render_blocked(
            a.dtype, len(cshape), block, a_mode, b_mode, prefetch=prefetch, epilogue=part
        )
        count = numel(batch)
        meta = _pack(m, n, k, 0, *inner, max(k, 1), count, *cshape, *sa, *sb) + tail
        buffers = [outs[0].buffer, a.buffer, b.buffer, *(t.buffer for t in [*outs[1:], *ins])]
        grid_ = (-(-n // block.bn), -(-m // block.bm), count)
        backend.ex.dispatch(kernel, buffers, meta, grid_)
        return outs[0]
    out = backend.empty(batch + (m, n), a.dtype)
    count = numel(batch)
    if count == 0 or m == 0 or n == 0:
        return out
    sa = EW.broadcast_strides(backend._batch_view(a, len(ba)), batch)
    sb = EW.broadcast_strides(backend._batch_view(b, len(bb)), batch)
    cshape, (sa, sb) = EW.collapse(batch, [sa, sb])
    gx, gy = -(-n // block.bn), -(-m // block.bm)
    if not _grid_fits(backend, block, m, n):  # an output of millions of columns: the plain kernel
        return backend.matmul_tiled(a, b, KM.TILE, KM.TK)
    a_mode, b_mode = _modes(a, b, sa, sb)
    inner = (a.offset, b.offset, a.strides[-2], a.strides[-1], b.strides[-2], b.strides[-1])
    out_vec = n % 4 == 0
    if splits > 1 and k > 0:
        per_split = -(-k // splits)
        chunk = -(-per_split // block.bk) * block.bk  # a multiple of bk: whole K steps per slice
        splits = -(-k // chunk)
        if splits * count > 65535:
            raise ValueError(f"split-K matmul: {splits} slices x {count} batch entries exceed one dispatch")
        part = backend.empty((splits * count * m * n,), burn.float32)
        kernel = KM.render_blocked(a.dtype, len(cshape), block, a_mode, b_mode, out_vec, acc16, True)
        meta = _pack(m, n, k, 0, *inner, chunk, count, *cshape, *sa, *sb)
        backend.ex.dispatch(kernel, [part.buffer, a.buffer, b.buffer], meta, (gx, gy, splits * count))
        total = count * m * n
        backend.ex.dispatch(
            KM.render_split_sum(a.dtype), [out.buffer, part.buffer], _pack(total, splits), grid(total)
        )
        return out
    if pairs:
        kernel = KMP.render_pairs(a.dtype, len(cshape), block, pairs, a_mode, b_mode, fold)
    else:
        kernel = KM.render_blocked(
            a.dtype, len(cshape), block, a_mode, b_mode, out_vec, acc16, prefetch=prefetch
        )
    for base in range(0, count, 65535):
        z = min(65535, count - base)
        meta = _pack(m, n, k, base, *inner, max(k, 1), z, *cshape, *sa, *sb)
        backend.ex.dispatch(kernel, [out.buffer, a.buffer, b.buffer], meta, (gx, gy, z))
    return out


def fits_epilogue(backend: Any, a: WgpuTensor, b: WgpuTensor) -> tuple[KM.Block, bool] | None:
    """The (block, prefetch) of the blocked kernel ``backend.matmul(a, b)`` runs, where a fused
    epilogue can join it (float32, tuned to a blocked candidate without split-K, one dispatch); else
    None (the matmul then runs unfused)."""
    if a.dtype is not burn.float32 or not should_tune(a, b):
        return None
    m, n = a.shape[-2], b.shape[-1]
    count = numel(broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    if not 0 < count <= 65535 or m == 0 or n == 0 or a.shape[-1] == 0:
        return None
    chosen = BLOCKED.get(tuner(backend).choice(MATMUL, backend, a, b))
    if chosen is None or not _grid_fits(backend, chosen[0], m, n):
        return None
    return chosen


def _pack(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _config(tile: int, tk: int) -> Candidate:
    def fits(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        limit = backend.ctx.limits.get("max-compute-workgroup-storage-size", 16384)
        return KM.workgroup_bytes(tile, tk) <= limit

    return Candidate(
        f"tile{tile}_k{tk}",
        lambda backend, a, b: backend.matmul_tiled(a, b, tile, tk),
        fast=(tile, tk) == (KM.TILE, KM.TK),
        applies=fits,
    )


# the float32 register-blocked candidates by name: (block, prefetch) (a fused epilogue joins them)
BLOCKED: dict[str, tuple[KM.Block, bool]] = {}


def _float(a: WgpuTensor) -> bool:
    return a.dtype.is_float


def _block(
    block: KM.Block,
    acc16: bool = False,
    fast: bool = False,
    prefetch: bool = False,
    pairs: str = "",
    fold: int = 1,
) -> Candidate:
    """A register-blocked candidate; ``pairs``: the k-pair kernel of that layout (``fold``) instead."""
    f16 = acc16 or bool(pairs)  # f16 workgroup tiles, float16 operands only

    def fits(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        limits = backend.ctx.limits
        return (
            _float(a)
            and (not f16 or a.dtype is burn.float16)
            and block.workgroup_bytes(2 if f16 else 4)
            <= limits.get("max-compute-workgroup-storage-size", 16384)
            and block.threads <= limits.get("max-compute-invocations-per-workgroup", 256)
            and _grid_fits(backend, block, a.shape[-2], b.shape[-1])
        )

    name = f"{block.name}{'_h' if acc16 else ''}{'_pf' if prefetch else ''}"
    if pairs:
        name += f"_h2{pairs}{f'f{fold}' if fold > 1 else ''}"
    if not f16:
        BLOCKED[name] = (block, prefetch)
    return Candidate(
        name,
        lambda backend, a, b: matmul_blocked(
            backend, a, b, block, acc16, prefetch=prefetch, pairs=pairs, fold=fold
        ),
        fast=fast,
        applies=fits,
    )


def _split(block: KM.Block, splits: int, fast: bool = False) -> Candidate:
    """Split-K: for outputs too small to fill the device (few workgroups) over a long K."""

    def skinny(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        m, k = a.shape[-2:]
        n = b.shape[-1]
        count = numel(broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
        tiles = -(-m // block.bm) * -(-n // block.bn) * count
        return _float(a) and k >= 128 * splits and tiles * splits <= 4096 and tiles < 128

    return Candidate(
        f"splitk{splits}_{block.name}",
        lambda backend, a, b: matmul_blocked(backend, a, b, block, splits=splits),
        fast=fast,
        applies=skinny,
    )


def _close(out: Any, ref: Any) -> bool:
    """float32: allclose(rtol=1e-3, atol=1e-3); float16 (f16 accumulators round every partial sum):
    within 2% of the result's largest magnitude. A wrong kernel misses either by far."""
    import numpy as np

    out, ref = np.asarray(out), np.asarray(ref)
    if out.shape != ref.shape:
        return False
    atol = 1e-3
    if ref.dtype == np.float16 and ref.size:
        atol = max(atol, 0.02 * float(np.abs(ref.astype(np.float64)).max()))
    return bool(
        np.allclose(out.astype(np.float64), ref.astype(np.float64), rtol=1e-3, atol=atol, equal_nan=True)
    )


_FAST_BLOCKS = {"b64x64k16r4x4", "b128x128k8r8x8", "b128x64k16r8x4"}
_SPLIT_BLOCK = KM.Block(64, 64, 16, 4, 4)
_F16_BLOCK = KM.Block(128, 128, 32, 8, 8)  # f16 tiles: twice the K step in the same 16 KiB
# the k-pair candidates (block, layout, in the fast set), all adding into f32 every second K step. On
# the H200 the 64-K 64x128 tile (24 KiB: beyond WebGPU's default 16) ran at 1.6x the best float32
# tile at 1024-4096 (the matrix layout 1-4% behind the struct); within the portable limits the 32-K
# 64x128, the 64-K 64x64 and the 32-K 64x64 (128 invocations) at 1.35-1.4x. 8x8 per invocation lost
# to 4x8 (about 200 registers: fewer workgroups in flight)
_PAIR_CANDIDATES = (
    (KM.Block(64, 128, 64, 4, 8), "s4", True),
    (KM.Block(64, 128, 64, 4, 8), "m4", False),
    (KM.Block(64, 128, 32, 4, 8), "s4", True),
    (KM.Block(64, 64, 64, 4, 4), "s4", False),
    (KM.Block(64, 64, 32, 4, 8), "s4", False),
)

MATMUL = Family(
    "matmul",
    (
        *(_config(tile, tk) for tile, tk in KM.CONFIGS[:2]),  # the others never win over the blocked ones
        *(_block(blk, fast=blk.name in _FAST_BLOCKS) for blk in KM.BLOCKS),
        *(_block(blk, fast=blk.name in _FAST_BLOCKS, prefetch=True) for blk in KM.BLOCKS[:4]),
        *(_block(blk, acc16=True, fast=True) for blk in (KM.BLOCKS[0], KM.BLOCKS[2], _F16_BLOCK)),
        _block(KM.BLOCKS[2], acc16=True, prefetch=True),
        *(_block(blk, fast=fast, pairs=layout, fold=2) for blk, layout, fast in _PAIR_CANDIDATES),
        _split(_SPLIT_BLOCK, 4, fast=True),
        _split(_SPLIT_BLOCK, 16),
    ),
    key=_matmul_key,
    reference=f"tile{KM.TILE}_k{KM.TK}",
    default=KM.BLOCKS[0].name,
    close=_close,
)


def should_tune(a: WgpuTensor, b: WgpuTensor) -> bool:
    m, k = a.shape[-2:]
    return 2 * m * k * b.shape[-1] >= _TUNE_MIN_FLOPS


def tuner(backend: Any) -> Autotuner:
    """The backend's tuner: its cache is keyed by the adapter, driver and versions."""
    from ._version import __version__

    info = backend.ctx.adapter.info
    parts = (
        str(info.get("device", "") or backend.ctx.label),
        f"{info.get('backend_type', '')} {info.get('driver', '')} {info.get('driver_description', '')}".strip(),
        f"burn-wgpu {__version__}",
        "portable" if backend.ctx.portable else "native",
    )
    return tuner_for(backend, parts, timer_for(backend, warmup=1, reps=5))


# ---------------------------------------------------------------------- conv2d
# candidates: "im2col" (the reference: an im2col kernel, then the tuned matmul), "implicit_<block>"
# (implicit GEMM, the default), "slices" (the backend contract's default: strided slices, stack,
# matmul), and the direct kernels without workgroup memory, bias fused: "direct" (any conv),
# "depthwise" (groups == C_in) and "pointwise" (1x1, stride 1, no padding). Untuned and in
# browser-portable mode a rule picks among them (``_untuned``). Only 2-d float convolutions come here
# (``WgpuOps.conv``).

Ints = tuple[int, ...]


def _conv_sizes(x: WgpuTensor, weight: WgpuTensor, stride: Ints, padding: Ints, dilation: Ints) -> Ints:
    (h, w), (kh, kw) = x.shape[2:], weight.shape[2:]
    oh, ow = (pool_out_size(*a, False) for a in zip((h, w), (kh, kw), stride, padding, dilation))
    return oh, ow


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
            meta = _pack(total, rows, length, cg, groups, x.offset + n0 * cin * h * w, *params)
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
    a_mode = "k4" if _aligned(k, wt.offset) else "k1"
    kernel = KC.render_implicit(x.dtype, block, kh, kw, a_mode, length % 4 == 0)
    params = (h, w, ow, *stride, *padding, *dilation)
    for base in range(0, count, 65535):
        z = min(65535, count - base)
        meta = _pack(
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
    backend.ex.dispatch(kernel, buffers, _pack(*meta, *params), grid(meta[0], 64))
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
    backend.ex.dispatch(kernel, buffers, _pack(*meta), grid(meta[0], 64))
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


def _implicit(block: KM.Block, fast: bool) -> Candidate:
    def fits(backend: Any, x: WgpuTensor, weight: WgpuTensor, *rest: Any) -> bool:
        limits = backend.ctx.limits
        return block.workgroup_bytes() <= limits.get(
            "max-compute-workgroup-storage-size", 16384
        ) and block.threads <= limits.get("max-compute-invocations-per-workgroup", 256)

    def run(
        backend: Any,
        x: WgpuTensor,
        weight: WgpuTensor,
        bias: WgpuTensor | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> WgpuTensor:
        return conv2d_implicit(backend, x, weight, bias, stride, padding, dilation, groups, block)

    return Candidate(
        f"implicit_{block.name}",
        run,
        fast=fast,
        applies=fits,
    )


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
    cout, _, kh, kw = weight.shape
    geometry = f"k{kh}x{kw} s{stride[0]}x{stride[1]} p{padding[0]}x{padding[1]} d{dilation[0]}x{dilation[1]}"
    return (
        f"{x.dtype.name} n{bucket(n)} c{bucket(cin)} h{bucket(h)} w{bucket(w)} o{bucket(cout)} "
        f"{geometry} g{groups}"
    )


def _depthwise_applies(backend: Any, x: WgpuTensor, weight: WgpuTensor, *rest: Any) -> bool:
    return _is_depthwise(x, weight, rest[-1])


def _pointwise_applies(
    backend: Any, x: WgpuTensor, weight: WgpuTensor, bias: Any, stride: Ints, padding: Ints, *rest: Any
) -> bool:
    return _is_pointwise(weight, stride, padding)


def _direct(backend: Any, *args: Any) -> WgpuTensor:
    return conv2d_direct(backend, *args)


def _depthwise(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> WgpuTensor:
    return conv2d_direct(backend, x, weight, bias, stride, padding, dilation, groups, co=1, px=4)


def _pointwise(backend: Any, *args: Any) -> WgpuTensor:
    # the tuner runs it only where it applies; called on another geometry it is the direct kernel
    if not _is_pointwise(args[1], args[3], args[4]):
        return conv2d_direct(backend, *args)
    return conv2d_pointwise(backend, *args)


_IMPLICIT_BLOCKS = (KM.BLOCKS[0], KM.BLOCKS[4], KM.BLOCKS[5], KM.BLOCKS[2])
CONV2D = Family(
    "conv2d",
    (
        Candidate("im2col", lambda backend, *args: conv2d_im2col(backend, *args)),
        *(_implicit(blk, fast=blk is KM.BLOCKS[0]) for blk in _IMPLICIT_BLOCKS),
        Candidate("slices", _conv_slices, fast=False, applies=_slices_fit),
        Candidate("direct", _direct),
        Candidate("depthwise", _depthwise, applies=_depthwise_applies),
        Candidate("pointwise", _pointwise, applies=_pointwise_applies),
    ),
    key=_conv_key,
    reference="im2col",
    default=f"implicit_{KM.BLOCKS[0].name}",
    close=_close,
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
    too small to be worth tuning or the device is browser-portable."""
    args = (x, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)
    n, _, kh, kw = weight.shape
    oh, ow = _conv_sizes(x, weight, args[3], args[4], args[5])
    flops = 2 * x.shape[0] * n * oh * ow * weight.shape[1] * kh * kw
    if flops >= _TUNE_MIN_FLOPS and not backend.ctx.portable:
        return tuner(backend).run(CONV2D, backend, *args)
    return CONV2D.by_name[_untuned(x, weight, args[3], args[4], groups, flops)].fn(backend, *args)


def _untuned(x: WgpuTensor, weight: WgpuTensor, stride: Ints, padding: Ints, groups: int, flops: int) -> str:
    """The conv candidate used without tuning: below the tuning threshold and in browser-portable
    mode (web export), where nothing is timed because the page's adapter is unknown.

    * depthwise: always the depthwise kernel. Implicit GEMM gives each group a 1-row matmul, so all
      but one row of every 64-row tile is wasted: on lavapipe 16 ch 8x8 3x3 0.63 ms against 11 ms
      (64x64 tiles), 128 ch 56x56 44 ms against 1977 ms, 512 ch 7x7 3.5 ms against 143 ms.
    * under ``_TUNE_MIN_FLOPS``: the pointwise kernel for 1x1 / stride 1 / no padding, else the
      direct kernel. Such convolutions are bound by latency and barriers, not arithmetic: on lavapipe
      the direct kernel took 0.5-0.9 ms where implicit GEMM took 1.1-5.9 ms (3->8 ch 16x16 3x3:
      0.90 against 5.9; 8->8 ch 8x8: 0.67 against 3.5; 16->8 ch 8x8 1x1: 0.47 against 1.2), and in
      SwiftShader (the exported pages) the mobilenet and resnet pages ran 2-4x faster with them.
    * larger ones: the default implicit GEMM, whose workgroup tiles reuse each load across 64
      outputs; a real GPU needs that reuse (the direct kernels stay tuning candidates natively).
    """
    if _is_depthwise(x, weight, groups):
        return "depthwise"
    if flops < _TUNE_MIN_FLOPS:
        return "pointwise" if _is_pointwise(weight, stride, padding) else "direct"
    return CONV2D.default or CONV2D.reference


# ---------------------------------------------------------------------- long-row reductions
# candidates: the tree kernel with a workgroup size of ``_kernels.reduce.TREE_SIZES`` and a chunk of
# ``per_invocation`` elements per invocation (one workgroup per chunk of ``wg * per_invocation``); the
# partials of a second pass take the untuned path. "tree256x16" is the untuned kernel (reference).
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
    meta = _pack(rows, n, chunks, chunk, x.offset)
    backend.ex.dispatch(kernel, [part.buffer, x.buffer], meta, grid(rows * chunks, 1))
    if chunks == 1:
        return backend.reshape(part, (rows,))
    return backend._reduce_rows(op, part, rows, chunks, out_dt)


def _tree(wg: int, per_invocation: int, fast: bool) -> Candidate:
    def run(backend: Any, op: str, x: WgpuTensor, rows: int, n: int, out_dt: burn.DType) -> WgpuTensor:
        return reduce_rows(backend, op, x, rows, n, out_dt, wg, per_invocation)

    def fits(backend: Any, *args: Any) -> bool:
        return wg <= backend.ctx.limits.get("max-compute-invocations-per-workgroup", 256)

    return Candidate(f"tree{wg}x{per_invocation}", run, fast=fast, applies=fits)


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
    close=_close,
)


def should_tune_reduce(rows: int, n: int) -> bool:
    """Long rows of a large tensor: where the tree's shape matters (many short rows take one
    workgroup per row or chunk whatever the tree, so tuning them only costs time)."""
    return n >= _REDUCE_MIN_ROW and rows * n >= _REDUCE_MIN_ELEMENTS


# ---------------------------------------------------------------------- pooling
# candidates: the direct kernels of ``_kernels.pool`` ("w<workgroup size>p<outputs per invocation>")
# and "compose" (the reference: the backend contract's default, strided windows + reduce + argmax +
# gather). Only 1-d and 2-d pools of float (max: and int) tensors come here (``WgpuOps.max_pool``).
# Arguments of every candidate: (backend, op, x, kernel, stride, padding, dilation, ceil_mode,
# count_include_pad), 1-d pools already lifted to 2-d (height 1); max returns (values, indices).
_POOL_MIN_WORK = 1 << 22  # outputs x window taps below which a pool is not tuned
_POOL_DEFAULT = "w128p2"


def _pool_sizes(
    x: WgpuTensor, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
) -> Ints:
    return tuple(
        pool_out_size(s, k, st, p, d, ceil_mode)
        for s, k, st, p, d in zip(x.shape[2:], kernel, stride, padding, dilation)
    )


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
    oh, ow = _pool_sizes(x, kernel, stride, padding, dilation, ceil_mode)
    out = backend.empty((n, c, oh, ow), x.dtype)
    idx = backend.empty((n, c, oh, ow), burn.int32) if op == "max" else None
    pb = -(-ow // px)
    total = n * c * oh * pb
    if out.numel:
        kern = KP.render(op, x.dtype, wg, px)
        meta = _pack(
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
    def run(
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
        return pool2d_direct(
            backend, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad, wg, px
        )

    def fits(backend: Any, *args: Any) -> bool:
        return wg <= backend.ctx.limits.get("max-compute-invocations-per-workgroup", 256)

    return Candidate(f"w{wg}p{px}", run, fast=fast, applies=fits)


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
    geometry = (
        f"k{kernel[0]}x{kernel[1]} s{stride[0]}x{stride[1]} p{padding[0]}x{padding[1]} "
        f"d{dilation[0]}x{dilation[1]}"
    )
    flags = ("c" if ceil_mode else "") + ("i" if count_include_pad and op == "avg" else "")
    return f"{op} {x.dtype.name} nc{bucket(n * c)} h{bucket(h)} w{bucket(w)} {geometry}{' ' + flags if flags else ''}"


def _pool_close(out: Any, ref: Any) -> bool:
    """Max pools: values close and indices equal; average pools: ``_close``."""
    import numpy as np

    if isinstance(ref, tuple):
        if not isinstance(out, tuple) or len(out) != len(ref):
            return False
        return _close(out[0], ref[0]) and np.array_equal(np.asarray(out[1]), np.asarray(ref[1]))
    return _close(out, ref)


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
    args = (
        op,
        x,
        tuple(kernel),
        tuple(stride),
        tuple(padding),
        tuple(dilation),
        ceil_mode,
        count_include_pad,
    )
    oh, ow = _pool_sizes(x, args[2], args[3], args[4], args[5], ceil_mode)
    work = x.shape[0] * x.shape[1] * oh * ow * kernel[0] * kernel[1]
    if work >= _POOL_MIN_WORK and not backend.ctx.portable:
        return tuner(backend).run(POOL, backend, *args)
    return POOL.by_name[_POOL_DEFAULT].fn(backend, *args)
