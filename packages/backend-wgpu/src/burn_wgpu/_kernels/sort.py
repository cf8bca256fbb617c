"""Bitonic sort of each row, stable through an index tie-break.

Rows of length L are padded to P = next power of two in a (rows, P) key buffer plus a u32 index
buffer; padding entries (index >= L) order after every real entry. ``stage`` runs once per (k, j)
step of the bitonic network (log2(P) * (log2(P) + 1) / 2 dispatches, all in one batch). The order is
total (key, then original index), so the result equals a stable sort: NaN last ascending and first
descending, as the NumPy reference.
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from ._helpers import render_helpers
from .elementwise import WG, dclass


def _main(body: str) -> str:
    return (
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        f"    let i = gid.x + gid.y * (nwg.x * {WG}u);\n" + body + "}\n"
    )


@lru_cache(maxsize=32)
def render_init(dtype: DType) -> Kernel:
    """keys[r, j] = x[r, j] (j < L), idx[r, j] = j. Metadata: rows * P, P, L, x offset."""
    src = "\n".join(
        [
            "enable f16;" if dtype is float16 else "",
            "@group(0) @binding(0) var<storage, read> info: array<u32>;",
            f"@group(0) @binding(1) var<storage, read_write> keys: array<{WGSL[dtype]}>;",
            "@group(0) @binding(2) var<storage, read_write> idx: array<u32>;",
            f"@group(0) @binding(3) var<storage, read> x: array<{WGSL[dtype]}>;",
            _main(
                "    if (i >= info[0]) { return; }\n"
                "    let row = i / info[1];\n"
                "    let j = i % info[1];\n"
                "    idx[i] = j;\n"
                "    if (j < info[2]) { keys[i] = x[info[3] + row * info[2] + j]; }\n"
            ),
        ]
    )
    return Kernel(f"sort_init_{dtype.name}", src, ("rw", "rw", "read"))


@lru_cache(maxsize=32)
def render_stage(dtype: DType, descending: bool) -> Kernel:
    """One compare-exchange step. Metadata: rows * P, P, L, k, j."""
    is_float = dclass(dtype) in "fd"
    key_t = "f32" if dclass(dtype) == "f" else WGSL[dtype]
    is_nan = "is_nan_d" if dclass(dtype) == "d" else "is_nan"
    load = "f32(keys[{}])" if dtype is float16 else "keys[{}]"
    nan = (
        f"    let an = {is_nan}(ak); let bn = {is_nan}(bk);\n"
        "    if (an != bn) { return " + ("bn" if descending else "an") + "; }\n"
        "    if (an && bn) { return ai > bi; }\n"
        if is_float
        else ""
    )
    before, after = (">", "<") if not descending else ("<", ">")
    src = "\n".join(
        [
            "enable f16;" if dtype is float16 else "",
            "@group(0) @binding(0) var<storage, read> info: array<u32>;",
            f"@group(0) @binding(1) var<storage, read_write> keys: array<{WGSL[dtype]}>;",
            "@group(0) @binding(2) var<storage, read_write> idx: array<u32>;",
            render_helpers((is_nan,)) if is_float else "",
            f"""// true when (ak, ai) must come after (bk, bi) in the sorted row
fn after(ak: {key_t}, ai: u32, bk: {key_t}, bi: u32, n: u32) -> bool {{
    let ap = ai >= n; let bp = bi >= n;
    if (ap || bp) {{ if (ap && bp) {{ return ai > bi; }} return ap; }}
{nan}    if (ak {before} bk) {{ return true; }}
    if (ak {after} bk) {{ return false; }}
    return ai > bi;
}}""",
            _main(
                "    if (i >= info[0]) { return; }\n"
                "    let P = info[1];\n"
                "    let p = i % P;\n"
                "    let l = p ^ info[4];\n"
                "    if (l <= p) { return; }\n"
                "    let a = i;\n"
                "    let b = i - p + l;\n"
                "    let up = (p & info[3]) == 0u;\n"
                f"    let ka = {load.format('a')};\n"
                f"    let kb = {load.format('b')};\n"
                "    let swap = select(after(kb, idx[b], ka, idx[a], info[2]), after(ka, idx[a], kb, idx[b], info[2]), up);\n"
                "    if (swap) {\n"
                "        let tk = keys[a]; keys[a] = keys[b]; keys[b] = tk;\n"
                "        let ti = idx[a]; idx[a] = idx[b]; idx[b] = ti;\n"
                "    }\n"
            ),
        ]
    )
    return Kernel(f"sort_stage_{dtype.name}_{'desc' if descending else 'asc'}", src, ("rw", "rw"))
