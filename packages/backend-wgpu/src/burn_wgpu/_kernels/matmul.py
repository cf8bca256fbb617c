"""Tiled batched matmul: ``out[b] = a[b] @ b[b]`` with strided operands and broadcast batch dims.

A 16x16 workgroup computes a ``tile`` x ``tile`` output tile, each thread an ``r`` x ``r`` block
(``r = tile / 16``; rows ``ly + 16 i``, cols ``lx + 16 j``, so neighbouring threads write neighbouring
columns); K advances in steps of ``tk`` through workgroup memory (2 x tile x tk values: 8 KiB for the
64/16 default, at most WebGPU's default 16 KiB). Operands are read through their strides, so a
transposed operand (``x @ w.T``) costs no copy. Batch dims beyond 65535 are split into several
dispatches (``base`` in the metadata). ``CONFIGS`` are the tile shapes the autotuner chooses among.

``render_blocked`` is the register-blocked family (``BLOCKS``): a ``bm`` x ``bn`` output tile per
workgroup of ``(bn / tn) x (bm / tm)`` invocations, each invocation ``tm`` x ``tn`` outputs held as
vec4 accumulators. Both workgroup tiles are stored k-major as vec4 rows, so the inner loop reads
``tm / 4 + tn / 4`` vec4s and does ``tm * tn / 4`` vec4 FMAs per k; an invocation's rows and columns
are spread in groups of 4 across the tile (group ``lid + j * threads``), which keeps the vec4 reads
of neighbouring invocations on neighbouring addresses. Global loads are vec4 along whichever dim is
contiguous when the shape and offsets are multiples of 4 (``A_MODES`` / ``B_MODES``), scalar along
it otherwise; stores are vec4 when N is a multiple of 4. With ``prefetch`` the next K step's global
loads are issued into registers before the current step's FMAs. Split-K runs K in ``kchunk`` slices,
one per ``wid.z`` block, into float32 partials that ``render_split_sum`` adds up.

``matmul_pairs.render_pairs`` is the k-pair packed float16 variant of the blocked kernel (same
bindings and metadata, ``_blocked_prelude``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from burn import DType, float16

from .._dtypes import WGSL
from .._executor import Kernel
from .elementwise import compute_type

TILE = 64
TK = 16
# (tile, tk): the default first; 128-wide tiles give each thread an 8x8 block, 32-wide ones more
# workgroups for small outputs
CONFIGS: tuple[tuple[int, int], ...] = ((64, 16), (128, 8), (128, 16), (64, 8), (32, 16))


def workgroup_bytes(tile: int, tk: int) -> int:
    """Workgroup memory of a config (two f32 tiles)."""
    return 2 * tile * tk * 4


def batch_lines(nb: int, first: int = 10, a: str = "ao", b: str = "bo") -> str:
    """WGSL that turns the flat batch index ``rem`` into the operands' batch offsets ``a`` and ``b``:
    the batch shape is at ``info[first:]``, then a's batch strides, then b's (``nb`` each)."""
    lines = []
    for d in range(nb - 1, -1, -1):
        lines += [
            f"    let c{d} = rem % info[{first + d}u];",
            f"    rem = rem / info[{first + d}u];",
            f"    {a} += c{d} * info[{first + nb + d}u];",
            f"    {b} += c{d} * info[{first + 2 * nb + d}u];",
        ]
    return "\n".join(lines)


def _plain_head(dtype: DType, acc: str) -> str:
    """The bindings of the tiled and small kernels (metadata, out, a, b all of ``dtype``) and ``ACC``."""
    t = WGSL[dtype]
    return f"""{"enable f16;" if dtype is float16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{t}>;
@group(0) @binding(2) var<storage, read> a: array<{t}>;
@group(0) @binding(3) var<storage, read> b: array<{t}>;
alias ACC = {acc};"""


@lru_cache(maxsize=256)
def render(dtype: DType, nb: int, tile: int = TILE, tk: int = TK) -> Kernel:
    """Metadata: M, N, K, batch base, a_off, b_off, a_sm, a_sk, b_sk, b_sn, batch shape[nb], a batch
    strides[nb], b batch strides[nb]."""
    r = tile // 16  # the register block per thread is r x r
    loads_per_thread = tile * tk // 256
    if tile % 16 or loads_per_thread < 1 or tile * tk % 256:
        raise ValueError(f"matmul kernel: tile {tile} / tk {tk} does not fit a 16x16 workgroup")
    acc = compute_type(dtype)
    store = "f16(v)" if dtype is float16 else "v"
    # accumulators are indexed with constants only (unrolled init, FMAs and stores): a runtime index
    # makes shader compilers keep the array in local memory instead of registers
    zero = "\n".join(f"    acc[{i}] = ACC(0);" for i in range(r * r))
    stores = "\n".join(
        f"    if (row0 + lid.y + {16 * i}u < M && col0 + lid.x + {16 * j}u < N) {{\n"
        f"        let v = acc[{i * r + j}];\n"
        f"        out[ob + (row0 + lid.y + {16 * i}u) * N + col0 + lid.x + {16 * j}u] = {store};\n"
        f"    }}"
        for i in range(r)
        for j in range(r)
    )
    fma = "\n".join(f"            acc[{i * r + j}] += ar{i} * br{j};" for i in range(r) for j in range(r))
    loads = "\n".join(
        f"            let ar{i} = As[kk * {tile}u + lid.y + {16 * i}u];\n"
        f"            let br{i} = Bs[kk * {tile}u + lid.x + {16 * i}u];"
        for i in range(r)
    )
    src = f"""{_plain_head(dtype, acc)}
var<workgroup> As: array<ACC, {tile * tk}>;
var<workgroup> Bs: array<ACC, {tile * tk}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    let M = info[0];
    let N = info[1];
    let K = info[2];
    let bz = wid.z + info[3];
    var rem = bz;
    var ao = info[4];
    var bo = info[5];
{batch_lines(nb)}
    let a_sm = info[6];
    let a_sk = info[7];
    let b_sk = info[8];
    let b_sn = info[9];
    let row0 = wid.y * {tile}u;
    let col0 = wid.x * {tile}u;
    let tid = lid.y * 16u + lid.x;
    var acc: array<ACC, {r * r}>;
{zero}
    for (var k0 = 0u; k0 < K; k0 += {tk}u) {{
        for (var l = 0u; l < {loads_per_thread}u; l++) {{
            let e = tid + l * 256u;
            let am = e / {tk}u;
            let ak = e % {tk}u;
            var v = ACC(0);
            if (row0 + am < M && k0 + ak < K) {{ v = ACC(a[ao + (row0 + am) * a_sm + (k0 + ak) * a_sk]); }}
            As[ak * {tile}u + am] = v;
            let bk = e / {tile}u;
            let bn = e % {tile}u;
            var w = ACC(0);
            if (k0 + bk < K && col0 + bn < N) {{ w = ACC(b[bo + (k0 + bk) * b_sk + (col0 + bn) * b_sn]); }}
            Bs[bk * {tile}u + bn] = w;
        }}
        workgroupBarrier();
        for (var kk = 0u; kk < {tk}u; kk++) {{
{loads}
{fma}
        }}
        workgroupBarrier();
    }}
    let ob = bz * M * N;
{stores}
}}
"""
    suffix = "" if (tile, tk) == (TILE, TK) else f"_t{tile}k{tk}"
    return Kernel(f"matmul_{dtype.name}_{nb}b{suffix}", src, ("rw", "read", "read"))


# small products (a recurrent cell's step, attention over a few tokens) run without workgroup memory:
# one invocation per output, K looped in order; no barriers, which software adapters (SwiftShader,
# lavapipe) emulate at a high cost per workgroup
# (on lavapipe: 1x64 @ 64x256 0.32 ms against 3.3 ms tiled, 16x64 @ 64x64 0.63 against 1.6; from about
# half a million multiply-adds the tiled kernel's reuse wins: 64x576 @ 576x64 17 ms against 14)
SMALL_OUTPUTS = 4096  # M * N up to this (per batch entry)
SMALL_MACS = 1 << 19  # and M * N * K up to this


def is_small(m: int, n: int, k: int) -> bool:
    return m * n <= SMALL_OUTPUTS and m * n * k <= SMALL_MACS


@lru_cache(maxsize=64)
def render_small(dtype: DType, nb: int) -> Kernel:
    """The metadata of ``render``; 64 invocations per workgroup along the M x N outputs of one batch
    entry (x), batch entries along z. Each output sums its K products in order, as ``render`` does."""
    acc = compute_type(dtype)
    store = "f16(v)" if dtype is float16 else "v"
    src = f"""{_plain_head(dtype, acc)}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
    let M = info[0];
    let N = info[1];
    let K = info[2];
    let e = gid.x;
    if (e >= M * N) {{
        return;
    }}
    let bz = wid.z + info[3];
    var rem = bz;
    var ao = info[4];
    var bo = info[5];
{batch_lines(nb)}
    let row = e / N;
    let col = e % N;
    var ai = ao + row * info[6];
    var bi = bo + col * info[9];
    let a_sk = info[7];
    let b_sk = info[8];
    var v = ACC(0);
    for (var k = 0u; k < K; k++) {{
        v += ACC(a[ai]) * ACC(b[bi]);
        ai += a_sk;
        bi += b_sk;
    }}
    out[bz * M * N + e] = {store};
}}
"""
    return Kernel(f"matmul_small_{dtype.name}_{nb}b", src, ("rw", "read", "read"))


@dataclass(frozen=True)
class Block:
    """A register-blocked tile shape: ``bm`` x ``bn`` outputs per workgroup, K steps of ``bk``,
    ``tm`` x ``tn`` outputs per invocation (multiples of 4)."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def tx(self) -> int:
        return self.bn // self.tn

    @property
    def ty(self) -> int:
        return self.bm // self.tm

    @property
    def threads(self) -> int:
        return self.tx * self.ty

    @property
    def name(self) -> str:
        return f"b{self.bm}x{self.bn}k{self.bk}r{self.tm}x{self.tn}"

    def workgroup_bytes(self, acc_bytes: int = 4) -> int:
        return (self.bm + self.bn) * self.bk * acc_bytes


