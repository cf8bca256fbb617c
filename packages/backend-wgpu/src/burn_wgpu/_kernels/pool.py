"""Direct 2-d pooling kernels (NCHW; a 1-d pool runs as a 2-d one of height 1) for the tuned pool
family (``burn_wgpu._pool.POOL``).

Each invocation computes ``px`` neighbouring outputs of one output row of one (image, channel)
plane, reading x straight from global memory (no workgroup memory, no barriers: lavapipe and
SwiftShader emulate both at a high cost). The window rows are an outer run-time loop shared by the
``px`` outputs, the window columns an inner run-time loop, the outputs unrolled.

* ``max``: values and i32 indices: the first maximum in row-major window order (a NaN wins over
  every number, the first NaN over later ones, as NumPy's argmax), the index flattened over the
  input's spatial dims (``ih * W + iw``). Taps in the padding are skipped.
* ``avg``: the sum of the window's taps inside the input (f32 accumulators for float16), divided by
  the window's cell count inside the padded input (``count_include_pad``, the ceil-mode overhang
  never counts) or inside the input itself (PyTorch's divisors).

Metadata (u32 words): total invocations, PB (= ceil(OW / px)), OH, OW, H, W, KH, KW, SH, SW, PH,
PW, DH, DW, x offset, count_include_pad. The workgroup size is a power of two no larger than the
device's ``max-compute-invocations-per-workgroup`` (the caller checks it, 256 in browser-portable
mode); the grid may be 2-d (``grid``) when there are more than 65535 workgroups.
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from ._helpers import render_helpers
from .elementwise import compute_type, dclass

# workgroup sizes and outputs per invocation the tuned family tries
SIZES = (64, 128, 256)
PER_INVOCATION = (1, 2, 4)
PARAMS = ("total", "PB", "OH", "OW", "H", "W", "KH", "KW", "SH", "SW", "PH", "PW", "DH", "DW", "XO", "CIP")

# the lowest value of each compute class (the max pool's start before any tap is read)
_LOWEST = {"f": "-inf()", "i": "-2147483647 - 1", "u": "0u"}


def _check(op: str, dtype: DType, wg: int, px: int) -> str:
    if op not in ("max", "avg"):
        raise ValueError(f"pool kernel: op must be 'max' or 'avg', got {op!r}")
    if wg < 1 or wg & (wg - 1) or wg > 1024:
        raise ValueError(f"pool kernel: workgroup size {wg} is not a power of two up to 1024")
    if not 1 <= px <= 8:
        raise ValueError(f"pool kernel: outputs per invocation must be 1..8, got {px}")
    cls = dclass(dtype)
    if op == "avg" and cls != "f":
        raise TypeError(f"avg pool kernel: expected a float dtype, got {dtype.name}")
    if cls == "b":
        raise TypeError("max pool kernel: bool tensors are not pooled")
    return cls


@lru_cache(maxsize=128)
def render(op: str, dtype: DType, wg: int = 128, px: int = 1) -> Kernel:
    """The ``op`` ("max" or "avg") pool kernel for ``dtype`` with workgroup size ``wg`` and ``px``
    outputs per invocation along the output row."""
    cls = _check(op, dtype, wg, px)
    acc = compute_type(dtype)
    t = WGSL[dtype]
    head = ["enable f16;"] if dtype is float16 else []
    head.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    head.append(f"@group(0) @binding(1) var<storage, read_write> out: array<{t}>;")
    if op == "max":
        head.append("@group(0) @binding(2) var<storage, read_write> idx: array<i32>;")
        head.append(f"@group(0) @binding(3) var<storage, read> x: array<{t}>;")
        if cls == "f":
            head.append(render_helpers(("is_nan", "inf")))
            # take v over the best so far: none yet, a number over a smaller one, NaN over a number
            head.append(
                "fn better(b: f32, found: bool, v: f32) -> bool {\n"
                "    if (!found) { return true; }\n"
                "    if (is_nan(b)) { return false; }\n"
                "    return is_nan(v) || v > b;\n}"
            )
        else:
            head.append(f"fn better(b: {acc}, found: bool, v: {acc}) -> bool {{ return !found || v > b; }}")
    else:
        head.append(f"@group(0) @binding(2) var<storage, read> x: array<{t}>;")
    store = "f16(v)" if dtype is float16 else "v"
    body = [f"@compute @workgroup_size({wg})"]
    body.append(
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {"
    )
    body.append(f"    let e = gid.x + gid.y * (nwg.x * {wg}u);")
    body += [f"    let {name} = info[{i}u];" for i, name in enumerate(PARAMS)]
    body += [
        "    if (e >= total) { return; }",
        "    let pb = e % PB;",
        "    let r = e / PB;",
        "    let oh = r % OH;",
        "    let plane = r / OH;",
        f"    let ow0 = pb * {px}u;",
        "    let ihb = i32(oh * SH) - i32(PH);",
        "    let iwb = i32(ow0 * SW) - i32(PW);",
        "    let xb = XO + plane * H * W;",
        "    let ob = (plane * OH + oh) * OW + ow0;",
        "    let iH = i32(H);",
        "    let iW = i32(W);",
    ]
    body += [f"    let iw{p} = iwb + i32({p}u * SW);" for p in range(px)]
    if op == "max":
        body += [f"    var b{p}: {acc} = {_LOWEST[cls]};" for p in range(px)]
        body += [f"    var k{p}: i32 = ihb * iW + iw{p};" for p in range(px)]  # an all-padding window
        body += [f"    var f{p} = false;" for p in range(px)]
    else:
        body += [f"    var s{p}: f32 = 0.0;" for p in range(px)]
    body += [
        "    for (var i = 0u; i < KH; i++) {",
        "        let ih = ihb + i32(i * DH);",
        "        if (ih < 0 || ih >= iH) { continue; }",
        "        let xr = xb + u32(ih) * W;",
        "        for (var j = 0u; j < KW; j++) {",
        "            let dj = i32(j * DW);",
    ]
    for p in range(px):
        body.append(f"            let c{p} = iw{p} + dj;")
        body.append(f"            if (c{p} >= 0 && c{p} < iW) {{")
        body.append(f"                let v = {acc}(x[xr + u32(c{p})]);")
        if op == "max":
            body.append(
                f"                if (better(b{p}, f{p}, v)) {{ b{p} = v; k{p} = ih * iW + c{p}; f{p} = true; }}"
            )
        else:
            body.append(f"                s{p} += v;")
        body.append("            }")
    body += ["        }", "    }"]
    if op == "avg":
        body += [
            "    let h0 = ihb;",
            "    let h1 = min(h0 + i32(KH), iH + i32(PH));",
            "    var hc = h1 - h0;",
            "    if (CIP == 0u) { hc = min(h1, iH) - max(h0, 0); }",
        ]
    for p in range(px):
        body.append(f"    if (ow0 + {p}u < OW) {{")
        if op == "max":
            body.append(f"        let v = b{p};")
            body.append(f"        out[ob + {p}u] = {store};")
            body.append(f"        idx[ob + {p}u] = k{p};")
        else:
            body.append(f"        let w1 = min(iw{p} + i32(KW), iW + i32(PW));")
            body.append(f"        var wc = w1 - iw{p};")
            body.append(f"        if (CIP == 0u) {{ wc = min(w1, iW) - max(iw{p}, 0); }}")
            body.append(f"        let v = s{p} / f32(hc * wc);")
            body.append(f"        out[ob + {p}u] = {store};")
        body.append("    }")
    body.append("}")
    bindings = ("rw", "rw", "read") if op == "max" else ("rw", "read")
    name = f"pool_{op}_{dtype.name}_w{wg}p{px}"
    return Kernel(name, "\n".join(head + body) + "\n", bindings)
