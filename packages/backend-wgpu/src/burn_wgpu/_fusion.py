"""Fused element-wise kernels: burn.fusion's plans rendered as WGSL.

A plan is a small expression DAG over broadcast inputs and scalars with one or more outputs of one
shape. The kernel is the element-wise kernel's layout (``_kernels/elementwise``) with several outputs:
binding 0 the metadata, then the outputs (read_write), then the inputs. Metadata: numel, the collapsed
shape, (strides, offset) of each output and input, then the scalars' bits. Each op is the expression
of the element-wise table for its dtype class, so a fused chain computes exactly what the unfused ops
compute (values in f32/i32/u32 registers, bools as 0/1 u32, f16 converted on load and store).
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Any

from burn import DType, float16, float32
from burn.fusion import FusedKernel, FusedOp, FusedReduce

from ._dtypes import WGSL, scalar_bits
from ._elementwise import broadcast_strides, collapse
from ._executor import Kernel
from ._kernels import elementwise as K
from ._kernels import matmul as KM
from ._kernels._helpers import render_helpers
from ._primitive import WgpuTensor, contiguous_strides, numel

if TYPE_CHECKING:
    from ._backend import WgpuBackend

_OPERAND = re.compile(r"\b[abc]\b")
_VEC4 = frozenset({"f32", "i32", "u32"})  # 4-byte storage: a vec4 is 16 aligned bytes
_TABLES = {"unary": K.UNARY, "binary": K.BINARY, "where": K.TERNARY, "clamp": K.TERNARY}
REDUCE_WG = 256  # the most invocations per reduce-kernel workgroup (WebGPU's portable limit)
_REDUCE_LONG = 1 << 16  # rows up to this long always reduce in one workgroup each
_REDUCE_MANY = 128  # longer ones only when there are at least this many
# op -> (initial value, combine(x, y)); max/min propagate NaN as the unfused reductions do
_REDUCE_INIT = {
    "sum": ("0.0", "x + y"),
    "mean": ("0.0", "x + y"),
    "max": ("-inf()", "b_max(x, y)"),
    "min": ("inf()", "b_min(x, y)"),
}


def _substitute(expr: str, operands: dict[str, str]) -> str:
    """``expr`` with its operands ``a``, ``b``, ``c`` renamed to value variables."""
    return _OPERAND.sub(lambda m: operands[m.group(0)], expr)


def _expression(kind: str, name: str, compute: DType, out: DType) -> tuple[str, bool]:
    if kind == "cast":
        return K.expression("cast", "cast", compute, out)
    return K.expression("ternary" if kind in ("where", "clamp") else kind, name, compute)


class WgpuFusion:
    """The ``FusionRuntime`` of burn-wgpu: renders plans as WGSL and dispatches them on the executor."""

    max_ops = 48
    reduce_epilogues = True  # reduce kernels run ``FusedReduce.post``

    def __init__(self, backend: WgpuBackend) -> None:
        self.backend = backend
        self._kernels: dict[tuple[Any, ...], Kernel] = {}
        self._epilogues: dict[tuple[Any, ...], KM.Epilogue] = {}
        # binding 0 is the metadata; every other storage binding is a tensor
        self.max_tensors = max(4, backend.ctx.limits.get("max-storage-buffers-per-shader-stage", 8) - 1)
        self.capture_failures: list[str] = []  # why recent programs could not be recorded (``_graphs``)

    def capture_program(
        self, fusion: Any, program: Any, stream: list[Any], leaves: list[Any], scalars: list[Any]
    ) -> Any:
        """Run a repeated fusion program's stream and record the program as prebuilt commands
        (``_graphs``); None when it cannot be recorded (the stream has run either way)."""
        from ._graphs import WgpuGraphProgram

        graph = WgpuGraphProgram(self, fusion, program)
        return graph if graph.capture(stream, leaves, scalars) else None

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        if compute not in self.backend.dtypes or out not in self.backend.dtypes:
            return False
        if kind == "cast":
            return True
        table = _TABLES.get(kind)
        if table is None or name not in table:
            return False
        return K.lookup(table, name, K.dclass(compute)) is not None

    def fuse_reduce(self, op: str, dtype: DType, shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
        """Reduce kernels of float32 sum/mean/max/min over trailing dims: one workgroup per result,
        so only where there are enough results or each is short (else the chunked reduction wins)."""
        if op not in _REDUCE_INIT or dtype is not float32:
            return False
        rows, n = FusedReduce(op, dims, False).rows(shape)
        return rows > 0 and n > 0 and (n <= _REDUCE_LONG or rows >= _REDUCE_MANY) and rows <= 65535 * 65535

    def fuse_matmul(self, lhs: WgpuTensor, rhs: WgpuTensor) -> bool:
        """Matmul epilogues where the matmul runs a register-blocked kernel (``_tuned.fits_epilogue``)."""
        from ._tuned import fits_epilogue

        return fits_epilogue(self.backend, lhs, rhs) is not None

    def execute(self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any]) -> list[WgpuTensor]:
        if plan.reduce is not None:
            return self._reduce(plan, inputs, scalars)
        if plan.matmul:
            return self._matmul(plan, inputs, scalars)
        return self._elementwise(plan, inputs, scalars)

    def _reduce(self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any]) -> list[WgpuTensor]:
        """A reduce kernel: one workgroup per result computes the chain over its row and reduces it,
        then runs the epilogue on the result."""
        b = self.backend
        shape, red = plan.shape, plan.reduce
        assert red is not None
        rshape = red.shape(shape)
        outs = [b.empty(rshape, dt) for dt in red.store_dtypes(plan)]
        rows, n = red.rows(shape)
        if rows == 0:
            return outs
        pre = red.pre_reads(plan)
        zeros = (0,) * len(shape)  # an input only the epilogue reads: no element walk over it
        cshape, cstrides = collapse(
            shape, [broadcast_strides(t, shape) if k in pre else zeros for k, t in enumerate(inputs)]
        )
        dense = contiguous_strides(cshape)
        contig = all(s == dense for k, s in enumerate(cstrides) if k in pre)
        wg = min(REDUCE_WG, max(32, 1 << (n - 1).bit_length()))
        spec = ("reduce", len(cshape), contig, wg)
        kernel = plan.cache.get(spec)
        if kernel is None:
            kernel = self._kernels.get((plan.key, *spec))
            if kernel is None:
                kernel = self._kernels[(plan.key, *spec)] = render_reduce(plan, len(cshape), contig, wg)
            plan.cache[spec] = kernel
        words = [rows, n, *cshape]
        for st, t in zip(cstrides, inputs):
            words += [*st, t.offset]
        if red.post:  # the epilogue's view of its inputs: over the result's shape
            reads = red.post_reads()
            words += list(rshape)
            for k, t in enumerate(inputs):
                if k in reads:
                    words += [*broadcast_strides(t, rshape), t.offset]
        # the scalars last: a recorded program rewrites them there (``_graphs``)
        words += [scalar_bits(dt, v) for dt, v in zip(plan.scalars, scalars)]
        meta = struct.pack(f"<{len(words)}I", *words)
        gx = min(rows, 65535)
        buffers = [*(o.buffer for o in outs), *(t.buffer for t in inputs)]
        b.ex.dispatch(kernel, buffers, meta, (gx, -(-rows // gx), 1))
        return outs

    def _matmul(self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any]) -> list[WgpuTensor]:
        """A matmul epilogue: the blocked kernel stores each product through the plan's ops; where the
        matmul runs another kernel for these operands, the product is written and the ops follow."""
        from ._tuned import fits_epilogue, matmul_blocked

        b = self.backend
        a, w, rest = inputs[0], inputs[1], inputs[2:]
        case = (a.shape, a.strides, w.shape, w.strides)  # what the tuner's choice depends on
        chosen = plan.cache.get(case, False)
        if chosen is False:
            chosen = plan.cache[case] = fits_epilogue(b, a, w)
        half = float16 in plan.inputs or any(float16 in (op.out, op.compute) for op in plan.ops)
        if chosen is None or half or numel(plan.shape) == 0:  # the product written, then the ops
            product = b.matmul(a, w)
            values = iter(self._elementwise(plan.product_chain(), [product, *rest], scalars))
            return [product if v == 0 else next(values) for v in plan.outputs]
        block, prefetch = chosen
        shape = plan.shape
        outs = [b.empty(shape, dt) for dt in plan.out_dtypes()]
        cshape, cstrides = collapse(shape, [broadcast_strides(t, shape) for t in rest])
        dense = contiguous_strides(cshape)
        contig = all(s == dense for s in cstrides)
        spec = ("epilogue", len(cshape), contig)
        part = plan.cache.get(spec)
        if part is None:
            part = self._epilogues.get((plan.key, *spec))
            if part is None:
                part = self._epilogues[(plan.key, *spec)] = render_epilogue(plan, len(cshape), contig)
            plan.cache[spec] = part
        words = [*cshape]
        for st, t in zip(cstrides, rest):
            words += [*st, t.offset]
        words += [scalar_bits(dt, v) for dt, v in zip(plan.scalars, scalars)]
        tail = struct.pack(f"<{len(words)}I", *words)
        matmul_blocked(b, a, w, block, prefetch=prefetch, epilogue=(part, outs, rest, tail))
        return outs

    def execute_reusing(
        self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any], donors: tuple[int, ...]
    ) -> list[WgpuTensor]:
        """``execute``, writing an output of an element-wise plan into a dead dense input of its
        dtype and shape (``donors``); the shader then reads that input from the output's binding (a
        dispatch may not bind one buffer as read-only and writable storage)."""
        if plan.reduce is not None or plan.matmul:
            return self.execute(plan, inputs, scalars)
        return self._elementwise(plan, inputs, scalars, donors)

    def _elementwise(
        self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any], donors: tuple[int, ...] = ()
    ) -> list[WgpuTensor]:
        b = self.backend
        shape = plan.shape
        alias: list[tuple[int, int]] = []  # (input, output) pairs: the output is written into the input
        free = [i for i in donors if inputs[i].shape == shape and inputs[i].is_contiguous]
        outs = []
        for j, dt in enumerate(plan.out_dtypes()):
            k = next((i for i in free if inputs[i].dtype is dt), None)
            if k is None:
                outs.append(b.empty(shape, dt))
            else:
                free.remove(k)
                alias.append((k, j))
                outs.append(inputs[k])
        n = numel(shape)
        if n == 0:
            return outs
        if alias:
            aliased = {k for k, _ in alias}
            inputs = [t for i, t in enumerate(inputs) if i not in aliased]
        tensors = [*outs, *inputs]
        cshape, cstrides = collapse(shape, [broadcast_strides(t, shape) for t in tensors])
        dense = contiguous_strides(cshape)
        contig = all(s == dense for s in cstrides)
        vec4 = contig and n % 4 == 0 and all(t.offset % 4 == 0 and WGSL[t.dtype] in _VEC4 for t in tensors)
        spec = (len(cshape), contig, vec4, tuple(alias))
        kernel = plan.cache.get(spec)
        if kernel is None:
            kernel = self._kernels.get((plan.key, *spec))
            if kernel is None:
                kernel = self._kernels[(plan.key, *spec)] = render(plan, *spec)
            plan.cache[spec] = kernel
        if vec4:
            words = [n // 4, *(t.offset // 4 for t in tensors)]
        else:
            words = [n, *cshape]
            for st, t in zip(cstrides, tensors):
                words += [*st, t.offset]
        words += [scalar_bits(dt, v) for dt, v in zip(plan.scalars, scalars)]
        meta = struct.pack(f"<{len(words)}I", *words)
        b.ex.dispatch(kernel, [t.buffer for t in tensors], meta, K.grid(n // 4 if vec4 else n))
        return outs


def render(
    plan: FusedKernel, nd: int, contig: bool, vec4: bool = False, alias: tuple[tuple[int, int], ...] = ()
) -> Kernel:
    """The WGSL of ``plan`` for collapsed rank ``nd`` (``contig``: every tensor dense, no index math;
    ``vec4``: dense 4-byte tensors with numel and offsets multiples of 4, four elements per invocation
    read and written as ``vec4``, the ops running per component). ``alias``: (input, output) pairs
    whose output is written into the input's buffer: that input has no binding of its own and is read
    from the output's element before it is stored."""
    inputs, scalars, ops, outputs = plan.inputs, plan.scalars, plan.ops, plan.outputs
    first = len(inputs) + len(scalars)
    out_dtypes = [ops[v - first].out for v in outputs]
    source = {k: f"out{j}" for k, j in alias}  # each input's binding
    bound = [k for k in range(len(inputs)) if k not in source]
    source.update({k: f"in{k}" for k in bound})
    names = [f"out{k}" for k in range(len(outputs))] + [f"in{k}" for k in bound]
    lines = []
    if float16 in (*inputs, *(op.out for op in ops)):
        lines.append("enable f16;")
    lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    elem = (lambda dt: f"vec4<{WGSL[dt]}>") if vec4 else (lambda dt: WGSL[dt])
    for k, dt in enumerate(out_dtypes):
        lines.append(f"@group(0) @binding({k + 1}) var<storage, read_write> out{k}: array<{elem(dt)}>;")
    for binding, k in enumerate(bound, len(outputs) + 1):
        lines.append(f"@group(0) @binding({binding}) var<storage, read> in{k}: array<{elem(inputs[k])}>;")
    body = [f"let i = gid.x + gid.y * (nwg.x * {K.WG}u);", "if (i >= info[0]) { return; }"]
    if vec4:  # metadata: numel / 4, each tensor's offset / 4, the scalars
        body += [f"let o_{name} = i + info[{1 + j}u];" for j, name in enumerate(names)]
        scalar_at = 1 + len(names)
    else:  # metadata: numel, shape, (strides, offset) per tensor, the scalars
        body += _offsets(names, nd, 1, "i", contig)
        scalar_at = 1 + nd + (nd + 1) * len(names)
    for k, dt in enumerate(scalars):
        cls = K.dclass(dt)
        word = f"info[{scalar_at + k}u]"
        value = {"f": f"bitcast<f32>({word})", "i": f"bitcast<i32>({word})"}.get(cls, word)
        if dt is float16:  # an f16 op's scalar is an f16 value, as the unfused kernel reads it
            value = f"b_round_f16({value})"
        body.append(f"let v{len(inputs) + k} = {value};")
    compute = []
    for j, op in enumerate(ops):
        expr, is_bool = _expression(op.kind, op.name, op.compute, op.out)
        value = "(" + _substitute(expr, {"abc"[i]: f"v{a}" for i, a in enumerate(op.args)}) + ")"
        if is_bool:
            value = f"select(0u, 1u, {value})"
        elif op.out is float16:  # rounded as the unfused op stores it; carried on in f32
            value = f"b_round_f16{value}"
        compute.append(f"let v{first + j} = {value};")
    if vec4:
        body += [f"let l{k} = {source[k]}[o_{source[k]}];" for k in range(len(inputs))]
        body += [f"var r{k}: vec4<{WGSL[dt]}>;" for k, dt in enumerate(out_dtypes)]
        for c in range(4):
            loads = [f"let v{k} = l{k}[{c}];" for k in range(len(inputs))]
            stores = [f"r{k}[{c}] = v{v};" for k, v in enumerate(outputs)]
            body.append("{ " + " ".join(loads + compute + stores) + " }")
        body += [f"out{k}[o_out{k}] = r{k};" for k in range(len(outputs))]
    else:
        for k, dt in enumerate(inputs):
            raw = f"{source[k]}[o_{source[k]}]"
            body.append(f"let v{k} = {f'f32({raw})' if dt is float16 else raw};")
        body += compute
        for k, (v, dt) in enumerate(zip(outputs, out_dtypes)):
            body.append(f"out{k}[o_out{k}] = {f'f16(v{v})' if dt is float16 else f'v{v}'};")
    joined = " ".join(body)
    helpers = tuple(dict.fromkeys(K._HELPER_RE.findall(joined)))
    if "b_f2u" in joined and "b_f2u" not in helpers:
        helpers += ("b_f2u",)
    if helpers:
        lines.append(render_helpers(helpers))
    lines.append(
        f"@compute @workgroup_size({K.WG})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        + "\n".join(f"    {line}" for line in body)
        + "\n}"
    )
    layout = "vec4" if vec4 else f"{nd}d{'_contig' if contig else ''}"
    label = f"fused_{len(ops)}ops_{len(outputs)}out_{layout}{'_inplace' if alias else ''}"
    return Kernel(label, "\n".join(lines) + "\n", ("rw",) * len(outputs) + ("read",) * len(bound))