@dataclass(frozen=True)
class Epilogue:
    """Element-wise work a blocked matmul does on each product element before storing it (a fused
    bias and activation, rendered by ``burn_wgpu._renderer``). ``source`` declares bindings 4.. and
    ``fn epilogue(e: u32, v: f32)``, which stores what output element ``e`` (flat, dense) needs from
    product value ``v``, reading its own metadata at ``info[EPI + ...]`` (``EPI``: the first word
    after the matmul's); ``out_type``: the element type of binding 1 (the first output);
    ``bindings``: the access of bindings 4..; ``name``: a label suffix."""

    source: str
    out_type: str
    bindings: tuple[str, ...]
    name: str


# the register-blocked tile shapes the autotuner tries (all within WebGPU's 256 invocations and 16 KiB)
BLOCKS: tuple[Block, ...] = (
    Block(64, 64, 16, 4, 4),
    Block(128, 128, 8, 8, 8),
    Block(128, 128, 16, 8, 8),
    Block(128, 64, 16, 8, 4),
    Block(64, 128, 16, 4, 8),
    Block(32, 64, 16, 4, 4),
    Block(32, 32, 16, 4, 4),  # 64 invocations: many workgroups for mid-size outputs (1024^2)
)
# how an operand tile is loaded: vec4 or scalar along the named dim (that dim has stride 1 for the
# vec4 modes, and the loop runs fastest along it for the scalar ones)
A_MODES = ("k4", "m4", "k1", "m1")
B_MODES = ("n4", "k4", "n1", "k1")


