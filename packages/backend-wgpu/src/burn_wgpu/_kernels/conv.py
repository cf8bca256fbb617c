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

The direct kernels compute outputs straight from x and the weights, without workgroup memory or
barriers (which software adapters such as SwiftShader and lavapipe emulate at a high cost), the bias
added before the store:

* ``render_direct``: each invocation ``co`` output channels of one group x ``px`` neighbouring
  output pixels of one row, summing over the group's channels (a run-time loop) and the kernel taps
  (unrolled). With ``co == 1`` and ``cg1`` (one input channel per group) it is the depthwise kernel.
* ``render_pointwise``: 1x1 convolutions with stride 1 and no padding, ``W[g] @ X[n, g]`` per image
  and group without im2col: each invocation ``co`` output channels x 4 neighbouring pixels, as vec4
  loads and stores when the pixel count (and x's offset) is a multiple of 4.
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


# metadata words shared by the direct kernels: total invocations, pixel blocks per row (direct) or
# per image (pointwise), OH (direct) or H * W (pointwise), channel blocks per group, G, Cout / G, Cg,
# Cin, Cout, x offset, w offset, bias offset; then (direct only) the conv parameters
_DIRECT_FIXED = ("total", "PB", "OH", "CB", "G", "CPG", "CG", "CIN", "COUT", "XO", "WO", "BO")


def _direct_head(dtype: DType, bias: bool, vec: bool = False) -> str:
    t = WGSL[dtype]
    io = f"vec4<{t}>" if vec else t
    lines = [
        "enable f16;" if dtype is float16 else "",
        "@group(0) @binding(0) var<storage, read> info: array<u32>;",
        f"@group(0) @binding(1) var<storage, read_write> out: array<{io}>;",
        f"@group(0) @binding(2) var<storage, read> x: array<{io}>;",
        f"@group(0) @binding(3) var<storage, read> w: array<{t}>;",
    ]
    if bias:
        lines.append(f"@group(0) @binding(4) var<storage, read> b: array<{t}>;")
    return "\n".join(lines)


def _block_index(names: tuple[str, ...], rows: bool) -> list[str]:
    """WGSL: the metadata words as named lets, then invocation ``e`` as (pixel block ``pb``, row
    ``oh`` where the kernel has rows, image ``n``, first output channel ``co0`` and the group's end
    ``cend``); outputs run fastest along pixels, so neighbouring invocations share weights."""
    lines = [f"    let {name} = info[{i}u];" for i, name in enumerate(names)]
    lines += [
        "    let pb = e % PB;",
        "    var r = e / PB;",
    ]
    if rows:
        lines += ["    let oh = r % OH;", "    r = r / OH;"]
    lines += [
        "    let q = r % (G * CB);",
        "    let n = r / (G * CB);",
        "    let g = q / CB;",
        "    let co0 = g * CPG + (q % CB) * CO;",
        "    let cend = (g + 1u) * CPG;  // lanes at or past it belong to the next group: not stored",
    ]
    return lines


@lru_cache(maxsize=64)
def render_direct(dtype: DType, kh: int, kw: int, co: int, px: int, bias: bool, cg1: bool = False) -> Kernel:
    """Direct convolution: metadata ``_DIRECT_FIXED`` (PB = ceil(OW / px)), then H, W, OW, stride,
    padding, dilation. ``cg1``: each group reads one input channel (depthwise): no channel loop."""
    acc = compute_type(dtype)
    names = (*_DIRECT_FIXED, *_CONV_PARAMS)
    body = _block_index(names, True)
    body += [
        "    let ow0 = pb * " + f"{px}u;",
        "    let ihb = i32(oh * SH) - i32(PH);",
        "    let iwb = i32(ow0 * SW) - i32(PW);",
        f"    let wstride = CG * {kh * kw}u;  // between output channels",
        *(f"    let wl{l} = WO + min(co0 + {l}u, cend - 1u) * wstride;" for l in range(co)),
        *(f"    var a{l}_{p} = {acc}(0);" for l in range(co) for p in range(px)),
        *(f"    let iw{p} = iwb + i32({p}u * SW);" for p in range(px)),
    ]
    # the taps are run-time loops, only the pixels and channels of an invocation are unrolled:
    # SwiftShader (Chrome without a GPU) took minutes to compile a fully unrolled 3x3 tap set inside
    # the channel loop and the GPU process was killed (a 3x3, 4-channel, 4-pixel kernel)
    taps = [
        f"        for (var i = 0u; i < {kh}u; i++) {{",
        "            let ih = ihb + i32(i * DH);",
        "            if (ih < 0 || ih >= i32(H)) { continue; }",
        "            let xr = xc + u32(ih) * W;",
        f"            for (var j = 0u; j < {kw}u; j++) {{",
        "                let dj = i32(j * DW);",
        f"                let t = c * {kh * kw}u + i * {kw}u + j;",
    ]
    for p in range(px):
        taps += [
            f"                let iw{p}j = iw{p} + dj;",
            f"                var x{p} = {acc}(0);",
            f"                if (iw{p}j >= 0 && iw{p}j < i32(W)) {{ x{p} = {acc}(x[xr + u32(iw{p}j)]); }}",
        ]
    for l in range(co):
        taps.append(f"                let w{l} = {acc}(w[wl{l} + t]);")
        taps += [f"                a{l}_{p} += w{l} * x{p};" for p in range(px)]
    taps += ["            }", "        }"]
    channel = "0u" if cg1 else "c"
    loop_open = "    {\n        let c = 0u;" if cg1 else "    for (var c = 0u; c < CG; c++) {"
    body += [
        loop_open,
        f"        let xc = XO + (n * CIN + g * CG + {channel}) * H * W;",
        *taps,
        "    }",
    ]
    store = "f16(v)" if dtype is float16 else "v"
    for l in range(co):
        body.append(f"    if (co0 + {l}u < cend) {{")
        body.append(f"        let ob{l} = ((n * COUT + co0 + {l}u) * OH + oh) * OW;")
        bias_term = f" + {acc}(b[BO + co0 + {l}u])" if bias else ""
        for p in range(px):
            body.append(
                f"        if (ow0 + {p}u < OW) {{ let v = a{l}_{p}{bias_term}; out[ob{l} + ow0 + {p}u] = {store}; }}"
            )
        body.append("    }")
    kind = "depthwise" if cg1 else "direct"
    name = f"conv_{kind}_{dtype.name}_k{kh}x{kw}_c{co}p{px}{'_b' if bias else ''}"
    return _direct_kernel(name, _direct_head(dtype, bias), co, body, bias)


@lru_cache(maxsize=32)
def render_pointwise(dtype: DType, co: int, vec: bool, bias: bool) -> Kernel:
    """1x1 convolution, stride 1, no padding: metadata ``_DIRECT_FIXED`` (PB = ceil(H * W / 4), OH =
    H * W). ``vec``: H * W and x's offset are multiples of 4 (x and out read and written as vec4)."""
    acc = compute_type(dtype)
    v4 = f"vec4<{acc}>"
    body = _block_index(_DIRECT_FIXED, False)
    body += [
        "    let HW = OH;",
        "    let p0 = pb * 4u;",
        *(f"    let wl{l} = WO + min(co0 + {l}u, cend - 1u) * CG;" for l in range(co)),
        *(f"    var a{l} = {v4}(0);" for l in range(co)),
        "    var xi = XO + (n * CIN + g * CG) * HW + p0;",
        "    for (var c = 0u; c < CG; c++) {",
    ]
    if vec:
        body.append(f"        let xv = {v4}(x[xi / 4u]);")
    else:
        body.append(f"        var xv = {v4}(0);")
        body += [f"        if (p0 + {p}u < HW) {{ xv[{p}] = {acc}(x[xi + {p}u]); }}" for p in range(4)]
    body += [f"        a{l} += {acc}(w[wl{l} + c]) * xv;" for l in range(co)]
    body += ["        xi += HW;", "    }"]
    for l in range(co):
        bias_term = f" + {acc}(b[BO + co0 + {l}u])" if bias else ""
        body.append(f"    if (co0 + {l}u < cend) {{")
        body.append(f"        let v = a{l}{bias_term};")
        body.append(f"        let ob{l} = (n * COUT + co0 + {l}u) * HW + p0;")
        if vec:
            body.append(f"        out[ob{l} / 4u] = vec4<{WGSL[dtype]}>(v);")
        else:
            t = WGSL[dtype]
            body += [f"        if (p0 + {p}u < HW) {{ out[ob{l} + {p}u] = {t}(v[{p}]); }}" for p in range(4)]
        body.append("    }")
    name = f"conv_pointwise_{dtype.name}_c{co}{'_v' if vec else ''}{'_b' if bias else ''}"
    return _direct_kernel(name, _direct_head(dtype, bias, vec), co, body, bias)


def _direct_kernel(name: str, head: str, co: int, body: list[str], bias: bool) -> Kernel:
    """A direct or pointwise conv kernel: ``head`` (bindings, metadata), then ``body`` in a 64-wide
    main over the invocations ``info[0]`` counts; bindings out, x, w (and the bias)."""
    src = f"""{head}
const CO = {co}u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let e = gid.x + gid.y * (nwg.x * 64u);
    if (e >= info[0]) {{ return; }}
{chr(10).join(body)}
}}
"""
    return Kernel(name, src, ("rw", "read", "read", *(("read",) if bias else ())))
