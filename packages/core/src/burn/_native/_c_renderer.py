"""C for fused cpu kernels: burn.fusion's kernel skeletons (``burn.fusion.skeleton``) spelled in C11, the
third renderer of the same plans next to WGSL (burn-wgpu) and CUDA C (burn-cuda).

Each op is one row of ``FLOAT_EXPR`` evaluated in its own block with ``C`` the op's compute type
(``float`` or ``double``, math through ``<tgmath.h>``, so ``exp`` is ``expf`` on floats), written
as numpy's own kernels compute it (the tanh form of sigmoid, numpy's ``npy_divmod`` for floor division,
NaN propagating through maximum, minimum, relu and clamp), so a fused chain computes what the unfused
numpy ops compute within float32 rounding. Bools are bytes of 0 or 1, as numpy stores them.

One kernel template, ``elementwise``: nested loops over a collapsed iteration of rank ``nd``, each
tensor's offset carried down the loops; the innermost loop is specialised per tensor for a dense
(stride 1), broadcast (stride 0) or strided innermost dim, so dense chains vectorise. The loops live
in ``burn_body``, over a range of the outermost dim; ``burn_kernel`` calls it on the whole range, or
block by block on OpenMP threads once the iteration is large. The kernel's C signature::

    void burn_kernel(const int64_t* shape, const int64_t* strides, void* const* tensors, const double* scalars)

``tensors``: the outputs, then the inputs; ``strides``: in elements, ``nd`` per tensor in that order.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _dtype as D
from ..fusion import Apply, FusedOp, Load, Renderer, ScalarLoad, Skeleton, Store
from ._toolchain import MVEC_DECLARATIONS

# elements from which a kernel's loop runs on OpenMP threads: below it, waking the threads costs more
# than they save next to numpy's BLAS threads (an MLP training step on two shared cores ran 1.2x slower
# at 2^17); a (1024, 1024) chain still gains from them
PARALLEL_MIN = 1 << 20
# blocks the outermost dim is split into for the threads (a few per core, so uneven ones even out)
PARALLEL_BLOCKS = 256
# the loops live in a function of their own, called on a range of the outermost dim: by the kernel
# itself, or by OpenMP's threads block by block. Loops written inside an OpenMP region read the
# tensors' pointers and bounds through the region's shared data and do not vectorise (GCC 12: a float
# clamp of 10^5 elements ran 5x slower than this way, even where the region's ``if`` kept one thread)
_BODY = "static __attribute__((noinline)) void burn_body"
FLOATS = frozenset({D.float32, D.float64})
# the C type of each dtype in memory (and in registers: no dtype here is widened to compute)
C_TYPE = {
    D.float32: "float",
    D.float64: "double",
    D.int8: "int8_t",
    D.uint8: "uint8_t",
    D.int16: "int16_t",
    D.int32: "int32_t",
    D.uint32: "uint32_t",
    D.int64: "int64_t",
    D.bool_: "uint8_t",
}

# float ops over operands a, b, c of compute type C
FLOAT_EXPR = {
    "unary": {
        "neg": "-a",
        "abs": "fabs(a)",
        "sign": "a != a ? a : (C)((a > (C)0) - (a < (C)0))",
        "square": "a * a",
        "exp": "exp(a)",
        "expm1": "expm1(a)",
        "log": "log(a)",
        "log1p": "log1p(a)",
        "sqrt": "sqrt(a)",
        "rsqrt": "(C)1 / sqrt(a)",
        "sin": "sin(a)",
        "cos": "cos(a)",
        "tan": "tan(a)",
        "asin": "asin(a)",
        "acos": "acos(a)",
        "atan": "atan(a)",
        "sinh": "sinh(a)",
        "cosh": "cosh(a)",
        "tanh": "tanh(a)",
        "erf": "erf(a)",
        "floor": "floor(a)",
        "ceil": "ceil(a)",
        "round": "rint(a)",  # half to even in the default rounding mode, as numpy's round
        "trunc": "trunc(a)",
        "reciprocal": "(C)1 / a",
        "isnan": "a != a",
        "isinf": "isinf(a)",
        "relu": "a < (C)0 ? (C)0 : a",  # numpy's maximum(x, 0): NaN stays NaN
        "sigmoid": "burn_sigmoid(a)",
        "gelu": "(C)0.5 * a * ((C)1 + erf(a * (C)0.70710678118654752440))",
        "gelu_tanh": "(C)0.5 * a * ((C)1 + tanh((C)0.79788456080286535588 * (a + (C)0.044715 * a * a * a)))",
        "silu": "a * burn_sigmoid(a)",
        "softplus": "burn_softplus(a)",
        "mish": "a * tanh(burn_softplus(a))",
        "hard_sigmoid": "burn_clip(a / (C)6 + (C)0.5, (C)0, (C)1)",
    },
    "binary": {
        "add": "a + b",
        "sub": "a - b",
        "mul": "a * b",
        "div": "a / b",
        "floor_div": "burn_floor_div(a, b)",
        "remainder": "burn_remainder(a, b)",
        "fmod": "fmod(a, b)",
        "pow": "pow(a, b)",
        "maximum": "(a >= b || a != a) ? a : b",  # numpy.maximum: NaN propagates
        "minimum": "(a <= b || a != a) ? a : b",
        "atan2": "atan2(a, b)",
        "eq": "a == b",
        "ne": "a != b",
        "lt": "a < b",
        "le": "a <= b",
        "gt": "a > b",
        "ge": "a >= b",
    },
    "where": {"where": "a ? (C)b : (C)c"},
    "clamp": {"clamp": "burn_clip(a, b, c)"},  # numpy.clip: minimum(maximum(a, lo), hi), NaN stays
}

# numpy's float kernels where they take more than an expression, once per float type
_HELPERS = r"""
#define BURN_HELPERS(T, S) \
static inline T burn_sigmoid##S(T a) { return (T)0.5 * ((T)1 + tanh((T)0.5 * a)); } \
static inline T burn_softplus##S(T a) { /* numpy's logaddexp(0, a) */ \
  if (a > (T)0) return a + log1p(exp(-a)); \
  if (a <= (T)0) return log1p(exp(a)); \
  return a; } \
