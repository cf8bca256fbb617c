"""2-d convolution kernels (NCHW, groups, stride, padding, dilation) for the tuned conv family.

* ``render_im2col``: the windows of x as a dense (N, G, Cg * kh * kw, OH * OW) column matrix, zeros
  where a window overhangs the padding; a tuned matmul of the weights (G, Cout / G, Cg * kh * kw)
  with it gives the output.
* ``render_implicit``: implicit GEMM, the register-blocked matmul of ``_kernels.matmul`` whose B
  tile is gathered from x on the fly (row ``k = (c * kh + i) * kw + j`` of the column matrix, column
  ``oh * OW + ow``), so no column matrix is ever stored. One ``wid.z`` per (image, group); the output
  tile lands where NCHW puts it.

Metadata of both after their fixed parts: H, W, OW, stride (h, w), padding (h, w), dilation (h, w).
The kernel size is part of the shader (divisions by constants).
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from . import matmul as KM
from .elementwise import compute_type

_CONV_PARAMS = ("H", "W", "OW", "SH", "SW", "PH", "PW", "DH", "DW")


def _source_index(kw: int, khw: int) -> list[str]:
    """WGSL that maps (channel-kernel row ``kg``, output pixel ``col``) to ``ih``/``iw``/``c`` and
    ``inside`` (whether the tap reads x or the zero padding)."""
    return [
        f"let c = kg / {khw}u;",
        f"let t = kg % {khw}u;",
        f"let ih = i32((col / OW) * SH + (t / {kw}u) * DH) - i32(PH);",
        f"let iw = i32((col % OW) * SW + (t % {kw}u) * DW) - i32(PW);",
        "let inside = ih >= 0 && ih < i32(H) && iw >= 0 && iw < i32(W);",
    ]


@lru_cache(maxsize=64)
def render_im2col(dtype: DType, kh: int, kw: int) -> Kernel:
    """cols[n, g, kg, col] for n < N, g < G; metadata: total, rows (Cg * kh * kw), L (OH * OW), Cg,
    G, x offset, then the conv parameters."""
    t = WGSL[dtype]
    index = "\n".join(f"    {line}" for line in _source_index(kw, kh * kw))
    params = "\n".join(f"    let {name} = info[{6 + i}u];" for i, name in enumerate(_CONV_PARAMS))
    src = f"""{"enable f16;" if dtype is float16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{t}>;
@group(0) @binding(2) var<storage, read> x: array<{t}>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let e = gid.x + gid.y * (nwg.x * 256u);
    if (e >= info[0]) {{ return; }}
    let rows = info[1];
    let L = info[2];
{params}
    let col = e % L;
    let kg = (e / L) % rows;
    let ng = e / (L * rows);  // image * G + group: channel block ng * Cg
{index}
    var v = {t}(0);
    if (inside) {{
        v = x[info[5] + ((ng * info[3] + c) * H + u32(ih)) * W + u32(iw)];
    }}
    out[e] = v;
}}
"""
    return Kernel(f"im2col_{dtype.name}_k{kh}x{kw}", src, ("rw", "read"))


@lru_cache(maxsize=128)
def render_implicit(dtype: DType, block: KM.Block, kh: int, kw: int, a_mode: str, out_vec: bool) -> Kernel:
    """Implicit-GEMM conv: ``render_blocked`` with batch dims (N, G) and B gathered from x.

    The matmul metadata (M = Cout / G, N = OH * OW, K = Cg * kh * kw, a = the weights with row stride
    K, batch strides (0, Cout / G * K) and (Cin * H * W, Cg * H * W) for b = x) is followed by the conv
    parameters at words 18.."""
    acc = compute_type(dtype)
    first = 12 + 3 * 2
    prologue = [f"    let {name} = info[{first + i}u];" for i, name in enumerate(_CONV_PARAMS)]
    units = block.bn * block.bk
    threads = block.threads
    steps = -(-units // threads)
    khw = kh * kw
    lines = []
    for l in range(steps):  # each invocation's pixels and K rows are fixed across K steps: hoisted
        partial = units % threads and (l + 1) * threads > units
        prologue += [
            f"    let ce{l} = tid + {l * threads}u;",
            f"    let kk{l} = ce{l} / {block.bn}u;",
            f"    let r{l} = ce{l} % {block.bn}u;",
            f"    let ok{l} = b_r0 + r{l} < N{f' && ce{l} < {units}u' if partial else ''};",
            f"    let ihb{l} = i32(((b_r0 + r{l}) / OW) * SH) - i32(PH);",
            f"    let iwb{l} = i32(((b_r0 + r{l}) % OW) * SW) - i32(PW);",
        ]
        store = f"Bs[kk{l} * {block.bn // 4}u + r{l} / 4u][r{l} % 4u] = v;"
        lines += [
            "        {",
            f"            var v = {acc}(0);",
            f"            let kg = k0 + kk{l};",
            f"            if (ok{l} && kg < kend) {{",
            f"                let t = kg % {khw}u;",
            f"                let ih = ihb{l} + i32((t / {kw}u) * DH);",
            f"                let iw = iwb{l} + i32((t % {kw}u) * DW);",
            "                if (ih >= 0 && ih < i32(H) && iw >= 0 && iw < i32(W)) {",
            f"                    v = {acc}(b[o_b + ((kg / {khw}u) * H + u32(ih)) * W + u32(iw)]);",
            "                }",
            "            }",
            f"            {f'if (ce{l} < {units}u) {{ {store} }}' if partial else store}",
            "        }",
        ]
    return KM.render_blocked(
        dtype,
        2,
        block,
        a_mode,
        "n1",
        out_vec,
        b_loads=tuple(lines),
        prologue=tuple(prologue),
        label=f"conv_implicit_k{kh}x{kw}",
    )