def _offsets(names: list[str], nd: int, at: int | str, index: str, contig: bool) -> list[str]:
    """WGSL giving each tensor ``o_<name>``: its element at flat position ``index`` of the iteration.
    Metadata from ``info[at]`` on (``at``: a word number, or WGSL ending in ``+ `` added to each):
    the collapsed shape (``nd``), then (strides, offset) per name."""

    def word(k: int) -> str:
        return f"info[{at + k}u]" if isinstance(at, int) else f"info[{at}{k}u]"

    block = nd + 1
    slot = {name: nd + block * j for j, name in enumerate(names)}
    if contig:
        return [f"let o_{name} = {index} + {word(slot[name] + nd)};" for name in names]
    lines = [f"var r = {index};"]
    lines += [f"var o_{name} = {word(slot[name] + nd)};" for name in names]
    for d in range(nd - 1, -1, -1):
        lines.append(f"let c{d} = r % {word(d)};")
        if d:
            lines.append(f"r = r / {word(d)};")
        lines += [f"o_{name} += c{d} * {word(slot[name] + d)};" for name in names]
    return lines


def _scalar_lines(plan: FusedKernel, at: str) -> list[str]:
    """``let v<k>`` for each scalar of ``plan``, read from ``info[at + j]``."""
    lines = []
    for k, dt in enumerate(plan.scalars):
        cls = K.dclass(dt)
        word = f"info[{at}{k}u]"
        value = {"f": f"bitcast<f32>({word})", "i": f"bitcast<i32>({word})"}.get(cls, word)
        if dt is float16:
            value = f"b_round_f16({value})"
        lines.append(f"let v{len(plan.inputs) + k} = {value};")
    return lines


