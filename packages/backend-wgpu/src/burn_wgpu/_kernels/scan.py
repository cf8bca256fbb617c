"""Inclusive scans (cumsum, cumprod) along the rows of a dense (rows, L) input, one thread per row,
accumulating in the compute type (f32 for float16; i32/u32 for the narrow ints, each stored value
wrapped into the dtype: sums and products modulo 2^bits, as NumPy's)."""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL, wrap
from .._executor import Kernel
from .elementwise import WG, compute_type

SCAN = {"cumsum": "+", "cumprod": "*"}


@lru_cache(maxsize=32)
def render(op: str, dtype: DType) -> Kernel:
    """Metadata: rows, L, input offset."""
    acc = compute_type(dtype)
    init = "0" if op == "cumsum" else "1"
    store = "f16(acc)" if dtype is float16 else wrap(dtype, "acc")
    src = f"""{"enable f16;" if dtype is float16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{WGSL[dtype]}>;
@group(0) @binding(2) var<storage, read> x: array<{WGSL[dtype]}>;
@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let t = gid.x + gid.y * (nwg.x * {WG}u);
    if (t >= info[0]) {{ return; }}
    let n = info[1];
    var acc = {acc}({init});
    for (var j = 0u; j < n; j++) {{
        acc = acc {SCAN[op]} {acc}(x[info[2] + t * n + j]);
        out[t * n + j] = {store};
    }}
}}
"""
    return Kernel(f"{op}_{dtype.name}", src, ("rw", "read"))