def _load_lines(
    tile: str, src: str, mode: str, rows: int, bk: int, threads: int, acc: str, bound: str
) -> list[str]:
    """Loads of one operand tile (``rows`` x ``bk``, k-major vec4 rows in ``tile``) from ``src``.

    ``mode`` names the dim read as vec4 ("?4") or fastest ("?1"); "m"/"n" is the tile's row dim,
    ``bound`` its size (M or N). The caller defines ``o_`` (batch offset), ``s_r``/``s_k`` (strides)
    and ``r0`` for the operand."""
    along_k = mode[0] == "k"
    vec = mode[1] == "4"
    units = rows * bk // (4 if vec else 1)
    steps = -(-units // threads)
    q = rows // 4
    lines = [f"        for (var l = 0u; l < {steps}u; l++) {{", f"            let e = tid + l * {threads}u;"]
    if units % threads:
        lines.append(f"            if (e >= {units}u) {{ break; }}")
    if vec and along_k:  # 4 consecutive k of one row: 4 component writes
        lines += [
            f"            let r = e / {bk // 4}u;",
            f"            let kk = (e % {bk // 4}u) * 4u;",
            f"            var v = vec4<{acc}>(0);",
            f"            if (r0 + r < {bound} && k0 + kk < kend) {{",
            f"                v = vec4<{acc}>({src}[(o_ + (r0 + r) * s_r + k0 + kk) / 4u]);",
            "            }",
        ]
        lines += [f"            {tile}[(kk + {c}u) * {q}u + r / 4u][r % 4u] = v[{c}];" for c in range(4)]
    elif vec:  # 4 consecutive rows at one k: one vec4 write
        lines += [
            f"            let kk = e / {q}u;",
            f"            let r = (e % {q}u) * 4u;",
            f"            var v = vec4<{acc}>(0);",
            f"            if (r0 + r < {bound} && k0 + kk < kend) {{",
            f"                v = vec4<{acc}>({src}[(o_ + r0 + r + (k0 + kk) * s_k) / 4u]);",
            "            }",
            f"            {tile}[kk * {q}u + r / 4u] = v;",
        ]
    else:
        if along_k:
            lines += [f"            let r = e / {bk}u;", f"            let kk = e % {bk}u;"]
        else:
            lines += [f"            let kk = e / {rows}u;", f"            let r = e % {rows}u;"]
        lines += [
            f"            var v = {acc}(0);",
            f"            if (r0 + r < {bound} && k0 + kk < kend) {{",
            f"                v = {acc}({src}[o_ + (r0 + r) * s_r + (k0 + kk) * s_k]);",
            "            }",
            f"            {tile}[kk * {q}u + r / 4u][r % 4u] = v;",
        ]
    lines.append("        }")
    return _named(lines, src)


def _named(lines: list[str], src: str) -> list[str]:
    """Load lines written for any operand (``o_``, ``s_r``, ``s_k``, ``r0``) for operand ``src``."""
    return [
        line.replace("o_", f"o_{src}")
        .replace("s_r", f"{src}_sr")
        .replace("s_k", f"{src}_sk")
        .replace("r0", f"{src}_r0")
        for line in lines
    ]


def _prefetch_lines(
    tile: str, src: str, mode: str, rows: int, bk: int, threads: int, acc: str, bound: str
) -> tuple[list[str], Callable[[str], list[str]], list[str]]:
    """The loads of ``_load_lines`` split in two for register prefetching: (declarations of one
    register per load, ``fetch(kb)``: global loads of the tile at K offset ``kb`` into the
    registers, ``store``: the registers into the workgroup tile). Unrolled over the loads."""
    along_k = mode[0] == "k"
    vec = mode[1] == "4"
    units = rows * bk // (4 if vec else 1)
    steps = -(-units // threads)
    q = rows // 4
    reg_t = f"vec4<{acc}>" if vec else acc
    if vec and along_k:
        index = [f"let r = e / {bk // 4}u;", f"let kk = (e % {bk // 4}u) * 4u;"]
        load = f"vec4<{acc}>({src}[(o_ + (r0 + r) * s_r + KB + kk) / 4u])"
    elif vec:
        index = [f"let kk = e / {q}u;", f"let r = (e % {q}u) * 4u;"]
        load = f"vec4<{acc}>({src}[(o_ + r0 + r + (KB + kk) * s_k) / 4u])"
    else:
        index = (
            [f"let r = e / {bk}u;", f"let kk = e % {bk}u;"]
            if along_k
            else [f"let kk = e / {rows}u;", f"let r = e % {rows}u;"]
        )
        load = f"{acc}({src}[o_ + (r0 + r) * s_r + (KB + kk) * s_k])"
    if vec and along_k:
        put = [f"{tile}[(kk + {c}u) * {q}u + r / 4u][r % 4u] = REG[{c}];" for c in range(4)]
    elif vec:
        put = [f"{tile}[kk * {q}u + r / 4u] = REG;"]
    else:
        put = [f"{tile}[kk * {q}u + r / 4u][r % 4u] = REG;"]

    def block(l: int, body: list[str]) -> list[str]:
        inner = [f"let e = tid + {l * threads}u;", *index, *body]
        if units % threads and (l + 1) * threads > units:
            inner = [f"let e = tid + {l * threads}u;", f"if (e < {units}u) {{", *index, *body, "}"]
        return ["        {", *(f"            {line}" for line in inner), "        }"]

    decls = [f"    var p{src}{l} = {reg_t}(0);" for l in range(steps)]

    def fetch(kb: str) -> list[str]:
        out = []
        for l in range(steps):
            reg = f"p{src}{l}"
            body = [
                f"{reg} = {reg_t}(0);",
                f"if (r0 + r < {bound} && {kb} + kk < kend) {{ {reg} = {load.replace('KB', f'({kb})')}; }}",
            ]
            out += block(l, body)
        return _named(out, src)

    store = []
    for l in range(steps):
        store += block(l, [line.replace("REG", f"p{src}{l}") for line in put])
    return decls, fetch, _named(store, src)


def _blocked_prelude(nb: int, blk: Block) -> str:
    """The metadata reads of ``render_blocked`` and ``render_pairs`` (the layout of the former's
    docstring): sizes, this workgroup's K slice and batch offsets, strides, tile origins, ``tid``."""
    return f"""    let M = info[0];
    let N = info[1];
    let K = info[2];
    let kchunk = info[10];
    let count = info[11];
    let s = wid.z / count;
    let bz = wid.z % count + info[3];
    let kbeg = s * kchunk;
    let kend = min(K, kbeg + kchunk);
    var rem = bz;
    var o_a = info[4];
    var o_b = info[5];
{batch_lines(nb, 12, "o_a", "o_b")}
    let a_sr = info[6];
    let a_sk = info[7];
    let b_sk = info[8];
    let b_sr = info[9];
    let a_r0 = wid.y * {blk.bm}u;
    let b_r0 = wid.x * {blk.bn}u;
    let tid = lid.y * {blk.tx}u + lid.x;"""


@lru_cache(maxsize=512)
def render_blocked(
    dtype: DType,
    nb: int,
    block: Block,
    a_mode: str = "k1",
    b_mode: str = "n1",
    out_vec: bool = False,
    acc16: bool = False,
    partial: bool = False,
    b_loads: tuple[str, ...] = (),
    prologue: tuple[str, ...] = (),
    label: str = "",
    prefetch: bool = False,
    epilogue: Epilogue | None = None,
) -> Kernel:
    """A register-blocked matmul kernel (see the module docstring).

    Metadata: M, N, K, batch base, a_off, b_off, a_sm, a_sk, b_sk, b_sn, kchunk, count, batch
    shape[nb], a batch strides[nb], b batch strides[nb]. ``wid.z`` runs over ``count`` batch entries
    per K slice: slice ``s = wid.z / count`` covers K in ``[s * kchunk, (s + 1) * kchunk)``; its
    results go to ``out[(s * count + b) * M * N ...]``. ``acc16``: f16 workgroup tiles, and f16
    accumulators within each K step (``bk`` products, at twice the f32 FMA rate), added into f32
    accumulators after it: float16 only; the result's error stays near float16 rounding however long
    K is (a whole-K f16 sum would round every partial sum); ``partial``: float32 output (split-K partials). ``b_loads`` replaces
    the B tile loads (``b_mode`` then only names the binding's element type) and ``prologue`` adds
    lines after the metadata reads: how ``_kernels.conv`` builds implicit-GEMM convolution.
    ``prefetch``: the next K step's global loads go to registers while the current step computes
    (stored to workgroup memory after the barrier), hiding their latency behind the FMAs.
    ``epilogue``: each output element goes through ``epilogue.source``'s function instead of being
    stored (scalar stores; not with ``partial`` or ``acc16``)."""
    blk = block
    if epilogue is not None and (partial or acc16):
        raise ValueError("matmul kernel: an epilogue needs whole-K float32 accumulators")
    if blk.tm % 4 or blk.tn % 4 or blk.bm % blk.tm or blk.bn % blk.tn or blk.bk % 4:
        raise ValueError(f"matmul kernel: {blk} is not a register-blocked tile of vec4 groups")
    if a_mode not in A_MODES or b_mode not in B_MODES:
        raise ValueError(f"matmul kernel: modes {a_mode!r}/{b_mode!r} (expected {A_MODES} / {B_MODES})")
    if prefetch and b_loads:
        raise ValueError("matmul kernel: prefetching needs the standard B loads")
    if acc16 and dtype is not float16:
        raise ValueError("matmul kernel: f16 accumulation is for float16 operands only")
    t = WGSL[dtype]
    acc = "f16" if acc16 else compute_type(dtype)
    total = "f32" if acc16 else acc  # the accumulators across K steps
    out_t = "f32" if partial else t
    f16 = dtype is float16 or acc16
    tx, ty, threads = blk.tx, blk.ty, blk.threads
    mq, nq = blk.bm // 4, blk.bn // 4
    vi = range(blk.tm // 4)  # vec4 row groups of an invocation
    vj = range(blk.tn // 4)  # vec4 column groups
    accs = [(4 * i + ii, j) for i in vi for ii in range(4) for j in vj]
    zero = "\n".join(f"    var c{r}_{j} = vec4<{total}>(0);" for r, j in accs)
    regs = "\n".join(
        [f"            let x{i} = As[kk * {mq}u + lid.y + {i * ty}u];" for i in vi]
        + [f"            let y{j} = Bs[kk * {nq}u + lid.x + {j * tx}u];" for j in vj]
    )
    step = "h" if acc16 else "c"  # acc16: a K step accumulates in h, then adds h into c
    fma = "\n".join(f"            {step}{r}_{j} += x{r // 4}[{r % 4}] * y{j};" for r, j in accs)
    step_zero = "\n".join(f"        var h{r}_{j} = vec4<f16>(0);" for r, j in accs) if acc16 else ""
    step_add = "\n".join(f"        c{r}_{j} += vec4<f32>(h{r}_{j});" for r, j in accs) if acc16 else ""
    a_loads = _load_lines("As", "a", a_mode, blk.bm, blk.bk, threads, acc, "M")
    b_lines = list(b_loads) or _load_lines("Bs", "b", b_mode, blk.bn, blk.bk, threads, acc, "N")
    stores = []
    for i in vi:
        for ii in range(4):
            r = 4 * i + ii
            stores.append(f"    let row{r} = a_r0 + (lid.y + {i * ty}u) * 4u + {ii}u;")
    for j in vj:
        stores.append(f"    let col{j} = b_r0 + (lid.x + {j * tx}u) * 4u;")
    for r, j in accs:
        if epilogue is not None:
            stores += [
                f"    if (row{r} < M && col{j} + {cc}u < N) "
                f"{{ epilogue(ob + row{r} * N + col{j} + {cc}u, c{r}_{j}[{cc}]); }}"
                for cc in range(4)
            ]
        elif out_vec:
            value = f"vec4<{out_t}>(c{r}_{j})"
            stores.append(
                f"    if (row{r} < M && col{j} < N) {{ out[(ob + row{r} * N + col{j}) / 4u] = {value}; }}"
            )
        else:
            for cc in range(4):
                stores.append(
                    f"    if (row{r} < M && col{j} + {cc}u < N) "
                    f"{{ out[ob + row{r} * N + col{j} + {cc}u] = {out_t}(c{r}_{j}[{cc}]); }}"
                )
    if prefetch:
        da, fa, sa = _prefetch_lines("As", "a", a_mode, blk.bm, blk.bk, threads, acc, "M")
        db, fb, sb = _prefetch_lines("Bs", "b", b_mode, blk.bn, blk.bk, threads, acc, "N")
        nxt = f"k0 + {blk.bk}u"
        main_loop = "\n".join(
            [*da, *db, *fa("kbeg"), *fb("kbeg"), f"    for (var k0 = kbeg; k0 < kend; k0 += {blk.bk}u) {{"]
            + [*sa, *sb, "        workgroupBarrier();", *fa(nxt), *fb(nxt)]
        )
    else:
        main_loop = "\n".join(
            [f"    for (var k0 = kbeg; k0 < kend; k0 += {blk.bk}u) {{", *a_loads, *b_lines]
            + ["        workgroupBarrier();"]
        )
    out_elem = f"vec4<{out_t}>" if out_vec else out_t
    tail = ""
    if epilogue is not None:
        out_elem = epilogue.out_type
        tail = f"const EPI: u32 = {12 + 3 * nb}u;\n{epilogue.source}\n"
    a_elem = f"vec4<{t}>" if a_mode[1] == "4" else t
    b_elem = f"vec4<{t}>" if b_mode[1] == "4" else t
    src = f"""{"enable f16;" if f16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{out_elem}>;
@group(0) @binding(2) var<storage, read> a: array<{a_elem}>;
@group(0) @binding(3) var<storage, read> b: array<{b_elem}>;
var<workgroup> As: array<vec4<{acc}>, {blk.bk * mq}>;
var<workgroup> Bs: array<vec4<{acc}>, {blk.bk * nq}>;

@compute @workgroup_size({tx}, {ty})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {{
{_blocked_prelude(nb, blk)}
{"".join(line + chr(10) for line in prologue)}{zero}
{main_loop}
{step_zero}{chr(10) if acc16 else ""}        for (var kk = 0u; kk < {blk.bk}u; kk++) {{
{regs}
{fma}
        }}
{step_add}{chr(10) if acc16 else ""}        workgroupBarrier();
    }}
    let ob = (s * count + bz) * M * N;
{chr(10).join(stores)}
}}
{tail}"""
    flags = f"{a_mode}{b_mode}{'v' if out_vec else ''}{'h' if acc16 else ''}{'p' if partial else ''}"
    flags += "f" if prefetch else ""
    bindings: tuple[str, ...] = ("rw", "read", "read")
    name = f"{label or 'matmul'}_{dtype.name}_{nb}b_{blk.name}_{flags}"
    if epilogue is not None:
        bindings += epilogue.bindings
        name += f"_{epilogue.name}"
    return Kernel(name, src, bindings)


@lru_cache(maxsize=16)
def render_split_sum(dtype: DType) -> Kernel:
    """Adds split-K partials: ``out[i] = sum_s part[s * n + i]`` for i < n. Metadata: n, splits."""
    store = "f16(v)" if dtype is float16 else "v"
    src = f"""{"enable f16;" if dtype is float16 else ""}
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<{WGSL[dtype]}>;
@group(0) @binding(2) var<storage, read> part: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let i = gid.x + gid.y * (nwg.x * 256u);
    let n = info[0];
    if (i >= n) {{ return; }}
    var v = 0.0;
    for (var s = 0u; s < info[1]; s++) {{ v += part[s * n + i]; }}
    out[i] = {store};
}}
"""
    return Kernel(f"matmul_split_sum_{dtype.name}", src, ("rw", "read"))