def _op_lines(
    plan: FusedKernel, ops: tuple[FusedOp, ...] | None = None, first: int | None = None
) -> list[str]:
    """``let v<k>`` for each op of ``plan`` (the element-wise table's expressions, as ``render``);
    ``ops`` numbered from ``first``: another op list (a reduce epilogue's)."""
    if ops is None:
        ops, first = plan.ops, plan.first_op
    assert first is not None
    lines = []
    for j, op in enumerate(ops):
        expr, is_bool = _expression(op.kind, op.name, op.compute, op.out)
        value = "(" + _substitute(expr, {"abc"[i]: f"v{a}" for i, a in enumerate(op.args)}) + ")"
        if is_bool:
            value = f"select(0u, 1u, {value})"
        elif op.out is float16:
            value = f"b_round_f16{value}"
        lines.append(f"let v{first + j} = {value};")
    return lines


def _loads(plan: FusedKernel, start: int = 0, only: frozenset[int] | None = None) -> list[str]:
    """``let v<k>`` for each input from ``start`` (``only``: those numbers alone)."""
    return [
        f"let v{k} = {f'f32(in{k}[o_in{k}])' if dt is float16 else f'in{k}[o_in{k}]'};"
        for k, dt in enumerate(plan.inputs)
        if k >= start and (only is None or k in only)
    ]


