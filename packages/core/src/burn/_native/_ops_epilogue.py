"""A conv's epilogue in C, in place on its fresh (N, C, L) result: ``y = clip(y + bias[c] + residual,
lo, hi)`` in one pass, where numpy takes one pass per op (and its add of a per-channel bias, a
stride-0 operand, misses numpy's SIMD loop). Used after a 1x1 conv's GEMM, a chunk of the output at a
time while it is in cache. The sums are numpy's in the same order (bias, then residual), the clip is
numpy's ``clip`` (NaN stays NaN): the same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _ops

_TEMPLATE = r"""
/* one plane of L values (the loops in a noinline body: inside the OpenMP region they do not vectorise) */
static __attribute__((noinline)) void burn_epilogue_plane_SUF(scalar_t* restrict y, scalar_t b,
                                                              const scalar_t* restrict res,
                                                              const scalar_t* restrict clamp, int64_t L) {
  const scalar_t lo = clamp ? clamp[0] : (scalar_t)-INFINITY, hi = clamp ? clamp[1] : (scalar_t)INFINITY;
  if (res && clamp) {
    for (int64_t i = 0; i < L; i++) {
      scalar_t s = y[i] + b + res[i];
      s = s < lo ? lo : s;
      y[i] = s > hi ? hi : s;
    }
  } else if (res) {
    for (int64_t i = 0; i < L; i++) y[i] = y[i] + b + res[i];
  } else if (clamp) {
    for (int64_t i = 0; i < L; i++) {
      scalar_t s = y[i] + b;
      s = s < lo ? lo : s;
      y[i] = s > hi ? hi : s;
    }
  } else {
    for (int64_t i = 0; i < L; i++) y[i] = y[i] + b;
  }
}

/* y (planes of L values, plane q at q * stride): + bias[q % C] (NULL: none) + residual (NULL: none,
   planes of L values at q * L), then clip to clamp = (lo, hi) (NULL: none) */
int burn_epilogue_SUF(scalar_t* restrict y, const scalar_t* restrict bias, const scalar_t* restrict res,
                      const scalar_t* restrict clamp, const int64_t* p) {
  const int64_t planes = p[0], C = p[1], L = p[2], stride = p[3];
  #pragma omp parallel for schedule(static) if(planes * L > BURN_PARALLEL_MIN)
  for (int64_t q = 0; q < planes; q++) {
    burn_epilogue_plane_SUF(y + q * stride, bias ? bias[q % C] : (scalar_t)0, res ? res + q * L : NULL,
                            clamp, L);
  }
  return 0;
}
"""


def source() -> str:
    """The epilogue family's C source (both float types)."""
    return _ops.header() + _ops.typed(_TEMPLATE)


_fns: dict[tuple[Any, np.dtype], Any] = {}  # (library, dtype) -> the kernel, set up once
_limits: dict[tuple[tuple[float, float], np.dtype], np.ndarray] = {}  # clamp bounds as arrays, kept


def channel_epilogue(
    y: np.ndarray,
    bias: np.ndarray | None,
    residual: np.ndarray | None,
    clamp: tuple[float, float] | None,
) -> bool:
    """``y += bias[c]`` (y (N, C, L) C-contiguous), ``y += residual`` (C-contiguous, y's shape), then
    ``clip(y, *clamp)``, in place in one pass; False (y untouched) where the compiled kernel does not
    take it (no compiler, another dtype or layout). A call costs a few microseconds of Python (1x1
    convs at batch 1 call it once per layer)."""
    dt = y.dtype
    if dt not in _ops.FLOAT_TYPES or y.ndim != 3 or y.size == 0 or not y.flags.c_contiguous:
        return False
    if bias is not None and (bias.dtype != dt or bias.size != y.shape[1]):
        return False
    if residual is not None and (residual.dtype != dt or residual.shape != y.shape):
        return False
    if not _ops.enabled():
        return False
    lib = _ops.library("epilogue", source)
    if lib is None:
        return False
    fn = _fns.get((lib, dt))
    if fn is None:
        fn = _fns[(lib, dt)] = _ops.function(lib, "burn_epilogue", dt, 5)
    lim = None
    if clamp is not None:
        lim = _limits.get((clamp, dt))
        if lim is None:
            if len(_limits) > 64:
                _limits.clear()
            lim = _limits[(clamp, dt)] = np.array(clamp, dtype=dt)
    bd = None if bias is None else np.ascontiguousarray(bias)
    rd = None if residual is None else np.ascontiguousarray(residual)
    n, c, length = y.shape
    p = _ops.params(n * c, c, length, length)
    fn(_ops.ptr(y), _ops.ptr(bd), _ops.ptr(rd), _ops.ptr(lim), _ops.ptr(p))
    return True
