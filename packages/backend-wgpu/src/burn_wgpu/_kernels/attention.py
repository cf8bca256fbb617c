"""Flash-style attention kernels (``burn_wgpu._attention``): forward with an online softmax, backward
recomputing the attention weights from the forward's row log-sum-exp. Nothing of size L×S is ever
written to memory.

* ``forward``: one workgroup per (batch·head, block of ``ROWS`` queries), one invocation per query. Keys
  and values stream through workgroup memory in tiles of ``tile`` rows; each invocation keeps its query
  row (pre-scaled), its output accumulator, the running max and the running sum, and rescales the
  accumulator once per tile. Writes out (q's dtype) and lse (f32; -inf for a row with no key).
* ``stats``: one invocation per query row: D = rowsum(dO ∘ O) beside a copy of lse, in one f32 buffer
  (lse first, then D), so the two gradient kernels stay within WebGPU's 8 storage buffers per stage.
* ``dq``: as the forward (one invocation per query, key tiles in workgroup memory):
  P = exp(q·k·scale (+ mask) - lse), dS = P (dO·v - D), dQ = scale Σ dS k.
* ``dkv``: one invocation per key, query tiles (q, dO, lse, D) in workgroup memory: dV = Σ P dO,
  dK = scale Σ dS q. dK and dV go to one buffer (dK first), again for the storage-buffer limit.

Queries or keys past the end of a block load a clamped row and write nothing, so every invocation
reaches every barrier. Masks are read through their strides (0 for a broadcast dim): bool (stored as
u32, True = attend) or float (added to the scaled scores); causal masks are index tests, and causal
kernels skip the key (query) tiles a block can never see. Everything accumulates in f32; float16
tensors are widened on load and rounded on store. Rows are held as ``vec4<f32>`` (head dims padded
with zeros to a multiple of 4), so dot products and row updates run four lanes at a time. Workgroups of ``ROWS`` = 64 invocations and at most
12 KiB of workgroup memory keep within WebGPU's default limits (256 invocations, 16 KiB).

Metadata (u32 words): H, L, S, scale (f32 bits), then offset and (b, h, row, col) strides of q, k, v
and the mask (elements; 0 for broadcast dims), then rows = B·H·L and the dV offset B·H·S·E.
"""

from __future__ import annotations

from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from ._helpers import render_helpers

ROWS = 64  # invocations per workgroup: queries (forward, dq, stats) or keys (dkv)
MAX_HEAD = 128  # the largest E and Ev the kernels take
SHARED_BYTES = 12288  # workgroup memory a kernel may use (WebGPU's default limit is 16 KiB)
PARAMS = (
    "H", "L", "S", "SCALE",
    "QO", "QB", "QH", "QR", "QC",
    "KO", "KB", "KH", "KR", "KC",
    "VO", "VB", "VH", "VR", "VC",
    "MO", "MB", "MH", "MR", "MC",
    "NROWS", "DVO",
)  # fmt: skip
MASKS = ("none", "causal", "bool", "float32", "float16")


