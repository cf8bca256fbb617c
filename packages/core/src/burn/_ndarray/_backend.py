"""The numpy backend. Primitives are plain ``numpy.ndarray`` values, never mutated in place (views are
safe to share), so the per-op cost is one dict lookup and one ufunc call."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _dtype as D
from ..backend import (
    ACTIVATION_OPS,
    Backend,
    MemoryStats,
    Slices,
    broadcast_shape,
    op_def,
    process_memory,
    reduced_shape,
)
from ..backend._numpy_dtypes import (  # public as burn.backend.NUMPY_DTYPES
    FROM_NUMPY,
    NUMPY_DTYPES,
    SUPPORTED,
)
from . import _module, _ops
from ._half import BF16_KIND, compute_in_float32
from ._ops import Prim, Scalar

if TYPE_CHECKING:
    import numpy.typing as npt


def np_dtype(dtype: D.DType) -> np.dtype:
    return NUMPY_DTYPES[dtype]


@compute_in_float32
class NdArrayBackend(_module.NdArrayModuleOps, Backend):
    """numpy on the CPU. Supports every burn dtype; bfloat16 through ml_dtypes where it is installed
    (stored as bfloat16, computed in float32 and rounded once per op: ``_half``)."""

    name = "ndarray"
    dtypes = SUPPORTED
    dtype_notes = (
        {}
        if D.bfloat16 in SUPPORTED
        else {
            D.bfloat16: "numpy's bfloat16 comes from ml_dtypes, which is not installed (pip install ml_dtypes)"
        }
    )
    default_float = D.float32
    default_int = D.int64
    xp = np  # the array namespace; a CuPy-based backend can reuse these formulations with cupy
    binary_fns = _ops.BINARY
    host_memory = True  # primitives live in host memory: index checks read them for free
    native_activations = ACTIVATION_OPS  # unary() has a kernel for each

    # ---- memory: host memory; numpy has no allocator to ask, so the process's resident memory
    _peak_since_reset: int | None = None  # None: the process's own peak holds

    def memory_stats(self) -> MemoryStats:
        now, process_peak = process_memory()
        if self._peak_since_reset is None:
            peak = max(now, process_peak)
        else:  # since the reset: the largest value seen at calls (the OS keeps no resettable peak)
            peak = self._peak_since_reset = max(self._peak_since_reset, now)
        return MemoryStats(now, now, peak, peak, "process resident memory")

    def reset_peak_memory(self) -> None:
        self._peak_since_reset = process_memory()[0]

    def fusion_runtime(self) -> Any:
        """Compiled C kernels for fused plans where a C compiler is present (``burn._native``), else
        None (fusion runs its plans op by op on numpy)."""
        from .. import _native

        return _native.runtime_for(self)

    # ---- data
    def from_numpy(self, array: npt.ArrayLike, dtype: D.DType) -> Prim:
        return np.array(array, dtype=NUMPY_DTYPES[dtype], copy=True)

    def to_numpy(self, x: Prim) -> np.ndarray:
        return np.array(x, copy=True)

    def shape_of(self, x: Prim) -> tuple[int, ...]:
        return x.shape

    def dtype_of(self, x: Prim) -> D.DType:
        return FROM_NUMPY[x.dtype]

    def full(self, shape: tuple[int, ...], value: Scalar, dtype: D.DType) -> Prim:
        return np.full(shape, value, dtype=NUMPY_DTYPES[dtype])

    def cast(self, x: Prim, dtype: D.DType) -> Prim:
        return x.astype(NUMPY_DTYPES[dtype], copy=False)

    def arange(self, start: int | float, stop: int | float, step: int | float, dtype: D.DType) -> Prim:
        if dtype is D.bfloat16:  # the float32 sequence rounded once (no bfloat16 running sum)
            return np.arange(start, stop, step, dtype=np.float32).astype(NUMPY_DTYPES[dtype])
        return np.arange(start, stop, step, dtype=NUMPY_DTYPES[dtype])

    # ---- element-wise
    def unary(self, op: str, x: Prim) -> Prim:
        if x.dtype.kind == BF16_KIND:  # bfloat16: float32 arithmetic, one rounding (_half)
            out = _ops.UNARY[op](x.astype(np.float32))
            return out if op_def(op).bool_result else out.astype(x.dtype)
        return _ops.UNARY[op](x)

    def binary(self, op: str, a: Prim | Scalar, b: Prim | Scalar) -> Prim:
        ref = a if isinstance(a, _ops._ARRAY) else b
        if ref.dtype.kind == BF16_KIND:  # type: ignore[union-attr]  # one side is an array
            bf16 = ref.dtype  # type: ignore[union-attr]
            a = a.astype(np.float32) if isinstance(a, _ops._ARRAY) else a
            b = b.astype(np.float32) if isinstance(b, _ops._ARRAY) else b
            out = _ops.BINARY[op](a, b)
            return out if op_def(op).bool_result else out.astype(bf16)
        return _ops.BINARY[op](a, b)

    def where(self, cond: Prim, a: Prim | Scalar, b: Prim | Scalar) -> Prim:
        ref = a if isinstance(a, _ops._ARRAY) else b
        if isinstance(ref, _ops._ARRAY):
            out = _select_bits(cond, a, b, ref.dtype)
            if out is not None:
                return out
        out = np.where(cond, a, b)
        if isinstance(ref, _ops._ARRAY) and out.dtype != ref.dtype:
            out = out.astype(ref.dtype)
        return out

    def clamp(self, x: Prim, lo: float | int | None, hi: float | int | None) -> Prim:
        return np.clip(x, lo, hi).astype(x.dtype, copy=False)

    # ---- reductions and linear algebra
    def reduce(self, op: str, x: Prim, dims: tuple[int, ...], keepdim: bool) -> Prim:
        if x.dtype.kind == BF16_KIND:  # float32 accumulation, one rounding
            out = _ops.REDUCE[op](x.astype(np.float32), dims, keepdim)
            return out if op_def(op).bool_result else np.asarray(out.astype(x.dtype))
        return _ops.REDUCE[op](x, dims, keepdim)

    def arg_reduce(self, op: str, x: Prim, dim: int, keepdim: bool) -> Prim:
        fn = np.argmax if op == "argmax" else np.argmin
        return fn(x, axis=dim, keepdims=keepdim).astype(np.int64, copy=False)

    def var(self, x: Prim, dims: tuple[int, ...], correction: int, keepdim: bool) -> Prim:
        n = 1
        for d in dims:
            n *= x.shape[d]
        ddof = min(correction, n)  # n - ddof == 0 yields inf/nan like the reference formula
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.var(x, axis=dims, ddof=ddof, keepdims=keepdim, dtype=x.dtype)

    def matmul(self, a: Prim, b: Prim) -> Prim:
        if a.dtype.kind == BF16_KIND:  # float32 BLAS (tensor-core style accumulation), one rounding
            return (a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype)
        return a @ b  # the operator slot: cheaper than np.matmul's argument parsing on small inputs

    def quantized_matmul(self, a: Prim, w: Prim) -> Prim:
        from ..backend._quant_defaults import quantized_matmul_numpy  # float32 BLAS in exact K chunks

        if a.dtype == np.int8 and w.dtype == np.int8:
            return quantized_matmul_numpy(np, a, w, np.int64)
        return (a.astype(np.float64) @ w.astype(np.float64)).astype(np.int64)  # wider ints: exact to 2**53

    # ---- shape
    def reshape(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        return x.reshape(shape)

    def permute(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        return x.transpose(dims)

    def expand(self, x: Prim, shape: tuple[int, ...]) -> Prim:
        return np.broadcast_to(x, shape)

    def slice(self, x: Prim, index: Slices) -> Prim:
        return x[tuple(slice(a, b, s) for a, b, s in index)]

    def slice_assign(self, x: Prim, index: Slices, value: Prim) -> Prim:
        out = np.array(x, copy=True)  # x may be a numpy scalar (0-d results of ufuncs)
        out[tuple(slice(a, b, s) for a, b, s in index)] = value
        return out

    def cat(self, xs: Sequence[Prim], dim: int) -> Prim:
        return np.concatenate(xs, axis=dim)

    def stack(self, xs: Sequence[Prim], dim: int) -> Prim:
        return np.stack(xs, axis=dim)

    def flip(self, x: Prim, dims: tuple[int, ...]) -> Prim:
        return np.flip(x, dims)

    def repeat(self, x: Prim, reps: tuple[int, ...]) -> Prim:
        return np.tile(x, reps)

    # ---- indexing
    def gather(self, x: Prim, dim: int, index: Prim) -> Prim:
        return np.take_along_axis(x, index, axis=dim)

    def scatter_add(self, x: Prim, dim: int, index: Prim, src: Prim) -> Prim:
        if x.dtype.kind == "f" and dim == x.ndim - 1:
            # rows (a max pool's backward): compiled where it pays, the kernel checking the range
            from .._native import _ops_pool

            out = _ops_pool.scatter_add_rows(x, index, src)
            if out is not None:
                return out
        if x.dtype.kind == "f" and _in_range(index, x.shape[dim]):
            return _bincount_add(x, _flat_positions(x.shape, dim, index, index.shape), src)
        out = np.array(x, copy=True)
        idx: list[Prim] = list(np.indices(index.shape, sparse=True))
        idx[dim] = index
        np.add.at(out, tuple(idx), src)
        return out

    def select(self, x: Prim, dim: int, indices: Prim) -> Prim:
        return np.take(x, indices, axis=dim)

    def select_add(self, x: Prim, dim: int, indices: Prim, values: Prim) -> Prim:
        if x.dtype.kind == "f" and _in_range(indices, x.shape[dim]):
            along = indices.reshape((1,) * dim + (-1,) + (1,) * (x.ndim - dim - 1))
            return _bincount_add(x, _flat_positions(x.shape, dim, along, values.shape), values)
        out = np.array(x, copy=True)
        np.add.at(out, (slice(None),) * dim + (indices,), values)  # type: ignore[arg-type]  # numpy's stubs take no slices here
        return out

    def tril(self, x: Prim, k: int) -> Prim:
        return np.tril(x, k)

    def triu(self, x: Prim, k: int) -> Prim:
        return np.triu(x, k)

    # ---- sort and scan
    def sort(self, x: Prim, dim: int, descending: bool) -> tuple[Prim, Prim]:
        if descending:
            # stable descending: sort the reversed array ascending, reverse back, map indices
            n = x.shape[dim]
            idx = np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
            idx = (n - 1) - idx
        else:
            idx = np.argsort(x, axis=dim, kind="stable")
        return np.take_along_axis(x, idx, axis=dim), idx.astype(np.int64, copy=False)

    def cumsum(self, x: Prim, dim: int) -> Prim:
        return np.cumsum(x, axis=dim, dtype=x.dtype)

    def cumprod(self, x: Prim, dim: int) -> Prim:
        return np.cumprod(x, axis=dim, dtype=x.dtype)

    def pad(self, x: Prim, pads: tuple[tuple[int, int], ...], mode: str, value: float) -> Prim:
        if mode == "constant":
            return np.pad(x, pads, mode="constant", constant_values=value)
        return np.pad(x, pads, mode="reflect" if mode == "reflect" else "edge")  # the contract's modes

    # ---- activations
    def softmax(self, x: Prim, dim: int) -> Prim:
        if dim == x.ndim - 1:  # rows: compiled where a C compiler works and it pays (burn._native)
            from .._native import _ops_rows

            y = _ops_rows.softmax_rows(x)
            if y is not None:
                return y
        e = np.exp(x - np.max(x, axis=dim, keepdims=True))
        return e / np.sum(e, axis=dim, keepdims=True)

    def log_softmax(self, x: Prim, dim: int) -> Prim:
        if dim == x.ndim - 1:
            from .._native import _ops_rows

            y = _ops_rows.softmax_rows(x, log=True)
            if y is not None:
                return y
        shifted = x - np.max(x, axis=dim, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


# ---- scatter by bincount: np.add.at is an unbuffered per-element loop (scatter_add of a max-pool
# gradient: 1.3 ms against 0.36 ms); bincount sums the weights of each flat position in float64 in
# one pass, so float sums are rounded once (np.add.at rounds after every add; a single add is
# identical). Integer dtypes keep np.add.at (an int64 beyond 2**53 is not a float64).
def _in_range(index: np.ndarray, size: int) -> bool:
    """All of index in [0, size), read as unsigned so negatives fail too (one pass). Out-of-range
    indices take the np.add.at path, which raises (or wraps negatives) as before."""
    if index.size == 0 or index.dtype.kind not in "iu":
        return False
    return int(index.view(index.dtype.str.replace("i", "u")).max()) < size


def _flat_positions(shape: tuple[int, ...], dim: int, along: np.ndarray, full: tuple[int, ...]) -> np.ndarray:
    """Flat position in a C-ordered array of ``shape`` of each element of a ``full``-shaped grid
    whose coordinate on ``dim`` is ``along`` (broadcast to ``full``) and its own elsewhere: int64."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    other = np.zeros(reduced_shape(full, (dim,), True), dtype=np.int64)  # full with dim kept as 1
    for d, n in enumerate(full):
        if d != dim and n > 1:
            other = other + (np.arange(n, dtype=np.int64) * strides[d]).reshape(
                (n,) + (1,) * (len(full) - d - 1)
            )
    pos = (
        along.astype(np.int64, copy=False)
        if strides[dim] == 1
        else np.multiply(along, strides[dim], dtype=np.int64)
    )
    return np.broadcast_to(pos + other, full)


