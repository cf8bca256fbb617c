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
tensors are widened on load and rounded on store. Workgroups of ``ROWS`` = 64 invocations and at most
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


def tile_rows(e: int, ev: int, extra: int = 0) -> int:
    """Rows of a key (or query) tile: the largest power of two up to 32 whose f32 rows of e + ev (+
    ``extra``) words fit ``SHARED_BYTES``."""
    t = 32
    while t > 4 and t * (e + ev + extra) * 4 > SHARED_BYTES:
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


def _load_rows(
    shared: str, src: str, base: str, row_stride: str, col_stride: str, n: int, start: str, limit: str
) -> list[str]:
    """Cooperative load of ``rows x n`` values of ``src`` rows ``start..`` into ``shared`` (0 past
    ``limit``)."""
    return [
        f"    for (var t = lid.x; t < {shared}_N; t += {ROWS}u) {{",
        f"        let r = {start} + t / {n}u;",
        "        var x = 0.0;",
        f"        if (r < {limit}) {{ x = f32({src}[{base} + r * {row_stride} + (t % {n}u) * {col_stride}]); }}",
        f"        {shared}[t] = x;",
        "    }",
    ]


def _main(extra: str = "") -> list[str]:
    return [
        f"@compute @workgroup_size({ROWS})",
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>"
        + extra
        + ") {",
    ]


