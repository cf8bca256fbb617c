"""Fused kernels on burn-cuda: the ``FusionRuntime`` that runs burn.fusion's plans as kernels rendered by
``_renderer`` (CUDA C), compiled by CuPy once per plan and launched with the plan's arrays.

An element-wise plan runs as one ``cupy.ElementwiseKernel`` (CuPy broadcasts and strides the inputs),
or, where every input is dense and of the output's shape, as a ``RawKernel`` indexed by the element
number (far less launch work). bfloat16 arrays are passed as their bits (uint16 views).

Matmul epilogues (``FusedKernel.matmul``) are a tuned family of their own (``_epilogue``).

Reduce kernels (``FusedReduce``: a float32/float64 sum, mean, max or min over trailing dims, fed by an
element-wise chain) are one ``RawKernel`` each: one block per result walks its row, computing the chain
for each element from the inputs' strides (broadcast inputs by stride 0) and reducing as it goes, then
across the block with warp shuffles; max and min propagate NaN as CuPy's do. A plan with half-precision
values in its chain runs as its element-wise kernel and then the backend's reduction.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import burn
import numpy as np
from burn import DType
from burn.fusion import FusedKernel, FusedReduce

from . import _kernels
from ._bf16 import bits
from ._dtypes import TO_NP, is_bf16, param_dtype, scalar_dtype
from ._renderer import COMBINE, TABLES, dense_source, reduce_source, source, strided_source
from ._types import Kernel, Prim

if TYPE_CHECKING:
    from ._backend import CudaBackend

_lock = threading.Lock()


class CudaFusion:
    """The ``FusionRuntime`` of burn-cuda (CuPy compiles each kernel once and caches it on disk)."""

    max_tensors = 32
    max_ops = 64
    reduce_epilogues = True  # reduce kernels run ``FusedReduce.post``

    def __init__(self, backend: CudaBackend) -> None:
        self.backend = backend
        # ops a stream records before it runs without a read (``BURN_FUSION_SEGMENT``): each part of a
        # step launches (its CUDA graph) while the host records the next part
        self.stream_segment = _segment()
        # compile-ahead planning (``compile_ahead``): whether ``execute`` only starts compiling (for the
        # planning thread alone: ``.on``), and the kernels still compiling on the pool by their key
        self._ahead = threading.local()
        self._pending: dict[tuple[Any, ...], Future[None]] = {}
        # element-wise plans over strided or broadcast inputs as RawKernels (which compile ahead) rather
        # than CuPy ElementwiseKernels: with compile-ahead planning (``BURN_COMPILE_AHEAD=1``), both
        # opt-in until they have been through the GPU suites together
        self.strided = os.environ.get("BURN_COMPILE_AHEAD", "0") == "1"
        self._kernels: dict[tuple[Any, ...], Kernel] = {}
        self.capture_failures: list[str] = []  # why recent programs could not become CUDA graphs
        self.calls_between_graphs: list[str] = []  # recent calls capture refused (they split a graph)
        # what a graph's launches learnt about its program, for its next capture (``_graphs._settled``):
        # program id -> the stream positions to write over the graph's own input buffers (position ->
        # input index), and under ``_graph_inputs.DECLINES`` how often its graph asked to be captured again
        self.graph_hints: dict[int, dict[int, int]] = {}
        self.graph_events: list[str] = []  # recent captures and why graphs were dropped or captured again
        # program id -> its inputs that a graph read in place and found changed at a launch: its later
        # captures copy them in (``_graph_inputs._ready``)
        self.graph_copied: dict[int, set[int]] = {}

    def fusable(self, kind: str, name: str, compute: DType, out: DType) -> bool:
        if compute not in TO_NP or out not in TO_NP:
            return False
        if kind in ("cast", "where"):
            return True
        dt = TO_NP[compute]
        if kind == "clamp":
            return dt.kind in "fiuV"  # V: bfloat16
        try:
            _kernels.expression(TABLES[kind], name, dt)
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
        if op not in COMBINE or dtype not in (burn.float32, burn.float64):
            return False
        rows, n = FusedReduce(op, dims, False).rows(shape)
        return 0 < rows < 2**31 and 0 < n and (n <= _REDUCE_LONG or rows >= _REDUCE_MANY)

    def fuse_matmul(self, lhs: Prim, rhs: Prim) -> bool:
        """Matmul epilogues of 2-d float32 matmuls under the fp32 precision (``_epilogue``)."""
        from ._epilogue import fits

        return fits(lhs, rhs)

    @contextlib.contextmanager
    def compile_ahead(self) -> Iterator[None]:
        """While a stream is planned the first time (``burn.fusion``'s ``compile_ahead``): ``execute``
        starts compiling the RawKernel a plan runs as on a thread pool (NVRTC compiles side by side)
        and returns zero-filled results; the plan's run afterwards waits for its own kernel. Plans
        whose kernel cannot be known without running it (matmul epilogues, float16 chains) run."""
        self._ahead.on = True
        try:
            yield
        finally:
            self._ahead.on = False

    def execute(self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any]) -> list[Prim]:
        if getattr(self._ahead, "on", False) and not plan.matmul and _dense_ok(plan):
            return self._execute_ahead(plan, inputs)
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
        outs = [cp.empty(plan.shape, dtype=param_dtype(TO_NP[dt])) for dt in plan.out_dtypes()]
        self._elementwise(cp, plan, inputs, scalars, outs)
        return _typed(plan, outs)

    def _execute_ahead(self, plan: FusedKernel, inputs: list[Prim]) -> list[Prim]:
        """``execute`` under ``compile_ahead``: the kernel ``execute`` would launch for these inputs
        starts compiling; zero-filled results of the plan's shapes and dtypes."""
        cp = self.backend._on()
        shape = plan.shape
        red = plan.reduce
        if red is not None:
            self._raw_kernel(cp, plan, "reduce", reduce_source, ahead=True)
            return [cp.zeros(red.shape(shape), dtype=TO_NP[dt]) for dt in red.store_dtypes(plan)]
        if all(x.shape == shape and x.flags.c_contiguous for x in inputs):
            self._raw_kernel(cp, plan, "raw", dense_source, ahead=True)
        else:
            walk = _strided_walk(inputs, shape) if self.strided else None
            n = math.prod(shape)
            if walk is not None and n:
                tag, render = _strided_kernel(len(walk[0]), n, False)
                self._raw_kernel(cp, plan, tag, render, ahead=True)
        return _typed(plan, [cp.zeros(shape, dtype=param_dtype(TO_NP[dt])) for dt in plan.out_dtypes()])

    def _elementwise(
        self,
        cp: Any,
        plan: FusedKernel,
        inputs: list[Prim],
        scalars: list[Any],
        outs: list[Prim],
        aliased: bool = False,
    ) -> None:
        """Run an element-wise plan (broadcasting, any strides) into ``outs`` (dense, of the plan's
        shape; each thread loads its input elements into locals before the body stores; ``aliased``:
        an output may be an input's buffer): a RawKernel over the inputs' element strides, adjacent
        dims merged where every input allows (``_strided_walk``), or, for float16 plans and strides
        that are not whole elements, a CuPy ``ElementwiseKernel``."""
        n = outs[0].size if outs else 0
        walk = _strided_walk(inputs, plan.shape) if self.strided and n and _dense_ok(plan) else None
        if walk is not None:
            shape, strides = walk
            strided = self._raw_kernel(cp, plan, *_strided_kernel(len(shape), n, aliased))
            args = [*map(bits, inputs), *_scalar_args(plan, scalars), *outs, np.int64(n)]
            args += [np.int64(d) for d in shape]
            args += [np.int64(st) for per in strides for st in per]
            strided((-(-n // _BLOCK),), (_BLOCK,), tuple(args))
            return
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
        kernel(*map(bits, inputs), *_scalar_args(plan, scalars), *outs)

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

    def execute_into(
        self, plan: FusedKernel, inputs: list[Prim], scalars: list[Any], into: dict[int, Prim]
    ) -> list[Prim] | None:
        """``execute``, writing output ``j`` into the buffer ``into[j]`` (of the plan's shape and the
        output's dtype, C-contiguous; an input of this kernel of that shape, or a buffer no input
        views); None, running nothing, for a reduce or matmul plan or a buffer that does not fit.
        Every thread loads its input elements before it stores, so an output may be an input's
        buffer: CUDA graphs write a training step's new weights and moments over the buffers their old
        values were read from (``_graphs``)."""
        if plan.reduce is not None or plan.matmul:
            return None
        shape, dts = plan.shape, plan.out_dtypes()
        for j, buf in into.items():
            want = TO_NP[dts[j]]
            if is_bf16(want) or buf.dtype != want or buf.shape != shape or not buf.flags.c_contiguous:
                return None
        cp = self.backend._on()
        dense = plan.cache.get("dense")
        if dense is None:
            dense = plan.cache["dense"] = _dense_ok(plan)
        if dense and all(x.shape == shape and x.flags.c_contiguous for x in inputs):
            return self._dense(cp, plan, inputs, scalars, (), into)
        outs, aliased = _outputs(cp, plan, shape, inputs, (), into)
        self._elementwise(cp, plan, inputs, scalars, outs, aliased)
        return _typed(plan, outs)

    def _dense(
        self,
        cp: Any,
        plan: FusedKernel,
        inputs: list[Prim],
        scalars: list[Any],
        donors: tuple[int, ...] = (),
        into: dict[int, Prim] | None = None,
    ) -> list[Prim]:
        """Every input of the output's shape and C-contiguous: a RawKernel indexed by the element number
        (no broadcasting or stride arithmetic, and far less launch work than an ElementwiseKernel).
        ``donors``: inputs an output of the same dtype may be written into (``execute_reusing``);
        ``into``: output index -> the buffer it is written into (``execute_into``)."""
        outs, aliased = _outputs(cp, plan, plan.shape, inputs, donors, into)
        if not aliased:
            kernel = self._raw_kernel(cp, plan, "raw", dense_source)
        else:  # an output aliases an input: the variant whose pointers promise no exclusivity
            kernel = self._raw_kernel(cp, plan, "raw_aliased", functools.partial(dense_source, aliased=True))
        n = outs[0].size
        if n:
            args = [*map(bits, inputs), *_scalar_args(plan, scalars), *outs, np.int64(n)]
            kernel((-(-n // _BLOCK),), (_BLOCK,), tuple(args))
        return _typed(plan, outs)

    def _raw_kernel(self, cp: Any, plan: FusedKernel, tag: str, render: Any, ahead: bool = False) -> Kernel:
        """The ``RawKernel`` of ``render(plan, name)`` (``"raw"``: dense element-wise, ``"raw_aliased"``:
        the same writing in place, ``"strided<rank>"`` with or without ``_aliased``, ``"reduce"``),
        compiled once per plan key and found through the plan's cache after that. ``ahead``: a new
        kernel starts compiling on the pool (``compile_ahead``) and is not cached on the plan yet; a
        kernel still compiling there is waited for before it is returned."""
        kernel = plan.cache.get(tag)
        if kernel is None:
            key = (tag, plan.key)
            with _lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    name = f"burn_fused_{tag}_{len(self._kernels)}"
                    kernel = self._kernels[key] = cp.RawKernel(render(plan, name), name)
                    if ahead:
                        self._pending[key] = _pool().submit(_compile, kernel, cp.cuda.Device().id)
            if ahead:
                return kernel
            pending = self._pending.pop(key, None)
            if pending is not None:
                pending.result()  # compiled on the pool (its error, if any, raised here)
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


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """The threads compile-ahead planning compiles kernels on (NVRTC releases the GIL: on the H200's
    host 16 small kernels compile in 0.34 s on 8 threads, 1.23 s one after the other)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(min(8, os.cpu_count() or 1), thread_name_prefix="burn-cuda-compile")
    return _POOL


def _compile(kernel: Any, device: int) -> None:
    import cupy

    with cupy.cuda.Device(device):
        kernel.compile()


def _strided_kernel(rank: int, n: int, aliased: bool) -> tuple[str, Any]:
    """The ``_raw_kernel`` tag and renderer of a strided element-wise kernel of ``rank`` dims over ``n``
    elements (64-bit coordinates from 2**31 elements)."""
    wide = n >= 2**31
    tag = f"strided{rank}{'_wide' if wide else ''}{'_aliased' if aliased else ''}"
    return tag, functools.partial(strided_source, rank=rank, aliased=aliased, wide=wide)


def _strided_walk(
    inputs: list[Prim], shape: tuple[int, ...]
) -> tuple[tuple[int, ...], list[list[int]]] | None:
    """The iteration shape and each input's element strides over it (0 where it is broadcast) with
    dims of size 1 dropped and each dim merged into the next where every input steps through the two
    as through one; None where a stride is not a whole number of elements."""
    per = []
    for x in inputs:
        if any(st % x.itemsize for st in x.strides):
            return None
        per.append(_element_strides(x, shape))
    dims: list[tuple[int, list[int]]] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        st = [p[d] for p in per]
        if dims and all(prev == cur * size for prev, cur in zip(dims[-1][1], st)):
            dims[-1] = (dims[-1][0] * size, st)
        else:
            dims.append((size, st))
    return tuple(n for n, _ in dims), [[st[i] for _, st in dims] for i in range(len(per))]


def _segment() -> int:
    raw = os.environ.get("BURN_FUSION_SEGMENT", str(SEGMENT))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 16:
        raise ValueError(f"BURN_FUSION_SEGMENT must be an integer >= 16 (ops per stream), got {raw!r}")
    return value


SEGMENT = 4096  # the default ``stream_segment``
_BLOCK = 256
_REDUCE_LONG = 16384  # a reduce kernel's rows may be this long whatever their number
_REDUCE_MANY = 256  # ... and longer where there are at least this many


def _element_strides(x: Prim, shape: tuple[int, ...]) -> list[int]:
    """``x``'s strides in elements seen from ``shape`` (right-aligned; stretched dims stride 0)."""
    pad = len(shape) - x.ndim
    out = [0] * pad
    for s, st, n in zip(x.shape, x.strides, shape[pad:]):
        out.append(0 if s == 1 and n != 1 else st // x.itemsize)
    return out


def _outputs(
    cp: Any,
    plan: FusedKernel,
    shape: tuple[int, ...],
    inputs: list[Prim],
    donors: tuple[int, ...],
    into: dict[int, Prim] | None = None,
) -> tuple[list[Prim], bool]:
    """The kernel parameters ``plan``'s outputs are written into (bfloat16 as bits): output ``j`` into
    ``into[j]`` where given, else the first unused donor input of its dtype (the caller checked their
    shape and layout), else a new array of ``shape``; and whether any output may alias an input."""
    free = list(donors)
    outs = []
    for j, dt in enumerate(plan.out_dtypes()):
        if into and j in into:
            outs.append(bits(into[j]))
            continue
        want = TO_NP[dt]
        k = next((i for i in free if inputs[i].dtype == want), None)
        if k is None:
            outs.append(cp.empty(shape, dtype=param_dtype(want)))
        else:
            free.remove(k)
            outs.append(bits(inputs[k]))
    return outs, len(free) < len(donors) or bool(into)


def _scalar_args(plan: FusedKernel, scalars: list[Any]) -> list[Any]:
    return [scalar_dtype(TO_NP[dt]).type(v) for dt, v in zip(plan.scalars, scalars)]


def _typed(plan: FusedKernel, outs: list[Prim]) -> list[Prim]:
    """Outputs allocated as kernel parameters (bfloat16 as uint16 bits) viewed as their dtypes."""
    return [o.view(TO_NP[dt]) if is_bf16(TO_NP[dt]) else o for o, dt in zip(outs, plan.out_dtypes())]


def _dense_ok(plan: FusedKernel) -> bool:
    """Plans whose every type is a plain C type in a RawKernel (CuPy's float16 class is not)."""
    types = (*plan.inputs, *plan.scalars, *(op.out for op in plan.ops), *(op.compute for op in plan.ops))
    return all(TO_NP[d].name != "float16" for d in types)