def _bincount_add(x: np.ndarray, pos: np.ndarray, src: np.ndarray) -> np.ndarray:
    sums = np.bincount(pos.ravel(), weights=np.ravel(src), minlength=x.size)
    out = sums.astype(x.dtype).reshape(x.shape)
    out += x
    return out


# ---- where as bit arithmetic: np.where and masked copies branch per element and run ~15x slower on
# unpredictable masks (a ReLU's); ((a ^ b) & mask) ^ b with mask all ones where cond runs at
# memory speed and moves bits exactly (NaN payloads, -0.0). Floats only: there the scalar cast below
# is the one np.where does (NEP 50); small outputs keep np.where, whose call costs less.
_SELECT_MIN_SIZE = 4096
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _select_bits(cond: Prim, a: Prim | Scalar, b: Prim | Scalar, dtype: np.dtype) -> Prim | None:
    if dtype.kind not in "fV" or getattr(cond, "dtype", None) != np.bool_:  # V: bfloat16
        return None
    shape = broadcast_shape(cond.shape, np.shape(a), np.shape(b))
    if math.prod(shape) < _SELECT_MIN_SIZE:
        return None
    bits = _BITS[dtype.itemsize]
    sides = []
    for v in (a, b):
        if isinstance(v, _ops._ARRAY):
            if v.dtype != dtype:  # mixed dtypes: np.where's promotion, then the cast back
                return None
            sides.append(v.view(bits))
        elif isinstance(v, (bool, int, float)):
            sides.append(np.array(v, dtype=dtype).view(bits))
        else:
            return None
    ab, bb = sides
    mask = np.array(cond, dtype=bits)  # a fresh (maybe 0-d) array: written in place below
    out = np.empty(shape, dtype=bits)
    if bb.ndim == 0 and not bb:  # where(cond, a, 0.0): a & mask
        np.negative(mask, out=mask)
        np.bitwise_and(ab, mask, out=out)
    elif ab.ndim == 0 and not ab:  # where(cond, 0.0, b): b & ~mask
        mask -= bits(1)
        np.bitwise_and(bb, mask, out=out)
    else:
        np.negative(mask, out=mask)
        np.bitwise_xor(ab, bb, out=out)
        out &= mask
        out ^= bb
    return out.view(dtype)
