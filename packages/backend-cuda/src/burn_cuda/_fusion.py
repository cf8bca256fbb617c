"""Fused element-wise kernels: burn.fusion's plans rendered as one ``cupy.ElementwiseKernel`` each.

The kernel takes the plan's inputs (CuPy broadcasts and strides them) and scalars and writes its
outputs. Every op is the expression of the element-wise table (``_kernels``) in its own block with
``C`` the op's compute type, so a fused chain computes what the unfused kernels compute (half values
are carried in float registers between ops and rounded only when stored). bfloat16 arrays travel as their
bits (uint16 views): loaded with ``burn_bf16_to_f``, each bfloat16 op's value rounded with
``burn_bf16_round`` as the unfused kernel would store it, stored with ``burn_f_to_bf16``; bfloat16
scalars come as float32 and are rounded in the kernel.

Matmul epilogues (``FusedKernel.matmul``) are a tuned family of their own (``_epilogue``).

Reduce kernels (``FusedReduce``: a float32/float64 sum, mean, max or min over trailing dims, fed by an
element-wise chain) are one ``RawKernel`` each: one block per result walks its row, computing the chain
for each element from the inputs' strides (broadcast inputs by stride 0) and reducing as it goes, then
across the block with warp shuffles; max and min propagate NaN as CuPy's do. A plan with half-precision
values in its chain runs as its element-wise kernel and then the backend's reduction.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import TYPE_CHECKING, Any

import burn
import numpy as np
from burn import DType
from burn.fusion import FusedKernel, FusedOp, FusedReduce

from . import _kernels
from ._bf16 import bits
from ._dtypes import C_TYPE, COMPUTE_TYPE, TO_NP, is_bf16, param_dtype, scalar_dtype
from ._types import Kernel, Prim

if TYPE_CHECKING:
    from ._backend import CudaBackend

_TABLES = {"unary": _kernels.UNARY_EXPR, "binary": _kernels.BINARY_EXPR}
_lock = threading.Lock()


class CudaFusion:
    """The ``FusionRuntime`` of burn-cuda (CuPy compiles each kernel once and caches it on disk)."""

    max_tensors = 32
    max_ops = 64
    reduce_epilogues = True  # reduce kernels run ``FusedReduce.post``

    def __init__(self, backend: CudaBackend) -> None:
        self.backend = backend
        self._kernels: dict[tuple[Any, ...], Kernel] = {}
        self.capture_failures: list[str] = []  # why recent programs could not become CUDA graphs

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        if compute not in TO_NP or out not in TO_NP:
            return False
        if kind in ("cast", "where"):
            return True
        dt = TO_NP[compute]
        if kind == "clamp":
            return dt.kind in "fiuV"  # V: bfloat16
        try:
            _kernels.expression(_TABLES[kind], name, dt)
        except KeyError:
            return False
        return True

    def capture_program(
        self, fusion: Any, program: Any, stream: list[Any], leaves: list[Any], scalars: list[Any]
    ) -> Any:
        """Run a repeated fusion program's stream and capture the program as a CUDA graph (``_graphs``);
        None when it cannot be captured (the stream has run either way)."""
        from ._graphs import CudaGraphProgram

        graph = CudaGraphProgram(self, fusion, program)
        return graph if graph.capture(stream, leaves, scalars) else None

    def fuse_reduce(self, op: str, dtype: DType, shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
        """Reduce kernels of float32/float64 sum, mean, max and min over trailing dims: one block per
        result, so only where each result is short or there are enough of them to fill the GPU
        (a few long rows go to the backend's multi-block reductions)."""
        if op not in _REDUCE_INIT or dtype not in (burn.float32, burn.float64):
            return False
        rows, n = FusedReduce(op, dims, False).rows(shape)
        return 0 < rows < 2**31 and 0 < n and (n <= _REDUCE_LONG or rows >= _REDUCE_MANY)

    def fuse_matmul(self, lhs: Prim, rhs: Prim) -> bool:
        """Matmul epilogues of 2-d float32 matmuls under the fp32 precision (``_epilogue``)."""
        from ._epilogue import fits

        return fits(lhs, rhs)

    def execute(self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any]) -> list[Prim]:
        if plan.reduce is not None:
            return self._reduce(plan, inputs, scalars)
        if plan.matmul:
            from . import _epilogue

            a, w, rest = inputs[0], inputs[1], inputs[2:]
            if _dense_ok(plan):
                return _epilogue.run(self.backend, plan, a, w, rest, scalars)
            return list(_epilogue.run_cublas(self.backend, plan, a, w, rest, scalars))
        b = self.backend
        cp = b._on()
        shape = plan.shape
        dense = plan.cache.get("dense")
        if dense is None:
            dense = plan.cache["dense"] = _dense_ok(plan)
        if dense and all(x.shape == shape and x.flags.c_contiguous for x in inputs):
            return self._dense(cp, plan, inputs, scalars)
        kernel = plan.cache.get("cuda") or self._kernels.get(plan.key)
        if kernel is None:
            with _lock:
                kernel = self._kernels.get(plan.key)
                if kernel is None:
                    in_params, out_params, body = source(plan)
                    name = f"burn_fused_{len(self._kernels)}"
                    kernel = cp.ElementwiseKernel(
                        in_params, out_params, body, name, preamble=_kernels.PREAMBLE
                    )
                    self._kernels[plan.key] = kernel
        plan.cache["cuda"] = kernel
        outs = [cp.empty(plan.shape, dtype=param_dtype(TO_NP[dt])) for dt in plan.out_dtypes()]
        args = [*map(bits, inputs), *_scalar_args(plan, scalars), *outs]
        kernel(*args)
        return _typed(plan, outs)

    def execute_reusing(
        self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any], donors: tuple[int, ...]
    ) -> list[Prim]:
        """``execute``, writing an output into a dead input of its dtype (``donors``) where the plan
        runs as a dense kernel (each thread reads its element of every input before it stores) or
        as a matmul epilogue (an epilogue input of the output's shape and layout; ``_epilogue``)."""
        if plan.matmul and _dense_ok(plan):
            from . import _epilogue

            rest = tuple(i - 2 for i in donors if i >= 2)
            return _epilogue.run(self.backend, plan, inputs[0], inputs[1], inputs[2:], scalars, rest)
        if plan.reduce is None and not plan.matmul:
            dense = plan.cache.get("dense")
            if dense is None:
                dense = plan.cache["dense"] = _dense_ok(plan)
            shape = plan.shape
            if dense and all(x.shape == shape and x.flags.c_contiguous for x in inputs):
                return self._dense(self.backend._on(), plan, inputs, scalars, donors)
        return self.execute(plan, inputs, scalars)

    def _dense(
        self, cp: Any, plan: FusedKernel, inputs: list[Prim], scalars: list[Any], donors: tuple[int, ...] = ()
    ) -> list[Prim]:
        """Every input of the output's shape and C-contiguous: a RawKernel indexed by the element number
        (no broadcasting or stride arithmetic, and far less launch work than an ElementwiseKernel).
        ``donors``: inputs an output of the same dtype may be written into (``execute_reusing``)."""
        outs, aliased = _outputs(cp, plan, plan.shape, inputs, donors)
        if not aliased:
            kernel = self._raw_kernel(cp, plan, "raw", dense_source)
        else:  # an output aliases an input: the variant whose pointers promise no exclusivity
            kernel = self._raw_kernel(cp, plan, "raw_aliased", functools.partial(dense_source, aliased=True))
        n = outs[0].size
        if n:
            args = [*map(bits, inputs), *_scalar_args(plan, scalars), *outs, np.int64(n)]
            kernel((-(-n // _BLOCK),), (_BLOCK,), tuple(args))
        return _typed(plan, outs)

    def _raw_kernel(self, cp: Any, plan: FusedKernel, tag: str, render: Any) -> Kernel:
        """The ``RawKernel`` of ``render(plan, name)`` (``"raw"``: dense element-wise, ``"raw_aliased"``:
        the same writing in place, ``"reduce"``),
        compiled once per plan key and found through the plan's cache after that."""
        kernel = plan.cache.get(tag)
        if kernel is None:
            with _lock:
                kernel = self._kernels.get((tag, plan.key))
                if kernel is None:
                    name = f"burn_fused_{tag}_{len(self._kernels)}"
                    kernel = self._kernels[(tag, plan.key)] = cp.RawKernel(render(plan, name), name)
            plan.cache[tag] = kernel
        return kernel

    def _reduce(self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any]) -> list[Prim]:
        """A reduce kernel (see the module docstring)."""
        red = plan.reduce
        assert red is not None
        b = self.backend
        cp = b._on()
        if not _dense_ok(plan):  # half values in the chain: the element-wise kernel, then the reduction
            chain = plan.cache.get("chain")
            if chain is None:
                chain = plan.cache["chain"] = FusedKernel(
                    plan.shape, plan.inputs, plan.scalars, plan.ops, plan.outputs
                )
            (values,) = self.execute(chain, inputs, scalars)
            reduced = b.reduce(red.op, values, red.dims, red.keepdim)
            return red.finish(plan, reduced, inputs, scalars, self.execute)
        shape = plan.shape
        rshape = red.shape(shape)
        outs = [cp.empty(rshape, dtype=TO_NP[dt]) for dt in red.store_dtypes(plan)]
        rows, n = red.rows(shape)
        if rows == 0:
            return outs
        kernel = self._raw_kernel(cp, plan, "reduce", reduce_source)
        pre = red.pre_reads(plan)
        strides = []
        for k, x in enumerate(inputs):
            strides += _element_strides(x, shape) if k in pre else [0] * len(shape)
        args = [*map(bits, inputs), *_scalar_args(plan, scalars), *outs, np.int64(n), *map(np.int64, shape)]
        args += [np.int64(st) for st in strides]
        if red.post:  # the epilogue's view of the inputs it reads: over the result's shape
            reads = red.post_reads()
            args += [np.int64(d) for d in rshape]
            for k, x in enumerate(inputs):
                if k in reads:
                    args += [np.int64(st) for st in _element_strides(x, rshape)]
        threads = 32
        while threads < min(n, _BLOCK):
            threads *= 2
        kernel((rows,), (threads,), tuple(args))
        return outs


_BLOCK = 256
_REDUCE_LONG = 16384  # a reduce kernel's rows may be this long whatever their number
_REDUCE_MANY = 256  # ... and longer where there are at least this many
# a reduction's start value and how two partial results combine (a, b: the accumulator type)
_REDUCE_INIT = {"sum": "0", "mean": "0", "max": "-BURN_INF", "min": "BURN_INF"}
_REDUCE_COMBINE = {
    "sum": "a + b",
    "mean": "a + b",
    "max": "(a > b || a != a) ? a : b",  # NaN wins, as in CuPy's max
    "min": "(a < b || a != a) ? a : b",
}


def _element_strides(x: Prim, shape: tuple[int, ...]) -> list[int]:
    """``x``'s strides in elements seen from ``shape`` (right-aligned; stretched dims stride 0)."""
    pad = len(shape) - x.ndim
    out = [0] * pad
    for s, st, n in zip(x.shape, x.strides, shape[pad:]):
        out.append(0 if s == 1 and n != 1 else st // x.itemsize)
    return out


def reduce_source(plan: FusedKernel, name: str) -> str:
    """The CUDA C of a RawKernel running reduce kernel ``plan`` (see the module docstring). Parameters:
    the inputs, the scalars, the stored values, n (elements per result), the shape, each input's
    strides in elements (zeros for inputs only the epilogue reads), then with an epilogue the
    result's shape and the strides over it of each input the epilogue reads. One block per result;
    blockDim a multiple of 32; thread 0 runs the epilogue and stores."""
    red = plan.reduce
    assert red is not None
    rank = len(plan.shape)
    out_t = C_TYPE[TO_NP[plan.out_dtypes()[0]]]
    pre = red.pre_reads(plan)
    _, _, body = source(plan)
    keep = []
    for line in body.splitlines():
        load = re.match(r"const \S+ v(\d+) = ", line)
        if line.startswith("o0 = ") or (
            load and int(load.group(1)) < len(plan.inputs) and int(load.group(1)) not in pre
        ):
            continue  # the store (the chain's value is reduced), and loads only the epilogue needs
        keep.append(line)
    body = re.sub(r"\bl(\d+)([;)])", r"l\1[off\1]\2", "\n".join(keep))
    k = len(plan.inputs)
    stores = red.stores(plan)
    store_t = [C_TYPE[TO_NP[dt]] for dt in red.store_dtypes(plan)]
    params = [f"const {C_TYPE[TO_NP[d]]}* __restrict__ l{i}" for i, d in enumerate(plan.inputs)]
    params += [f"const {C_TYPE[scalar_dtype(TO_NP[d])]} s{i}" for i, d in enumerate(plan.scalars)]
    params += [f"{t}* __restrict__ o{j}" for j, t in enumerate(store_t)]
    params.append("const long long n")
    params += [f"const long long sh{d}" for d in range(rank)]
    params += [f"const long long st{i}_{d}" for i in range(k) for d in range(rank)]
    walk = ["long long r = row * n + j;"]
    walk += [f"long long off{i} = 0;" for i in range(k) if i in pre]
    for d in reversed(range(rank)):
        walk.append(f"{{ const long long c = r % sh{d}; r /= sh{d};")
        walk += [f"  off{i} += c * st{i}_{d};" for i in range(k) if i in pre]
        walk.append("}")
    combine = _REDUCE_COMBINE[red.op]
    value = f"v{plan.outputs[0]}"
    final = "acc / (ACC)n" if red.op == "mean" else "acc"
    reduced = red.reduced_value(plan)
    finish = [f"const ACC v{reduced} = {final};"]
    if red.post:
        rr = len(red.shape(plan.shape))
        post_ins = [i for i in range(k) if i in red.post_reads()]
        params += [f"const long long rs{d}" for d in range(rr)]
        params += [f"const long long ps{i}_{d}" for i in post_ins for d in range(rr)]
        finish.append("long long q = row;")
        finish += [f"long long poff{i} = 0;" for i in post_ins]
        for d in reversed(range(rr)):
            finish.append(f"{{ const long long c = q % rs{d}; q /= rs{d};")
            finish += [f"  poff{i} += c * ps{i}_{d};" for i in post_ins]
            finish.append("}")
        finish += [f"const ACC v{i} = (ACC)l{i}[poff{i}];" for i in post_ins]
        reads = red.post_reads()
        finish += [f"const ACC v{k + j} = (ACC)s{j};" for j in range(len(plan.scalars)) if k + j in reads]
        finish += [_op_line(op, reduced + 1 + j) for j, op in enumerate(red.post)]
    finish += [f"o{j}[row] = ({t})v{v};" for j, (v, t) in enumerate(zip(stores, store_t))]
    return (
        _kernels.PREAMBLE
        + f"typedef {out_t} ACC;\n"
        + (  # NVRTC has no math headers: infinity from its bits
            "#define BURN_INF __longlong_as_double(0x7ff0000000000000LL)\n"
            if out_t == "double"
            else "#define BURN_INF __int_as_float(0x7f800000)\n"
        )
        + "__device__ __forceinline__ ACC burn_combine(ACC a, ACC b) { return "
        + combine
        + "; }\n"
        + f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
        + "const long long row = blockIdx.x;\n"
        + f"ACC acc = {_REDUCE_INIT[red.op]};\n"
        + "for (long long j = threadIdx.x; j < n; j += blockDim.x) {\n"
        + "\n".join(walk)
        + "\n"
        + body
        + f"\nacc = burn_combine(acc, (ACC){value});\n"
        + "}\n"
        + "for (int o = 16; o > 0; o >>= 1) acc = burn_combine(acc, __shfl_down_sync(0xffffffffu, acc, o));\n"
        + "__shared__ ACC part[32];\n"
        + "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
        + "if (lane == 0) part[warp] = acc;\n"
        + "__syncthreads();\n"
        + "if (warp == 0) {\n"
        + f"  acc = lane < (int)(blockDim.x >> 5) ? part[lane] : (ACC)({_REDUCE_INIT[red.op]});\n"
        + "  for (int o = 16; o > 0; o >>= 1) acc = burn_combine(acc, __shfl_down_sync(0xffffffffu, acc, o));\n"
        + "  if (lane == 0) {\n"
        + "\n".join(f"    {line}" for line in finish)
        + "\n  }\n"
        + "}\n"
        + "}\n"
    )


def _outputs(
    cp: Any, plan: FusedKernel, shape: tuple[int, ...], inputs: list[Prim], donors: tuple[int, ...]
) -> tuple[list[Prim], bool]:
    """The kernel parameters ``plan``'s outputs are written into (bfloat16 as bits): each output takes
    the first unused donor input of its dtype (the caller checked their shape and layout), else a
    new array of ``shape``; and whether any output is a donor."""
    free = list(donors)
    outs = []
    for dt in plan.out_dtypes():
        want = TO_NP[dt]
        k = next((i for i in free if inputs[i].dtype == want), None)
        if k is None:
            outs.append(cp.empty(shape, dtype=param_dtype(want)))
        else:
            free.remove(k)
            outs.append(bits(inputs[k]))
    return outs, len(free) < len(donors)


def _scalar_args(plan: FusedKernel, scalars: list[Any]) -> list[Any]:
    return [scalar_dtype(TO_NP[dt]).type(v) for dt, v in zip(plan.scalars, scalars)]


def _typed(plan: FusedKernel, outs: list[Prim]) -> list[Prim]:
    """Outputs allocated as kernel parameters (bfloat16 as uint16 bits) viewed as their dtypes."""
    return [o.view(TO_NP[dt]) if is_bf16(TO_NP[dt]) else o for o, dt in zip(outs, plan.out_dtypes())]


def _dense_ok(plan: FusedKernel) -> bool:
    """Plans whose every type is a plain C type in a RawKernel (CuPy's float16 class is not)."""
    types = (*plan.inputs, *plan.scalars, *(op.out for op in plan.ops), *(op.compute for op in plan.ops))
    return all(TO_NP[d].name != "float16" for d in types)


def dense_source(plan: FusedKernel, name: str, aliased: bool = False) -> str:
    """The CUDA C of a RawKernel running ``plan`` over dense inputs and outputs of one shape: the
    ElementwiseKernel body of ``source``, with each input and output indexed by the element number.
    ``aliased``: an output may be an input's buffer (written in place), so no pointer is declared
    ``__restrict__`` (each thread still loads its element of every input before any store: the
    stores come last and depend on nothing after them)."""
    _, _, body = source(plan)
    body = re.sub(r"\bl(\d+)([;)])", r"l\1[i]\2", body)
    body = re.sub(r"^o(\d+) = ", r"o\1[i] = ", body, flags=re.M)
    restrict = "" if aliased else " __restrict__"
    params = [f"const {C_TYPE[TO_NP[d]]}*{restrict} l{k}" for k, d in enumerate(plan.inputs)]
    params += [f"const {C_TYPE[scalar_dtype(TO_NP[d])]} s{k}" for k, d in enumerate(plan.scalars)]
    params += [f"{C_TYPE[TO_NP[d]]}*{restrict} o{k}" for k, d in enumerate(plan.out_dtypes())]
    params.append("const long long n")
    return (
        _kernels.PREAMBLE
        + f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
        + "const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        + "if (i >= n) return;\n"
        + body
        + "\n}\n"
    )


def _op_line(op: FusedOp, v: int) -> str:
    """The CUDA C computing op ``op`` as value ``v`` from its argument values ``v<arg>``."""
    out_c = COMPUTE_TYPE[TO_NP[op.out]]
    comp = TO_NP[op.compute]
    c = COMPUTE_TYPE[comp]
    names = [f"v{a}" for a in op.args]
    if op.kind == "where":
        expr = f"{names[0]} ? (C){names[1]} : (C){names[2]}"
        operands = ""
    else:
        if op.kind == "cast":
            expr = "a"
        elif op.kind == "clamp":
            expr = "a < b ? b : (a > c ? c : a)"
        else:
            expr = _kernels.expression(_TABLES[op.kind], op.name, comp)
        operands = " ".join(f"const C {'abc'[i]} = (C){n};" for i, n in enumerate(names))
    if is_bf16(TO_NP[op.out]):  # rounded as the unfused op stores it, carried in float
        expr = f"burn_bf16_round({expr})"
    elif out_c != C_TYPE[TO_NP[op.out]]:  # half: rounded as the unfused op stores it, carried in float
        expr = f"({C_TYPE[TO_NP[op.out]]})({expr})"
    return f"{out_c} v{v}; {{ typedef {c} C; {operands} v{v} = ({out_c})({expr}); }}"


def source(plan: FusedKernel) -> tuple[str, str, str]:
    """(in_params, out_params, body) of the ElementwiseKernel running ``plan``."""
    np_in = [TO_NP[d] for d in plan.inputs]
    np_sc = [TO_NP[d] for d in plan.scalars]
    in_params = [f"{param_dtype(d).name} l{k}" for k, d in enumerate(np_in)] + [
        f"{scalar_dtype(d).name} s{k}" for k, d in enumerate(np_sc)
    ]
    out_np = [TO_NP[d] for d in plan.out_dtypes()]
    out_params = ", ".join(f"{param_dtype(d).name} o{k}" for k, d in enumerate(out_np))
    first = plan.first_op
    ctype: list[str] = [COMPUTE_TYPE[d] for d in np_in] + [COMPUTE_TYPE[d] for d in np_sc]
    lines = [
        f"const {ctype[k]} v{k} = burn_bf16_to_f(l{k});"
        if is_bf16(d)
        else f"const {ctype[k]} v{k} = ({ctype[k]})l{k};"
        for k, d in enumerate(np_in)
    ]
    lines += [
        f"const {ctype[len(np_in) + k]} v{len(np_in) + k} = "
        + (f"burn_bf16_round(s{k});" if is_bf16(d) else f"s{k};")
        for k, d in enumerate(np_sc)
    ]
    for j, op in enumerate(plan.ops):
        lines.append(_op_line(op, first + j))
    for k, (value, d) in enumerate(zip(plan.outputs, out_np)):
        lines.append(f"o{k} = burn_f_to_bf16(v{value});" if is_bf16(d) else f"o{k} = ({C_TYPE[d]})v{value};")
    return ", ".join(in_params), out_params, "\n".join(lines)