def _n4(n: int) -> int:
    return -(-n // 4)


def tile_rows(e: int, ev: int, extra: int = 0) -> int:
    """Rows of a key (or query) tile: the largest power of two up to 32 whose f32 rows of e + ev
    (padded to multiples of 4) + ``extra`` words fit ``SHARED_BYTES``."""
    t = 32
    while t > 4 and t * (4 * _n4(e) + 4 * _n4(ev) + extra) * 4 > SHARED_BYTES:
        t //= 2
    return t


def _head(dtype: DType, mask: str, bindings: list[tuple[str, str, str]]) -> list[str]:
    lines = ["enable f16;"] if dtype is float16 or mask == "float16" else []
    lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    for i, (name, access, ty) in enumerate(bindings, start=1):
        mode = "read_write" if access == "rw" else "read"
        lines.append(f"@group(0) @binding({i}) var<storage, {mode}> {name}: array<{ty}>;")
    return lines


def _access(bindings: list[tuple[str, str, str]]) -> tuple[str, ...]:
    return tuple(access for _, access, _ in bindings)


def _mask_bindings(mask: str) -> list[tuple[str, str, str]]:
    ty = {"bool": "u32", "float32": "f32", "float16": "f16"}.get(mask)
    return [] if ty is None else [("msk", "read", ty)]


def _params() -> list[str]:
    lines = [f"    let {name} = info[{i}u];" for i, name in enumerate(PARAMS) if name != "SCALE"]
    lines.append("    let scale = bitcast<f32>(info[3u]);")
    return lines


def _allowed(mask: str, i: str, j: str, mrow: str) -> list[str]:
    """WGSL setting ``ok`` (key j visible to query i, both in range) and ``add`` (a float mask's term)."""
    lines = [f"        var ok = {j} < S && {i} < L;", "        var add = 0.0;"]
    if mask == "causal":
        lines.append(f"        ok = ok && {j} <= {i};")
    elif mask == "bool":
        lines.append(f"        ok = ok && msk[{mrow} + {j} * MC] != 0u;")
    elif mask in ("float32", "float16"):
        lines.append(f"        if (ok) {{ add = f32(msk[{mrow} + {j} * MC]); }}")
    return lines


_LANES = ("x", "y", "z", "w")


def _gather4(src: str, row: str, col_stride: str, n: int) -> list[str]:
    """``x``: the vec4 of ``src`` at columns c0..c0+3 of the row starting at ``row`` (0 past ``n``)."""
    lines = ["var x = vec4<f32>(0.0);"]
    for m, lane in enumerate(_LANES):
        load = f"x.{lane} = f32({src}[{row} + (c0 + {m}u) * {col_stride}]);"
        lines.append(load if n % 4 == 0 or m == 0 else f"if (c0 + {m}u < {n}u) {{ {load} }}")
    return lines


def _load_tile(
    shared: str,
    src: str,
    base: str,
    row_stride: str,
    col_stride: str,
    n: int,
    rows: int,
    start: str,
    limit: str,
) -> list[str]:
    """Cooperative load of ``rows`` rows of ``src`` (from row ``start``; zeros past ``limit``) into
    ``shared`` as vec4 rows of n4 entries."""
    n4 = _n4(n)
    return [
        f"        for (var t = lid.x; t < {rows * n4}u; t += {ROWS}u) {{",
        f"            let r = {start} + t / {n4}u;",
        f"            let c0 = (t % {n4}u) * 4u;",
        *("            " + s for s in _gather4(src, "rb", col_stride, n)[:1]),
        f"            if (r < {limit}) {{",
        f"                let rb = {base} + r * {row_stride};",
        *("                " + s for s in _gather4(src, "rb", col_stride, n)[1:]),
        "            }",
        f"            {shared}[t] = x;",
        "        }",
    ]


def _load_row(arr: str, src: str, row: str, col_stride: str, n: int, factor: str = "") -> list[str]:
    """A private vec4 row ``arr`` from ``src`` (times ``factor``)."""
    return [
        f"    var {arr}: array<vec4<f32>, {_n4(n)}>;",
        f"    for (var c = 0u; c < {_n4(n)}u; c++) {{",
        "        let c0 = c * 4u;",
        *("        " + s for s in _gather4(src, row, col_stride, n)),
        f"        {arr}[c] = x{factor};",
        "    }",
    ]


def _store_row(dst: str, row: str, arr: str, n: int, ty: str, factor: str = "") -> list[str]:
    """Store private vec4 row ``arr`` (times ``factor``) to dense ``dst`` from ``row``."""
    lines = [
        f"    for (var c = 0u; c < {_n4(n)}u; c++) {{",
        "        let c0 = c * 4u;",
        f"        let x = {arr}[c]{factor};",
    ]
    for m, lane in enumerate(_LANES):
        store = f"{dst}[{row} + c0 + {m}u] = {ty}(x.{lane});"
        lines.append("        " + (store if n % 4 == 0 or m == 0 else f"if (c0 + {m}u < {n}u) {{ {store} }}"))
    lines.append("    }")
    return lines


def _dot(a: str, b: str, n: int, init: str = "0.0") -> str:
    return f"var s = {init}; for (var c = 0u; c < {_n4(n)}u; c++) {{ s += dot({a}, {b}); }}"


def _main() -> list[str]:
    return [
        f"@compute @workgroup_size({ROWS})",
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {",
        *_params(),
        "    let bh = wid.y;",
        "    let b = bh / H;",
        "    let h = bh % H;",
    ]


def _shared(name: str, rows: int, n: int) -> str:
    return f"var<workgroup> {name}: array<vec4<f32>, {rows * _n4(n)}>;"


def _per_query(e: int, ev: int, bk: int) -> list[str]:
    """The forward's and dq's start (one invocation per query): the key and value tiles in workgroup
    memory, the entry point, query ``i`` (``ii``: clamped, for loads) and its row of q times scale."""
    return [
        _shared("ks", bk, e),
        _shared("vs", bk, ev),
        *_main(),
        f"    let i = wid.x * {ROWS}u + lid.x;",
        "    let ii = min(i, L - 1u);",
        *_load_row("qr", "q", "QO + b * QB + h * QH + ii * QR", "QC", e, " * scale"),
    ]


def _key_tiles(mask: str, e: int, ev: int, bk: int) -> list[str]:
    """The forward's and dq's loop over the key tiles the query block can see, opened: each tile's k
    and v rows loaded into workgroup memory, then a barrier (the caller writes the body and closes)."""
    lines = [
        "    let kbase = KO + b * KB + h * KH;",
        "    let vbase = VO + b * VB + h * VH;",
        "    let mrow = MO + b * MB + h * MH + ii * MR;",
        "    var kend = S;",
    ]
    if mask == "causal":  # the block's last query sees keys up to its own index
        lines.append(f"    kend = min(S, min(L, (wid.x + 1u) * {ROWS}u));")
    return [
        *lines,
        f"    for (var j0 = 0u; j0 < kend; j0 += {bk}u) {{",
        *_load_tile("ks", "k", "kbase", "KR", "KC", e, bk, "j0", "S"),
        *_load_tile("vs", "v", "vbase", "VR", "VC", ev, bk, "j0", "S"),
        "        workgroupBarrier();",
    ]


def _each_key(mask: str, bk: int) -> list[str]:
    """Inside ``_key_tiles``: the loop over the tile's keys ``j``, opened, with ``ok`` and ``add``
    (``_allowed``) for query ``i``."""
    return [
        f"        for (var jj = 0u; jj < {bk}u; jj++) {{",
        "            let j = j0 + jj;",
        *("    " + s for s in _allowed(mask, "i", "j", "mrow")),
    ]


@lru_cache(maxsize=64)
def forward(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """The forward kernel for ``dtype`` (f32 or f16), head dims ``e`` and ``ev`` and ``mask`` (one of
    ``MASKS``): bindings out, lse, q, k, v (, mask)."""
    t, bk, e4, v4 = WGSL[dtype], tile_rows(e, ev), _n4(e), _n4(ev)
    binds = [("o", "rw", t), ("lse", "rw", "f32"), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    binds += _mask_bindings(mask)
    lines = _head(dtype, mask, binds)
    lines.append(render_helpers(("inf",)))
    lines += [
        *_per_query(e, ev, bk),
        f"    var acc: array<vec4<f32>, {v4}>;",
        "    var m = -3.0e38;",
        "    var l = 0.0;",
        *_key_tiles(mask, e, ev, bk),
        f"        var sc: array<f32, {bk}>;",
        "        var bits = 0u;",
        "        var tmax = -3.0e38;",
        *_each_key(mask, bk),
        "            if (!ok) { continue; }",
        "            " + _dot("qr[c]", f"ks[jj * {e4}u + c]", e, "add"),
        "            sc[jj] = s;",
        "            bits |= 1u << jj;",
        "            tmax = max(tmax, s);",
        "        }",
        "        let mnew = max(m, tmax);",
        "        let corr = exp(m - mnew);",
        "        l *= corr;",
        f"        for (var c = 0u; c < {v4}u; c++) {{ acc[c] *= corr; }}",
        f"        for (var jj = 0u; jj < {bk}u; jj++) {{",
        "            if (((bits >> jj) & 1u) == 0u) { continue; }",
        "            let p = exp(sc[jj] - mnew);",
        "            l += p;",
        f"            for (var c = 0u; c < {v4}u; c++) {{ acc[c] += p * vs[jj * {v4}u + c]; }}",
        "        }",
        "        m = mnew;",
        "        workgroupBarrier();",
        "    }",
        "    if (i >= L) { return; }",
        "    var inv = 0.0;",
        "    if (l > 0.0) { inv = 1.0 / l; lse[bh * L + i] = m + log(l); } else { lse[bh * L + i] = -inf(); }",
        *_store_row("o", f"(bh * L + i) * {ev}u", "acc", ev, t, " * inv"),
        "}",
    ]
    return Kernel(f"attention_fwd_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=16)
def stats(dtype: DType, ev: int) -> Kernel:
    """D = rowsum(dO ∘ O) and lse per query row into one f32 buffer (lse, then D): bindings stats, out,
    grad, lse."""
    t = WGSL[dtype]
    binds = [("st", "rw", "f32"), ("o", "read", t), ("g", "read", t), ("lse", "read", "f32")]
    lines = _head(dtype, "none", binds)
    lines += [
        f"@compute @workgroup_size({ROWS})",
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {",
        "    let NROWS = info[24u];",
        f"    let r = gid.x + gid.y * (nwg.x * {ROWS}u);",
        "    if (r >= NROWS) { return; }",
        "    var d = 0.0;",
        f"    for (var c = 0u; c < {ev}u; c++) {{ d += f32(g[r * {ev}u + c]) * f32(o[r * {ev}u + c]); }}",
        "    st[r] = lse[r];",
        "    st[NROWS + r] = d;",
        "}",
    ]
    return Kernel(f"attention_stats_{dtype.name}_v{ev}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=64)
def dq(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """dQ per query, key tiles in workgroup memory: bindings dq, q, k, v (, mask), grad, stats."""
    t, bk, e4, v4 = WGSL[dtype], tile_rows(e, ev), _n4(e), _n4(ev)
    binds = [("dq", "rw", t), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    binds += _mask_bindings(mask) + [("g", "read", t), ("st", "read", "f32")]
    lines = _head(dtype, mask, binds)
    lines += [
        *_per_query(e, ev, bk),
        *_load_row("gr", "g", f"(bh * L + ii) * {ev}u", "1u", ev),
        "    let lse_i = st[bh * L + ii];",
        "    let d_i = st[NROWS + bh * L + ii];",
        "    let live = lse_i > -1.0e38;",  # a row with no key: lse -inf, zero gradients
        f"    var acc: array<vec4<f32>, {e4}>;",
        *_key_tiles(mask, e, ev, bk),
        *_each_key(mask, bk),
        "            if (!ok || !live) { continue; }",
        "            " + _dot("qr[c]", f"ks[jj * {e4}u + c]", e, "add"),
        "            let p = exp(s - lse_i);",
        "            var dp = 0.0;",
        f"            for (var c = 0u; c < {v4}u; c++) {{ dp += dot(gr[c], vs[jj * {v4}u + c]); }}",
        "            let ds = p * (dp - d_i);",
        f"            for (var c = 0u; c < {e4}u; c++) {{ acc[c] += ds * ks[jj * {e4}u + c]; }}",
        "        }",
        "        workgroupBarrier();",
        "    }",
        "    if (i >= L) { return; }",
        *_store_row("dq", f"(bh * L + i) * {e}u", "acc", e, t, " * scale"),
        "}",
    ]
    return Kernel(f"attention_dq_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=64)
def dkv(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """dK and dV per key, query tiles (q, dO, lse, D) in workgroup memory: bindings dkv, q, k, v
    (, mask), grad, stats."""
    t, bq, e4, v4 = WGSL[dtype], tile_rows(e, ev, 2), _n4(e), _n4(ev)
    binds = [("dkv", "rw", t), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    binds += _mask_bindings(mask) + [("g", "read", t), ("st", "read", "f32")]
    lines = _head(dtype, mask, binds)
    lines += [
        _shared("qs", bq, e),
        _shared("gs", bq, ev),
        f"var<workgroup> ls: array<f32, {bq}>;",
        f"var<workgroup> dd: array<f32, {bq}>;",
        *_main(),
        f"    let j = wid.x * {ROWS}u + lid.x;",
        "    let jj = min(j, S - 1u);",
        *_load_row("kr", "k", "KO + b * KB + h * KH + jj * KR", "KC", e),
        *_load_row("vr", "v", "VO + b * VB + h * VH + jj * VR", "VC", ev),
        f"    var dk: array<vec4<f32>, {e4}>;",
        f"    var dv: array<vec4<f32>, {v4}>;",
        "    let qbase = QO + b * QB + h * QH;",
        f"    let gbase = bh * L * {ev}u;",
        "    let mbase = MO + b * MB + h * MH;",
        "    var istart = 0u;",
    ]
    if mask == "causal":  # the block's first key is seen from its own index on
        lines.append(f"    istart = (wid.x * {ROWS}u / {bq}u) * {bq}u;")
    lines += [
        f"    for (var i0 = istart; i0 < L; i0 += {bq}u) {{",
        *_load_tile("qs", "q", "qbase", "QR", "QC", e, bq, "i0", "L"),
        *_load_tile("gs", "g", "gbase", f"{ev}u", "1u", ev, bq, "i0", "L"),
        f"        if (lid.x < {bq}u) {{",
        "            let r = i0 + lid.x;",
        "            var lv = -3.0e38;",
        "            var dr = 0.0;",
        "            if (r < L) { lv = st[bh * L + r]; dr = st[NROWS + bh * L + r]; }",
        "            ls[lid.x] = lv;",
        "            dd[lid.x] = dr;",
        "        }",
        "        workgroupBarrier();",
        f"        for (var t = 0u; t < {bq}u; t++) {{",
        "            let i = i0 + t;",
        *("    " + s for s in _allowed(mask, "i", "j", "(mbase + i * MR)")),
        "            let lse_i = ls[t];",
        "            if (!ok || lse_i <= -1.0e38) { continue; }",
        "            " + _dot(f"qs[t * {e4}u + c]", "kr[c]", e),
        "            let p = exp(s * scale + add - lse_i);",
        "            var dp = 0.0;",
        f"            for (var c = 0u; c < {v4}u; c++) {{",
        f"                let gv = gs[t * {v4}u + c];",
        "                dp += dot(gv, vr[c]);",
        "                dv[c] += p * gv;",
        "            }",
        "            let dsv = p * (dp - dd[t]);",
        f"            for (var c = 0u; c < {e4}u; c++) {{ dk[c] += dsv * qs[t * {e4}u + c]; }}",
        "        }",
        "        workgroupBarrier();",
        "    }",
        "    if (j >= S) { return; }",
        *_store_row("dkv", f"(bh * S + j) * {e}u", "dk", e, t, " * scale"),
        *_store_row("dkv", f"DVO + (bh * S + j) * {ev}u", "dv", ev, t),
        "}",
    ]
    return Kernel(f"attention_dkv_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))
