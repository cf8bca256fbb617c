"""int8 x int8 -> int32 matmul (``Backend.quantized_matmul``): ``out[b] = a[b] @ w[b]`` exactly, for
int8-valued operands a (..., M, K) and w (..., K, N) with broadcast batch dims.

WGSL has no 8-bit storage, so burn-wgpu keeps int8 tensors as i32 words holding values in
[-128, 127] (``_dtypes``); int32 operands holding int8 values are taken as well. The kernel packs
them when it reads them:
each invocation reads 4 consecutive K values of a row of ``a`` (or a column of ``w``) through the
operand's strides and stores them as one u32 (4 bytes, two's complement) in workgroup memory, so a
64 x 32 tile is 512 words (2 KiB) per operand. The inner loop reads a packed word per row and per
column and accumulates their 4-term dot products in i32: with ``dot4I8Packed`` where the adapter
reports the ``packed_4x8_integer_dot_product`` WGSL language feature (one DP4A instruction on
hardware that has it), else by unpacking each word once into a ``vec4<i32>`` (sign-extending
shifts) and using ``dot`` on the vectors, each unpacked word reused for 4 products.

Tiling: a 16 x 16 workgroup computes a 64 x 64 output tile, each invocation a 4 x 4 block (rows
``ly + 16 i``, columns ``lx + 16 j``); K advances by 32 (8 packed words). Out-of-range rows, columns
and K values read as 0, so any shape is exact. The i32 sums are exact while K * 128 * 128 < 2**31
(K < 131072; the runner checks). Within WebGPU's default limits: 256 invocations, 4 KiB of
workgroup memory, 4 storage bindings.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import TYPE_CHECKING

import burn

from .._executor import Kernel
from .matmul import batch_lines

if TYPE_CHECKING:
    from .._ops import WgpuOps
    from .._primitive import WgpuTensor

TILE = 64  # output tile (rows and columns) of a workgroup
BK = 32  # K values per step (BK / 4 packed words)
MAX_K = (1 << 31) // (128 * 128) - 1  # deepest contraction whose i32 sums cannot overflow
LANGUAGE_FEATURE = "packed_4x8_integer_dot_product"

# sign-extend the 4 bytes of a packed word (WGSL's >> on i32 is arithmetic)
_UNPACK = """fn unpack_i8(x: u32) -> vec4<i32> {
    let s = bitcast<i32>(x);
    return vec4<i32>((s << 24u) >> 24u, (s << 16u) >> 24u, (s << 8u) >> 24u, s >> 24u);
}
"""


def has_packed_dot() -> bool:
    """Whether WGSL's ``dot4I8Packed`` may be used: the ``packed_4x8_integer_dot_product`` language
    feature as wgpu reports it (an empty set where the implementation reports none)."""
    try:
        import wgpu

        features = getattr(wgpu.gpu, "wgsl_language_features", None) or set()
    except Exception:  # an older wgpu-py without the query: the portable path
        return False
    return LANGUAGE_FEATURE in {str(f).replace("-", "_") for f in features}


@lru_cache(maxsize=32)
def render(nb: int, packed_dot: bool) -> Kernel:
    """The int8 matmul kernel for ``nb`` collapsed batch dims; ``packed_dot``: ``dot4I8Packed``.

    Metadata: M, N, K, batch base, a_off, w_off, a_sm, a_sk, w_sk, w_sn, batch shape[nb], a batch
    strides[nb], w batch strides[nb]. Bindings: out (i32, dense (batch, M, N)), a, w (i32)."""
    words = TILE * BK // 4  # packed words per operand tile
    loads = words // 256
    kq = BK // 4
    zero = "\n".join(f"    var acc{i}{j} = 0i;" for i in range(4) for j in range(4))
    if packed_dot:
        regs = [f"            let x{i} = As[q * {TILE}u + lid.y + {16 * i}u];" for i in range(4)]
        regs += [f"            let y{j} = Ws[q * {TILE}u + lid.x + {16 * j}u];" for j in range(4)]
        products = [f"            acc{i}{j} += dot4I8Packed(x{i}, y{j});" for i in range(4) for j in range(4)]
    else:
        regs = [f"            let x{i} = unpack_i8(As[q * {TILE}u + lid.y + {16 * i}u]);" for i in range(4)]
        regs += [f"            let y{j} = unpack_i8(Ws[q * {TILE}u + lid.x + {16 * j}u]);" for j in range(4)]
        products = [f"            acc{i}{j} += dot(x{i}, y{j});" for i in range(4) for j in range(4)]
    stores = "\n".join(
        f"    if (row0 + lid.y + {16 * i}u < M && col0 + lid.x + {16 * j}u < N) {{\n"
        f"        out[ob + (row0 + lid.y + {16 * i}u) * N + col0 + lid.x + {16 * j}u] = acc{i}{j};\n"
        f"    }}"
        for i in range(4)
        for j in range(4)
    )
    src = f"""@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
