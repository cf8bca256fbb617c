"""CUDA C for fused kernels: burn.fusion's kernel skeletons (``burn.fusion.skeleton``) spelled in C.

Every op is the expression of the element-wise table (``_kernels``) in its own block with ``C`` the
op's compute type, so a fused chain computes what the unfused kernels compute (half values are carried
in float registers between ops and rounded only when stored). bfloat16 arrays travel as their bits
(uint16 views): loaded with ``burn_bf16_to_f``, each bfloat16 op's value rounded with
``burn_bf16_round`` as the unfused kernel would store it, stored with ``burn_f_to_bf16``; bfloat16
scalars come as float32 and are rounded in the kernel.

Kernel templates: ``source`` (a ``cupy.ElementwiseKernel``: CuPy broadcasts and strides the
inputs; for float16 plans), ``dense_source`` (a RawKernel over dense inputs of the output's shape),
``strided_source`` (a RawKernel over inputs of any strides), ``reduce_source``
(a RawKernel running a reduce kernel, one block per result) and, for ``_epilogue``'s tiled GEMM, the
epilogue's lines (``CudaRenderer.epilogue``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from burn import DType
from burn.fusion import Apply, FusedKernel, FusedOp, Load, Renderer, ScalarLoad, Skeleton, Store, skeleton

from . import _kernels
from ._dtypes import C_TYPE, COMPUTE_TYPE, TO_NP, is_bf16, param_dtype, scalar_dtype

TABLES = {"unary": _kernels.UNARY_EXPR, "binary": _kernels.BINARY_EXPR}  # the expression table by op kind
_OPERAND = re.compile(r"\b[abc]\b")
# how two partial results a, b (the accumulator type) of a reduction combine
COMBINE = {
    "sum": "a + b",
    "mean": "a + b",
    "max": "(a > b || a != a) ? a : b",  # NaN wins, as in CuPy's max
    "min": "(a < b || a != a) ? a : b",
}
# the names of a row walk's (counter, offsets, shape, strides) by ``index``'s ``meta``: the element
# walk of a reduce kernel (""), the walk to a result of its epilogue ("p")
_WALK = {"": ("r", "off", "sh", "st"), "p": ("q", "poff", "rs", "ps")}


class CudaRenderer(Renderer):
    """The CUDA C spelling of a skeleton. ``restrict``: tensor pointers are ``__restrict__`` (not
    where an output may be an input's buffer, written in place)."""

    def __init__(self, restrict: bool = True) -> None:
        self.restrict = " __restrict__" if restrict else ""

    def type(self, dtype: DType) -> str:
        return COMPUTE_TYPE[TO_NP[dtype]]

    def storage(self, dtype: DType) -> str:
        return C_TYPE[TO_NP[dtype]]

    def expression(self, op: FusedOp) -> str:
        if op.kind == "where":  # the condition as it is, the branches in the compute type
            return "a ? (C)b : (C)c"
        if op.kind == "cast":
            return "a"
        if op.kind == "clamp":
            return "a < b ? b : (a > c ? c : a)"
        return _kernels.expression(TABLES[op.kind], op.name, TO_NP[op.compute])

    def apply(self, stmt: Apply) -> str:
        op, v = stmt.op, stmt.value
        out_np = TO_NP[op.out]
        out_c = COMPUTE_TYPE[out_np]
        names = [f"v{a}" for a in op.args]
        expr = self.expression(op)
        if op.kind == "where":
            expr = _OPERAND.sub(lambda m: names["abc".index(m.group(0))], expr)
            operands = ""
        else:
            operands = " ".join(f"const C {'abc'[i]} = (C){n};" for i, n in enumerate(names))
        if is_bf16(out_np):  # rounded as the unfused op stores it, carried in float
            expr = f"burn_bf16_round({expr})"
        elif out_c != C_TYPE[out_np]:  # half: rounded as the unfused op stores it, carried in float
            expr = f"({C_TYPE[out_np]})({expr})"
        return f"{out_c} v{v}; {{ typedef {self.type(op.compute)} C; {operands} v{v} = ({out_c})({expr}); }}"

    def load(self, stmt: Load, element: str) -> str:
        t = self.type(stmt.dtype)
        if is_bf16(TO_NP[stmt.dtype]):
            return f"const {t} v{stmt.value} = burn_bf16_to_f({element});"
        return f"const {t} v{stmt.value} = ({t}){element};"

    def scalar(self, stmt: ScalarLoad, element: str) -> str:
        value = f"burn_bf16_round({element})" if is_bf16(TO_NP[stmt.dtype]) else element
        return f"const {self.type(stmt.dtype)} v{stmt.value} = {value};"

    def store(self, stmt: Store, element: str) -> str:
        if is_bf16(TO_NP[stmt.dtype]):
            return f"{element} = burn_f_to_bf16(v{stmt.value});"
        return f"{element} = ({self.storage(stmt.dtype)})v{stmt.value};"

    def index(self, names: Sequence[str], rank: int, position: str, meta: str) -> list[str]:
        """``<offsets><name>`` for each tensor ``name`` (its number): its element at flat ``position``
        from the shape and element strides passed as parameters (``_WALK[meta]`` names them)."""
        r, off, sh, st = _WALK[meta]
        lines = [f"long long {r} = {position};"]
        lines += [f"long long {off}{i} = 0;" for i in names]
        for d in reversed(range(rank)):
            lines.append(f"{{ const long long c = {r} % {sh}{d}; {r} /= {sh}{d};")
            lines += [f"  {off}{i} += c * {st}{i}_{d};" for i in names]
            lines.append("}")
        return lines

    def literal(self, x: float, dtype: DType) -> str:
        if x in (
            float("inf"),
            float("-inf"),
        ):  # BURN_INF: the template defines it (NVRTC has no math headers)
            return "BURN_INF" if x > 0 else "-BURN_INF"
        return str(int(x)) if float(x).is_integer() else repr(float(x))

    def params(self, sk: Skeleton) -> list[str]:
        """Pointers to the inputs (a matmul epilogue's from input 1: value 0 is the product), the
        scalars (bfloat16 as float), pointers to the stored outputs."""
        plan, restrict = sk.plan, self.restrict
        first = 1 if sk.matmul else 0
        params = [f"const {self.storage(d)}*{restrict} l{k}" for k, d in enumerate(plan.inputs) if k >= first]
        params += [f"const {C_TYPE[scalar_dtype(TO_NP[d])]} s{k}" for k, d in enumerate(plan.scalars)]
        params += [f"{self.storage(s.dtype)}*{restrict} o{s.output}" for s in sk.stores]
        return params

    def elementwise(self, sk: Skeleton) -> tuple[str, str, str]:
        """(in_params, out_params, body) of a ``cupy.ElementwiseKernel`` running ``sk``."""
        plan = sk.plan
        in_params = [f"{param_dtype(TO_NP[d]).name} l{k}" for k, d in enumerate(plan.inputs)]
        in_params += [f"{scalar_dtype(TO_NP[d]).name} s{k}" for k, d in enumerate(plan.scalars)]
        out_params = ", ".join(f"{param_dtype(TO_NP[s.dtype]).name} o{s.output}" for s in sk.stores)
        body = self.lines(
            sk.main.statements,
            load_at=lambda k: f"l{k}",
            scalar_at=lambda j: f"s{j}",
            store_at=lambda j: f"o{j}",
        )
        return ", ".join(in_params), out_params, "\n".join(body)

    def dense(self, sk: Skeleton, name: str) -> str:
        """A RawKernel running ``sk`` over dense inputs and outputs of one shape (see ``dense_source``)."""
        body = self.lines(
            sk.main.statements,
            load_at=lambda k: f"l{k}[i]",
            scalar_at=lambda j: f"s{j}",
            store_at=lambda j: f"o{j}[i]",
        )
        return _per_element(name, [*self.params(sk), "const long long n"], body)

    def strided(self, sk: Skeleton, name: str, rank: int, wide: bool = False) -> str:
        """A RawKernel running ``sk`` over inputs of any element strides (broadcast ones 0) seen from a
        ``rank``-dim shape, the outputs dense of that shape (see ``strided_source``). The element
        number is split into coordinates in 32-bit unsigned arithmetic unless ``wide`` (2**31 elements
        or more): a 64-bit division costs several times a 32-bit one, and the walk does one per dim."""
        k = len(sk.plan.inputs)
        idx = "long long" if wide else "unsigned int"
        params = [*self.params(sk), "const long long n"]
        params += [f"const long long sh{d}" for d in range(rank)]
        params += [f"const long long st{i}_{d}" for i in range(k) for d in range(rank)]
        walk = [f"{idx} r = ({idx})i;", *(f"long long off{i} = 0;" for i in range(k))]
        for d in reversed(range(rank)):
            walk.append(f"{{ const {idx} c = r % ({idx})sh{d}; r /= ({idx})sh{d};")
            walk += [f"  off{i} += (long long)c * st{i}_{d};" for i in range(k)]
            walk.append("}")
        body = self.lines(
            sk.main.statements,
            load_at=lambda i: f"l{i}[off{i}]",
            scalar_at=lambda j: f"s{j}",
            store_at=lambda j: f"o{j}[i]",
        )
        return _per_element(name, params, [*walk, *body])

    def reduce(self, sk: Skeleton, name: str) -> str:
        """A RawKernel running reduce kernel ``sk`` (see ``reduce_source``)."""
        plan, main, red = sk.plan, sk.main, sk.reduce
        assert red is not None
        post = red.post
        rank = len(plan.shape)
        acc_t = self.storage(red.dtype)
        k = len(plan.inputs)
        params = self.params(sk)
        params.append("const long long n")
        params += [f"const long long sh{d}" for d in range(rank)]
        params += [f"const long long st{i}_{d}" for i in range(k) for d in range(rank)]
        pre = [str(s.value) for s in main.loads]
        walk = self.index(pre, rank, "row * n + j", "")
        body = self.lines(main.statements, load_at=lambda i: f"l{i}[off{i}]", scalar_at=lambda j: f"s{j}")
        init = self.literal(red.identity, red.dtype)
        final = "acc / (ACC)n" if red.op == "mean" else "acc"
        finish = [f"const ACC v{red.reduced} = {final};"]
        if post.ops:
            rr = len(plan.out_shape())
            post_ins = [str(s.value) for s in post.loads]
            params += [f"const long long rs{d}" for d in range(rr)]
            params += [f"const long long ps{i}_{d}" for i in post_ins for d in range(rr)]
            finish += self.index(post_ins, rr, "row", "p")
        finish += self.lines(
            post.statements,
            load_at=lambda i: f"l{i}[poff{i}]",
            scalar_at=lambda j: f"s{j}",
            store_at=lambda j: f"o{j}[row]",
        )
        return (
            _kernels.PREAMBLE
            + f"typedef {acc_t} ACC;\n"
            + (  # NVRTC has no math headers: infinity from its bits
                "#define BURN_INF __longlong_as_double(0x7ff0000000000000LL)\n"
                if acc_t == "double"
                else "#define BURN_INF __int_as_float(0x7f800000)\n"
            )
            + "__device__ __forceinline__ ACC burn_combine(ACC a, ACC b) { return "
            + COMBINE[red.op]
            + "; }\n"
            + f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
            + "const long long row = blockIdx.x;\n"
            + f"ACC acc = {init};\n"
            + "for (long long j = threadIdx.x; j < n; j += blockDim.x) {\n"
            + "\n".join(walk)
            + "\n"
            + "\n".join(body)
            + f"\nacc = burn_combine(acc, (ACC)v{red.value});\n"
            + "}\n"
            + "for (int o = 16; o > 0; o >>= 1) acc = burn_combine(acc, __shfl_down_sync(0xffffffffu, acc, o));\n"
            + "__shared__ ACC part[32];\n"
            + "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
            + "if (lane == 0) part[warp] = acc;\n"
            + "__syncthreads();\n"
            + "if (warp == 0) {\n"
            + f"  acc = lane < (int)(blockDim.x >> 5) ? part[lane] : (ACC)({init});\n"
            + "  for (int o = 16; o > 0; o >>= 1) acc = burn_combine(acc, __shfl_down_sync(0xffffffffu, acc, o));\n"
            + "  if (lane == 0) {\n"
            + "\n".join(f"    {line}" for line in finish)
            + "\n  }\n"
            + "}\n"
            + "}\n"
        )

    def epilogue(self, sk: Skeleton) -> list[str]:
        """A matmul epilogue's lines for a GEMM holding the product element in ``p``, input ``k``'s
        element at ``l<k>[off<k>]`` and the output element's place at ``at``."""
        product = self.load(Load(0, sk.plan.inputs[0]), "p")
        return [
            product,
            *self.lines(
                sk.main.statements,
                load_at=lambda k: f"l{k}[off{k}]",
                scalar_at=lambda j: f"s{j}",
                store_at=lambda j: f"o{j}[at]",
            ),
        ]


def _per_element(name: str, params: list[str], lines: list[str]) -> str:
    """A RawKernel of one thread per element ``i`` below ``n`` running ``lines``."""
    return (
        _kernels.PREAMBLE
        + f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
        + "const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        + "if (i >= n) return;\n"
        + "\n".join(lines)
        + "\n}\n"
    )


def source(plan: FusedKernel) -> tuple[str, str, str]:
    """(in_params, out_params, body) of the ElementwiseKernel running element-wise ``plan``: the
    inputs and scalars in, the outputs out (bfloat16 as uint16 bits, its scalars as float32)."""
    return CudaRenderer().elementwise(skeleton(plan))


def dense_source(plan: FusedKernel, name: str, aliased: bool = False) -> str:
    """The CUDA C of a RawKernel running ``plan`` over dense inputs and outputs of one shape: the
    ElementwiseKernel's statements, with each input and output indexed by the element number.
    ``aliased``: an output may be an input's buffer (written in place), so no pointer is declared
    ``__restrict__`` (each thread still loads its element of every input before any store: the
    stores come last and depend on nothing after them)."""
    return CudaRenderer(restrict=not aliased).dense(skeleton(plan), name)


def strided_source(plan: FusedKernel, name: str, rank: int, aliased: bool = False, wide: bool = False) -> str:
    """The CUDA C of a RawKernel running element-wise ``plan`` over inputs of any strides: parameters
    the inputs, the scalars, the outputs (dense, of the iteration shape), n, the iteration shape
    (``rank`` dims, adjacent dims the caller could merge merged) and each input's strides over it in
    elements (0 where it is broadcast). ``aliased``: as ``dense_source``'s; ``wide``: n may reach
    2**31 (64-bit coordinates)."""
    return CudaRenderer(restrict=not aliased).strided(skeleton(plan), name, rank, wide)


def reduce_source(plan: FusedKernel, name: str) -> str:
    """The CUDA C of a RawKernel running reduce kernel ``plan`` (``_fusion``'s docstring). Parameters:
    the inputs, the scalars, the stored values, n (elements per result), the shape, each input's
    strides in elements (zeros for inputs only the epilogue reads), then with an epilogue the
    result's shape and the strides over it of each input the epilogue reads. One block per result;
    blockDim a multiple of 32; thread 0 runs the epilogue and stores."""
    return CudaRenderer().reduce(skeleton(plan), name)
