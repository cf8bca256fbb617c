"""Matmul epilogues on burn-cuda: a float32 GEMM whose every product element goes through a fusion
plan's element-wise ops (a bias, an activation, a mask) before it is stored, in one kernel.

cuBLAS, which runs burn-cuda's matmuls, has no way to run arbitrary code on its results, so a matmul
epilogue plan (``FusedKernel.matmul``) is a tuned family (``EPILOGUE``) of two kinds of candidate:

- ``cublas`` (the reference): the product written by cuBLAS, then the plan's ops as a fused
  element-wise kernel (two launches, the product through memory);
- ``t<BM>x<BN>k<BK>r<TM>x<TN>``: a generated tiled GEMM (``gemm_source``): a block of 256 threads
  computes a BM x BN tile of the product, each thread TM x TN of it in registers, K walked in steps
  of BK through shared memory; the epilogue, the plan's skeleton rendered as the element-wise kernels
  are (``_renderer``), runs on the registers and stores each output once. Operands are read through
  their element strides, so transposed views are read in place; tiles load along whichever of an
  operand's dims is contiguous.

The generated kernel multiplies in exact float32 (FMA per product, as cuBLAS's float32 GEMM), so the
family serves the ``fp32`` matmul precision; the others keep cuBLAS's tensor-core paths. Which
candidate runs is the tuner's choice per shape bucket and layout, checked against the reference once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from burn.autotune import Candidate, Family, bucket
from burn.fusion import FusedKernel, skeleton

from ._rawkernels import compiled as _compiled
from ._renderer import CudaRenderer
from ._tuning import close as _close
from ._tuning import tuner

if TYPE_CHECKING:
    from ._backend import CudaBackend
    from ._types import Prim

THREADS = 256
# (BM, BN, BK, TM, TN): every tile runs 256 threads ((BM / TM) * (BN / TN))
TILES = {
    "t16x16k16r1x1": (16, 16, 16, 1, 1),
    "t32x32k16r2x2": (32, 32, 16, 2, 2),
    "t64x64k8r4x4": (64, 64, 8, 4, 4),
    "t128x64k8r8x4": (128, 64, 8, 8, 4),
    "t128x128k8r8x8": (128, 128, 8, 8, 8),
}
_MAX_GRID_Y = 65535


def gemm_source(
    plan: FusedKernel, name: str, tile: tuple[int, ...], a_kfast: bool, b_nfast: bool, aliased: bool = False
) -> str:
    """The CUDA C of the tiled GEMM running matmul epilogue ``plan`` (2-d, float32 operands).
    Parameters: A, B, the plan's inputs after the product (``l1``...), its scalars, its outputs, then
    M, N, K, A's strides (m, k), B's strides (k, n), in elements, and each input's strides (row, col)
    seen from the (M, N) output (0 where it broadcasts). ``a_kfast``: A is contiguous along K (a
    row-major A); ``b_nfast``: B is contiguous along N (a row-major B). ``aliased``: an output may be
    an input's buffer (each element's inputs are loaded before its stores), so the epilogue's
    pointers are not declared ``__restrict__``."""
    bm, bn, bk, tm, tn = tile
    renderer, sk = CudaRenderer(restrict=not aliased), skeleton(plan)
    body = "\n".join(renderer.epilogue(sk))  # value 0, the product, is the accumulator ``p``
    k = len(plan.inputs)
    params = ["const float* __restrict__ A", "const float* __restrict__ B", *renderer.params(sk)]
    params += ["const int M", "const int N", "const int K"]
    params += ["const long long sam", "const long long sak", "const long long sbk", "const long long sbn"]
    params += [f"const long long st{i}_{d}" for i in range(1, k) for d in range(2)]
    # tile loads: consecutive threads walk the operand's contiguous dim, so global reads coalesce
    if a_kfast:
        a_load = "const int kk = i % BK, r = i / BK;"
    else:
        a_load = "const int r = i % BM, kk = i / BM;"
    if b_nfast:
        b_load = "const int c = i % BN, kk = i / BN;"
    else:
        b_load = "const int kk = i % BK, c = i / BK;"
    offsets = " ".join(f"const long long off{i} = row * st{i}_0 + col * st{i}_1;" for i in range(1, k))
    return f"""{_kernels_preamble()}