def _helpers(code: str, extra: tuple[str, ...] = ()) -> str:
    helpers = tuple(dict.fromkeys(K._HELPER_RE.findall(code))) + extra
    if "b_f2u" in code and "b_f2u" not in helpers:
        helpers += ("b_f2u",)
    return render_helpers(tuple(dict.fromkeys(helpers))) if helpers else ""


def render_reduce(plan: FusedKernel, nd: int, contig: bool, wg: int = REDUCE_WG) -> Kernel:
    """The WGSL of reduce kernel ``plan`` (collapsed rank ``nd``; ``contig``: every input dense): one
    workgroup of ``wg`` invocations per result, each invocation computing the chain at every ``wg``-th
    element of the row and accumulating it, then a tree reduction in workgroup memory; invocation 0
    runs the epilogue (``FusedReduce.post``) on the result and stores each stored value. Bindings:
    the metadata, the stored values, the inputs. Metadata: results, row length, the collapsed shape,
    (strides, offset) per input, for the epilogue the result's shape (rank ``rr``, uncollapsed) and
    (strides, offset) per input it reads, then the scalars."""
    red = plan.reduce
    assert red is not None
    init, combine = _REDUCE_INIT[red.op]
    names = [f"in{k}" for k in range(len(plan.inputs))]
    stores = red.stores(plan)
    post_reads = red.post_reads()
    post_ins = [k for k in range(len(plan.inputs)) if k in post_reads]
    pre_ins = red.pre_reads(plan)
    lines = []
    if float16 in (*plan.inputs, *(op.out for op in plan.ops)):
        lines.append("enable f16;")
    lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    for j in range(len(stores)):
        lines.append(f"@group(0) @binding({1 + j}) var<storage, read_write> out{j}: array<f32>;")
    for k, dt in enumerate(plan.inputs):
        binding = 1 + len(stores) + k
        lines.append(f"@group(0) @binding({binding}) var<storage, read> in{k}: array<{WGSL[dt]}>;")
    lines.append(f"var<workgroup> sh: array<f32, {wg}>;")
    element = [
        *_offsets(names, nd, "2u + ", "i", contig),
        *_loads(plan, only=pre_ins),
        *_op_lines(plan),
        f"acc = combine(acc, f32(v{plan.outputs[0]}));",
    ]
    post_at = 2 + nd + (nd + 1) * len(names)
    rr = len(red.shape(plan.shape))
    scalar_at = post_at + (rr + (rr + 1) * len(post_ins) if red.post else 0)
    reduced = red.reduced_value(plan)
    result = "sh[0] / f32(n)" if red.op == "mean" else "sh[0]"
    finish = [f"let v{reduced} = {result};"]
    if red.post:
        finish += _offsets([f"in{k}" for k in post_ins], rr, f"{post_at}u + ", "g", False)
        finish += [f"let v{k} = in{k}[o_in{k}];" for k in post_ins]
        finish += _op_lines(plan, red.post, reduced + 1)
    finish += [f"out{j}[g] = v{v};" for j, v in enumerate(stores)]
    body = [
        "let g = wid.x + wid.y * nwg.x;",
        "let n = info[1];",
        "let valid = g < info[0];",
        *_scalar_lines(plan, f"{scalar_at}u + "),
        f"var acc: f32 = {init};",
        "if (valid) {",
        f"    for (var j = lid.x; j < n; j += {wg}u) {{",
        "        let i = g * n + j;",
        *(f"        {line}" for line in element),
        "    }",
        "}",
        "sh[lid.x] = acc;",
        "workgroupBarrier();",
        f"for (var s = {wg // 2}u; s > 0u; s = s >> 1u) {{",
        "    if (lid.x < s) { sh[lid.x] = combine(sh[lid.x], sh[lid.x + s]); }",
        "    workgroupBarrier();",
        "}",
        "if (lid.x == 0u && valid) {",
        *(f"    {line}" for line in finish),
        "}",
    ]
    code = " ".join(body) + combine
    helpers = _helpers(code, ("inf",) if "inf()" in code else ())
    if helpers:
        lines.append(helpers)
    lines.append(f"fn combine(x: f32, y: f32) -> f32 {{ return {combine}; }}")
    lines.append(
        f"@compute @workgroup_size({wg})\n"
        "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,\n"
        "        @builtin(num_workgroups) nwg: vec3<u32>) {\n"
        + "\n".join(f"    {line}" for line in body)
        + "\n}"
    )
    post = f"_post{len(red.post)}x{len(stores)}" if red.post else ""
    label = f"fused_reduce_{red.op}_{len(plan.ops)}ops{post}_{nd}d{'_contig' if contig else ''}_wg{wg}"
    return Kernel(label, "\n".join(lines) + "\n", ("rw",) * len(stores) + ("read",) * len(plan.inputs))


