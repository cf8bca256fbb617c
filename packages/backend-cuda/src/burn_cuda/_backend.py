"""The CUDA backend: primitives are ``cupy.ndarray`` values on one GPU, never mutated in place.

Element-wise ops run as generated kernels (``_kernels``), float32 matmul through cuBLAS with a
selectable precision (``_matmul``), reductions, sorting, scans and indexing through CuPy's own kernels
(CUB where CuPy uses it). Every op is issued on the device's own non-blocking stream; reads to the host
synchronise only that stream, and ``read_many`` reads several arrays with one synchronisation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import burn
import numpy as np
from burn import DeviceError, DType
from burn.backend import ACTIVATION_OPS, Backend, MemoryStats, Slices

from . import _bf16, _kernels, _matmul, _probe, _scan
from ._attention import CudaAttentionOps
from ._conv import CudaConvOps
from ._dtypes import BASE_DTYPES, FROM_NP, TO_NP
from ._fusion import CudaFusion
from ._index_check import IndexChecker
from ._matmul import get_matmul_precision, matmul_precision
from ._pool import CudaPoolOps
from ._types import Prim, Scalar

if TYPE_CHECKING:
    import numpy.typing as npt

_tls = threading.local()  # which backend's device and stream are current in this thread
_SCALARS = (bool, int, float, np.generic)


@_bf16.wrap_methods
class CudaBackend(CudaConvOps, CudaPoolOps, CudaAttentionOps, Backend):
    """CuPy on one NVIDIA GPU (``cuda:N``). Supports every burn dtype; bfloat16 where CuPy >= 14 and
    ml_dtypes are installed (``_bf16``: CuPy holds the arrays, burn's kernels compute on their bits)."""

    name = "cuda"
    dtypes = BASE_DTYPES  # bfloat16 added per instance (``_bf16.probe``)
    dtype_notes: dict[DType, str] = {}
    default_float = burn.float32
    default_int = burn.int64
    host_memory = False
    deferred_index_checks = True  # ``_index_check``: reported at the next sync, also from CUDA graphs
    native_activations = ACTIVATION_OPS  # unary() has a kernel for each

    def __init__(self, index: int = 0) -> None:
        cupy = _probe.require(f"device cuda:{index}")
        count = _probe.device_count()
        if not isinstance(index, int) or not 0 <= index < count:
            raise DeviceError(
                f"device cuda:{index}: no such CUDA device; {count} visible (cuda:0 .. cuda:{count - 1})"
            )
        self.index = index
        self.xp = cupy
        self.cuda_device = cupy.cuda.Device(index)
        with self.cuda_device:
            self.stream = cupy.cuda.Stream(non_blocking=True)
            self.index_checks = IndexChecker(cupy, self.stream)
        self._stream_ptr = self.stream.ptr
        self._ops = 0  # ops issued on the stream (a CuPy routine may launch several kernels)
        self._syncs = 0
        self._current_stream_ptr = _current_stream_ptr_fn(cupy)
        self.memory_pool = cupy.get_default_memory_pool()
        self._peaks = _track_peaks(cupy, self.memory_pool)
        self._fusion: CudaFusion | None = None
        name = self.xp.cuda.runtime.getDeviceProperties(index).get("name", b"")
        # the GPU's name, for run descriptions ("cuda:0 (NVIDIA H200)")
        self.device_name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        self._on()
        bf16, why = _bf16.probe(cupy)
        self.bf16: Any = bf16  # ml_dtypes' bfloat16 numpy dtype, or None where CuPy cannot hold it
        if bf16 is not None:
            self.dtypes = BASE_DTYPES | {burn.bfloat16}
        else:
            self.dtype_notes = {burn.bfloat16: f"on device cuda:{index}, {why}"}

    # ---- device and stream
    def _on(self) -> ModuleType:
        """Make this device and its stream current in the calling thread; return cupy.

        Besides this thread's last activation, the current stream itself is compared: code between two
        ops may have made another stream current (``with cupy.cuda.Stream():``, another library), and
        an op issued there would race with this stream's work."""
        if getattr(_tls, "active", None) is not self or self._current_stream_ptr() != self._stream_ptr:
            self.activate()
        self._ops += 1
        return self.xp

    def activate(self) -> None:
        """Make this backend's device and stream current (after user code called ``.use()`` elsewhere)."""
        self.cuda_device.use()
        self.stream.use()
        _tls.active = self

    def sync(self) -> None:
        self._syncs += 1
        self.index_checks.fetch()
        self.stream.synchronize()
        self.index_checks.raise_if_failed()

    # ---- data
    def from_numpy(self, array: npt.ArrayLike, dtype: DType) -> Prim:
        cp = self._on()
        host = np.asarray(array, dtype=TO_NP[dtype])
        if dtype is burn.bfloat16:  # the bits travel; CuPy only holds the result
            return cp.asarray(host.view(np.uint16)).view(self.bf16)
        return cp.asarray(host)

    def to_numpy(self, x: Prim) -> np.ndarray:
        return self.read_many([x])[0]

    def read_many(self, xs: Sequence[Prim]) -> list[np.ndarray]:
        self._on()
        out = [_bf16.bits(x).get(stream=self.stream, blocking=False) for x in xs]
        self.sync()  # one sync for the whole batch, which also reports failed index checks
        return [h.view(x.dtype) if x.dtype.kind == "V" else h for h, x in zip(out, xs)]

    def memory_stats(self) -> MemoryStats:
        """CuPy's memory pool (``used`` bytes held by arrays, ``total`` bytes taken from the driver) plus
        the private pools of the captured CUDA graphs; peaks of the pool from every allocation (a hook
        on CuPy's allocator, where CuPy's default one is in use) plus the graph pools."""
        from ._graph_inputs import LIVE_GRAPHS

        cp = self.xp  # not _on(): asking for figures is not an op (burn.profile counts ops)
        graphs = [g for g in list(LIVE_GRAPHS) if g.backend is self and g.pool is not None]
        g_used = sum(int(g.pool.used_bytes()) for g in graphs)
        g_total = sum(int(g.pool.total_bytes()) for g in graphs)
        with self.cuda_device:
            used, total = int(self.memory_pool.used_bytes()), int(self.memory_pool.total_bytes())
            free, device_total = cp.cuda.runtime.memGetInfo()
        peaks = self._peaks
        peaks[0], peaks[1] = max(peaks[0], used), max(peaks[1], total)
        extra = {
            "graph_pools": g_total,
            "graphs": len(graphs),
            "device_free": int(free),
            "device_total": int(device_total),
        }
        return MemoryStats(
            used + g_used,
            total + g_total,
            peaks[0] + g_used,
            peaks[1] + g_total,
            "cupy memory pool + CUDA graph pools",
            extra,
        )

    def reset_peak_memory(self) -> None:
        with self.cuda_device:
            self._peaks[0], self._peaks[1] = (
                int(self.memory_pool.used_bytes()),
                int(self.memory_pool.total_bytes()),
            )

    def empty_cache(self) -> None:
        """Free the pool's cached blocks (``MemoryPool.free_all_blocks``)."""
        self.sync()
        with self.cuda_device:
            self.memory_pool.free_all_blocks()

    def counters(self) -> dict[str, int]:
        """``kernels``/``submits`` count ops issued (each goes to the stream on its own); ``syncs`` the
        stream synchronisations (reads, transactions, ``sync``)."""
        return {"kernels": self._ops, "submits": self._ops, "syncs": self._syncs, "fused": 0}

    def call_state(self) -> str:
        """The matmul precision in effect (fusion runs a deferred matmul under the one it was called in)."""
        return get_matmul_precision()

    def call_state_scope(self, state: str) -> matmul_precision:
        return matmul_precision(state)

    def fusion_runtime(self) -> CudaFusion:
        """The generator of fused element-wise kernels (``burn.fusion``)."""
        if self._fusion is None:
            self._fusion = CudaFusion(self)
        return self._fusion

    def custom(self, name: str, xs: Sequence[Prim], attrs: tuple[tuple[str, Any], ...]) -> Prim:
        """A ``burn.custom`` op: its CUDA C kernel (``_custom``), else its composition or numpy function."""
        from . import _custom

        return _custom.run(self, name, xs, attrs)

    def check_index(self, index: Prim, size: int, negative: bool, message: str) -> Prim:
        self._on()
        return self.index_checks.check(index, size, negative, message)

    def shape_of(self, x: Prim) -> tuple[int, ...]:
        return x.shape

    def dtype_of(self, x: Prim) -> DType:
        return FROM_NP[x.dtype]

    def full(self, shape: tuple[int, ...], value: Scalar, dtype: DType) -> Prim:
        cp = self._on()
        if dtype is burn.bfloat16:
            return cp.full(shape, _bf16.scalar_bits(value, self.bf16), dtype=np.uint16).view(self.bf16)
        return cp.full(shape, value, dtype=TO_NP[dtype])

    def cast(self, x: Prim, dtype: DType) -> Prim:
        cp = self._on()
        src_bf16 = x.dtype.kind == "V"
        if dtype is burn.bfloat16:  # through float32 (exact for every float16; ints round there)
            return x if src_bf16 else _bf16.down(cp, x.astype(np.float32, copy=False), self.bf16)
        if src_bf16:
            return _bf16.up(cp, x).astype(TO_NP[dtype], copy=False)
        return x.astype(TO_NP[dtype], copy=False)

    def arange(self, start: int | float, stop: int | float, step: int | float, dtype: DType) -> Prim:
        cp = self._on()
        if dtype is burn.bfloat16:
            return _bf16.down(cp, cp.arange(start, stop, step, dtype=np.float32), self.bf16)
        return cp.arange(start, stop, step, dtype=TO_NP[dtype])

    # ---- element-wise: one generated kernel per (op, dtype)
    def unary(self, op: str, x: Prim) -> Prim:
        self._on()
        if x.dtype.kind == "V":  # bfloat16: the kernel reads and writes the bits
            y = _kernels.get("unary", op, x.dtype)(x.view(np.uint16))
            return y.view(x.dtype) if y.dtype == np.uint16 else y
        return _kernels.get("unary", op, x.dtype)(x)

    def binary(self, op: str, a: Prim | Scalar, b: Prim | Scalar) -> Prim:
        self._on()
        ref: Prim = a if not isinstance(a, _SCALARS) else b  # one side is a tensor (the contract)
        dt = ref.dtype
        if dt.kind == "V":  # bfloat16: bits in, bits (or bool) out; a scalar rounds to bfloat16 first
            a = _bf16.scalar_bits(a, dt) if isinstance(a, _SCALARS) else a.view(np.uint16)
            b = _bf16.scalar_bits(b, dt) if isinstance(b, _SCALARS) else b.view(np.uint16)
            y = _kernels.get("binary", op, dt)(a, b)
            return y.view(dt) if y.dtype == np.uint16 else y
        if isinstance(a, _SCALARS):
            a = dt.type(a)
        elif isinstance(b, _SCALARS):
            b = dt.type(b)
        return _kernels.get("binary", op, dt)(a, b)

    def where(self, cond: Prim, a: Prim | Scalar, b: Prim | Scalar) -> Prim:
        cp = self._on()
        ref = a if not isinstance(a, _SCALARS) else b
        if isinstance(ref, _SCALARS):  # both scalars: the dtype follows Python's type, as numpy's
            ref = cp.asarray(np.asarray(ref))
            b = b if not isinstance(b, _SCALARS) else ref.dtype.type(b)
            a = a if not isinstance(a, _SCALARS) else ref.dtype.type(a)
        dt = ref.dtype
        if dt.kind == "V":  # bfloat16: a selection moves bits
            a = _bf16.scalar_bits(a, dt) if isinstance(a, _SCALARS) else a.view(np.uint16)
            b = _bf16.scalar_bits(b, dt) if isinstance(b, _SCALARS) else b.view(np.uint16)
            return _kernels.where_kernel(np.dtype(np.uint16))(cond, a, b).view(dt)
        a = dt.type(a) if isinstance(a, _SCALARS) else a
        b = dt.type(b) if isinstance(b, _SCALARS) else b
        return _kernels.where_kernel(dt)(cond, a, b)

    def clamp(self, x: Prim, lo: float | int | None, hi: float | int | None) -> Prim:
        self._on()
        dt = x.dtype
        info = np.finfo(dt) if dt.kind == "f" else (np.iinfo(dt) if dt.kind in "iu" else None)
        if info is None:
            return super().clamp(x, lo, hi)
        lo = dt.type(-np.inf if dt.kind == "f" else info.min) if lo is None else dt.type(lo)
        hi = dt.type(np.inf if dt.kind == "f" else info.max) if hi is None else dt.type(hi)
        return _kernels.clamp_kernel(dt)(x, lo, hi)

    # ---- reductions and linear algebra
    def reduce(self, op: str, x: Prim, dims: tuple[int, ...], keepdim: bool) -> Prim:
        """Large float reductions over the trailing dims (the last, or all) through the tuned tree
        kernels (``_reduce.REDUCE``); large sums and means over other dims through those and the
        column-sum kernel (``_reduce.reduce_columns``); everything else through CuPy's reductions."""
        from ._reduce import reduce_columns, reduce_trailing

        tuned = reduce_trailing(self, op, x, dims, keepdim)
        if tuned is None:
            tuned = reduce_columns(self, op, x, dims, keepdim)
        if tuned is not None:
            return tuned
        cp = self._on()
        if op in ("sum", "prod", "mean"):
            fn = {"sum": cp.sum, "prod": cp.prod, "mean": cp.mean}[op]
            return fn(x, axis=dims, keepdims=keepdim, dtype=x.dtype)
        fn = {"max": cp.max, "min": cp.min, "all": cp.all, "any": cp.any}[op]
        return fn(x, axis=dims, keepdims=keepdim)

    def arg_reduce(self, op: str, x: Prim, dim: int, keepdim: bool) -> Prim:
        cp = self._on()
        fn = cp.argmax if op == "argmax" else cp.argmin
        out = fn(x, axis=dim).astype(np.int64, copy=False)
        return cp.expand_dims(out, dim) if keepdim else out

    def var(self, x: Prim, dims: tuple[int, ...], correction: int, keepdim: bool) -> Prim:
        self._on()
        n = 1
        for d in dims:
            n *= x.shape[d]
        mean = self.reduce("mean", x, dims, True)
        diff = x - mean
        sq = self.reduce("sum", diff * diff, dims, keepdim)
        return sq / x.dtype.type(max(n - correction, 0))

    def matmul(self, a: Prim, b: Prim) -> Prim:
        return _matmul.matmul(self._on(), a, b)

    def quantized_matmul(self, a: Prim, w: Prim) -> Prim:
        from ._quant import quantized_matmul  # int8 tensor-core GEMM (cuBLAS), else a __dp4a kernel

        return quantized_matmul(self._on(), a, w)

    # ---- shape
    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        self._on()
        return x.reshape(shape)

    def permute(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        return x.transpose(dims)

    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        return self._on().broadcast_to(x, shape)

    def slice(self, x: Prim, index: Slices) -> Prim:
        self._on()
        return x[tuple(slice(a, b, s) for a, b, s in index)]

    def slice_assign(self, x: Prim, index: Slices, value: Prim) -> Prim:
        self._on()
        out = x.copy()  # bfloat16 arrives as its bits (``_bf16.BITS_METHODS``)
        out[tuple(slice(a, b, s) for a, b, s in index)] = value
        return out

    def cat(self, xs: Sequence[Prim], dim: int) -> Prim:
        return self._on().concatenate(list(xs), axis=dim)

    def stack(self, xs: Sequence[Prim], dim: int) -> Prim:
        return self._on().stack(list(xs), axis=dim)

    def flip(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        return self._on().flip(x, dims)

    def repeat(self, x: Prim, reps: tuple[int, ...]) -> Prim:
        return self._on().tile(x, reps)

    # ---- indexing
    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        return self._on().take_along_axis(x, index, axis=dim)

    def _scatter_into(self, out: Prim, where: tuple[Any, ...], values: Prim) -> Prim:
        """``out[where] += values`` with duplicates accumulating (atomics); out is a fresh copy."""
        add_at = _add_at(self.xp)
        dt = out.dtype
        if dt in _ATOMIC_DTYPES:
            add_at(out, where, values.astype(dt, copy=False))
            return out
        if dt == np.int64:  # two's-complement adds are the same bits on uint64, which has atomics
            add_at(out.view(np.uint64), where, values.astype(np.int64).view(np.uint64))
            return out
        acc = out.astype(np.int32)  # int8/uint8/int16/bool: accumulate wider, wrap back like numpy
        add_at(acc, where, values.astype(np.int32))
        return acc.astype(dt) if dt.kind != "b" else acc != 0

    def scatter_add(self, x: Prim, dim: int, index: Prim, src: Prim) -> Prim:
        cp = self._on()
        where = []
        for d, n in enumerate(index.shape):
            shape = [1] * index.ndim
            shape[d] = n
            where.append(index if d == dim else cp.arange(n).reshape(shape))
        return self._scatter_into(x.copy(), tuple(where), src)

    def select(self, x: Prim, dim: int, indices: Prim) -> Prim:
        return self._on().take(x, indices, axis=dim)

    def select_add(self, x: Prim, dim: int, indices: Prim, values: Prim) -> Prim:
        self._on()
        return self._scatter_into(x.copy(), (slice(None),) * dim + (indices,), values)

    def _tri_mask(self, x: Prim, k: int) -> Prim:
        cp = self.xp
        n, m = x.shape[-2:]
        return (cp.arange(m)[None, :] - cp.arange(n)[:, None]) <= k

    def tril(self, x: Prim, k: int) -> Prim:
        self._on()
        return self.where(self._tri_mask(x, k), x, self._zero_like_scalar(x))

    def triu(self, x: Prim, k: int) -> Prim:
        self._on()
        return self.where(self._tri_mask(x, k - 1), self._zero_like_scalar(x), x)

    # ---- sort and scan
    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        cp = self._on()
        if descending:
            # stable descending: sort the reversed array ascending, reverse back, map indices
            n = x.shape[dim]
            idx = cp.flip(cp.argsort(cp.flip(x, dim), axis=dim), dim)
            idx = (n - 1) - idx
        else:
            idx = cp.argsort(x, axis=dim)
        return cp.take_along_axis(x, idx, axis=dim), idx.astype(np.int64, copy=False)

    def cumsum(self, x: Prim, dim: int) -> Prim:
        return _scan.scan(self._on(), x, dim, product=False)

    def cumprod(self, x: Prim, dim: int) -> Prim:
        return _scan.scan(self._on(), x, dim, product=True)

    def pad(self, x: Prim, pads: tuple[tuple[int, int], ...], mode: str, value: float) -> Prim:
        cp = self._on()
        if mode == "constant":
            return cp.pad(x, pads, mode="constant", constant_values=value)
        return cp.pad(x, pads, mode=mode)

    # ---- activations (fused where one kernel does it)
    def softmax(self, x: Prim, dim: int) -> Prim:
        cp = self._on()
        e = _kernels.get("unary", "exp", x.dtype)(x - cp.max(x, axis=dim, keepdims=True))
        return e / cp.sum(e, axis=dim, keepdims=True, dtype=x.dtype)

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        cp = self._on()
        shifted = x - cp.max(x, axis=dim, keepdims=True)
        return shifted - cp.log(cp.sum(cp.exp(shifted), axis=dim, keepdims=True, dtype=x.dtype))


def _current_stream_ptr_fn(cupy: ModuleType) -> Callable[[], int]:
    """A zero-argument function giving the current stream's handle (CuPy's cheap one where it has it)."""
    fn = getattr(cupy.cuda.stream, "get_current_stream_ptr", None)
    if fn is not None:
        return fn
    return lambda: cupy.cuda.get_current_stream().ptr


def _add_at(cp: ModuleType) -> Callable[..., None]:
    """``cupy.add.at`` (CuPy 13+), else the older ``cupyx.scatter_add``; same atomics either way."""
    at = getattr(cp.add, "at", None)
    if at is not None:
        return at
    import cupyx

    return cupyx.scatter_add


# dtypes CuPy's scatter-add handles with native atomics
_ATOMIC_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64, np.int32, np.uint32))


def _track_peaks(cupy: ModuleType, pool: Any) -> list[int]:
    """[peak used, peak total] bytes of CuPy's default pool, kept up to date by wrapping the allocator
    (one extra call per allocation) where CuPy's own default allocator is the one in use; another
    allocator is left alone and the peaks are then sampled at ``memory_stats`` calls."""
    peaks = [int(pool.used_bytes()), int(pool.total_bytes())]
    try:
        if cupy.cuda.memory.get_allocator() != pool.malloc:
            return peaks
    except AttributeError:
        return peaks
    malloc, used_bytes, total_bytes = pool.malloc, pool.used_bytes, pool.total_bytes

    def tracked_malloc(size: int) -> Any:
        mem = malloc(size)
        used = used_bytes()
        if used > peaks[0]:
            peaks[0] = used
            total = total_bytes()
            if total > peaks[1]:
                peaks[1] = total
        return mem

    cupy.cuda.set_allocator(tracked_malloc)
    return peaks
