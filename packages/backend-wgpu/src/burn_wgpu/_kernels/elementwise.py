"""Element-wise kernels generated from ONE expression table.

Every unary, binary, ternary (where), cast, fill and strided-copy kernel is rendered by ``render``
from an expression over operands ``a``, ``b``, ``c``. An entry maps a dtype class to a WGSL
expression: ``"f"`` (floats, computed in f32), ``"i"`` (i32), ``"u"`` (u32), ``"b"`` (bool, stored as
u32; falls back to ``"u"``) and ``"*"`` (any). Expressions whose result is a WGSL ``bool`` (the ops
whose vocabulary row says ``bool_result``: comparisons, isnan, isinf) are stored as 0/1. Helpers (``b_log``, ``is_nan``, ...) are pulled in by name.
The narrow ints (int8, uint8, int16) compute in their class's 32-bit type and every store wraps the
value into the dtype (``_dtypes.wrap``); a cast from a float into one goes through ``NARROW_FROM_F``.

Indexing: the output and each tensor operand carry strides and an offset in the metadata (broadcast
dims have stride 0), so broadcasting, permuted and sliced inputs, and writes into a strided output
region (slice_assign, cat) all use one kernel shape. When every operand is dense the ``contig``
variant skips the index arithmetic.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TypeVar

from burn import DType, bool_, float16
from burn.backend import op_def

from .._dtypes import CLASS, NARROW, WGSL, scalar_load, wrap
from .._executor import Kernel
from ._helpers import HELPERS, render_helpers

WG = 256  # workgroup size of every element-wise kernel
_E = TypeVar("_E")  # a table entry: an expression here, (init, combine) in the reduce table

UNARY: dict[str, dict[str, str]] = {
    "neg": {"f": "-a", "i": "-a", "u": "(0u - a)"},
    "abs": {"f": "abs(a)", "i": "abs(a)", "u": "a"},
    "sign": {"f": "b_sign(a)", "i": "sign(a)", "u": "select(0u, 1u, a > 0u)"},
    "square": {"*": "a * a"},
    "exp": {"f": "exp(a)"},
    "expm1": {"f": "b_expm1(a)"},
    "log": {"f": "b_log(a)"},
    "log1p": {"f": "b_log1p(a)"},
    "sqrt": {"f": "b_sqrt(a)"},
    "rsqrt": {"f": "1.0 / b_sqrt(a)"},
    "sin": {"f": "b_sin(a)"},
    "cos": {"f": "b_cos(a)"},
    "tan": {"f": "b_tan(a)"},
    "asin": {"f": "b_asin(a)"},
    "acos": {"f": "b_acos(a)"},
    "atan": {"f": "b_atan(a)"},
    "sinh": {"f": "sinh(a)"},
    "cosh": {"f": "cosh(a)"},
    "tanh": {"f": "b_tanh(a)"},
    "erf": {"f": "b_erf(a)"},
    "floor": {"f": "floor(a)"},
    "ceil": {"f": "ceil(a)"},
    "round": {"f": "round(a)"},  # WGSL rounds half to even, as NumPy
    "trunc": {"f": "trunc(a)"},
    "reciprocal": {"f": "1.0 / a"},
    "isnan": {"f": "is_nan(a)"},
    "isinf": {"f": "is_inf(a)"},
    "not": {"b": "(1u - a)", "i": "~a", "u": "~a"},
    "relu": {"f": "select(max(a, 0.0), a, is_nan(a))", "i": "max(a, 0)", "u": "a"},
    "sigmoid": {"f": "0.5 * (1.0 + b_tanh(0.5 * a))"},
    "gelu": {"f": "0.5 * a * (1.0 + b_erf(a * 0.7071067811865476))"},
    "gelu_tanh": {"f": "0.5 * a * (1.0 + b_tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)))"},
    "silu": {"f": "a * (0.5 * (1.0 + b_tanh(0.5 * a)))"},
    "softplus": {"f": "b_softplus(a)"},
    "mish": {"f": "a * b_tanh(b_softplus(a))"},
    "hard_sigmoid": {"f": "b_min(b_max(a / 6.0 + 0.5, 0.0), 1.0)"},
}

BINARY: dict[str, dict[str, str]] = {
    "add": {"*": "a + b"},
    "sub": {"*": "a - b"},
    "mul": {"*": "a * b"},
    "div": {"f": "a / b", "i": "b_div_i(a, b)", "u": "b_div_u(a, b)"},
    "floor_div": {"f": "b_floordiv_f(a, b)", "i": "b_floordiv_i(a, b)", "u": "b_div_u(a, b)"},
    "remainder": {"f": "b_rem_f(a, b)", "i": "b_rem_i(a, b)", "u": "b_rem_u(a, b)"},
    "fmod": {"f": "b_fmod(a, b)", "i": "b_fmod_i(a, b)", "u": "b_rem_u(a, b)"},
    "pow": {"f": "b_pow_f(a, b)", "i": "b_pow_i(a, b)", "u": "b_pow_u(a, b)"},
    "maximum": {"f": "b_max(a, b)", "*": "max(a, b)"},
    "minimum": {"f": "b_min(a, b)", "*": "min(a, b)"},
    "atan2": {"f": "b_atan2(a, b)"},
    "eq": {"*": "a == b"},
    "ne": {"*": "!(a == b)"},  # true for NaN, as IEEE and NumPy
    "lt": {"*": "a < b"},
    "le": {"*": "a <= b"},
    "gt": {"*": "a > b"},
    "ge": {"*": "a >= b"},
    "and": {"i": "a & b", "u": "a & b"},  # bool: "b" falls back to "u"
    "or": {"i": "a | b", "u": "a | b"},
    "xor": {"i": "a ^ b", "u": "a ^ b"},
}

TERNARY: dict[str, dict[str, str]] = {
    "where": {"*": "select(c, b, a != 0u)"},  # a: the bool condition
    "clamp": {"f": "b_min(b_max(a, b), c)", "*": "min(max(a, b), c)"},
}

# (source class, target dtype) -> conversion of ``a`` (already in its compute type)
CAST: dict[tuple[str, str], str] = {
    ("f", "f"): "a",
    ("i", "f"): "f32(a)",
    ("u", "f"): "f32(a)",
    ("b", "f"): "f32(a)",
    ("f", "i"): "i32(trunc(a))",
    ("i", "i"): "a",
    ("u", "i"): "bitcast<i32>(a)",
    ("b", "i"): "i32(a)",
    ("f", "u"): "b_f2u(trunc(a))",
    ("i", "u"): "bitcast<u32>(a)",
    ("u", "u"): "a",
    ("b", "u"): "a",
    ("f", "b"): "select(0u, 1u, a != 0.0)",
    ("i", "b"): "select(0u, 1u, a != 0)",
    ("u", "b"): "select(0u, 1u, a != 0u)",
    ("b", "b"): "a",
}

# a float into a narrow int (then wrapped on store): truncated, 0 outside int32's range and for NaN
NARROW_FROM_F = {"i": "b_f2iw(a)", "u": "bitcast<u32>(b_f2iw(a))"}

# 64-bit classes ("l" i64, "d" f64): entries exact in 64 bits. An op of class "l" without one uses its
# "i" entry (type-generic there); an op of class "d" without one, but with an "f" entry (the
# transcendental functions: Vulkan's extended instructions are 32-bit only), runs on the host
# (``runs_on_host``)
WIDE_ENTRIES: dict[str, dict[str, dict[str, str]]] = {
    "unary": {
        "neg": {"d": "-a"},
        "abs": {"d": "abs(a)"},
        "sign": {
            "d": "select(sign(a), a, is_nan_d(a))",
            "l": "select(select(0li, 1li, a > 0li), -1li, a < 0li)",
        },
        "floor": {"d": "floor(a)"},
        "ceil": {"d": "ceil(a)"},
        "round": {"d": "b_round_d(a)"},
        "trunc": {"d": "b_trunc_d(a)"},
        "sqrt": {"d": "b_sqrt_d(a)"},
        "rsqrt": {"d": "1.0 / b_sqrt_d(a)"},
        "reciprocal": {"d": "1.0 / a"},
        "isnan": {"d": "is_nan_d(a)"},
        "isinf": {"d": "is_inf_d(a)"},
        "relu": {"d": "select(max(a, 0.0), a, is_nan_d(a))"},
        "hard_sigmoid": {"d": "b_min_d(b_max_d(a / 6.0 + 0.5, 0.0), 1.0)"},
    },
    "binary": {
        "div": {"d": "a / b", "l": "b_div_l(a, b)"},
        "floor_div": {"d": "b_floordiv_d(a, b)", "l": "b_floordiv_l(a, b)"},
        "remainder": {"d": "b_rem_d(a, b)", "l": "b_rem_l(a, b)"},
        "fmod": {"d": "b_fmod_d(a, b)", "l": "b_fmod_l(a, b)"},
        "pow": {"l": "b_pow_l(a, b)"},
        "maximum": {"d": "b_max_d(a, b)"},
        "minimum": {"d": "b_min_d(a, b)"},
    },
    "ternary": {"clamp": {"d": "b_min_d(b_max_d(a, b), c)"}},
}
# (source class, target class) -> conversion where either side is 64-bit ("{t}": the target type)
WIDE_CAST: dict[tuple[str, str], str] = {
    **{(c, "d"): "f64(a)" for c in "fiubld"},
    **{(c, "l"): "i64(a)" for c in "iubl"},
    ("f", "l"): "b_f2l(f64(a))",
    ("d", "l"): "b_f2l(a)",
    ("d", "f"): "f32(a)",
    ("d", "i"): "i32(b_f2l(a))",
    ("d", "u"): "u32(b_f2l(a))",
    ("d", "b"): "select(0u, 1u, a != 0.0)",
    ("l", "f"): "f32(a)",
    ("l", "i"): "i32(a)",
    ("l", "u"): "u32(a)",
    ("l", "b"): "select(0u, 1u, a != 0li)",
}

_HELPER_RE = re.compile(r"\b(" + "|".join(sorted(HELPERS, key=len, reverse=True)) + r")\(")


def dclass(dtype: DType) -> str:
    return "b" if dtype is bool_ else CLASS[dtype]


def compute_type(dtype: DType) -> str:
    return {"f": "f32", "i": "i32", "u": "u32", "b": "u32", "l": "i64", "d": "f64"}[dclass(dtype)]


_FALLBACK = {"b": "u", "l": "i", "d": "f"}  # a class without its own entry uses this one's


def lookup(table: dict[str, dict[str, _E]], op: str, cls: str) -> _E | None:
    """The entry of ``op`` for dtype class ``cls``: its own, then its fallback class's (bool uses
    ``"u"``, i64 ``"i"``, f64 ``"f"``), then ``"*"``."""
    entry = table[op]
    for key in (cls, _FALLBACK.get(cls, cls), "*"):
        if key in entry:
            return entry[key]
    return None


def runs_on_host(kind: str, op: str, dtype: DType) -> bool:
    """Whether ``op`` on float64 runs on the host: its table entry is f32-only (exp, log, sin, tanh,
    erf, pow, ...: Vulkan has no 64-bit transcendental instructions, and an f32 result would lose
    float64's precision), and no f64 entry replaces it."""
    if kind not in ("unary", "binary") or dclass(dtype) != "d":
        return False
    entry = {"unary": UNARY, "binary": BINARY, "ternary": TERNARY}[kind].get(op, {})
    return "d" not in WIDE_ENTRIES[kind].get(op, {}) and "f" in entry


def _wide_expression(kind: str, op: str, cls: str, out: DType | None) -> tuple[str, bool]:
    if kind == "cast":
        assert out is not None, "a cast names its output dtype"
        target = dclass(out)
        if cls == "d" and out in NARROW:
            return ("i32(b_f2l(a))" if target == "i" else "bitcast<u32>(i32(b_f2l(a)))"), False
        if cls == target:
            return "a", False
        return WIDE_CAST[(cls, target)], False
    table = {"unary": UNARY, "binary": BINARY, "ternary": TERNARY}[kind]
    if op not in table:
        raise TypeError(f"{op}: not defined on the wgpu backend")
    bool_result = op_def(op).bool_result
    wide = WIDE_ENTRIES.get(kind, {}).get(op, {})
    if cls in wide:
        return wide[cls], bool_result
    entry = table[op]
    if cls == "l" and ("i" in entry or "*" in entry):
        return entry.get("i", entry.get("*", "")), bool_result
    if "*" in entry:
        return entry["*"], bool_result
    name = {"l": "int64", "d": "float64"}[cls]
    raise TypeError(f"{op}: not defined for dtype {name} on the wgpu backend")


def expression(kind: str, op: str, dtype: DType, out: DType | None = None) -> tuple[str, bool]:
    """(WGSL expression, result-is-bool) for ``op`` on operands of ``dtype``; ``kind`` picks the
    table (``"unary"``, ``"binary"``, ``"ternary"``, ``"cast"``, ``"copy"``)."""
    cls = dclass(dtype)
    if kind == "copy":
        return "a", False
    if cls in "ld" or (kind == "cast" and out is not None and dclass(out) in "ld"):
        return _wide_expression(kind, op, cls, out)
    if kind == "cast":
        assert out is not None, "a cast names its output dtype"
        if cls == "f" and out in NARROW:
            return NARROW_FROM_F[dclass(out)], False
        return CAST[(cls, dclass(out))], False
    table = {"unary": UNARY, "binary": BINARY, "ternary": TERNARY}[kind]
    expr = lookup(table, op, cls)
    if expr is None:
        raise TypeError(f"{op}: not defined for dtype {dtype.name} on the wgpu backend")
    return expr, op_def(op).bool_result


def _stored(expr: str, bool_result: bool, out: DType) -> str:
    """The value an element-wise kernel stores: a WGSL bool as 0/1, f16 converted, a narrow int
    wrapped into its range."""
    if bool_result:
        return f"select(0u, 1u, ({expr}))"
    if out is float16:
        return f"f16(({expr}))"
    return wrap(out, f"({expr})")


@lru_cache(maxsize=4096)
def render(
    expr: str,
    bool_result: bool,
    out: DType,
    operands: tuple[tuple[DType, bool], ...],
    nd: int,
    contig: bool,
) -> Kernel:
    """One element-wise kernel. ``operands``: (dtype, is_tensor) for a, b, c; scalars come from the
    metadata. Metadata: numel, shape[nd], then (strides[nd], offset) for the output and each tensor
    operand, then the scalars."""
    tensors = [i for i, (_, is_t) in enumerate(operands) if is_t]
    lines = []
    uses_f16 = out is float16 or any(dt is float16 for dt, _ in operands)
    if uses_f16:
        lines.append("enable f16;")
    lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    lines.append(f"@group(0) @binding(1) var<storage, read_write> out: array<{WGSL[out]}>;")
    for k, i in enumerate(tensors):
        lines.append(f"@group(0) @binding({k + 2}) var<storage, read> in{i}: array<{WGSL[operands[i][0]]}>;")
    helpers = tuple(dict.fromkeys(_HELPER_RE.findall(expr)))
    if "b_f2u" in expr:
        helpers += ("b_f2u",)
    if any(dt is float16 and not is_t for dt, is_t in operands):
        helpers += ("b_round_f16",)
    if helpers:
        lines.append(render_helpers(helpers))
    body = [
        f"let i = gid.x + gid.y * (nwg.x * {WG}u);",
        "if (i >= info[0]) { return; }",
    ]
    base = 1 + nd  # first (strides, offset) block
    block = nd + 1
    slots = {"out": base, **{f"in{i}": base + block * (k + 1) for k, i in enumerate(tensors)}}
    names = ["out", *(f"in{i}" for i in tensors)]
    if contig:
        for name in names:
            body.append(f"let o_{name} = i + info[{slots[name] + nd}u];")
    else:
        body.append("var r = i;")
        for name in names:
            body.append(f"var o_{name} = info[{slots[name] + nd}u];")
        for d in range(nd - 1, -1, -1):
            body.append(f"let c{d} = r % info[{1 + d}u];")
            if d:
                body.append(f"r = r / info[{1 + d}u];")
            for name in names:
                body.append(f"o_{name} += c{d} * info[{slots[name] + d}u];")
    scalar_at = base + block * (len(tensors) + 1)
    for i, (dt, is_t) in enumerate(operands):
        var = "abc"[i]
        raw = f"in{i}[o_in{i}]" if is_t else scalar_load(dt, f"info[{scalar_at}u]")
        if dt is float16:  # a half scalar travels as f32: rounded to half with integer arithmetic, as
            # NVIDIA's driver folds f32(f16(x)) away (the fused kernels round alike)
            raw = f"f32({raw})" if is_t else f"b_round_f16(bitcast<f32>(info[{scalar_at}u]))"
        if not is_t:
            scalar_at += 1
        body.append(f"let {var} = {raw};")
    body.append(f"out[o_out] = {_stored(expr, bool_result, out)};")
    lines.append(
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        + "\n".join(f"    {line}" for line in body)
        + "\n}"
    )
    label = f"ew_{out.name}_{nd}d_{'contig' if contig else 'strided'}"
    return Kernel(label, "\n".join(lines) + "\n", ("rw",) + ("read",) * len(tensors))


VEC4_DTYPES = frozenset({"f32", "i32", "u32"})  # 4-byte storage: a vec4 is 16 aligned bytes


@lru_cache(maxsize=1024)
def render_vec4(expr: str, bool_result: bool, out: DType, operands: tuple[tuple[DType, bool], ...]) -> Kernel:
    """The ``contig`` kernel four elements per invocation: every tensor is dense, of one shape, with
    numel and offsets multiples of 4 (the launcher checks), so each is read and written as
    ``vec4``. The table's scalar expression runs per component (helpers take scalars). Metadata:
    numel / 4, then each tensor's offset / 4 (output first), then the scalars."""
    tensors = [i for i, (_, is_t) in enumerate(operands) if is_t]
    lines = [
        "@group(0) @binding(0) var<storage, read> info: array<u32>;",
        f"@group(0) @binding(1) var<storage, read_write> out: array<vec4<{WGSL[out]}>>;",
    ]
    for k, i in enumerate(tensors):
        lines.append(
            f"@group(0) @binding({k + 2}) var<storage, read> in{i}: array<vec4<{WGSL[operands[i][0]]}>>;"
        )
    helpers = tuple(dict.fromkeys(_HELPER_RE.findall(expr)))
    if "b_f2u" in expr:
        helpers += ("b_f2u",)
    if helpers:
        lines.append(render_helpers(helpers))
    body = [
        f"let i = gid.x + gid.y * (nwg.x * {WG}u);",
        "if (i >= info[0]) { return; }",
    ]
    for k, i in enumerate(tensors):
        body.append(f"let v{i} = in{i}[i + info[{2 + k}u]];")
    scalar_at = 2 + len(tensors)
    for i, (dt, is_t) in enumerate(operands):
        if not is_t:
            body.append(f"let {'abc'[i]} = {scalar_load(dt, f'info[{scalar_at}u]')};")
            scalar_at += 1
    body.append(f"var r: vec4<{WGSL[out]}>;")
    for c in range(4):
        comp = [f"let {'abc'[i]} = v{i}[{c}];" for i in tensors]
        body.append("{ " + " ".join(comp) + f" r[{c}] = {_stored(expr, bool_result, out)}; }}")
    body.append("out[i + info[1u]] = r;")
    lines.append(
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        + "\n".join(f"    {line}" for line in body)
        + "\n}"
    )
    return Kernel(f"ew_{out.name}_vec4", "\n".join(lines) + "\n", ("rw",) + ("read",) * len(tensors))


def grid(n: int, per_group: int = WG, max_dim: int = 65535) -> tuple[int, int, int]:
    """Workgroups for ``n`` threads: a 2-d grid when one dimension is not enough."""
    groups = max(1, -(-n // per_group))
    x = min(groups, max_dim)
    return x, -(-groups // x), 1