static inline T burn_clip##S(T a, T lo, T hi) { T t = (a >= lo || a != a) ? a : lo; return (t <= hi || t != t) ? t : hi; } \
static inline T burn_divmod##S(T a, T b, T* mod) { /* numpy's npy_divmod */ \
  T m = fmod(a, b); \
  if (!b) { *mod = m; return a / b; } \
  T div = (a - m) / b; \
  if (m) { if ((b < (T)0) != (m < (T)0)) { m += b; div -= (T)1; } } \
  else { m = copysign((T)0, b); } \
  *mod = m; \
  T fl; \
  if (div) { fl = floor(div); if (div - fl > (T)0.5) fl += (T)1; } \
  else { fl = copysign((T)0, a / b); } \
  return fl; } \
static inline T burn_floor_div##S(T a, T b) { T m; if (!b) return a / b; return burn_divmod##S(a, b, &m); } \
static inline T burn_remainder##S(T a, T b) { T m; if (!b) return fmod(a, b); burn_divmod##S(a, b, &m); return m; }
BURN_HELPERS(float, _f)
BURN_HELPERS(double, _d)
#define BURN_G(f, a) _Generic((a), float: f##_f, default: f##_d)
#define burn_sigmoid(a) BURN_G(burn_sigmoid, a)(a)
#define burn_softplus(a) BURN_G(burn_softplus, a)(a)
#define burn_clip(a, b, c) BURN_G(burn_clip, a)(a, b, c)
#define burn_floor_div(a, b) BURN_G(burn_floor_div, a)(a, b)
#define burn_remainder(a, b) BURN_G(burn_remainder, a)(a, b)
"""
PREAMBLE = "#include <stdint.h>\n" + MVEC_DECLARATIONS + "#include <tgmath.h>\n" + _HELPERS


def has_op(kind: str, name: str, compute: D.DType, out: D.DType) -> bool:
    """Whether the C table has ``name`` of ``kind`` for those dtypes (float compute; casts between any
    dtypes in ``C_TYPE`` into a float or bool)."""
    if kind == "cast":
        return compute in C_TYPE and out in (D.float32, D.float64, D.bool_)
    if compute not in FLOATS or out not in C_TYPE:
        return False
    return name in FLOAT_EXPR.get(kind, {})


def _split(work: str, outer: str) -> list[str]:
    """``burn_kernel``: ``burn_body`` over the whole outermost dim (``outer`` long), split into blocks
    over OpenMP's threads once ``work`` (the elements it touches) reaches ``PARALLEL_MIN``."""
    return [
        "void burn_kernel(const int64_t* restrict sh, const int64_t* restrict st, void* const* p, "
        "const double* sc) {",
        f"const int64_t m = {outer};",
        f"if ({work} >= {PARALLEL_MIN} && m > 1) {{",
        f"  const int64_t blocks = m < {PARALLEL_BLOCKS} ? m : {PARALLEL_BLOCKS};",
        "  #pragma omp parallel for schedule(static)",
        "  for (int64_t k = 0; k < blocks; k++) burn_body(sh, st, p, sc, m * k / blocks, m * (k + 1) / blocks);",
        "} else {",
        "  burn_body(sh, st, p, sc, 0, m);",
        "}",
        "}",
    ]