def render_epilogue(plan: FusedKernel, nd: int, contig: bool) -> KM.Epilogue:
    """The epilogue of matmul plan ``plan`` for a blocked matmul kernel (``_kernels.matmul``): value 0
    is the product element, inputs 1.. are read at its position (collapsed rank ``nd`` of the output
    shape; ``contig``: all dense), and each output is stored at it (outputs are dense). Bindings from
    4: the outputs after the first (which is the kernel's ``out``), then inputs 1... Metadata at
    ``EPI``: the collapsed shape, (strides, offset) per input 1.., the scalars."""
    out_dtypes = plan.out_dtypes()
    names = [f"in{k}" for k in range(1, len(plan.inputs))]
    decls = []
    binding = 4
    for k, dt in enumerate(out_dtypes[1:], 1):
        decls.append(f"@group(0) @binding({binding}) var<storage, read_write> out{k}: array<{WGSL[dt]}>;")
        binding += 1
    for k in range(1, len(plan.inputs)):
        decls.append(
            f"@group(0) @binding({binding}) var<storage, read> in{k}: array<{WGSL[plan.inputs[k]]}>;"
        )
        binding += 1
    body = [
        *(_offsets(names, nd, "EPI + ", "e", contig) if names else []),
        *_loads(plan, 1),
        *_scalar_lines(plan, f"EPI + {nd + (nd + 1) * len(names)}u + "),
        *_op_lines(plan),
    ]
    for k, (v, dt) in enumerate(zip(plan.outputs, out_dtypes)):
        target = "out" if k == 0 else f"out{k}"
        body.append(f"{target}[e] = {f'f16(v{v})' if dt is float16 else f'v{v}'};")
    source = "\n".join(decls)
    helpers = _helpers(" ".join(body))
    if helpers:
        source += "\n" + helpers
    source += "\nfn epilogue(e: u32, v0: f32) {\n" + "\n".join(f"    {line}" for line in body) + "\n}"
    access = ("rw",) * (len(out_dtypes) - 1) + ("read",) * len(names)
    name = f"epi{len(plan.ops)}ops{len(out_dtypes)}out{nd}d{'c' if contig else ''}"
    return KM.Epilogue(source, WGSL[out_dtypes[0]], access, name)
