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

from burn import DType, float16
from burn.fusion import FusedKernel

from ._dtypes import WGSL, scalar_bits
from ._elementwise import broadcast_strides, collapse
from ._executor import Kernel
from ._kernels import elementwise as K
from ._kernels._helpers import render_helpers
from ._primitive import WgpuTensor, contiguous_strides, numel

if TYPE_CHECKING:
    from ._backend import WgpuBackend

_OPERAND = re.compile(r"\b[abc]\b")
_VEC4 = frozenset({"f32", "i32", "u32"})  # 4-byte storage: a vec4 is 16 aligned bytes
_TABLES = {"unary": K.UNARY, "binary": K.BINARY, "where": K.TERNARY, "clamp": K.TERNARY}


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

    def __init__(self, backend: WgpuBackend) -> None:
        self.backend = backend
        self._kernels: dict[tuple[Any, ...], Kernel] = {}
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

    def execute(self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any]) -> list[WgpuTensor]:
        b = self.backend
        shape = plan.shape
        outs = [b.empty(shape, dt) for dt in plan.out_dtypes()]
        n = numel(shape)
        if n == 0:
            return outs
        tensors = [*outs, *inputs]
        cshape, cstrides = collapse(shape, [broadcast_strides(t, shape) for t in tensors])
        dense = contiguous_strides(cshape)
        contig = all(s == dense for s in cstrides)
        vec4 = contig and n % 4 == 0 and all(t.offset % 4 == 0 and WGSL[t.dtype] in _VEC4 for t in tensors)
        spec = (len(cshape), contig, vec4)
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


def render(plan: FusedKernel, nd: int, contig: bool, vec4: bool = False) -> Kernel:
    """The WGSL of ``plan`` for collapsed rank ``nd`` (``contig``: every tensor dense, no index math;
    ``vec4``: dense 4-byte tensors with numel and offsets multiples of 4, four elements per invocation
    read and written as ``vec4``, the ops running per component)."""
    inputs, scalars, ops, outputs = plan.inputs, plan.scalars, plan.ops, plan.outputs
    first = len(inputs) + len(scalars)
    out_dtypes = [ops[v - first].out for v in outputs]
    names = [f"out{k}" for k in range(len(outputs))] + [f"in{k}" for k in range(len(inputs))]
    lines = []
    if float16 in (*inputs, *(op.out for op in ops)):
        lines.append("enable f16;")
    lines.append("@group(0) @binding(0) var<storage, read> info: array<u32>;")
    elem = (lambda dt: f"vec4<{WGSL[dt]}>") if vec4 else (lambda dt: WGSL[dt])
    for k, dt in enumerate(out_dtypes):
        lines.append(f"@group(0) @binding({k + 1}) var<storage, read_write> out{k}: array<{elem(dt)}>;")
    for k, dt in enumerate(inputs):
        binding = len(outputs) + k + 1
        lines.append(f"@group(0) @binding({binding}) var<storage, read> in{k}: array<{elem(dt)}>;")
    body = [f"let i = gid.x + gid.y * (nwg.x * {K.WG}u);", "if (i >= info[0]) { return; }"]
    if vec4:  # metadata: numel / 4, each tensor's offset / 4, the scalars
        body += [f"let o_{name} = i + info[{1 + j}u];" for j, name in enumerate(names)]
        scalar_at = 1 + len(names)
    else:  # metadata: numel, shape, (strides, offset) per tensor, the scalars
        block = nd + 1
        slot = {name: 1 + nd + block * j for j, name in enumerate(names)}
        if contig:
            body += [f"let o_{name} = i + info[{slot[name] + nd}u];" for name in names]
        else:
            body.append("var r = i;")
            body += [f"var o_{name} = info[{slot[name] + nd}u];" for name in names]
            for d in range(nd - 1, -1, -1):
                body.append(f"let c{d} = r % info[{1 + d}u];")
                if d:
                    body.append(f"r = r / info[{1 + d}u];")
                body += [f"o_{name} += c{d} * info[{slot[name] + d}u];" for name in names]
        scalar_at = 1 + nd + block * len(names)
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
        body += [f"let l{k} = in{k}[o_in{k}];" for k in range(len(inputs))]
        body += [f"var r{k}: vec4<{WGSL[dt]}>;" for k, dt in enumerate(out_dtypes)]
        for c in range(4):
            loads = [f"let v{k} = l{k}[{c}];" for k in range(len(inputs))]
            stores = [f"r{k}[{c}] = v{v};" for k, v in enumerate(outputs)]
            body.append("{ " + " ".join(loads + compute + stores) + " }")
        body += [f"out{k}[o_out{k}] = r{k};" for k in range(len(outputs))]
    else:
        for k, dt in enumerate(inputs):
            raw = f"in{k}[o_in{k}]"
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
    label = f"fused_{len(ops)}ops_{len(outputs)}out_{layout}"
    return Kernel(label, "\n".join(lines) + "\n", ("rw",) * len(outputs) + ("read",) * len(inputs))
