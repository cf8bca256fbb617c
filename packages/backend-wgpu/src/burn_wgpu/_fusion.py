"""Fused kernels on burn-wgpu: the ``FusionRuntime`` that runs burn.fusion's plans as WGSL kernels
(rendered by ``_renderer``), packing each launch's metadata and dispatching it on the executor.

An element-wise plan runs as one kernel with several outputs (vec4 where every tensor is dense and
4-byte), a reduce plan as one workgroup per result, a matmul epilogue inside the blocked matmul kernel.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from burn import DType, autotune, float16, float32
from burn.fusion import FusedKernel, FusedReduce, ReferenceRuntime

from ._dtypes import ELEM_BYTES, WGSL, WIDE, scalar_bits
from ._elementwise import broadcast_strides, collapse
from ._executor import Kernel
from ._kernels import elementwise as K
from ._kernels import matmul as KM
from ._primitive import WgpuTensor, contiguous_strides, numel
from ._renderer import COMBINE, REDUCE_WG, render, render_epilogue, render_reduce

if TYPE_CHECKING:
    from ._backend import WgpuBackend

_VEC4 = frozenset({"f32", "i32", "u32"})  # 4-byte storage: a vec4 is 16 aligned bytes
_TABLES = {"unary": K.UNARY, "binary": K.BINARY, "where": K.TERNARY, "clamp": K.TERNARY}
_REDUCE_LONG = 1 << 16  # rows up to this long always reduce in one workgroup each
_REDUCE_MANY = 128  # longer ones only when there are at least this many


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
        self._op_by_op: ReferenceRuntime | None = None  # plans over one binding (``execute``)

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
        if compute in WIDE or out in WIDE:  # 64-bit ops run unfused (their scalars travel as tensors)
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
        if op not in COMBINE or dtype is not float32:
            return False
        rows, n = FusedReduce(op, dims, False).rows(shape)
        return rows > 0 and n > 0 and (n <= _REDUCE_LONG or rows >= _REDUCE_MANY) and rows <= 65535 * 65535

    def fuse_matmul(self, lhs: WgpuTensor, rhs: WgpuTensor) -> bool:
        """Matmul epilogues where the matmul runs a register-blocked kernel (``_matmul.fits_epilogue``)."""
        from ._matmul import fits_epilogue

        return fits_epilogue(self.backend, lhs, rhs) is not None

    def execute(self, plan: FusedKernel, inputs: list[WgpuTensor], scalars: list[Any]) -> list[WgpuTensor]:
        if self._over_one_binding(plan, inputs):  # op by op: those ops split such tensors (``_split``)
            if self._op_by_op is None:
                self._op_by_op = ReferenceRuntime(self.backend)
            return self._op_by_op.execute(plan, inputs, scalars)
        if plan.reduce is not None:
            return self._reduce(plan, inputs, scalars)
        if plan.matmul:
            return self._matmul(plan, inputs, scalars)
        return self._elementwise(plan, inputs, scalars)

    def _over_one_binding(self, plan: FusedKernel, inputs: list[WgpuTensor]) -> bool:
        """Whether an input's buffer, or an element-wise plan's output, is larger than one storage
        binding: fused kernels bind whole buffers."""
        limit = self.backend.pool.max_binding
        if any(t.storage.nbytes > limit for t in inputs):
            return True
        n = numel(plan.shape)
        return (
            plan.reduce is None
            and not plan.matmul
            and any(n * ELEM_BYTES[dt] > limit for dt in plan.out_dtypes())
        )

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
        from ._matmul import fits_epilogue, matmul_blocked

        b = self.backend
        a, w, rest = inputs[0], inputs[1], inputs[2:]
        # what the tuner's choice depends on, and the tuning generation it was made in: background
        # tuning may switch the matmul's kernel later (``burn.autotune.generation``)
        case = (a.shape, a.strides, w.shape, w.strides)
        generation = autotune.generation()
        made, chosen = plan.cache.get(case, (-1, None))
        if made != generation:
            chosen = fits_epilogue(b, a, w)
            plan.cache[case] = (generation, chosen)
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