@group(0) @binding(2) var<storage, read> a: array<i32>;
@group(0) @binding(3) var<storage, read> w: array<i32>;
var<workgroup> As: array<u32, {words}>;
var<workgroup> Ws: array<u32, {words}>;

{"" if packed_dot else _UNPACK}fn pack_i8(v0: i32, v1: i32, v2: i32, v3: i32) -> u32 {{
    return (bitcast<u32>(v0) & 0xFFu) | ((bitcast<u32>(v1) & 0xFFu) << 8u)
        | ((bitcast<u32>(v2) & 0xFFu) << 16u) | (bitcast<u32>(v3) << 24u);
}}

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    let M = info[0];
    let N = info[1];
    let K = info[2];
    let bz = wid.z + info[3];
    var rem = bz;
    var ao = info[4];
    var wo = info[5];
{batch_lines(nb, 10, "ao", "wo")}
    let a_sm = info[6];
    let a_sk = info[7];
    let w_sk = info[8];
    let w_sn = info[9];
    let row0 = wid.y * {TILE}u;
    let col0 = wid.x * {TILE}u;
    let tid = lid.y * 16u + lid.x;
{zero}
    for (var k0 = 0u; k0 < K; k0 += {BK}u) {{
        for (var l = 0u; l < {loads}u; l++) {{
            let e = tid + l * 256u;
            // a: neighbouring invocations read neighbouring 4-runs of one row (contiguous along K)
            let am = e / {kq}u;
            let aq = e % {kq}u;
            var av = vec4<i32>(0);
            for (var c = 0u; c < 4u; c++) {{
                let k = k0 + aq * 4u + c;
                if (row0 + am < M && k < K) {{ av[c] = a[ao + (row0 + am) * a_sm + k * a_sk]; }}
            }}
            As[aq * {TILE}u + am] = pack_i8(av.x, av.y, av.z, av.w);
            // w: neighbouring invocations read neighbouring columns (contiguous along N)
            let wn = e % {TILE}u;
            let wq = e / {TILE}u;
            var wv = vec4<i32>(0);
            for (var c = 0u; c < 4u; c++) {{
                let k = k0 + wq * 4u + c;
                if (col0 + wn < N && k < K) {{ wv[c] = w[wo + k * w_sk + (col0 + wn) * w_sn]; }}
            }}
            Ws[wq * {TILE}u + wn] = pack_i8(wv.x, wv.y, wv.z, wv.w);
        }}
        workgroupBarrier();
        for (var q = 0u; q < {kq}u; q++) {{
{chr(10).join(regs)}
{chr(10).join(products)}
        }}
        workgroupBarrier();
    }}
    let ob = bz * M * N;
{stores}
}}
"""
    return Kernel(f"quantized_matmul_{nb}b{'_dp4' if packed_dot else ''}", src, ("rw", "read", "read"))


def quantized_matmul(
    backend: WgpuOps, a: WgpuTensor, w: WgpuTensor, packed_dot: bool | None = None
) -> WgpuTensor:
    """``a @ w`` of int8-valued tensors as an int32 tensor (batch dims broadcast). ``packed_dot``:
    force the ``dot4I8Packed`` path on or off (default: what the adapter reports)."""
    from .. import _elementwise as EW
    from .._ops import as_words
    from .._primitive import numel

    a, w = as_words(a), as_words(w)  # int8 is stored as i32 words: read as they are
    if a.dtype is not burn.int32:
        a = backend.cast(a, burn.int32)
    if w.dtype is not burn.int32:
        w = backend.cast(w, burn.int32)
    *ba, m, k = a.shape
    *bw, _, n = w.shape
    if k > MAX_K:
        raise ValueError(
            f"quantized_matmul: a contraction of {k} int8 products may overflow int32 (at most {MAX_K})"
        )
    batch = burn.backend.broadcast_shape(tuple(ba), tuple(bw))
    out = backend.empty(batch + (m, n), burn.int32)
    count = numel(batch)
    if count == 0 or m == 0 or n == 0:
        return out
    if k == 0:
        return backend.full(batch + (m, n), 0, burn.int32)
    sa = EW.broadcast_strides(a.view(a.shape[: len(ba)], a.strides[: len(ba)], a.offset), batch)
    sw = EW.broadcast_strides(w.view(w.shape[: len(bw)], w.strides[: len(bw)], w.offset), batch)
    cshape, (sa, sw) = EW.collapse(batch, [sa, sw])
    kernel = render(len(cshape), has_packed_dot() if packed_dot is None else packed_dot)
    inner = (a.offset, w.offset, a.strides[-2], a.strides[-1], w.strides[-2], w.strides[-1])
    gx, gy = -(-n // TILE), -(-m // TILE)
    for base in range(0, count, 65535):
        words = (m, n, k, base, *inner, *cshape, *sa, *sw)
        meta = struct.pack(f"<{len(words)}I", *words)
        backend.ex.dispatch(
            kernel, [out.buffer, a.buffer, w.buffer], meta, (gx, gy, min(65535, count - base))
        )
    return out
