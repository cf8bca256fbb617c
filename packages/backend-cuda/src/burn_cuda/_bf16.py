"""bfloat16 on CUDA: storage, conversions, and which backend methods compute through float32.

What the stack offers: CuPy >= 14 holds arrays of ml_dtypes' ``bfloat16`` dtype ("minimal support":
allocation, views, transfers; its own ufuncs and cupyx routines are not all there); CuPy 13 and older
have no bfloat16 dtype at all, so there the backend does not offer bfloat16 (a ``burn.DTypeError``
naming the device and the CuPy version needed). burn therefore relies on CuPy only to *hold*
bfloat16 arrays: every kernel reads and writes them through ``uint16`` views of their bits
(``bits`` / ``from_bits``), converting at loads (``burn_bf16_to_f``: the bits shifted into a float)
and stores (``burn_f_to_bf16``: round to nearest even, NaN kept quiet), computing in float between.

- element-wise ops (unary, binary, where, fused chains): native bfloat16 kernels (``_kernels``,
  ``_fusion``), float registers, one rounding per op as the numpy backend does;
- matmul: cuBLAS ``cublasGemmStridedBatchedEx`` with ``CUDA_R_16BF`` operands and result and
  ``CUBLAS_COMPUTE_32F`` (tensor cores, float32 accumulation: ``_matmul``);
- everything that accumulates or compares (reductions, scans, softmax, conv, pooling, sort, ...):
  converted to float32, run by the float32 code, rounded back (``FLOAT32_METHODS``);
- copies and indexing (cat, gather, flip, ...): run on the bits (``BITS_METHODS``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from . import _dtypes
from ._types import Kernel, Prim

MIN_CUPY = (14, 0)

PREAMBLE = r"""
__device__ __forceinline__ float burn_bf16_to_f(unsigned short b) {
  return __uint_as_float(((unsigned int)b) << 16);
}
__device__ __forceinline__ unsigned short burn_f_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float burn_bf16_round(float f) { return burn_bf16_to_f(burn_f_to_bf16(f)); }
"""

_state: dict[str, Any] = {}


def _version(cupy: ModuleType) -> tuple[int, ...]:
    parts = []
    for p in str(getattr(cupy, "__version__", "0")).split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def probe(cupy: ModuleType) -> tuple[np.dtype | None, str]:
    """(ml_dtypes' bfloat16 dtype, "") where this CuPy holds bfloat16 arrays, else (None, why not)."""
    if "result" in _state:
        return _state["result"]
    version = getattr(cupy, "__version__", "?")
    result: tuple[np.dtype | None, str]
    if _version(cupy) < MIN_CUPY:
        result = (None, f"bfloat16 needs CuPy >= {MIN_CUPY[0]} (CuPy {version} is installed) with ml_dtypes")
    else:
        try:
            import ml_dtypes

            bf16 = np.dtype(ml_dtypes.bfloat16)
            cupy.empty(1, dtype=bf16).view(cupy.uint16)  # holds one, and views its bits
            result = (bf16, "")
        except ImportError:
            result = (None, "bfloat16 needs the ml_dtypes package (pip install ml_dtypes)")
        except Exception as exc:  # a CuPy that rejects the dtype: a reason, not a crash
            result = (None, f"CuPy {version} cannot hold bfloat16 arrays ({type(exc).__name__}: {exc})")
    if result[0] is not None:
        _dtypes.add_bfloat16(result[0])
    _state["result"] = result
    return result


def bits(x: Any) -> Any:
    """A bfloat16 array's bits (a uint16 view); anything else unchanged."""
    dt = getattr(x, "dtype", None)
    return x.view(np.uint16) if dt is not None and dt.kind == "V" else x


def from_bits(x: Prim, bf16: np.dtype) -> Prim:
    """uint16 bits as a bfloat16 array (a view)."""
    return x.view(bf16)


def scalar_bits(value: Any, bf16: np.dtype) -> Any:
    """A Python number rounded to bfloat16 (host, ml_dtypes), as its bits."""
    return np.asarray(value, dtype=np.float32).astype(bf16).view(np.uint16)[()]


def _kernel(cupy: ModuleType, name: str) -> Kernel:
    k = _state.get(name)
    if k is None:
        if name == "up":
            k = cupy.ElementwiseKernel(
                "uint16 x", "float32 y", "y = burn_bf16_to_f(x)", "burn_bf16_to_f32", preamble=PREAMBLE
            )
        else:
            k = cupy.ElementwiseKernel(
                "float32 x", "uint16 y", "y = burn_f_to_bf16(x)", "burn_f32_to_bf16", preamble=PREAMBLE
            )
        _state[name] = k
    return k


def up(cupy: ModuleType, x: Any) -> Any:
    """A bfloat16 array as float32 (exact); anything else unchanged."""
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind == "V":
        return _kernel(cupy, "up")(x.view(np.uint16))
    return x


def down(cupy: ModuleType, x: Any, bf16: np.dtype) -> Any:
    """float results rounded to bfloat16 (tuples element-wise); int and bool results unchanged."""
    if isinstance(x, tuple):
        return tuple(down(cupy, v, bf16) for v in x)
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind != "f":
        return x
    if dt != np.float32:
        x = x.astype(np.float32)
    return _kernel(cupy, "down")(x).view(bf16)


def _first_bf16(args: tuple[Any, ...], kwargs: dict[str, Any]) -> np.dtype | None:
    """bfloat16's dtype when the call's primary tensor (its first argument, or the first of a list of
    them) is bfloat16, else None. Tensor operands of one call share a dtype (the contract)."""
    first = args[0] if args else next(iter(kwargs.values()), None)
    if isinstance(first, (list, tuple)):
        first = first[0] if first else None
    dt = getattr(first, "dtype", None)
    return dt if dt is not None and dt.kind == "V" else None


def _map(fn: Callable[[Any], Any], v: Any) -> Any:
    return type(v)(fn(e) for e in v) if isinstance(v, (list, tuple)) else fn(v)


def via_float32(method: Callable[..., Any]) -> Callable[..., Any]:
    """A backend method that runs bfloat16 inputs as float32 and rounds its float results back."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        bf16 = _first_bf16(args, kwargs)
        if bf16 is None:
            return method(self, *args, **kwargs)
        cp = self._on()
        conv = functools.partial(up, cp)
        out = method(self, *(_map(conv, a) for a in args), **{k: _map(conv, v) for k, v in kwargs.items()})
        return down(cp, out, bf16)

    return wrapper


def on_bits(method: Callable[..., Any]) -> Callable[..., Any]:
    """A backend method that only moves elements: run on the bits, the result viewed as bfloat16."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        bf16 = _first_bf16(args, kwargs)
        if bf16 is None:
            return method(self, *args, **kwargs)
        out = method(self, *(_map(bits, a) for a in args), **{k: _map(bits, v) for k, v in kwargs.items()})
        return out.view(bf16) if getattr(out, "dtype", None) == np.uint16 else out

    return wrapper


# arithmetic that accumulates or compares: float32, rounded once
FLOAT32_METHODS = (
    "clamp",
    "reduce",
    "arg_reduce",
    "var",
    "scatter_add",
    "select_add",
    "sort",
    "cumsum",
    "cumprod",
    "pad",  # its constant is a number, not bits
    "softmax",
    "log_softmax",
    "leaky_relu",
    "conv",
    "conv_transpose",
    "conv_weight_grad",
    "unfold4d",
    "max_pool",
    "avg_pool",
    "adaptive_avg_pool",
    "adaptive_max_pool",
    "interpolate",
    "deform_conv2d",
    "roi_align",
    "quantize",
)
# element moves: on the bits (uint16), which every CuPy copy kernel handles
BITS_METHODS = ("reshape", "slice_assign", "cat", "stack", "flip", "repeat", "gather", "select")


def wrap_methods(cls: type) -> type:
    """Class decorator: route ``cls``'s bfloat16 calls of the methods above (as resolved in its MRO)."""
    for name in FLOAT32_METHODS:
        setattr(cls, name, via_float32(getattr(cls, name)))
    for name in BITS_METHODS:
        setattr(cls, name, on_bits(getattr(cls, name)))
    return cls
