"""WGSL for fused kernels: burn.fusion's kernel skeletons (``burn.fusion.skeleton``) spelled in WGSL.

Each op is the expression of the element-wise table (``_kernels/elementwise``) for its dtype class,
so a fused chain computes exactly what the unfused ops compute: values in f32/i32/u32 registers,
bools as 0/1 u32, f16 converted on load and store (each f16 op's value rounded as the unfused op
stores it, carried on in f32), each narrow int op's value (int8, uint8, int16: stored widened)
wrapped into its dtype's range where it is computed, as the unfused op stores it, so a later op of
the chain reads what it would read from memory. Three kernel templates place the skeleton's stages:

- ``render``: the element-wise kernel's layout with several outputs: binding 0 the metadata, then
  the outputs (read_write), then the inputs. Metadata: numel, the collapsed shape, (strides, offset)
  of each output and input, then the scalars' bits;
- ``render_reduce``: one workgroup per result of a reduce kernel;
- ``render_epilogue``: the function a blocked matmul kernel (``_kernels.matmul``) calls on each product.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from burn import DType, float16
from burn.fusion import Apply, FusedKernel, FusedOp, Load, Renderer, ScalarLoad, Skeleton, Store, skeleton

from ._dtypes import WGSL, wrap
from ._executor import Kernel
from ._kernels import elementwise as K
from ._kernels import matmul as KM
from ._kernels._helpers import render_helpers

_OPERAND = re.compile(r"\b[abc]\b")
REDUCE_WG = 256  # the most invocations per reduce-kernel workgroup (WebGPU's portable limit)
# how two partial results x, y of a reduction combine; max/min propagate NaN as the unfused reductions do
COMBINE = {"sum": "x + y", "mean": "x + y", "max": "b_max(x, y)", "min": "b_min(x, y)"}
_SCALAR = {"f": "bitcast<f32>({})", "i": "bitcast<i32>({})"}  # a metadata word as a scalar (u32: itself)
_MAIN = "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n"


def _helpers(code: str, extra: tuple[str, ...] = ()) -> str:
    """The WGSL of the helper functions ``code`` calls (and ``extra``)."""
    helpers = tuple(dict.fromkeys(K._HELPER_RE.findall(code))) + extra
    if "b_f2u" in code and "b_f2u" not in helpers:
        helpers += ("b_f2u",)
    return render_helpers(tuple(dict.fromkeys(helpers))) if helpers else ""


def _uses_f16(plan: FusedKernel) -> bool:
    return float16 in (*plan.inputs, *(op.out for op in plan.ops))


def _expression(kind: str, name: str, compute: DType, out: DType) -> tuple[str, bool]:
    """(the table's expression, whether its result is a WGSL bool) of an op."""
    if kind == "cast":
        return K.expression("cast", "cast", compute, out)
    return K.expression("ternary" if kind in ("where", "clamp") else kind, name, compute)


@functools.lru_cache(maxsize=4096)
def _template(kind: str, name: str, compute: DType, out: DType) -> str:
    """``WgslRenderer.apply``'s line for an op, as a format string of (value, *operand values): the
    table's expression parsed once per op and dtypes, not once per kernel."""
    expr, is_bool = _expression(kind, name, compute, out)
    expr = expr.replace("{", "{{").replace("}", "}}")
    value = "(" + _OPERAND.sub(lambda m: f"v{{{'abc'.index(m.group(0)) + 1}}}", expr) + ")"
    if is_bool:
        value = f"select(0u, 1u, {value})"
    elif out is float16:  # rounded as the unfused op stores it; carried on in f32
        value = f"b_round_f16{value}"
    else:  # a narrow int wrapped as the unfused op stores it (the value of every later op and store)
        value = wrap(out, value)
    return f"let v{{0}} = {value};"


class WgslRenderer(Renderer):
    """The WGSL spelling of a skeleton, for a collapsed iteration of rank ``nd`` (``contig``: every
    tensor dense, no index math; ``vec4``: dense 4-byte tensors read and written as ``vec4``, the
    ops running per component; ``alias``: (input, output) pairs of an element-wise kernel whose
    output is written into the input's buffer)."""

    def __init__(
        self, nd: int = 1, contig: bool = False, vec4: bool = False, alias: tuple[tuple[int, int], ...] = ()
    ) -> None:
        self.nd = nd
        self.contig = contig
        self.vec4 = vec4
        self.alias = alias

    def type(self, dtype: DType) -> str:
        return K.compute_type(dtype)

    def storage(self, dtype: DType) -> str:
        return f"vec4<{WGSL[dtype]}>" if self.vec4 else WGSL[dtype]

    def expression(self, op: FusedOp) -> str:
        return _expression(op.kind, op.name, op.compute, op.out)[0]

    def apply(self, stmt: Apply) -> str:
        op = stmt.op
        return _template(op.kind, op.name, op.compute, op.out).format(stmt.value, *op.args)

    def load(self, stmt: Load, element: str) -> str:
        return f"let v{stmt.value} = {f'f32({element})' if stmt.dtype is float16 else element};"

    def scalar(self, stmt: ScalarLoad, element: str) -> str:
        dt = stmt.dtype
        value = _SCALAR.get(K.dclass(dt), "{}").format(element)
        if dt is float16:  # an f16 op's scalar is an f16 value, as the unfused kernel reads it
            value = f"b_round_f16({value})"
        return f"let v{stmt.value} = {value};"

    def store(self, stmt: Store, element: str) -> str:
        return f"{element} = {f'f16(v{stmt.value})' if stmt.dtype is float16 else f'v{stmt.value}'};"

    def index(
        self, names: Sequence[str], rank: int, position: str, meta: str, dense: bool | None = None
    ) -> list[str]:
        """``o_<name>`` for each name: its element at flat ``position``. ``meta``: the metadata's
        first word (a number, or WGSL ending in ``+ `` added to each word number): the collapsed
        shape (``rank``), then (strides, offset) per name. ``dense`` (default: ``contig``): every
        tensor dense, no index math."""

        def word(k: int) -> str:
            return f"info[{int(meta) + k}u]" if meta.isdigit() else f"info[{meta}{k}u]"

        block = rank + 1
        slot = {name: rank + block * j for j, name in enumerate(names)}
        if self.contig if dense is None else dense:
            return [f"let o_{name} = {position} + {word(slot[name] + rank)};" for name in names]
        lines = [f"var r = {position};"]
        lines += [f"var o_{name} = {word(slot[name] + rank)};" for name in names]
        for d in range(rank - 1, -1, -1):
            lines.append(f"let c{d} = r % {word(d)};")
            if d:
                lines.append(f"r = r / {word(d)};")
            lines += [f"o_{name} += c{d} * {word(slot[name] + d)};" for name in names]
        return lines

    def literal(self, x: float, dtype: DType) -> str:
        if x in (float("inf"), float("-inf")):
            return "inf()" if x > 0 else "-inf()"  # WGSL has no infinity literal: ``inf`` makes one
        cls = K.dclass(dtype)
        return repr(float(x)) if cls == "f" else f"{int(x)}{'i' if cls == 'i' else 'u'}"

    def params(self, sk: Skeleton) -> list[str]:
        """Storage bindings from 1: the stored outputs (read_write), then the inputs read (an
        element-wise kernel's aliased inputs have none; a matmul epilogue's bindings start at 4 with
        its second output, the first and the operands being the matmul kernel's)."""
        plan = sk.plan
        outs: Sequence[Store] = sk.stores
        binding = 1
        if sk.matmul:
            outs, binding = outs[1:], 4
            ins = list(range(1, len(plan.inputs)))
        else:
            aliased = {k for k, _ in self.alias}
            ins = [k for k in range(len(plan.inputs)) if k not in aliased]
        lines = []
        for s in outs:
            lines.append(
                f"@group(0) @binding({binding}) var<storage, read_write> out{s.output}: "
                f"array<{self.storage(s.dtype)}>;"
            )
            binding += 1
        for k in ins:
            lines.append(
                f"@group(0) @binding({binding}) var<storage, read> in{k}: array<{self.storage(plan.inputs[k])}>;"
            )
            binding += 1
        return lines

    def elementwise(self, sk: Skeleton) -> Kernel:
        """The element-wise kernel (see ``render``)."""
        plan, main, nd, vec4 = sk.plan, sk.main, self.nd, self.vec4
        inputs, outputs = plan.inputs, plan.outputs
        source = {k: f"out{j}" for k, j in self.alias}  # each input's binding
        bound = [k for k in range(len(inputs)) if k not in source]
        source.update({k: f"in{k}" for k in bound})
        names = [f"out{k}" for k in range(len(outputs))] + [f"in{k}" for k in bound]
        lines = ["enable f16;"] if _uses_f16(plan) else []
        lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
        lines += self.params(sk)
        body = [f"let i = gid.x + gid.y * (nwg.x * {K.WG}u);", "if (i >= info[0]) { return; }"]
        if vec4:  # metadata: numel / 4, each tensor's offset / 4, the scalars
            body += [f"let o_{name} = i + info[{1 + j}u];" for j, name in enumerate(names)]
            scalar_at = 1 + len(names)
        else:  # metadata: numel, shape, (strides, offset) per tensor, the scalars
            body += self.index(names, nd, "i", "1")
            scalar_at = 1 + nd + (nd + 1) * len(names)
        body += self.lines(main.scalars, scalar_at=lambda j: f"info[{scalar_at + j}u]")
        compute = self.lines(main.ops)
        if vec4:
            body += [f"let l{k} = {source[k]}[o_{source[k]}];" for k in range(len(inputs))]
            body += [f"var r{s.output}: vec4<{WGSL[s.dtype]}>;" for s in main.stores]
            for c in range(4):
                loads = self.lines(main.loads, load_at=f"l{{}}[{c}]".format)
                stores = self.lines(main.stores, store_at=f"r{{}}[{c}]".format)
                body.append("{ " + " ".join(loads + compute + stores) + " }")
            body += [f"out{k}[o_out{k}] = r{k};" for k in range(len(outputs))]
        else:
            body += self.lines(main.loads, load_at=lambda k: f"{source[k]}[o_{source[k]}]")
            body += compute
            body += self.lines(main.stores, store_at=lambda j: f"out{j}[o_out{j}]")
        helpers = _helpers(" ".join(body))
        if helpers:
            lines.append(helpers)
        lines.append(
            f"@compute @workgroup_size({K.WG})\n" + _MAIN + "\n".join(f"    {line}" for line in body) + "\n}"
        )
        layout = "vec4" if vec4 else f"{nd}d{'_contig' if self.contig else ''}"
        label = f"fused_{len(plan.ops)}ops_{len(outputs)}out_{layout}{'_inplace' if self.alias else ''}"
        return Kernel(label, "\n".join(lines) + "\n", ("rw",) * len(outputs) + ("read",) * len(bound))

    def reduce(self, sk: Skeleton, wg: int = REDUCE_WG) -> Kernel:
        """The reduce kernel (see ``render_reduce``)."""
        plan, main, red, nd = sk.plan, sk.main, sk.reduce, self.nd
        assert red is not None
        post = red.post
        combine = COMBINE[red.op]
        names = [f"in{k}" for k in range(len(plan.inputs))]
        stores = post.stores
        lines = ["enable f16;"] if _uses_f16(plan) else []
        lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
        lines += self.params(sk)
        lines.append(f"var<workgroup> sh: array<f32, {wg}>;")
        element = [
            *self.index(names, nd, "i", "2u + "),
            *self.lines(main.loads, load_at=lambda k: f"in{k}[o_in{k}]"),
            *self.lines(main.ops),
            f"acc = combine(acc, f32(v{red.value}));",
        ]
        post_at = 2 + nd + (nd + 1) * len(names)
        rr = len(plan.out_shape())
        scalar_at = post_at + (rr + (rr + 1) * len(post.loads) if post.ops else 0)
        result = "sh[0] / f32(n)" if red.op == "mean" else "sh[0]"
        finish = [f"let v{red.reduced} = {result};"]
        if post.ops:  # the scalars are the ones loaded at the top
            finish += self.index([f"in{s.value}" for s in post.loads], rr, "g", f"{post_at}u + ", dense=False)
            finish += self.lines(post.loads, load_at=lambda k: f"in{k}[o_in{k}]")
            finish += self.lines(post.ops)
        finish += self.lines(stores, store_at=lambda j: f"out{j}[g]")
        body = [
            "let g = wid.x + wid.y * nwg.x;",
            "let n = info[1];",
            "let valid = g < info[0];",
            *self.lines(main.scalars, scalar_at=lambda j: f"info[{scalar_at}u + {j}u]"),
            f"var acc: f32 = {self.literal(red.identity, red.dtype)};",
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
        tail = f"_post{len(post.ops)}x{len(stores)}" if post.ops else ""
        label = (
            f"fused_reduce_{red.op}_{len(plan.ops)}ops{tail}_{nd}d{'_contig' if self.contig else ''}_wg{wg}"
        )
        return Kernel(label, "\n".join(lines) + "\n", ("rw",) * len(stores) + ("read",) * len(plan.inputs))

    def epilogue(self, sk: Skeleton) -> KM.Epilogue:
        """The matmul epilogue (see ``render_epilogue``)."""
        plan, main, nd = sk.plan, sk.main, self.nd
        names = [f"in{s.value}" for s in main.loads]
        scalar_at = f"EPI + {nd + (nd + 1) * len(names)}u + "
        body = [
            *(self.index(names, nd, "e", "EPI + ") if names else []),
            *self.lines(
                main.statements,
                load_at=lambda k: f"in{k}[o_in{k}]",
                scalar_at=lambda j: f"info[{scalar_at}{j}u]",
                store_at=lambda j: f"out{j or ''}[e]",  # output 0 is the matmul kernel's ``out``
            ),
        ]
        source = "\n".join(self.params(sk))
        helpers = _helpers(" ".join(body))
        if helpers:
            source += "\n" + helpers
        source += "\nfn epilogue(e: u32, v0: f32) {\n" + "\n".join(f"    {line}" for line in body) + "\n}"
        out_dtypes = plan.out_dtypes()
        access = ("rw",) * (len(out_dtypes) - 1) + ("read",) * len(names)
        name = f"epi{len(plan.ops)}ops{len(out_dtypes)}out{nd}d{'c' if self.contig else ''}"
        return KM.Epilogue(source, WGSL[out_dtypes[0]], access, name)


def render(
    plan: FusedKernel, nd: int, contig: bool, vec4: bool = False, alias: tuple[tuple[int, int], ...] = ()
) -> Kernel:
    """The WGSL of element-wise ``plan`` for collapsed rank ``nd`` (``contig``: every tensor dense, no
    index math; ``vec4``: dense 4-byte tensors with numel and offsets multiples of 4, four elements
    per invocation read and written as ``vec4``, the ops running per component). ``alias``: (input,
    output) pairs whose output is written into the input's buffer: that input has no binding of its
    own and is read from the output's element before it is stored."""
    return WgslRenderer(nd, contig, vec4, alias).elementwise(skeleton(plan))


def render_reduce(plan: FusedKernel, nd: int, contig: bool, wg: int = REDUCE_WG) -> Kernel:
    """The WGSL of reduce kernel ``plan`` (collapsed rank ``nd``; ``contig``: every input dense): one
    workgroup of ``wg`` invocations per result, each invocation computing the chain at every ``wg``-th
    element of the row and accumulating it, then a tree reduction in workgroup memory; invocation 0
    runs the epilogue (``FusedReduce.post``) on the result and stores each stored value. Bindings:
    the metadata, the stored values, the inputs. Metadata: results, row length, the collapsed shape,
    (strides, offset) per input, for the epilogue the result's shape (rank ``rr``, uncollapsed) and
    (strides, offset) per input it reads, then the scalars."""
    return WgslRenderer(nd, contig).reduce(skeleton(plan), wg)


def render_epilogue(plan: FusedKernel, nd: int, contig: bool) -> KM.Epilogue:
    """The epilogue of matmul plan ``plan`` for a blocked matmul kernel (``_kernels.matmul``): value 0
    is the product element, inputs 1.. are read at its position (collapsed rank ``nd`` of the output
    shape; ``contig``: all dense), and each output is stored at it (outputs are dense). Bindings from
    4: the outputs after the first (which is the kernel's ``out``), then inputs 1... Metadata at
    ``EPI``: the collapsed shape, (strides, offset) per input 1.., the scalars."""
    return WgslRenderer(nd, contig).epilogue(skeleton(plan))
