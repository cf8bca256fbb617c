"""The k-pair packed float16 matmul (``render_pairs``): the register-blocked kernel of ``matmul``
(its bindings and metadata) with both workgroup tiles holding (k, k+1) pairs and vec2<f16>
accumulators, so each output takes one packed FMA (an HFMA2 on NVIDIA) per two K steps with no
scalar splat, and four pairs come per 16-byte workgroup-memory read (``PAIR_LAYOUTS``).

Why: float16 through ``render_blocked(acc16=True)`` ran at 1.2-1.4x its float32 kernel on an H200,
bound by workgroup-memory loads and instruction issue, not by the FMA rate that f16 doubles; these
halve the loads per FMA and drop the splats (1.6x there with 64-K steps, ``benchmarks/
sweep_matmul_f16.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from burn import DType, float16

from .._executor import Kernel
from .matmul import A_MODES, B_MODES, Block, _blocked_prelude, _named


@dataclass(frozen=True)
class PairLayout:
    """How ``render_pairs`` holds K pairs in workgroup memory: ``elem``, the WGSL type of one
    element (``len(pair)`` consecutive pairs of one row); ``make``, its constructor from the
    ``2 * len(pair)`` f16 values in k order (``str.format`` positions); ``pair``, the expression of
    pair c of element ``{x}``; ``decl``, a type the kernel must declare for it."""

    elem: str
    make: str
    pair: tuple[str, ...]
    decl: str = ""


# four pairs per 16-byte element: a matrix (column c is pair c) or a struct of two vec4s. Which one
# the driver reads whole is the device's to tell (the H200: the struct, by 1-4%); one or two pairs
# per read (vec2 / vec4 elements) measured 20-35% slower there and are not offered
PAIR_LAYOUTS: dict[str, PairLayout] = {
    "m4": PairLayout(
        "mat4x2<f16>",
        "mat4x2<f16>({0}, {1}, {2}, {3}, {4}, {5}, {6}, {7})",
        ("{x}[0]", "{x}[1]", "{x}[2]", "{x}[3]"),
    ),
    "s4": PairLayout(
        "Pairs4",
        "Pairs4(vec4<f16>({0}, {1}, {2}, {3}), vec4<f16>({4}, {5}, {6}, {7}))",
        ("{x}.lo.xy", "{x}.lo.zw", "{x}.hi.xy", "{x}.hi.zw"),
        "struct Pairs4 { lo: vec4<f16>, hi: vec4<f16> }",
    ),
}


def _pair_load_lines(
    tile: str, src: str, mode: str, rows: int, bk: int, threads: int, layout: PairLayout, bound: str
) -> list[str]:
    """Loads of one operand tile into ``tile``: element ``g * rows + r`` holds row r's k values
    ``w * g .. w * g + w - 1`` (``w = 2 * len(layout.pair)``), zero past M/N and K.

    Each invocation loads a unit of ``per_row`` rows x ``span`` k values: 4 rows (one vec4 per k)
    for "m4"/"n4", ``w`` k of one row for "k4" (``w / 4`` vec4 loads), ``w`` scalars of one
    row for the scalar modes; the unit index runs fastest along the mode's named dim, as in
    ``_load_lines``. Each element is built in registers and stored whole: B's two k rows of a pair
    are interleaved here."""
    along_k, vec = mode[0] == "k", mode[1] == "4"
    w = 2 * len(layout.pair)
    per_row = 4 if vec and not along_k else 1
    span = max(w, 4) if vec and along_k else w
    groups = rows // per_row
    units = groups * (bk // span)
    lines = [
        f"        for (var l = 0u; l < {-(-units // threads)}u; l++) {{",
        f"            let e = tid + l * {threads}u;",
    ]
    if units % threads:
        lines.append(f"            if (e >= {units}u) {{ break; }}")
    if along_k:
        lines += [
            f"            let r = e / {bk // span}u;",
            f"            let kk = (e % {bk // span}u) * {span}u;",
        ]
    else:
        lines += [
            f"            let kk = (e / {groups}u) * {span}u;",
            f"            let r = (e % {groups}u){f' * {per_row}u' if per_row > 1 else ''};",
        ]
    if vec and along_k:  # 4 consecutive k of the row per load
        loads = [
            (f"k0 + kk + {4 * t}u", f"{src}[(o_ + (r0 + r) * s_r + k0 + kk + {4 * t}u) / 4u]")
            for t in range(span // 4)
        ]

        def value(row: int, k: int) -> str:
            return f"v{k // 4}[{k % 4}]"
    elif vec:  # 4 consecutive rows at one k per load
        loads = [
            (f"k0 + kk + {t}u", f"{src}[(o_ + r0 + r + (k0 + kk + {t}u) * s_k) / 4u]") for t in range(span)
        ]

        def value(row: int, k: int) -> str:
            return f"v{k}[{row}]"
    else:
        loads = [
            (f"k0 + kk + {t}u", f"{src}[o_ + (r0 + r) * s_r + (k0 + kk + {t}u) * s_k]") for t in range(span)
        ]

        def value(row: int, k: int) -> str:
            return f"v{k}"

    zero = "vec4<f16>(0)" if vec else "f16(0)"
    for t, (k, load) in enumerate(loads):
        lines += [
            f"            var v{t} = {zero};",
            f"            if (r0 + r < {bound} && {k} < kend) {{ v{t} = {load}; }}",
        ]
    for row in range(per_row):
        for g in range(span // w):
            element = layout.make.format(*(value(row, g * w + i) for i in range(w)))
            lines.append(f"            {tile}[(kk / {w}u + {g}u) * {rows}u + r + {row}u] = {element};")
    lines.append("        }")
    return _named(lines, src)


@lru_cache(maxsize=128)
def render_pairs(
    dtype: DType,
    nb: int,
    block: Block,
    layout: str = "m4",
    a_mode: str = "k1",
    b_mode: str = "n1",
    fold: int = 1,
) -> Kernel:
    """A k-pair packed float16 matmul: the bindings and metadata of ``render_blocked`` (so
    ``burn_wgpu._matmul.matmul_blocked`` drives both; no split-K), float16 operands only.

    Both workgroup tiles hold K pairs: A's element (pair p, row m) is ``vec2(A[m, 2p], A[m, 2p+1])``,
    B's (pair p, col n) ``vec2(B[2p, n], B[2p+1, n])``, grouped per row into elements of
    ``PAIR_LAYOUTS[layout]`` (4 pairs: 16-byte reads). An invocation holds ``tm`` x
    ``tn`` vec2<f16> accumulators (the even-k and odd-k partial sums), rows ``lid.y + i * ty`` and
    columns ``lid.x + j * tx`` (neighbouring invocations read neighbouring B elements), and does one
    packed ``fma`` per output per pair, no scalar splat. After each K step (``bk`` values) each
    vec2 is added into an f32 accumulator, so the error stays near float16 rounding for any K, as
    with ``render_blocked``'s ``acc16``; ``fold`` > 1 adds them every ``fold`` K steps instead (and
    after the last), for fewer conversions per FMA at the same workgroup memory. Workgroup memory:
    ``block.workgroup_bytes(2)``."""
    blk = block
    pl = PAIR_LAYOUTS.get(layout)
    if dtype is not float16:
        raise ValueError(f"matmul kernel: k-pair kernels are for float16 operands only, got {dtype.name}")
    if pl is None:
        raise ValueError(f"matmul kernel: pair layout {layout!r} (expected one of {tuple(PAIR_LAYOUTS)})")
    if a_mode not in A_MODES or b_mode not in B_MODES:
        raise ValueError(f"matmul kernel: modes {a_mode!r}/{b_mode!r} (expected {A_MODES} / {B_MODES})")
    w = 2 * len(pl.pair)  # k values per element
    if blk.bm % blk.tm or blk.bn % blk.tn or blk.bm % 4 or blk.bn % 4 or blk.bk % max(w, 4) or fold < 1:
        raise ValueError(f"matmul kernel: {blk} (fold {fold}) does not fit k-pair elements of {w} k values")
    tx, ty, threads = blk.tx, blk.ty, blk.threads
    outs = [(i, j) for i in range(blk.tm) for j in range(blk.tn)]
    regs = [f"            let x{i} = As[q * {blk.bm}u + lid.y + {i * ty}u];" for i in range(blk.tm)]
    regs += [f"            let y{j} = Bs[q * {blk.bn}u + lid.x + {j * tx}u];" for j in range(blk.tn)]
    fma = [
        f"            h{i}_{j} = fma({pair.format(x=f'x{i}')}, {pair.format(x=f'y{j}')}, h{i}_{j});"
        for pair in pl.pair
        for i, j in outs
    ]
    h_zero = [f"var h{i}_{j} = vec2<f16>(0);" for i, j in outs]
    add = [f"c{i}_{j} += f32(h{i}_{j}.x) + f32(h{i}_{j}.y);" for i, j in outs]
    if fold == 1:  # fresh partial sums each K step
        step_zero, step_add, fold_zero = [f"        {x}" for x in h_zero], [f"        {x}" for x in add], []
    else:  # partial sums across K steps, added every fold-th step and after the last
        last = f"(k0 - kbeg) / {blk.bk}u % {fold}u == {fold - 1}u || k0 + {blk.bk}u >= kend"
        step_zero, fold_zero = [], [f"    {x}" for x in h_zero]
        step_add = [f"        if ({last}) {{"] + [f"            {x}" for x in add]
        step_add += [f"            h{i}_{j} = vec2<f16>(0);" for i, j in outs] + ["        }"]
    stores = [f"    let row{i} = a_r0 + lid.y + {i * ty}u;" for i in range(blk.tm)]
    stores += [f"    let col{j} = b_r0 + lid.x + {j * tx}u;" for j in range(blk.tn)]
    stores += [
        f"    if (row{i} < M && col{j} < N) {{ out[ob + row{i} * N + col{j}] = f16(c{i}_{j}); }}"
        for i, j in outs
    ]
    pair_loop = [f"        for (var q = 0u; q < {blk.bk // w}u; q++) {{", *regs, *fma, "        }"]
    a_loads = _pair_load_lines("As", "a", a_mode, blk.bm, blk.bk, threads, pl, "M")
    b_loads = _pair_load_lines("Bs", "b", b_mode, blk.bn, blk.bk, threads, pl, "N")
    a_elem = "vec4<f16>" if a_mode[1] == "4" else "f16"
    b_elem = "vec4<f16>" if b_mode[1] == "4" else "f16"
    nl = "\n"
    src = f"""enable f16;
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
@group(0) @binding(2) var<storage, read> a: array<{a_elem}>;
@group(0) @binding(3) var<storage, read> b: array<{b_elem}>;
{pl.decl + nl if pl.decl else ""}var<workgroup> As: array<{pl.elem}, {blk.bm * blk.bk // w}>;
var<workgroup> Bs: array<{pl.elem}, {blk.bn * blk.bk // w}>;

@compute @workgroup_size({tx}, {ty})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
{_blocked_prelude(nb, blk)}
{nl.join([f"    var c{i}_{j} = 0.0;" for i, j in outs] + fold_zero)}
    for (var k0 = kbeg; k0 < kend; k0 += {blk.bk}u) {{
{nl.join(a_loads + b_loads)}
        workgroupBarrier();
{nl.join(step_zero + pair_loop + step_add)}
        workgroupBarrier();
    }}
    let ob = (s * count + bz) * M * N;
{nl.join(stores)}
}}
"""
    flags = f"{a_mode}{b_mode}_h2{layout}{f'f{fold}' if fold > 1 else ''}"
    return Kernel(f"matmul_{dtype.name}_{nb}b_{blk.name}_{flags}", src, ("rw", "read", "read"))
