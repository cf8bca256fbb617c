"""Tiled batched matmul: ``out[b] = a[b] @ b[b]`` with strided operands and broadcast batch dims.

A 16x16 workgroup computes a ``tile`` x ``tile`` output tile, each thread an ``r`` x ``r`` block
(``r = tile / 16``; rows ``ly + 16 i``, cols ``lx + 16 j``, so neighbouring threads write neighbouring
columns); K advances in steps of ``tk`` through workgroup memory (2 x tile x tk values: 8 KiB for the
64/16 default, at most WebGPU's default 16 KiB). Operands are read through their strides, so a
transposed operand (``x @ w.T``) costs no copy. Batch dims beyond 65535 are split into several
dispatches (``base`` in the metadata). ``CONFIGS`` are the tile shapes the autotuner chooses among.
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from .elementwise import compute_type

TILE = 64
TK = 16
# (tile, tk): the default first; 128-wide tiles give each thread an 8x8 block, 32-wide ones more
# workgroups for small outputs
CONFIGS: tuple[tuple[int, int], ...] = ((64, 16), (128, 8), (128, 16), (64, 8), (32, 16))


def workgroup_bytes(tile: int, tk: int) -> int:
    """Workgroup memory of a config (two f32 tiles)."""
    return 2 * tile * tk * 4


@lru_cache(maxsize=256)
def render(dtype: DType, nb: int, tile: int = TILE, tk: int = TK) -> Kernel:
    """Metadata: M, N, K, batch base, a_off, b_off, a_sm, a_sk, b_sk, b_sn, batch shape[nb], a batch
    strides[nb], b batch strides[nb]."""
    r = tile // 16  # the register block per thread is r x r
    loads_per_thread = tile * tk // 256
    if tile % 16 or loads_per_thread < 1 or tile * tk % 256:
        raise ValueError(f"matmul kernel: tile {tile} / tk {tk} does not fit a 16x16 workgroup")
    acc = compute_type(dtype)
    store = "f16(v)" if dtype is float16 else "v"
    batch = []
    for d in range(nb - 1, -1, -1):
        batch += [
            f"    let c{d} = rem % info[{10 + d}u];",
            f"    rem = rem / info[{10 + d}u];",
            f"    ao += c{d} * info[{10 + nb + d}u];",
            f"    bo += c{d} * info[{10 + 2 * nb + d}u];",
        ]
    # accumulators are indexed with constants only (unrolled init, FMAs and stores): a runtime index
    # makes shader compilers keep the array in local memory instead of registers
    zero = "\n".join(f"    acc[{i}] = ACC(0);" for i in range(r * r))
    stores = "\n".join(
        f"    if (row0 + lid.y + {16 * i}u < M && col0 + lid.x + {16 * j}u < N) {{\n"
        f"        let v = acc[{i * r + j}];\n"
        f"        out[ob + (row0 + lid.y + {16 * i}u) * N + col0 + lid.x + {16 * j}u] = {store};\n"
        f"    }}"
        for i in range(r)
        for j in range(r)
    )
    fma = "\n".join(f"            acc[{i * r + j}] += ar{i} * br{j};" for i in range(r) for j in range(r))
    loads = "\n".join(
        f"            let ar{i} = As[kk * {tile}u + lid.y + {16 * i}u];\n"
        f"            let br{i} = Bs[kk * {tile}u + lid.x + {16 * i}u];"
        for i in range(r)
    )
    src = f"""{"enable f16;" if dtype is float16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{WGSL[dtype]}>;
@group(0) @binding(2) var<storage, read> a: array<{WGSL[dtype]}>;
@group(0) @binding(3) var<storage, read> b: array<{WGSL[dtype]}>;
alias ACC = {acc};
var<workgroup> As: array<ACC, {tile * tk}>;
var<workgroup> Bs: array<ACC, {tile * tk}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    let M = info[0];
    let N = info[1];
    let K = info[2];
    let bz = wid.z + info[3];
    var rem = bz;
    var ao = info[4];
    var bo = info[5];
{chr(10).join(batch)}
    let a_sm = info[6];
    let a_sk = info[7];
    let b_sk = info[8];
    let b_sn = info[9];
    let row0 = wid.y * {tile}u;
    let col0 = wid.x * {tile}u;
    let tid = lid.y * 16u + lid.x;
    var acc: array<ACC, {r * r}>;
{zero}
    for (var k0 = 0u; k0 < K; k0 += {tk}u) {{
        for (var l = 0u; l < {loads_per_thread}u; l++) {{
            let e = tid + l * 256u;
            let am = e / {tk}u;
            let ak = e % {tk}u;
            var v = ACC(0);
            if (row0 + am < M && k0 + ak < K) {{ v = ACC(a[ao + (row0 + am) * a_sm + (k0 + ak) * a_sk]); }}
            As[ak * {tile}u + am] = v;
            let bk = e / {tile}u;
            let bn = e % {tile}u;
            var w = ACC(0);
            if (k0 + bk < K && col0 + bn < N) {{ w = ACC(b[bo + (k0 + bk) * b_sk + (col0 + bn) * b_sn]); }}
            Bs[bk * {tile}u + bn] = w;
        }}
        workgroupBarrier();
        for (var kk = 0u; kk < {tk}u; kk++) {{
{loads}
{fma}
        }}
        workgroupBarrier();
    }}
    let ob = bz * M * N;
{stores}
}}
"""
    suffix = "" if (tile, tk) == (TILE, TK) else f"_t{tile}k{tk}"
    return Kernel(f"matmul_{dtype.name}_{nb}b{suffix}", src, ("rw", "read", "read"))
