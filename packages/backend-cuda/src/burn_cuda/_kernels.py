"""Element-wise ops as generated CUDA kernels: one expression table, one ``ElementwiseKernel`` per
(op, dtype), compiled on first use and cached.

Each entry is a C expression over ``a`` (and ``b``) already converted to the compute type ``C`` (float
for half, the element type otherwise). An entry is either one string or a dict keyed by numpy dtype kind
(``"f"``, ``"i"``, ``"u"``, ``"b"``; ``"int"`` covers ``i`` and ``u``) where semantics differ. Composite
ops (gelu, silu, softplus, ...) are one fused kernel instead of a chain of ufunc launches. Semantics
follow the numpy reference backend: NaN propagates through max/min/relu, ``remainder`` takes the sign of
the divisor, integer division truncates toward zero and gives 0 on division by zero.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType

import numpy as np
from burn.backend import ELEMENTWISE_BOOL_RESULT

from ._bf16 import PREAMBLE as BF16_PREAMBLE
from ._dtypes import C_TYPE, COMPUTE_TYPE, is_bf16, param_dtype
from ._types import Kernel

# device helpers the expressions call; templated so one preamble serves every compute type
PREAMBLE = (
    r"""
template <typename C> __device__ __forceinline__ C burn_floor_div_f(C a, C b) {
  // numpy's npy_divmod: floor of the exact quotient, with the same rounding fix-ups
  if (b == C(0)) return a / b;
  C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && ((b < C(0)) != (mod < C(0)))) div -= C(1);
  if (div == C(0)) return copysign(C(0), a / b);
  C fl = floor(div);
  if (div - fl > C(0.5)) fl += C(1);
  return fl;
}
template <typename C> __device__ __forceinline__ C burn_remainder_f(C a, C b) {
  if (b == C(0)) return fmod(a, b);
  C mod = fmod(a, b);
  if (mod != C(0)) { if ((b < C(0)) != (mod < C(0))) mod += b; }
  else mod = copysign(C(0), b);
  return mod;
}
template <typename C> __device__ __forceinline__ C burn_floor_div_i(C a, C b) {
  if (b == C(0)) return C(0);
  C q = a / b;
  if ((a % b != C(0)) && ((a < C(0)) != (b < C(0)))) q -= C(1);
  return q;
}
template <typename C> __device__ __forceinline__ C burn_remainder_i(C a, C b) {
  if (b == C(0)) return C(0);
  C r = a % b;
  if (r != C(0) && ((r < C(0)) != (b < C(0)))) r += b;
  return r;
}
template <typename C> __device__ __forceinline__ C burn_ipow(C base, C e) {
  // exponentiation by squaring; a negative exponent gives 0 (1 for base 1, +-1 for base -1)
  if (e < C(0)) {
    if (base == C(1)) return C(1);
    if (base == C(-1)) return (e % C(2) == C(0)) ? C(1) : C(-1);
    return C(0);
  }
  C r = C(1);
  while (e > C(0)) { if (e & C(1)) r *= base; base *= base; e >>= 1; }
  return r;
}
template <typename C> __device__ __forceinline__ C burn_sigmoid(C a) {
  return C(0.5) * (C(1) + tanh(C(0.5) * a));  // tanh form: no overflow for large |a|
}
template <typename C> __device__ __forceinline__ C burn_softplus(C a) {
  return (a > C(0) ? a : C(0)) + log1p(exp(-fabs(a)));  // log(1 + e^a) without overflow
}
template <typename C> __device__ __forceinline__ C burn_hard_sigmoid(C a) {
  C v = a / C(6) + C(0.5);
  return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
}
"""
    + BF16_PREAMBLE
)

UNARY_EXPR: dict[str, str | dict[str, str]] = {
    "neg": "-a",
    "abs": "a < C(0) ? C(-a) : a",
    "sign": {"f": "a != a ? a : C((a > C(0)) - (a < C(0)))", "int": "C((a > C(0)) - (a < C(0)))"},
    "square": "a * a",
    "exp": "exp(a)",
    "expm1": "expm1(a)",
    "log": "log(a)",
    "log1p": "log1p(a)",
    "sqrt": "sqrt(a)",
    "rsqrt": "rsqrt(a)",
    "sin": "sin(a)",
    "cos": "cos(a)",
    "tan": "tan(a)",
    "asin": "asin(a)",
    "acos": "acos(a)",
    "atan": "atan(a)",
    "sinh": "sinh(a)",
    "cosh": "cosh(a)",
    "tanh": "tanh(a)",
    "erf": "erf(a)",
    "floor": "floor(a)",
    "ceil": "ceil(a)",
    "round": "rint(a)",  # half to even, as numpy, PyTorch and Burn
    "trunc": "trunc(a)",
    "reciprocal": "C(1) / a",
    "isnan": "isnan(a)",
    "isinf": "isinf(a)",
    "not": {"b": "!a", "int": "~a"},
    "relu": "a < C(0) ? C(0) : a",  # NaN stays NaN, as numpy's maximum(x, 0)
    "sigmoid": "burn_sigmoid(a)",
    "gelu": "C(0.5) * a * (C(1) + erf(a * C(0.70710678118654752)))",
    "gelu_tanh": "C(0.5) * a * (C(1) + tanh(C(0.79788456080286536) * (a + C(0.044715) * a * a * a)))",
    "silu": "a * burn_sigmoid(a)",
    "softplus": "burn_softplus(a)",
    "mish": "a * tanh(burn_softplus(a))",
    "hard_sigmoid": "burn_hard_sigmoid(a)",
}

BINARY_EXPR: dict[str, str | dict[str, str]] = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": {"f": "a / b", "int": "b == C(0) ? C(0) : C(a / b)"},
    "floor_div": {"f": "burn_floor_div_f(a, b)", "int": "burn_floor_div_i(a, b)"},
    "remainder": {"f": "burn_remainder_f(a, b)", "int": "burn_remainder_i(a, b)"},
    "fmod": {"f": "fmod(a, b)", "int": "b == C(0) ? C(0) : C(a % b)"},
    "pow": {"f": "pow(a, b)", "int": "burn_ipow(a, b)"},
    "maximum": "(a > b || a != a) ? a : b",  # NaN propagates, as numpy.maximum
    "minimum": "(a < b || a != a) ? a : b",
    "atan2": "atan2(a, b)",
    "eq": "a == b",
    "ne": "a != b",
    "lt": "a < b",
    "le": "a <= b",
    "gt": "a > b",
    "ge": "a >= b",
    "and": "a & b",
    "or": "a | b",
    "xor": "a ^ b",
}


_cache: dict[tuple[str, str, np.dtype], Kernel] = {}
_lock = threading.Lock()


def expression(table: dict[str, str | dict[str, str]], op: str, dt: np.dtype) -> str:
    """The C expression of ``op`` for elements of dtype ``dt`` (KeyError if the op has none for it)."""
    entry = table[op]
    if isinstance(entry, str):
        return entry
    kind = "f" if is_bf16(dt) else dt.kind
    if kind in entry:
        return entry[kind]
    if kind in "iu" and "int" in entry:
        return entry["int"]
    if kind == "b" and "int" in entry:  # bool arithmetic runs as int (C++ promotes it anyway)
        return entry["int"]
    raise KeyError(f"{op} has no kernel for dtype {dt}")


def load(var: str, dt: np.dtype) -> str:
    """C of an element ``var`` of dtype ``dt`` as the compute type ``C`` (bfloat16: from its bits)."""
    return f"burn_bf16_to_f({var})" if is_bf16(dt) else f"(C){var}"


def store(expr: str, dt: np.dtype) -> str:
    """C storing the compute-type ``expr`` as an element of ``dt`` (bfloat16: rounded to its bits)."""
    return f"burn_f_to_bf16({expr})" if is_bf16(dt) else f"({C_TYPE[dt]})({expr})"


def kernel_source(kind: str, op: str, dt: np.dtype) -> tuple[str, str, str]:
    """(in_params, out_params, operation) of the kernel for ``op`` on ``dt`` (``kind``: unary|binary).
    bfloat16 arrays are passed as their bits (uint16 views: ``_bf16``)."""
    table = UNARY_EXPR if kind == "unary" else BINARY_EXPR
    expr = expression(table, op, dt)
    out_dt = np.dtype(np.bool_) if op in ELEMENTWISE_BOOL_RESULT else dt
    ctype, pname, out_pname = COMPUTE_TYPE[dt], param_dtype(dt).name, param_dtype(out_dt).name
    if kind == "unary":
        in_params = f"{pname} x"
        body = f"typedef {ctype} C; const C a = {load('x', dt)}; y = {store(expr, out_dt)};"
    else:
        in_params = f"{pname} x, {pname} z"
        body = (
            f"typedef {ctype} C; const C a = {load('x', dt)}; const C b = {load('z', dt)};"
            f" y = {store(expr, out_dt)};"
        )
    return in_params, f"{out_pname} y", body


def _cached(key: tuple[str, str, np.dtype], build: Callable[[ModuleType], Kernel]) -> Kernel:
    """The kernel under ``key``, made once per process by ``build(cupy)`` (constructing an
    ``ElementwiseKernel`` is cheap: CuPy compiles it on first call)."""
    k = _cache.get(key)
    if k is None:
        import cupy

        with _lock:
            k = _cache.get(key)
            if k is None:
                k = _cache[key] = build(cupy)
    return k


def get(kind: str, op: str, dt: np.dtype) -> Kernel:
    """The compiled ``cupy.ElementwiseKernel`` for ``op`` on ``dt`` (built once per process)."""

    def build(cupy: ModuleType) -> Kernel:
        in_params, out_params, body = kernel_source(kind, op, dt)
        return cupy.ElementwiseKernel(
            in_params, out_params, body, f"burn_{kind}_{op}_{dt.name}", preamble=PREAMBLE
        )

    return _cached((kind, op, dt), build)


def where_kernel(dt: np.dtype) -> Kernel:
    """``y = cond ? a : b`` for operands of dtype ``dt`` (scalars or arrays, broadcast)."""

    def build(cupy: ModuleType) -> Kernel:
        return cupy.ElementwiseKernel(
            f"bool c, {dt.name} a, {dt.name} b", f"{dt.name} y", "y = c ? a : b", f"burn_where_{dt.name}"
        )

    return _cached(("where", "where", dt), build)


def clamp_kernel(dt: np.dtype) -> Kernel:
    """``y = min(max(x, lo), hi)`` with NaN passing through (as numpy.clip)."""

    def build(cupy: ModuleType) -> Kernel:
        body = (
            f"typedef {COMPUTE_TYPE[dt]} C; const C a = (C)x; const C l = (C)lo; const C h = (C)hi;"
            f" y = ({C_TYPE[dt]})(a < l ? l : (a > h ? h : a));"
        )
        return cupy.ElementwiseKernel(
            f"{dt.name} x, {dt.name} lo, {dt.name} hi", f"{dt.name} y", body, f"burn_clamp_{dt.name}"
        )

    return _cached(("clamp", "clamp", dt), build)
