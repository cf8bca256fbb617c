"""``NativeRuntime``: the cpu device's fusion runtime where a C compiler is present. Element-wise plans run
as C kernels (``_c_renderer``) built by the system compiler (``_toolchain``) and called through ctypes
on the numpy buffers themselves: inputs are read in place through their strides (broadcast dims stride
0), outputs are new dense arrays. A reduce kernel (sum, mean, max, min over trailing dims, with its
epilogue) is one kernel too, a row per result; a matmul epilogue runs its product on numpy's BLAS and
its chain as an element-wise kernel.

A plan is compiled once it has run ``after`` times (``BURN_CPU_NATIVE_AFTER``, default 16): a build
costs a tenth of a second, which a training step's plans repay within a few steps and a plan that
runs once never does; until then (and where a build fails, noted once) it runs on numpy.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from typing import Any

import numpy as np

from .. import _dtype as D
from ..backend import NUMPY_DTYPES, Backend
from ..fusion import FusedKernel, ReferenceRuntime, skeleton
from ._c_renderer import C_TYPE, FLOATS, CRenderer, has_op
from ._ops import ptr
from ._toolchain import Toolchain, build

DEFAULT_AFTER = 16
_FAILED = "failed"  # a (plan key, layout) whose build failed: numpy from then on


def runs_before_compile() -> int:
    """``BURN_CPU_NATIVE_AFTER``: how many times a plan runs on numpy before it is compiled."""
    try:
        return max(0, int(os.environ.get("BURN_CPU_NATIVE_AFTER", DEFAULT_AFTER)))
    except ValueError:
        return DEFAULT_AFTER


class NativeRuntime(ReferenceRuntime):
    """``FusionRuntime`` of the numpy backend running element-wise plans as compiled C (see the module
    docstring); ``ReferenceRuntime`` for everything else.

    >>> rt = NativeRuntime(burn.device("cpu").backend, burn._native.toolchain())
    >>> rt.fusable("unary", "exp", burn.float32, burn.float32), rt.fusable("unary", "exp", burn.float16, burn.float16)
    (True, False)
    """

    def __init__(self, backend: Backend, toolchain: Toolchain, after: int | None = None) -> None:
        super().__init__(backend)
        self.toolchain = toolchain
        self.after = runs_before_compile() if after is None else after
        self._kernels: dict[tuple[Any, ...], Any] = {}  # (plan key, layout) -> ctypes function
        self.compiled = 0  # kernels this runtime built or loaded
        self.native_runs = 0  # plans run as compiled kernels
        self.failures: list[str] = []

    def fusable(self, kind: str, name: str, compute: D.DType, out: D.DType) -> bool:
        return has_op(kind, name, compute, out)

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        if plan.reduce is not None:
            done = self._reduce(plan, inputs, scalars)
            if done is not None:
                return done
            # not compiled (yet): the chain as an element-wise kernel, the reduction on numpy
            red = plan.reduce
            chain = _reduce_chain(plan)
            value = plan.outputs[0]
            pre = self._elementwise(chain, inputs, scalars)[0] if value >= plan.first_op else inputs[value]
            reduced = self.backend.reduce(red.op, pre, red.dims, red.keepdim)
            return red.finish(plan, reduced, inputs, scalars, self.execute)
        if plan.matmul:  # the product on numpy's BLAS, the epilogue compiled
            product = self.backend.matmul(inputs[0], inputs[1])
            rest = [product, *inputs[2:]]
            chain = plan.product_chain()
            values = iter(self._elementwise(chain, rest, scalars) if chain.outputs else ())
            return [product if v == 0 else next(values) for v in plan.outputs]
        return self._elementwise(plan, inputs, scalars)

    def _elementwise(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        cache = plan.cache
        runs = cache.get("native_runs", 0)
        if runs < self.after or not _renderable(plan):
            cache["native_runs"] = runs + 1
            return super().execute(plan, inputs, scalars)
        shape = plan.shape
        arrays = [x if type(x) is np.ndarray else np.asarray(x) for x in inputs]
        dtypes = cache.get("native_out")
        if dtypes is None:
            dtypes = cache["native_out"] = [NUMPY_DTYPES[dt] for dt in plan.out_dtypes()]
        outs = [np.empty(shape, dt) for dt in dtypes]
        if 0 in shape:
            return outs
        # a layout seen before: its kernel and meta words straight away (a call costs a few
        # microseconds of Python, not the tens the strides' analysis takes)
        layout = ("native_layout", *((a.shape, a.strides) for a in arrays))
        known = cache.get(layout)
        if known is None:
            known = self._layout(plan, shape, outs, arrays)
            if known is None:
                return super().execute(plan, inputs, scalars)
            if len(cache) < 64:  # a plan fed ever new views: analyse those each time
                cache[layout] = known
        fn, meta, nd, copy = known
        if copy:  # a view whose strides are not whole elements
            arrays = [np.ascontiguousarray(a) for a in arrays]
        # addresses read off the array structs (``_ops.ptr``: a fraction of ``__array_interface__``'s
        # cost, which a small plan's call paid a dozen times)
        ptrs = np.array([ptr(t) for t in (*outs, *arrays)], np.uintp)
        sc = np.array(scalars, np.float64) if scalars else _NO_SCALARS
        addr = ptr(meta)
        fn(addr, addr + 8 * nd, ptr(ptrs), ptr(sc))
        self.native_runs += 1
        return outs

    def _layout(
        self, plan: FusedKernel, shape: tuple[int, ...], outs: list[np.ndarray], arrays: list[np.ndarray]
    ) -> tuple[Any, np.ndarray, int, bool] | None:
        """The compiled kernel, its meta words (the collapsed shape, then each tensor's strides), the
        collapsed rank and whether inputs must be copied dense, for these outputs and inputs; None
        where the build failed (numpy from then on)."""
        tensors = [*outs, *arrays]
        strides = [_strides(a, shape) for a in tensors]
        copy = any(s is None for s in strides)
        if copy:
            tensors = [*outs, *(np.ascontiguousarray(a) for a in arrays)]
            strides = [_strides(a, shape) for a in tensors]
        cshape, cstrides = _collapse(shape, strides)  # type: ignore[arg-type]
        inner = "".join("d" if s[-1] == 1 else "b" if s[-1] == 0 else "s" for s in cstrides)
        spec = ("native", len(cshape), inner)
        cache = plan.cache
        fn = cache.get(spec)
        if fn is None:
            fn = cache[spec] = self._kernel(
                plan, spec, lambda: CRenderer().elementwise(skeleton(plan), len(cshape), inner)
            )
        if fn is _FAILED:
            return None
        meta = np.array([*cshape, *(x for s in cstrides for x in s)], np.int64)
        return fn, meta, len(cshape), copy

    def _reduce(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any] | None:
        """A reduce kernel as one compiled kernel (chain, reduction and epilogue per row), or None where
        it is not compiled (yet): too few runs, an op or layout the C kernel lacks, a failed build."""
        cache, red = plan.cache, plan.reduce
        assert red is not None
        runs = cache.get("native_reduce_runs", 0)
        if runs < self.after or not _renderable_reduce(plan):
            cache["native_reduce_runs"] = runs + 1
            return None
        shape = plan.shape
        rows, n = red.rows(shape)
        k = len(shape) - len(red.dims)
        rshape = red.shape(shape)
        if rows == 0 or n == 0 or red.dims != tuple(range(k, len(shape))):
            return None
        arrays = [np.asarray(x) for x in inputs]
        pre = red.pre_reads(plan)
        strides = [_strides(a, shape) if i in pre else [0] * len(shape) for i, a in enumerate(arrays)]
        reads = [i for i in range(len(arrays)) if i in red.post_reads()]
        if any(arrays[i].ndim > len(rshape) for i in reads):
            return None
        post = [_strides(arrays[i], rshape) for i in reads]
        if any(s is None for s in (*strides, *post)):
            return None
        oshape, ostrides = _collapse(shape[:k], [s[:k] for s in strides])  # type: ignore[index]
        ishape, istrides = _collapse(shape[k:], [s[k:] for s in strides])  # type: ignore[index]
        inner = "".join("d" if s[-1] == 1 else "b" if s[-1] == 0 else "s" for s in istrides)
        spec = ("native_reduce", len(oshape), len(ishape), len(rshape), inner)
        fn = cache.get(spec)
        if fn is None:
            fn = cache[spec] = self._kernel(plan, spec, lambda: CRenderer().reduce(skeleton(plan), *spec[1:]))
        if fn is _FAILED:
            return None
        outs = [np.empty(rshape, NUMPY_DTYPES[dt]) for dt in red.store_dtypes(plan)]
        words = [*oshape, *ishape, *rshape]
        for o, i in zip(ostrides, istrides):
            words += [*o, *i]
        for s in post:
            words += s  # type: ignore[arg-type]
        meta = np.array(words, np.int64)
        ptrs = np.array([ptr(t) for t in (*outs, *arrays)], np.uintp)
        sc = np.array(scalars, np.float64) if scalars else _NO_SCALARS
        addr = ptr(meta)
        width = len(oshape) + len(ishape) + len(rshape)
        fn(addr, addr + 8 * width, ptr(ptrs), ptr(sc))
        self.native_runs += 1
        return outs

    def _kernel(self, plan: FusedKernel, spec: tuple[Any, ...], source: Any) -> Any:
        """The compiled kernel of ``plan`` for a layout ``spec`` (kept by plan key), made from
        ``source()`` where it is not built yet, or ``_FAILED``."""
        key = (plan.key, *spec)
        fn = self._kernels.get(key)
        if fn is None:
            source = source()
            try:
                lib = build(self.toolchain, source)
            except (RuntimeError, OSError) as e:
                self.failures.append(str(e))
                if len(self.failures) == 1:
                    warnings.warn(f"{e}; this kernel runs on numpy", RuntimeWarning, stacklevel=2)
                fn = _FAILED
            else:
                fn = lib.burn_kernel
                fn.argtypes = [ctypes.c_void_p] * 4
                fn.restype = None
                self.compiled += 1
            self._kernels[key] = fn
        return fn


_NO_SCALARS = np.zeros(1, np.float64)


def _renderable(plan: FusedKernel) -> bool:
    """Whether the C renderer spells every op and dtype of ``plan`` (a plan made under another runtime,
    or built whole by ``burn.fusion.launch``, may hold others): kept in ``cache``."""
    ok = plan.cache.get("native_ok")
    if ok is None:
        ok = plan.cache["native_ok"] = bool(plan.ops) and (
            all(has_op(op.kind, op.name, op.compute, op.out) for op in plan.ops)
            and all(dt in C_TYPE for dt in (*plan.inputs, *plan.scalars))
        )
    return bool(ok)


REDUCE_OPS = frozenset({"sum", "mean", "max", "min"})


def _renderable_reduce(plan: FusedKernel) -> bool:
    """Whether the C renderer spells reduce plan ``plan`` whole (kept in ``cache``)."""
    ok = plan.cache.get("native_reduce_ok")
    if ok is None:
        red = plan.reduce
        assert red is not None
        ops = (*plan.ops, *red.post)
        ok = plan.cache["native_reduce_ok"] = (
            red.op in REDUCE_OPS
            and plan.out_dtypes()[0] in FLOATS
            and all(has_op(op.kind, op.name, op.compute, op.out) for op in ops)
            and all(dt in C_TYPE for dt in (*plan.inputs, *plan.scalars, *red.store_dtypes(plan)))
        )
    return bool(ok)


def _reduce_chain(plan: FusedKernel) -> FusedKernel:
    """A reduce kernel's chain as an element-wise plan writing the reduced value (kept in ``cache``)."""
    chain = plan.cache.get("native_chain")
    if chain is None:
        chain = plan.cache["native_chain"] = FusedKernel(
            plan.shape, plan.inputs, plan.scalars, plan.ops, (plan.outputs[0],)
        )
    return chain


def _strides(a: np.ndarray, shape: tuple[int, ...]) -> list[int] | None:
    """``a``'s element strides broadcast to ``shape`` (0 on broadcast dims), None where a stride is not
    a whole number of elements."""
    size = a.itemsize
    pad = len(shape) - a.ndim
    out = [0] * pad
    for n, s in zip(a.shape, a.strides):
        if s % size:
            return None
        out.append(0 if n == 1 else s // size)
    return out


def _collapse(shape: tuple[int, ...], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """The iteration with size-1 dims dropped and neighbours merged where every tensor walks them as
    one dim; at least rank 1."""
    dims = [d for d, n in enumerate(shape) if n != 1] or [len(shape) - 1 if shape else -1]
    if dims == [-1]:  # a 0-d iteration: one element
        return [1], [[0] for _ in strides]
    cshape = [shape[dims[0]]]
    cstrides = [[s[dims[0]]] for s in strides]
    for d in dims[1:]:
        n = shape[d]
        if all(cs[-1] == s[d] * n for cs, s in zip(cstrides, strides)):
            cshape[-1] *= n
            for cs, s in zip(cstrides, strides):
                cs[-1] = s[d]
        else:
            cshape.append(n)
            for cs, s in zip(cstrides, strides):
                cs.append(s[d])
    return cshape, cstrides