class CRenderer(Renderer):
    """The C spelling of a skeleton (see the module docstring)."""

    def type(self, dtype: D.DType) -> str:
        return C_TYPE[dtype]

    def storage(self, dtype: D.DType) -> str:
        return C_TYPE[dtype]

    def expression(self, op: FusedOp) -> str:
        if op.kind == "cast":
            return "a != 0" if op.out is D.bool_ else "a"
        return FLOAT_EXPR[op.kind][op.name]

    def apply(self, stmt: Apply) -> str:
        op = stmt.op
        out = C_TYPE[op.out]
        operands = " ".join(f"const C {'abc'[i]} = v{a};" for i, a in enumerate(op.args))
        if op.kind == "where":  # the condition stays a byte
            operands = f"const uint8_t a = v{op.args[0]}; const C b = (C)v{op.args[1]}; const C c = (C)v{op.args[2]};"
        expr = self.expression(op)
        if op.out is D.bool_:
            expr = f"({expr}) ? 1 : 0"
        return f"{out} v{stmt.value}; {{ typedef {C_TYPE[op.compute]} C; {operands} v{stmt.value} = ({out})({expr}); }}"

    def load(self, stmt: Load, element: str) -> str:
        return f"const {C_TYPE[stmt.dtype]} v{stmt.value} = {element};"

    def scalar(self, stmt: ScalarLoad, element: str) -> str:
        t = C_TYPE[stmt.dtype]
        value = f"({element} != 0)" if stmt.dtype is D.bool_ else element
        return f"const {t} v{stmt.value} = ({t}){value};"

    def store(self, stmt: Store, element: str) -> str:
        return f"{element} = ({C_TYPE[stmt.dtype]})v{stmt.value};"

    def index(self, names: Sequence[str], rank: int, position: str, meta: str) -> list[str]:
        """``o_<name>``: each tensor's element at flat ``position`` of a rank ``rank`` iteration,
        from the shape at ``<meta>sh`` and the strides at ``<meta>st_<name>``."""
        lines = [f"int64_t r = {position};"]
        lines += [f"int64_t o_{name} = 0;" for name in names]
        for d in reversed(range(rank)):
            lines.append(f"{{ const int64_t c = r % {meta}sh[{d}]; r /= {meta}sh[{d}];")
            lines += [f"  o_{name} += c * {meta}st_{name}[{d}];" for name in names]
            lines.append("}")
        return lines

    def literal(self, x: float, dtype: D.DType) -> str:
        if x in (float("inf"), float("-inf")):
            return "INFINITY" if x > 0 else "-INFINITY"
        return repr(float(x)) if dtype in FLOATS else str(int(x))

    def params(self, sk: Skeleton) -> list[str]:
        """Each tensor as a typed pointer into ``tensors``: outputs ``t0..``, then inputs."""
        plan = sk.plan
        nout = len(sk.stores)
        lines = [
            f"{C_TYPE[s.dtype]}* restrict t{s.output} = ({C_TYPE[s.dtype]}*)p[{s.output}];" for s in sk.stores
        ]
        lines += [
            f"const {C_TYPE[dt]}* t{nout + k} = (const {C_TYPE[dt]}*)p[{nout + k}];"
            for k, dt in enumerate(plan.inputs)
        ]
        return lines

    def elementwise(self, sk: Skeleton, nd: int, inner: str) -> str:
        """The kernel of element-wise ``sk`` over a collapsed iteration of rank ``nd``; ``inner``: per
        tensor (outputs, then inputs) its innermost dim, ``d`` dense, ``b`` broadcast, ``s`` strided."""
        plan, main = sk.plan, sk.main
        ntensors = len(plan.outputs) + len(plan.inputs)
        nout = len(plan.outputs)
        last = nd - 1

        def element(t: int) -> str:
            base = f"b{last - 1}_{t}" if nd > 1 else "0"
            step = {"d": " + i", "b": "", "s": f" + i * st[{t * nd + last}]"}[inner[t]]
            return f"t{t}[{base}{step}]"

        body = [
            *self.lines(main.loads, load_at=lambda k: element(nout + k)),
            *self.lines(main.ops),
            *self.lines(main.stores, store_at=element),
        ]
        lines = [
            f"{_BODY}(const int64_t* restrict sh, const int64_t* restrict st, void* const* p, "
            "const double* sc, const int64_t lo, const int64_t hi) {",
            *self.params(sk),
            *self.lines(main.scalars, scalar_at=lambda j: f"sc[{j}]"),
        ]
        depth = 0
        for d in range(nd - 1):
            first = "lo" if d == 0 else "0"
            last_c = "hi" if d == 0 else f"sh[{d}]"
            lines.append(f"for (int64_t c{d} = {first}; c{d} < {last_c}; c{d}++) {{")
            for t in range(ntensors):
                prev = f"b{d - 1}_{t} + " if d else ""
                lines.append(f"const int64_t b{d}_{t} = {prev}c{d} * st[{t * nd + d}];")
            depth += 1
        lines.append("#pragma omp simd")
        bounds = ("lo", "hi") if nd == 1 else ("0", f"sh[{last}]")
        lines.append(f"for (int64_t i = {bounds[0]}; i < {bounds[1]}; i++) {{")
        lines += [f"  {line}" for line in body]
        lines.append("}" * (depth + 1))
        lines.append("}")
        lines += _split(" * ".join(f"sh[{d}]" for d in range(nd)), "sh[0]")
        return PREAMBLE + "\n".join(lines) + "\n"

    def reduce(self, sk: Skeleton, ro: int, ri: int, rr: int, inner: str) -> str:
        """The kernel of reduce plan ``sk``: one result per row, rows split over OpenMP threads. ``ro``
        and ``ri``: the collapsed ranks of the kept (outer) and reduced (inner) dims; ``rr``: the
        result's rank, over which the epilogue's inputs are read; ``inner``: per input its innermost
        reduced dim, ``d`` dense, ``b`` broadcast, ``s`` strided (as ``elementwise``'s). ``shape``: outer, inner, result
        dims; ``strides``: per input its outer and inner strides, then per input the epilogue reads its
        strides over the result. Sums accumulate in double; max and min propagate NaN as numpy's."""
        plan, main, red = sk.plan, sk.main, sk.reduce
        assert red is not None
        post = red.post
        nout = len(post.stores)
        width = ro + ri
        reads = [s.value for s in post.loads]
        post_at = {k: len(plan.inputs) * width + j * rr for j, k in enumerate(reads)}
        acc_t = "double" if red.op in ("sum", "mean") else C_TYPE[red.dtype]
        combine = {
            "sum": "acc += (double)x;",
            "mean": "acc += (double)x;",
            "max": "acc = (acc >= x || acc != acc) ? acc : x;",
            "min": "acc = (acc <= x || acc != acc) ? acc : x;",
        }[red.op]
        inner_n = " * ".join(f"sh[{ro + d}]" for d in range(ri)) or "1"
        lines = [
            f"{_BODY}(const int64_t* restrict sh, const int64_t* restrict st, void* const* p, "
            "const double* sc, const int64_t lo, const int64_t hi) {",
            *[
                f"{C_TYPE[s.dtype]}* restrict t{s.output} = ({C_TYPE[s.dtype]}*)p[{s.output}];"
                for s in post.stores
            ],
            *[
                f"const {C_TYPE[dt]}* t{nout + k} = (const {C_TYPE[dt]}*)p[{nout + k}];"
                for k, dt in enumerate(plan.inputs)
            ],
            *self.lines(main.scalars, scalar_at=lambda j: f"sc[{j}]"),
            f"const int64_t n = {inner_n};",
            "for (int64_t g = lo; g < hi; g++) {",
            "  int64_t q = g;",
        ]
        pre = [s.value for s in main.loads]
        lines += [f"  int64_t a{k} = 0;" for k in pre]
        for d in reversed(range(ro)):
            lines.append(f"  {{ const int64_t c = q % sh[{d}]; q /= sh[{d}];")
            lines += [f"    a{k} += c * st[{k * width + d}];" for k in pre]
            lines.append("  }")
        lines.append(f"  {acc_t} acc = {self.literal(red.identity, red.dtype)};")
        depth = 0
        for d in range(ri):
            if d == ri - 1 and red.op in ("sum", "mean"):  # lanes of partial sums, as numpy's pairwise sum
                lines.append("  #pragma omp simd reduction(+:acc)")
            lines.append(f"  for (int64_t c{d} = 0; c{d} < sh[{ro + d}]; c{d}++) {{")
            depth += 1

        def element(k: int) -> str:
            terms = "".join(f" + c{d} * st[{k * width + ro + d}]" for d in range(ri - 1))
            last = {"d": f" + c{ri - 1}", "b": "", "s": f" + c{ri - 1} * st[{k * width + width - 1}]"}[
                inner[k]
            ]
            return f"t{nout + k}[a{k}{terms}{last}]"

        body = [
            *self.lines(main.loads, load_at=element),
            *self.lines(main.ops),
            f"{{ const {C_TYPE[red.dtype]} x = v{red.value}; {combine} }}",
        ]
        lines += [f"    {line}" for line in body]
        lines.append("  " + "}" * depth)
        result = "acc / (double)n" if red.op == "mean" else "acc"
        lines.append(f"  const {C_TYPE[red.dtype]} v{red.reduced} = ({C_TYPE[red.dtype]})({result});")
        if post.loads:  # the epilogue's inputs at the result's position
            lines.append("  q = g;")
            lines += [f"  int64_t e{k} = 0;" for k in reads]
            for d in reversed(range(rr)):
                lines.append(f"  {{ const int64_t c = q % sh[{width + d}]; q /= sh[{width + d}];")
                lines += [f"    e{k} += c * st[{post_at[k] + d}];" for k in reads]
                lines.append("  }")
        tail = [
            *self.lines(post.loads, load_at=lambda k: f"t{nout + k}[e{k}]"),
            *self.lines(post.ops),
            *self.lines(post.stores, store_at=lambda j: f"t{j}[g]"),
        ]
        lines += [f"  {line}" for line in tail]
        lines += ["}", "}"]
        rows = " * ".join(f"sh[{d}]" for d in range(ro)) or "1"
        lines += _split(f"({rows}) * ({inner_n})", rows)
        return PREAMBLE + "\n".join(lines) + "\n"
