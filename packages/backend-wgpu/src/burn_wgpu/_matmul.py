"""Matmul on wgpu: the register-blocked kernels' driver and the tuned matmul family
(``burn.autotune``). Candidates (each only where its workgroup memory and invocations fit the
device's limits, so browser-portable mode keeps WebGPU's 16 KiB and 256):

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
``_tuning.TUNE_MIN_FLOPS`` use the reference kernel untuned: tuning them costs more than it could save.
While a key tunes in the background it runs the kernel ``_pick`` names (a rule on the output's tiles).
Timing is on the GPU (timestamp queries) where the device has them (``_timer``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import burn
from burn.autotune import Candidate, Family, bucket
from burn.backend import broadcast_shape

from . import _elementwise as EW
from ._kernels import matmul as KM
from ._kernels import matmul_pairs as KMP
from ._kernels.elementwise import grid
from ._primitive import WgpuTensor, numel
from ._tuning import TUNE_MIN_FLOPS, aligned, candidate, close, pack, tuner


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


def _modes(a: WgpuTensor, b: WgpuTensor, sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[str, str]:
    """How each operand tile loads: vec4 along its contiguous dim where sizes, strides and offsets are
    multiples of 4 (so every vec4 is aligned and wholly inside or outside the matrix)."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    a_sm, a_sk = a.strides[-2:]
    b_sk, b_sn = b.strides[-2:]
    if a_sk == 1 or a_sm != 1:
        a_mode = "k4" if a_sk == 1 and aligned(k, a_sm, a.offset, *sa) else "k1"
    else:
        a_mode = "m4" if aligned(m, a_sk, a.offset, *sa) else "m1"
    if b_sn == 1 or b_sk != 1:
        b_mode = "n4" if b_sn == 1 and aligned(n, b_sk, b.offset, *sb) else "n1"
    else:
        b_mode = "k4" if aligned(k, b_sn, b.offset, *sb) else "k1"
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
        meta = pack(m, n, k, 0, *inner, max(k, 1), count, *cshape, *sa, *sb) + tail
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
        meta = pack(m, n, k, 0, *inner, chunk, count, *cshape, *sa, *sb)
        backend.ex.dispatch(kernel, [part.buffer, a.buffer, b.buffer], meta, (gx, gy, splits * count))
        total = count * m * n
        backend.ex.dispatch(
            KM.render_split_sum(a.dtype), [out.buffer, part.buffer], pack(total, splits), grid(total)
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
        meta = pack(m, n, k, base, *inner, max(k, 1), z, *cshape, *sa, *sb)
        backend.ex.dispatch(kernel, [out.buffer, a.buffer, b.buffer], meta, (gx, gy, z))
    return out


def fits_epilogue(backend: Any, a: WgpuTensor, b: WgpuTensor) -> tuple[KM.Block, bool] | None:
    """The (block, prefetch) of the blocked kernel ``backend.matmul(a, b)`` runs, where a fused
    epilogue can join it (float32, tuned to a blocked candidate without split-K, one dispatch); else
    None (the matmul then runs unfused)."""
    if a.dtype is not burn.float32 or not should_tune(a, b):
        return None
    limit = backend.pool.max_binding
    if a.storage.nbytes > limit or b.storage.nbytes > limit:  # multiplied in blocks (``_windows``)
        return None
    m, n = a.shape[-2], b.shape[-1]
    count = numel(broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    if not 0 < count <= 65535 or m == 0 or n == 0 or a.shape[-1] == 0:
        return None
    chosen = BLOCKED.get(tuner(backend).choice(MATMUL, backend, a, b))
    if chosen is None or not _grid_fits(backend, chosen[0], m, n):
        return None
    return chosen


def _config(tile: int, tk: int) -> Candidate:
    """The original tiled kernel (``_kernels.matmul.render``) of that tile and K step."""
    return candidate(
        f"tile{tile}_k{tk}",
        lambda backend, a, b: backend.matmul_tiled(a, b, tile, tk),
        fast=(tile, tk) == (KM.TILE, KM.TK),
        storage=KM.workgroup_bytes(tile, tk),
    )


# the float32 register-blocked candidates by name: (block, prefetch) (a fused epilogue joins them)
BLOCKED: dict[str, tuple[KM.Block, bool]] = {}


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

    def operands(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        return (
            a.dtype.is_float
            and (not f16 or a.dtype is burn.float16)
            and _grid_fits(backend, block, a.shape[-2], b.shape[-1])
        )

    name = f"{block.name}{'_h' if acc16 else ''}{'_pf' if prefetch else ''}"
    if pairs:
        name += f"_h2{pairs}{f'f{fold}' if fold > 1 else ''}"
    if not f16:
        BLOCKED[name] = (block, prefetch)
    run = partial(matmul_blocked, block=block, acc16=acc16, prefetch=prefetch, pairs=pairs, fold=fold)
    return candidate(
        name, run, fast, threads=block.threads, storage=block.workgroup_bytes(2 if f16 else 4), when=operands
    )


def _split(block: KM.Block, splits: int, fast: bool = False) -> Candidate:
    """Split-K: for outputs too small to fill the device (few workgroups) over a long K."""

    def skinny(backend: Any, a: WgpuTensor, b: WgpuTensor) -> bool:
        m, k = a.shape[-2:]
        n = b.shape[-1]
        count = numel(broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
        tiles = -(-m // block.bm) * -(-n // block.bn) * count
        return a.dtype.is_float and k >= 128 * splits and tiles * splits <= 4096 and tiles < 128

    return candidate(
        f"splitk{splits}_{block.name}", partial(matmul_blocked, block=block, splits=splits), fast, when=skinny
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

_SPLIT_PICK = f"splitk4_{_SPLIT_BLOCK.name}"
_BIG_PICK = KM.BLOCKS[1]  # 128x128 outputs, 8x8 per invocation
_BIG_TILES = 64  # outputs of at least this many 128x128 tiles take them on a GPU


def _pick(backend: Any, a: WgpuTensor, b: WgpuTensor) -> str:
    """The matmul kernel a key runs while it tunes in the background (``Family.pick``).

    * few output tiles over a long K (split-K's own rule, ``_split``): 4-way split-K; on lavapipe it
      won 64x1024 @ 1024x1024;
    * a CPU adapter (lavapipe, SwiftShader), or an output of at least ``_BIG_TILES`` 128x128 tiles: the
      128x128 tile (8x8 per invocation). On lavapipe it won every float32 size timed from 256^3 to
      2048x2048x256, 1.6-1.9x faster than the 64x64 default; a GPU needs enough of those big tiles to
      fill its cores (the H200's sweep preferred smaller tiles around 1024^2);
    * otherwise the 64x64 default.
    """
    split = MATMUL.by_name[_SPLIT_PICK]
    if split.applies is not None and split.applies(backend, a, b):
        return _SPLIT_PICK
    m, n = a.shape[-2], b.shape[-1]
    count = numel(broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    tiles = -(-m // _BIG_PICK.bm) * -(-n // _BIG_PICK.bn) * count
    if backend.ctx.adapter.info.get("adapter_type") == "CPU" or tiles >= _BIG_TILES:
        return _BIG_PICK.name
    return MATMUL.default


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
    close=close,
    pick=_pick,
)


def should_tune(a: WgpuTensor, b: WgpuTensor) -> bool:
    m, k = a.shape[-2:]
    return 2 * m * k * b.shape[-1] >= TUNE_MIN_FLOPS
