"""``WgpuBackend``: burn's Backend contract on wgpu-py with WGSL compute shaders.

This file holds data movement, element-wise ops and shape views; reductions, matmul, indexing, sort
and scans live in ``_ops`` (a mixin). Everything else (conv, pools, interpolate, pad, softmax, ...) is
the contract's default, written in terms of these.

dtypes: float32, int32, uint32, bool (stored as u32), int8, uint8 and int16 (stored widened, one
element per 32-bit word, wrapped on store: ``_dtypes``), plus float16 where the adapter has
``shader-f16``, and int64/float64 on a native device whose adapter has ``shader-int64``/``shader-f64``
(``_dtypes.WIDE``). Without them (browser-portable mode: WebGPU has no 64-bit types)
``burn.tensor``/``from_numpy`` of float64/int64 data gives float32/int32 (the defaults; the frontend's
``_fallback_dtype`` mapping), and an explicit ``dtype=burn.float64``/``int64`` is a ``DTypeError``.
The defaults stay float32/int32 either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import burn
from burn import DTypeError
from burn.backend import ACTIVATION_OPS, Backend, MemoryStats, Slices, op_def

from . import _elementwise as EW
from ._buffer import BufferPool
from ._device import OPTIONS, GpuContext, create_context
from ._dtypes import BASE_DTYPES, ELEM_BYTES, NARROW, WIDE, WIDE_FEATURES, np_storage
from ._executor import Executor
from ._fusion import WgpuFusion
from ._index_check import IndexChecker
from ._ops import WgpuOps
from ._primitive import WgpuTensor, contiguous_strides, numel

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class WgpuBackend(WgpuOps, Backend):
    """WebGPU through wgpu-py. ``ex`` records and batches dispatches; ``pool`` recycles buffers."""

    name = "wgpu"
    dtypes = frozenset(BASE_DTYPES)
    default_float = burn.float32
    default_int = burn.int32
    host_memory = False
    native_activations = ACTIVATION_OPS  # unary() has a kernel for each

    def __init__(self, index: int = 0, context: GpuContext | None = None) -> None:
        self.ctx = context or create_context(index)
        limits = self.ctx.limits
        self.pool = BufferPool(
            self.ctx.device, limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]
        )
        self.ex = Executor(self.ctx.device, self.pool, OPTIONS.batch_size)
        self.ex.label = f"wgpu:{index}"
        self.index_checks = IndexChecker(self)
        self._fusion: WgpuFusion | None = None
        extra = {burn.float16} if "shader-f16" in self.ctx.features else set()
        extra |= {dt for dt, feature in WIDE_FEATURES.items() if feature in self.ctx.features}
        if extra:
            self.dtypes = frozenset(BASE_DTYPES | extra)

    def __repr__(self) -> str:
        return f"<WgpuBackend {self.device} {self.ctx.label}{' portable' if self.ctx.portable else ''}>"

    # ------------------------------------------------------------------ data
    def _check_dtype(self, op: str, dtype: burn.DType) -> None:
        if dtype not in self.dtypes:
            names = ", ".join(sorted(d.name for d in self.dtypes))
            hint = (
                " (WebGPU has no 64-bit types: browser-portable mode, or an adapter without shader-int64/"
                "shader-f64)"
                if dtype in WIDE
                else ""
            )
            raise DTypeError(
                f"{op}: dtype {dtype.name} is not supported by backend 'wgpu'{hint} (supported: {names})"
            )

    def empty(self, shape: tuple[int, ...], dtype: burn.DType) -> WgpuTensor:
        """An uninitialised dense tensor from the pool."""
        storage = self.pool.storage(numel(shape) * ELEM_BYTES[dtype], "alloc", shape)
        return WgpuTensor(storage, tuple(shape), dtype)

    def from_numpy(self, array: npt.ArrayLike, dtype: burn.DType) -> WgpuTensor:
        import numpy as np
        from burn.backend import NUMPY_DTYPES

        self._check_dtype("from_numpy", dtype)
        arr = np.asarray(array)
        if dtype is burn.bool_:
            host = np.ascontiguousarray(arr != 0, dtype=np.uint32)
        elif dtype in NARROW:  # numpy's conversion into the dtype (its overflow rule), then widened
            host = np.ascontiguousarray(arr.astype(NUMPY_DTYPES[dtype], copy=False), dtype=np_storage(dtype))
        else:
            host = np.ascontiguousarray(arr, dtype=np_storage(dtype))
        shape = tuple(arr.shape)
        out = WgpuTensor(self.pool.storage(host.nbytes, "from_numpy", shape, upload=True), shape, dtype)
        self.ex.write(out.buffer, host.tobytes())
        return out

    def scalar_tensor(self, value: float | int | bool, dtype: burn.DType) -> WgpuTensor:
        """A one-element, 0-d tensor holding ``value`` (how 64-bit scalars reach a kernel)."""
        import numpy as np
        from burn.backend import NUMPY_DTYPES

        return self.from_numpy(np.asarray(value, dtype=NUMPY_DTYPES[dtype]), dtype)

    def _readable(self, x: WgpuTensor) -> WgpuTensor:
        """x as a dense view whose byte offset a copy may start at (a multiple of 4)."""
        if x.is_contiguous and x.byte_offset % 4 == 0:
            return x
        return self._copy(x)

    def read_many(self, xs: Sequence[WgpuTensor]) -> list[np.ndarray]:
        """numpy copies of many tensors: one staging buffer, one submit, one map."""
        import numpy as np
        from burn.backend import NUMPY_DTYPES

        ready = [self._readable(x) for x in xs]
        ranges = [(r.buffer, r.byte_offset, r.numel * ELEM_BYTES[r.dtype]) for r in ready]
        checks = self.index_checks.pending
        blobs = self.ex.read(ranges + [self.index_checks.range()] if checks else ranges)
        if checks:
            self.index_checks.report(blobs.pop())
        out = []
        for r, blob in zip(ready, blobs):
            arr = np.frombuffer(blob, dtype=np_storage(r.dtype)).reshape(r.shape)
            if r.dtype is burn.bool_ or r.dtype in NARROW:  # every stored word holds a value of its dtype
                out.append(arr.astype(NUMPY_DTYPES[r.dtype]))
            else:
                out.append(arr.copy())
        return out

    def to_numpy(self, x: WgpuTensor) -> np.ndarray:
        return self.read_many([x])[0]

    def shape_of(self, x: WgpuTensor) -> tuple[int, ...]:
        return x.shape

    def dtype_of(self, x: WgpuTensor) -> burn.DType:
        return x.dtype

    def sync(self) -> None:
        if self.index_checks.pending:  # the record's read waits for all work, as ex.sync does
            self.index_checks.report(self.ex.read([self.index_checks.range()])[0])
        else:
            self.ex.sync()

    def memory_stats(self) -> MemoryStats:
        """The buffer pool's bytes: held by tensors (``allocated``) and created (``reserved``: held plus
        free buffers kept for reuse), with their peaks."""
        pool = self.ex.pool
        return MemoryStats(
            pool.in_use.current,
            pool.reserved.current,
            pool.in_use.peak,
            pool.reserved.peak,
            "wgpu buffer pool",
        )

    def reset_peak_memory(self) -> None:
        self.ex.pool.in_use.reset()
        self.ex.pool.reserved.reset()

    def empty_cache(self) -> None:
        """Destroy the pool's free buffers (``Executor.trim``)."""
        self.ex.trim()

    def counters(self) -> dict[str, int]:
        stats = self.ex.stats
        return {
            "kernels": stats["dispatches"],
            "submits": stats["submits"],
            "syncs": stats["maps"],
            "fused": 0,
        }

    def fusion_runtime(self) -> WgpuFusion:
        """The WGSL renderer of fused element-wise plans (``burn.fusion``)."""
        if self._fusion is None:
            self._fusion = WgpuFusion(self)
        return self._fusion

    def check_index(self, index: WgpuTensor, size: int, negative: bool, message: str) -> WgpuTensor:
        return self.index_checks.check(index, size, negative, message)

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: burn.DType) -> WgpuTensor:
        self._check_dtype("full", dtype)
        return EW.run(self, "copy", "fill", dtype, dtype, [value], tuple(shape))

    def cast(self, x: WgpuTensor, dtype: burn.DType) -> WgpuTensor:
        if dtype is x.dtype:
            return x
        self._check_dtype("cast", dtype)
        return EW.run(self, "cast", "cast", x.dtype, dtype, [x], x.shape)

    def _copy(self, x: WgpuTensor, out: WgpuTensor | None = None) -> WgpuTensor:
        """A dense copy of x (or x written into the view ``out``)."""
        return EW.run(self, "copy", "copy", x.dtype, x.dtype, [x], x.shape, out)

    def custom(self, name: str, xs: Sequence[WgpuTensor], attrs: tuple[tuple[str, Any], ...]) -> Any:
        """A ``burn.custom`` op: its WGSL kernel (``_custom``), else its composition or numpy function."""
        from . import _custom

        return _custom.run(self, name, xs, attrs)

    def contiguous(self, x: WgpuTensor) -> WgpuTensor:
        """x itself when dense (any offset), else a dense copy."""
        return x if x.is_contiguous else self._copy(x)

    # ------------------------------------------------------------------ element-wise
    def unary(self, op: str, x: WgpuTensor) -> WgpuTensor:
        return EW.run(self, "unary", op, x.dtype, op_def(op).result_dtype(x.dtype), [x], x.shape)

    def binary(
        self, op: str, a: WgpuTensor | float | int | bool, b: WgpuTensor | float | int | bool
    ) -> WgpuTensor:
        ref = a if isinstance(a, WgpuTensor) else b
        assert isinstance(ref, WgpuTensor), "binary: one operand is a tensor (the frontend's contract)"
        row = op_def(op)
        shape = row.out_shape(_shape(a), _shape(b))  # the frontend's broadcast check already worked it out
        return EW.run(self, "binary", op, ref.dtype, row.result_dtype(ref.dtype), [a, b], shape)

    def where(
        self, cond: WgpuTensor, a: WgpuTensor | float | int | bool, b: WgpuTensor | float | int | bool
    ) -> WgpuTensor:
        tensors = [t for t in (a, b) if isinstance(t, WgpuTensor)]
        if not tensors:  # two scalars: the frontend gives the dtype by value kinds
            dt = burn.float32 if isinstance(a, float) or isinstance(b, float) else burn.int32
            if isinstance(a, bool) and isinstance(b, bool):
                dt = burn.bool_
            return EW.run(self, "ternary", "where", dt, dt, [cond, a, b], cond.shape)
        dt = tensors[0].dtype
        shape = op_def("where").out_shape(cond.shape, _shape(a), _shape(b))
        return EW.run(self, "ternary", "where", dt, dt, [cond, a, b], shape)

    def clamp(self, x: WgpuTensor, lo: float | int | None, hi: float | int | None) -> WgpuTensor:
        if lo is None or hi is None:
            return super().clamp(x, lo, hi)
        return EW.run(self, "ternary", "clamp", x.dtype, x.dtype, [x, lo, hi], x.shape)

    # ------------------------------------------------------------------ shape views
    def reshape(self, x: WgpuTensor, shape: tuple[int, ...]) -> WgpuTensor:
        shape = op_def("reshape").out_shape(x.shape, shape)  # a -1 entry inferred
        if shape == x.shape:
            return x
        src = x if x.is_contiguous else self._copy(x)
        return src.view(shape, contiguous_strides(shape), src.offset)

    def permute(self, x: WgpuTensor, dims: tuple[int, ...]) -> WgpuTensor:
        return x.view(tuple(x.shape[d] for d in dims), tuple(x.strides[d] for d in dims), x.offset)

    def expand(self, x: WgpuTensor, shape: tuple[int, ...]) -> WgpuTensor:
        strides = tuple(0 if s == 1 and n != 1 else st for s, st, n in zip(x.shape, x.strides, shape))
        return x.view(tuple(shape), strides, x.offset)

    def slice(self, x: WgpuTensor, index: Slices) -> WgpuTensor:
        offset = x.offset
        shape, strides = [], []
        for (start, stop, step), st in zip(index, x.strides):
            size = max(0, -(-(stop - start) // step))
            if size:
                offset += start * st
            shape.append(size)
            strides.append(st * step)
        return x.view(tuple(shape), tuple(strides), offset)

    def slice_assign(self, x: WgpuTensor, index: Slices, value: WgpuTensor) -> WgpuTensor:
        out = self._copy(x)
        region = self.slice(out, index)
        if region.numel:
            EW.run(self, "copy", "copy", value.dtype, value.dtype, [value], region.shape, region)
        return out

    def cat(self, xs: Sequence[WgpuTensor], dim: int) -> WgpuTensor:
        shape = op_def("cat").out_shape([x.shape for x in xs], dim)
        out = self.empty(shape, xs[0].dtype)
        start = 0
        for x in xs:
            n = x.shape[dim]
            if n:
                index = tuple((start, start + n, 1) if d == dim else (0, s, 1) for d, s in enumerate(shape))
                region = self.slice(out, index)
                EW.run(self, "copy", "copy", x.dtype, x.dtype, [x], region.shape, region)
            start += n
        return out


def _shape(v: WgpuTensor | float | int | bool) -> tuple[int, ...] | float | int | bool:
    """A tensor operand as its shape (what the vocabulary's shape rules take); a scalar as itself."""
    return v.shape if isinstance(v, WgpuTensor) else v
