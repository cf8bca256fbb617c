"""Row reductions: ``out[r] = op(x[r, 0..R])`` over a dense (rows, R) input.

Two shapes: one thread per row for short rows, and a workgroup per (row, chunk) with a tree reduction
in workgroup memory for long ones (chunks of ``CHUNK`` elements, a second pass combines the partials).
Floats accumulate in f32 (float16 too); max/min propagate NaN as NumPy does. Narrow ints accumulate
in i32/u32 and the stored result wraps into the dtype (sums and products modulo 2^bits, as NumPy's
int8 sum in int8).
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL, wrap
from .._executor import Kernel
from ._helpers import render_helpers
from .elementwise import compute_type, dclass, lookup

WG = 256
CHUNK = WG * 16

# op -> class -> (init, combine(x, y))
REDUCE: dict[str, dict[str, tuple[str, str]]] = {
    "sum": {"*": ("ACC(0)", "x + y")},
    "prod": {"*": ("ACC(1)", "x * y")},
    "max": {
        "f": ("-inf()", "b_max(x, y)"),
        "i": ("-2147483647 - 1", "max(x, y)"),
        "u": ("0u", "max(x, y)"),
        "d": ("-inf_d()", "b_max_d(x, y)"),
        "l": ("-9223372036854775807li - 1li", "max(x, y)"),
    },
    "min": {
        "f": ("inf()", "b_min(x, y)"),
        "i": ("2147483647", "min(x, y)"),
        "u": ("4294967295u", "min(x, y)"),
        "d": ("inf_d()", "b_min_d(x, y)"),
        "l": ("9223372036854775807li", "min(x, y)"),
    },
    "all": {"*": ("1u", "x & y")},
    "any": {"*": ("0u", "x | y")},
}


# The two kernel openings every reduction shares: one thread per row (``t``, with ``base`` at the
# row's first element), or one workgroup per row or chunk (``lid``/``wid``).
_PER_THREAD_MAIN = f"""@compute @workgroup_size({WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let t = gid.x + gid.y * (nwg.x * {WG}u);
    let n = info[1];
    if (t >= info[0]) {{ return; }}
    let base = info[4] + t * n;
"""
_PER_GROUP_MAIN = """@compute @workgroup_size({wg})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
"""
# workgroup sizes the tuned reduction family tries for long rows (``burn_wgpu._reduce.REDUCE``)
TREE_SIZES = (64, 128, 256)


def _entry(op: str, cls: str) -> tuple[str, str]:
    entry = lookup(REDUCE, op, cls)
    if entry is None:
        raise TypeError(f"{op}: not defined for this dtype on the wgpu backend")
    return entry


def _header(in_dt: DType, out_type: str, acc: str) -> list[str]:
    lines = ["enable f16;"] if float16 is in_dt or out_type == "f16" else []
    lines += [
        "@group(0) @binding(0) var<storage, read> info: array<u32>;",
        f"@group(0) @binding(1) var<storage, read_write> out: array<{out_type}>;",
        f"@group(0) @binding(2) var<storage, read> inp: array<{WGSL[in_dt]}>;",
        f"alias ACC = {acc};",
        render_helpers(
            ("b_max_d", "b_min_d", "inf_d") if dclass(in_dt) == "d" else ("b_max", "b_min", "inf")
        ),
    ]
    return lines


@lru_cache(maxsize=256)
def render(op: str, in_dt: DType, out_dt: DType, per_thread: bool, wg: int = WG) -> Kernel:
    """Metadata: rows, R, chunks, chunk length, input offset. ``wg``: the tree kernel's workgroup
    size (a power of two)."""
    if wg < 2 or wg & (wg - 1):
        raise ValueError(f"reduce kernel: workgroup size {wg} is not a power of two")
    acc = compute_type(in_dt)
    init, combine = _entry(op, dclass(in_dt))
    store = "f16(v)" if out_dt is float16 else wrap(out_dt, "v")
    lines = _header(in_dt, WGSL[out_dt], acc)
    lines.append(f"fn combine(x: ACC, y: ACC) -> ACC {{ return {combine}; }}")
    lines.append(f"fn put(i: u32, v: ACC) {{ out[i] = {store}; }}")
    if per_thread:
        lines.append(
            _PER_THREAD_MAIN
            + f"""    var acc: ACC = {init};
    for (var j = 0u; j < n; j++) {{ acc = combine(acc, ACC(inp[base + j])); }}
    put(t, acc);
}}"""
        )
    else:
        lines.append(f"var<workgroup> sh: array<ACC, {wg}>;")
        lines.append(
            _PER_GROUP_MAIN.format(wg=wg)
            + f"""    let g = wid.x + wid.y * nwg.x;
    let n = info[1];
    let chunks = info[2];
    let valid = g < info[0] * chunks;
    let row = g / chunks;
    let start = (g % chunks) * info[3];
    let stop = min(n, start + info[3]);
    var acc: ACC = {init};
    if (valid) {{
        let base = info[4] + row * n;
        for (var j = start + lid.x; j < stop; j += {wg}u) {{ acc = combine(acc, ACC(inp[base + j])); }}
    }}
    sh[lid.x] = acc;
    workgroupBarrier();
    for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{
        if (lid.x < s) {{ sh[lid.x] = combine(sh[lid.x], sh[lid.x + s]); }}
        workgroupBarrier();
    }}
    if (lid.x == 0u && valid) {{ put(g, sh[0]); }}
}}"""
        )
    kind = "thread" if per_thread else ("tree" if wg == WG else f"tree{wg}")
    return Kernel(f"reduce_{op}_{in_dt.name}_{kind}", "\n".join(lines) + "\n", ("rw", "read"))


@lru_cache(maxsize=64)
def render_arg(op: str, in_dt: DType, per_thread: bool) -> Kernel:
    """argmax/argmin per row into i32; first occurrence on ties, NaN counts as the extreme (NumPy).
    Metadata: rows, R, unused, unused, input offset."""
    acc = compute_type(in_dt)
    better = ">" if op == "argmax" else "<"
    is_nan = {"f": "is_nan", "d": "is_nan_d"}.get(dclass(in_dt))
    nan_check = (
        f"let n1 = {is_nan}(v1); let n2 = {is_nan}(v2);\n"
        "    if (n1 || n2) { if (n1 && n2) { return i2 < i1; } return n2; }\n    "
        if is_nan
        else ""
    )
    lines = _header(in_dt, "i32", acc)
    lines.append(f"""fn take2(v1: ACC, i1: u32, v2: ACC, i2: u32) -> bool {{
    if (i2 == 0xffffffffu) {{ return false; }}
    if (i1 == 0xffffffffu) {{ return true; }}
    {nan_check}if (v2 == v1) {{ return i2 < i1; }}
    return v2 {better} v1;
}}""")
    if per_thread:
        lines.append(
            _PER_THREAD_MAIN
            + """    var bv: ACC = ACC(inp[base]);
    var bi = 0u;
    for (var j = 1u; j < n; j++) {
        let v = ACC(inp[base + j]);
        if (take2(bv, bi, v, j)) { bv = v; bi = j; }
    }
    out[t] = i32(bi);
}"""
        )
    else:
        lines.append(f"var<workgroup> sv: array<ACC, {WG}>;\nvar<workgroup> si: array<u32, {WG}>;")
        lines.append(
            _PER_GROUP_MAIN.format(wg=WG)
            + f"""    let row = wid.x + wid.y * nwg.x;
    let n = info[1];
    let valid = row < info[0];
    var bv: ACC = ACC(0);
    var bi = 0xffffffffu;
    if (valid) {{
        let base = info[4] + row * n;
        for (var j = lid.x; j < n; j += {WG}u) {{
            let v = ACC(inp[base + j]);
            if (take2(bv, bi, v, j)) {{ bv = v; bi = j; }}
        }}
    }}
    sv[lid.x] = bv;
    si[lid.x] = bi;
    workgroupBarrier();
    for (var s = {WG // 2}u; s > 0u; s = s >> 1u) {{
        if (lid.x < s && take2(sv[lid.x], si[lid.x], sv[lid.x + s], si[lid.x + s])) {{
            sv[lid.x] = sv[lid.x + s];
            si[lid.x] = si[lid.x + s];
        }}
        workgroupBarrier();
    }}
    if (lid.x == 0u && valid) {{ out[row] = i32(si[0]); }}
}}"""
        )
    kind = "thread" if per_thread else "tree"
    return Kernel(f"{op}_{in_dt.name}_{kind}", "\n".join(lines) + "\n", ("rw", "read"))