@lru_cache(maxsize=64)
def forward(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """The forward kernel for ``dtype`` (f32 or f16), head dims ``e`` and ``ev`` and ``mask`` (one of
    ``MASKS``): bindings out, lse, q, k, v (, mask)."""
    t, bk = WGSL[dtype], tile_rows(e, ev)
    binds = [("o", "rw", t), ("lse", "rw", "f32"), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    lines = _head(dtype, mask, binds + _mask_bindings(mask))
    lines.append(render_helpers(("inf",)))
    lines += [
        f"const E: u32 = {e}u;",
        f"const EV: u32 = {ev}u;",
        f"const BK: u32 = {bk}u;",
        f"const ks_N: u32 = {bk * e}u;",
        f"const vs_N: u32 = {bk * ev}u;",
        f"var<workgroup> ks: array<f32, {bk * e}>;",
        f"var<workgroup> vs: array<f32, {bk * ev}>;",
        *_main(),
        *_params(),
        "    let bh = wid.y;",
        "    let b = bh / H;",
        "    let h = bh % H;",
        f"    let i = wid.x * {ROWS}u + lid.x;",
        "    let ii = min(i, L - 1u);",
        "    let qrow = QO + b * QB + h * QH + ii * QR;",
        "    var qr: array<f32, E>;",
        "    for (var c = 0u; c < E; c++) { qr[c] = f32(q[qrow + c * QC]) * scale; }",
        "    var acc: array<f32, EV>;",
        "    var m = -3.0e38;",
        "    var l = 0.0;",
        "    let kbase = KO + b * KB + h * KH;",
        "    let vbase = VO + b * VB + h * VH;",
        "    let mrow = MO + b * MB + h * MH + ii * MR;",
        "    var kend = S;",
    ]
    if mask == "causal":  # the block's last query sees keys up to its own index
        lines.append(f"    kend = min(S, min(L, (wid.x + 1u) * {ROWS}u));")
    lines += [
        "    for (var j0 = 0u; j0 < kend; j0 += BK) {",
        *("    " + s for s in _load_rows("ks", "k", "kbase", "KR", "KC", e, "j0", "S")),
        *("    " + s for s in _load_rows("vs", "v", "vbase", "VR", "VC", ev, "j0", "S")),
        "        workgroupBarrier();",
        "        var sc: array<f32, BK>;",
        "        var bits = 0u;",
        "        var tmax = -3.0e38;",
        "        for (var jj = 0u; jj < BK; jj++) {",
        "            let j = j0 + jj;",
        *("    " + s for s in _allowed(mask, "i", "j", "mrow")),
        "            if (ok) {",
        "                var d = add;",
        "                for (var c = 0u; c < E; c++) { d += qr[c] * ks[jj * E + c]; }",
        "                sc[jj] = d;",
        "                bits |= 1u << jj;",
        "                tmax = max(tmax, d);",
        "            }",
        "        }",
        "        let mnew = max(m, tmax);",
        "        let corr = exp(m - mnew);",
        "        l *= corr;",
        "        for (var c = 0u; c < EV; c++) { acc[c] *= corr; }",
        "        for (var jj = 0u; jj < BK; jj++) {",
        "            if (((bits >> jj) & 1u) == 0u) { continue; }",
        "            let p = exp(sc[jj] - mnew);",
        "            l += p;",
        "            for (var c = 0u; c < EV; c++) { acc[c] += p * vs[jj * EV + c]; }",
        "        }",
        "        m = mnew;",
        "        workgroupBarrier();",
        "    }",
        "    if (i >= L) { return; }",
        "    let orow = (bh * L + i) * EV;",
        "    var inv = 0.0;",
        "    if (l > 0.0) { inv = 1.0 / l; lse[bh * L + i] = m + log(l); } else { lse[bh * L + i] = -inf(); }",
        f"    for (var c = 0u; c < EV; c++) {{ o[orow + c] = {t}(acc[c] * inv); }}",
        "}",
    ]
    binds += _mask_bindings(mask)
    return Kernel(f"attention_fwd_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=16)
def stats(dtype: DType, ev: int) -> Kernel:
    """D = rowsum(dO ∘ O) and lse per query row into one f32 buffer (lse, then D): bindings stats, out,
    grad, lse."""
    t = WGSL[dtype]
    binds = [("st", "rw", "f32"), ("o", "read", t), ("g", "read", t), ("lse", "read", "f32")]
    lines = _head(dtype, "none", binds)
    lines += [
        f"const EV: u32 = {ev}u;",
        f"@compute @workgroup_size({ROWS})",
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {",
        "    let NROWS = info[24u];",
        f"    let r = gid.x + gid.y * (nwg.x * {ROWS}u);",
        "    if (r >= NROWS) { return; }",
        "    var d = 0.0;",
        "    for (var c = 0u; c < EV; c++) { d += f32(g[r * EV + c]) * f32(o[r * EV + c]); }",
        "    st[r] = lse[r];",
        "    st[NROWS + r] = d;",
        "}",
    ]
    return Kernel(f"attention_stats_{dtype.name}_v{ev}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=64)
def dq(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """dQ per query, key tiles in workgroup memory: bindings dq, q, k, v (, mask), grad, stats."""
    t, bk = WGSL[dtype], tile_rows(e, ev)
    binds = [("dq", "rw", t), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    binds += _mask_bindings(mask) + [("g", "read", t), ("st", "read", "f32")]
    lines = _head(dtype, mask, binds)
    lines += [
        f"const E: u32 = {e}u;",
        f"const EV: u32 = {ev}u;",
        f"const BK: u32 = {bk}u;",
        f"const ks_N: u32 = {bk * e}u;",
        f"const vs_N: u32 = {bk * ev}u;",
        f"var<workgroup> ks: array<f32, {bk * e}>;",
        f"var<workgroup> vs: array<f32, {bk * ev}>;",
        *_main(),
        *_params(),
        "    let bh = wid.y;",
        "    let b = bh / H;",
        "    let h = bh % H;",
        f"    let i = wid.x * {ROWS}u + lid.x;",
        "    let ii = min(i, L - 1u);",
        "    let qrow = QO + b * QB + h * QH + ii * QR;",
        "    let grow = (bh * L + ii) * EV;",
        "    var qr: array<f32, E>;",
        "    for (var c = 0u; c < E; c++) { qr[c] = f32(q[qrow + c * QC]) * scale; }",
        "    var gr: array<f32, EV>;",
        "    for (var c = 0u; c < EV; c++) { gr[c] = f32(g[grow + c]); }",
        "    let lse_i = st[bh * L + ii];",
        "    let d_i = st[NROWS + bh * L + ii];",
        "    let live = lse_i > -1.0e38;",  # a row with no key: lse -inf, zero gradients
        "    var acc: array<f32, E>;",
        "    let kbase = KO + b * KB + h * KH;",
        "    let vbase = VO + b * VB + h * VH;",
        "    let mrow = MO + b * MB + h * MH + ii * MR;",
        "    var kend = S;",
    ]
    if mask == "causal":
        lines.append(f"    kend = min(S, min(L, (wid.x + 1u) * {ROWS}u));")
    lines += [
        "    for (var j0 = 0u; j0 < kend; j0 += BK) {",
        *("    " + s for s in _load_rows("ks", "k", "kbase", "KR", "KC", e, "j0", "S")),
        *("    " + s for s in _load_rows("vs", "v", "vbase", "VR", "VC", ev, "j0", "S")),
        "        workgroupBarrier();",
        "        for (var jj = 0u; jj < BK; jj++) {",
        "            let j = j0 + jj;",
        *("    " + s for s in _allowed(mask, "i", "j", "mrow")),
        "            if (!ok || !live) { continue; }",
        "            var s = add;",
        "            for (var c = 0u; c < E; c++) { s += qr[c] * ks[jj * E + c]; }",
        "            let p = exp(s - lse_i);",
        "            var dp = 0.0;",
        "            for (var c = 0u; c < EV; c++) { dp += gr[c] * vs[jj * EV + c]; }",
        "            let ds = p * (dp - d_i);",
        "            for (var c = 0u; c < E; c++) { acc[c] += ds * ks[jj * E + c]; }",
        "        }",
        "        workgroupBarrier();",
        "    }",
        "    if (i >= L) { return; }",
        "    let orow = (bh * L + i) * E;",
        f"    for (var c = 0u; c < E; c++) {{ dq[orow + c] = {t}(acc[c] * scale); }}",
        "}",
    ]
    return Kernel(f"attention_dq_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))


@lru_cache(maxsize=64)
def dkv(dtype: DType, e: int, ev: int, mask: str) -> Kernel:
    """dK and dV per key, query tiles (q, dO, lse, D) in workgroup memory: bindings dkv, q, k, v
    (, mask), grad, stats."""
    t, bq = WGSL[dtype], tile_rows(e, ev, 2)
    binds = [("dkv", "rw", t), ("q", "read", t), ("k", "read", t), ("v", "read", t)]
    binds += _mask_bindings(mask) + [("g", "read", t), ("st", "read", "f32")]
    lines = _head(dtype, mask, binds)
    lines += [
        f"const E: u32 = {e}u;",
        f"const EV: u32 = {ev}u;",
        f"const BQ: u32 = {bq}u;",
        f"const qs_N: u32 = {bq * e}u;",
        f"const gs_N: u32 = {bq * ev}u;",
        f"var<workgroup> qs: array<f32, {bq * e}>;",
        f"var<workgroup> gs: array<f32, {bq * ev}>;",
        f"var<workgroup> ls: array<f32, {bq}>;",
        f"var<workgroup> ds: array<f32, {bq}>;",
        *_main(),
        *_params(),
        "    let bh = wid.y;",
        "    let b = bh / H;",
        "    let h = bh % H;",
        f"    let j = wid.x * {ROWS}u + lid.x;",
        "    let jj = min(j, S - 1u);",
        "    let krow = KO + b * KB + h * KH + jj * KR;",
        "    let vrow = VO + b * VB + h * VH + jj * VR;",
        "    var kr: array<f32, E>;",
        "    for (var c = 0u; c < E; c++) { kr[c] = f32(k[krow + c * KC]); }",
        "    var vr: array<f32, EV>;",
        "    for (var c = 0u; c < EV; c++) { vr[c] = f32(v[vrow + c * VC]); }",
        "    var dk: array<f32, E>;",
        "    var dv: array<f32, EV>;",
        "    let qbase = QO + b * QB + h * QH;",
        "    let gbase = bh * L * EV;",
        "    let mbase = MO + b * MB + h * MH;",
        "    var istart = 0u;",
    ]
    if mask == "causal":  # the block's first key is seen from its own index on
        lines.append(f"    istart = (wid.x * {ROWS}u / BQ) * BQ;")
    lines += [
        "    for (var i0 = istart; i0 < L; i0 += BQ) {",
        *("    " + s for s in _load_rows("qs", "q", "qbase", "QR", "QC", e, "i0", "L")),
        *("    " + s for s in _load_rows("gs", "g", "gbase", "EV", "1u", ev, "i0", "L")),
        "        if (lid.x < BQ) {",
        "            let r = i0 + lid.x;",
        "            var lv = -3.0e38;",
        "            var dv_ = 0.0;",
        "            if (r < L) { lv = st[bh * L + r]; dv_ = st[NROWS + bh * L + r]; }",
        "            ls[lid.x] = lv;",
        "            ds[lid.x] = dv_;",
        "        }",
        "        workgroupBarrier();",
        "        for (var t = 0u; t < BQ; t++) {",
        "            let i = i0 + t;",
        *("    " + s for s in _allowed(mask, "i", "j", "(mbase + i * MR)")),
        "            let lse_i = ls[t];",
        "            if (!ok || lse_i <= -1.0e38) { continue; }",
        "            var s = 0.0;",
        "            for (var c = 0u; c < E; c++) { s += qs[t * E + c] * kr[c]; }",
        "            s = s * scale + add;",
        "            let p = exp(s - lse_i);",
        "            var dp = 0.0;",
        "            for (var c = 0u; c < EV; c++) { dp += gs[t * EV + c] * vr[c]; dv[c] += p * gs[t * EV + c]; }",
        "            let dsv = p * (dp - ds[t]);",
        "            for (var c = 0u; c < E; c++) { dk[c] += dsv * qs[t * E + c]; }",
        "        }",
        "        workgroupBarrier();",
        "    }",
        "    if (j >= S) { return; }",
        "    let krow_o = (bh * S + j) * E;",
        "    let vrow_o = DVO + (bh * S + j) * EV;",
        f"    for (var c = 0u; c < E; c++) {{ dkv[krow_o + c] = {t}(dk[c] * scale); }}",
        f"    for (var c = 0u; c < EV; c++) {{ dkv[vrow_o + c] = {t}(dv[c]); }}",
        "}",
    ]
    return Kernel(f"attention_dkv_{dtype.name}_e{e}_v{ev}_{mask}", "\n".join(lines), _access(binds))