#define BM {bm}
#define BN {bn}
#define BK {bk}
#define TM {tm}
#define TN {tn}
extern "C" __global__ void __launch_bounds__({THREADS}) {name}({", ".join(params)}) {{
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN + 1];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {{
        for (int i = threadIdx.x; i < BM * BK; i += {THREADS}) {{
            {a_load}
            const long long gr = row0 + r; const int gk = k0 + kk;
            As[kk][r] = (gr < M && gk < K) ? A[gr * sam + gk * sak] : 0.0f;
        }}
        for (int i = threadIdx.x; i < BN * BK; i += {THREADS}) {{
            {b_load}
            const long long gc = col0 + c; const int gk = k0 + kk;
            Bs[kk][c] = (gc < N && gk < K) ? B[gk * sbk + gc * sbn] : 0.0f;
        }}
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {{
            float ar[TM], br[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) ar[i] = As[kk][ty + i * (BM / TM)];
            #pragma unroll
            for (int j = 0; j < TN; ++j) br[j] = Bs[kk][tx + j * (BN / TN)];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int i = 0; i < TM; ++i) {{
        const long long row = row0 + ty + i * (BM / TM);
        #pragma unroll
        for (int j = 0; j < TN; ++j) {{
            const long long col = col0 + tx + j * (BN / TN);
            if (row < M && col < N) {{
                const float p = acc[i][j];
                const long long at = row * N + col;
                {offsets}
{body}
            }}
        }}
    }}
}}
"""


def _kernels_preamble() -> str:
    from ._kernels import PREAMBLE

    return PREAMBLE


def _strides(x: Prim) -> tuple[int, int]:
    """A 2-d array's strides in elements."""
    return x.strides[0] // x.itemsize, x.strides[1] // x.itemsize


def _layout(a: Prim, w: Prim) -> tuple[bool, bool]:
    """(A contiguous along K, B contiguous along N): the tile load orders that coalesce."""
    sam, sak = _strides(a)
    sbk, sbn = _strides(w)
    return (sak == 1 and sam != 1) or a.shape[0] == 1, (sbn == 1 and sbk != 1) or w.shape[0] == 1


def run_tiled(
    b: CudaBackend,
    tag: str,
    plan: FusedKernel,
    a: Prim,
    w: Prim,
    rest: list[Prim],
    scalars: list[Any],
    donors: tuple[int, ...] = (),
) -> tuple[Prim, ...]:
    """Matmul epilogue ``plan`` as the generated GEMM of tile ``tag`` (``TILES``); ``donors``:
    indices into ``rest`` of dead inputs an output of their dtype may be written into (dense ones of
    the output's shape: each is read at the element it is written at)."""
    from ._bf16 import bits
    from ._fusion import _element_strides, _outputs, _scalar_args, _typed

    cp = b._on()
    tile = TILES[tag]
    m, k_dim = a.shape
    n = w.shape[1]
    fits = tuple(i for i in donors if rest[i].shape == (m, n) and rest[i].flags.c_contiguous)
    outs, aliased = _outputs(cp, plan, (m, n), rest, fits)
    a_kfast, b_nfast = _layout(a, w)
    spec = ("gemm", tag, a_kfast, b_nfast, aliased)
    kernel = plan.cache.get(spec)
    if kernel is None:
        name = f"burn_epilogue_{tag}_{int(a_kfast)}{int(b_nfast)}{'_aliased' if aliased else ''}"
        label = f"matmul_epilogue_{tag}_{len(plan.ops)}ops"
        kernel = plan.cache[spec] = _compiled(
            (*spec, plan.key), gemm_source(plan, name, tile, a_kfast, b_nfast, aliased), name, label
        )
    args: list[Any] = [a, w, *map(bits, rest), *_scalar_args(plan, scalars), *outs]
    args += [np.int32(m), np.int32(n), np.int32(k_dim)]
    args += [np.int64(s) for s in (*_strides(a), *_strides(w))]
    for x in rest:
        args += [np.int64(s) for s in _element_strides(x, (m, n))]
    bm, bn = tile[0], tile[1]
    kernel((-(-n // bn), -(-m // bm)), (THREADS,), tuple(args))
    return tuple(_typed(plan, outs))


def run_cublas(
    b: CudaBackend,
    plan: FusedKernel,
    a: Prim,
    w: Prim,
    rest: list[Prim],
    scalars: list[Any],
    donors: tuple[int, ...] = (),
) -> tuple[Prim, ...]:
    """Matmul epilogue ``plan`` as cuBLAS's product (float32 precision), then the plan's ops as an
    element-wise kernel (the product among the outputs only where the plan writes it); that kernel
    may write into the ``donors`` (indices into ``rest``) and into the product when it is not kept."""
    from . import _matmul

    cp = b._on()
    product = _matmul.gemm_f32(cp, a, w, "fp32")
    dead = (() if 0 in plan.outputs else (0,)) + tuple(1 + i for i in donors)
    values = iter(b.fusion_runtime().execute_reusing(plan.product_chain(), [product, *rest], scalars, dead))
    return tuple(product if v == 0 else next(values) for v in plan.outputs)


def _key(b: CudaBackend, plan: FusedKernel, a: Prim, w: Prim, rest: list[Prim], scalars: list[Any]) -> str:
    m, k = a.shape
    n = w.shape[1]
    a_kfast, b_nfast = _layout(a, w)
    return (
        f"f32 m{bucket(m)} n{bucket(n)} k{bucket(k)} a{'k' if a_kfast else 'm'} b{'n' if b_nfast else 'k'} "
        f"in{len(plan.inputs)} out{len(plan.outputs)}"
    )


def _tile_candidate(tag: str) -> Candidate:
    bm = TILES[tag][0]

    def run(b: Any, plan: FusedKernel, a: Any, w: Any, rest: list[Any], scalars: list[Any]) -> Any:
        return run_tiled(b, tag, plan, a, w, rest, scalars)

    def applies(b: Any, plan: FusedKernel, a: Any, w: Any, rest: list[Any], scalars: list[Any]) -> bool:
        return -(-a.shape[0] // bm) <= _MAX_GRID_Y

    return Candidate(tag, run, fast=tag in ("t32x32k16r2x2", "t64x64k8r4x4"), applies=applies)


def _close_all(out: Any, ref: Any) -> bool:
    return len(out) == len(ref) and all(_close(o, r) for o, r in zip(out, ref))


EPILOGUE = Family(
    "matmul_epilogue",
    (Candidate("cublas", run_cublas), *(_tile_candidate(tag) for tag in TILES)),
    key=_key,
    reference="cublas",
    close=_close_all,
)


def fits(a: Prim, w: Prim) -> bool:
    """Whether a matmul of ``a`` and ``w`` may take an epilogue here: 2-d float32 operands whose
    sizes index in 32 bits, under the fp32 matmul precision (strides may be anything: views are read
    in place)."""
    from ._matmul import get_matmul_precision

    return (
        a.dtype == np.float32
        and w.dtype == np.float32
        and a.ndim == 2
        and w.ndim == 2
        and a.shape[1] == w.shape[0]
        and max(a.shape[0], a.shape[1], w.shape[1]) < 2**31
        and a.size > 0
        and w.size > 0
        and get_matmul_precision() == "fp32"
    )


def run(
    b: CudaBackend,
    plan: FusedKernel,
    a: Prim,
    w: Prim,
    rest: list[Prim],
    scalars: list[Any],
    donors: tuple[int, ...] = (),
) -> list[Prim]:
    """Matmul epilogue ``plan`` through its tuned candidate; ``donors``: indices into ``rest`` of dead
    inputs its outputs may be written into."""
    tag = tuner(b).choice(EPILOGUE, b, plan, a, w, rest, scalars)
    if tag == "cublas":
        return list(run_cublas(b, plan, a, w, rest, scalars, donors))
    return list(run_tiled(b, tag, plan, a, w, rest, scalars, donors))
