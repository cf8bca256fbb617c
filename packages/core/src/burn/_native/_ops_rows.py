"""Row kernels in C over the last dim of a C-contiguous array: softmax, log-softmax and layer norm. Each
row is read twice (max, then the sums) and written once while it is in cache, where numpy makes four
passes with three temporaries. Rows are split over OpenMP threads once the array is large.

softmax: ``e = exp(x - max)``, ``e / sum(e)``; log-softmax: ``(x - max) - log(sum(exp(x - max)))``,
numpy's formulas; the sums run in the row's precision in another order than numpy's pairwise sum,
within float32 rounding. A row holding NaN gives NaN, +inf gives NaN (inf - inf), as numpy. layer norm:
mean, then the biased variance of ``x - mean`` (two passes, as ``burn.nn.functional.layer_norm``),
``(x - mean) / sqrt(var + eps) * weight + bias``; the mean and 1/sqrt(var + eps) of each row are
written too (a backward needs them).
"""

from __future__ import annotations

import math

import numpy as np

from . import _ops

# a row kernel's OpenMP loop over the rows and the row's input and output
_ROW_HEAD = """  #pragma omp parallel for schedule(static) if(R * D > BURN_PARALLEL_MIN)
  for (int64_t r = 0; r < R; r++) {
    const scalar_t* restrict xr = x + r * D;
    scalar_t* restrict yr = y + r * D;
"""

# layer norm's output row by which of weight and bias are given: (the C condition, the formula's
# tail after the normalised value); the first that holds is taken
_AFFINE = (("w && b", " * w[i] + b[i]"), ("w", " * w[i]"), ("b", " + b[i]"), ("", ""))


def _affine_output() -> str:
    """The if-chain over ``_AFFINE``: one vectorised pass per case, so no element tests a pointer."""
    lines = []
    for i, (cond, tail) in enumerate(_AFFINE):
        opener = (("if" if i == 0 else "} else if") + f" ({cond})") if cond else "} else"
        lines += [
            f"    {opener} {{",
            "      #pragma omp simd",
            f"      for (int64_t i = 0; i < D; i++) yr[i] = (xr[i] - mu) * inv{tail};",
        ]
    return "\n".join([*lines, "    }\n"])


_TEMPLATE = (
    r"""
int burn_softmax_SUF(const scalar_t* restrict x, scalar_t* restrict y, const int64_t* p) {
  const int64_t R = p[0], D = p[1], log_out = p[2];
"""
    + _ROW_HEAD
    + r"""    scalar_t m = xr[0];
    for (int64_t i = 1; i < D; i++) {
      const scalar_t v = xr[i];
      m = (v > m || v != v) && m == m ? v : m;  /* NaN wins, as numpy's max */
    }
    scalar_t s = 0;
    if (log_out) {
      #pragma omp simd reduction(+:s)
      for (int64_t i = 0; i < D; i++) s += exp(xr[i] - m);
      const scalar_t ls = log(s);
      #pragma omp simd
      for (int64_t i = 0; i < D; i++) yr[i] = (xr[i] - m) - ls;
    } else {
      #pragma omp simd reduction(+:s)
      for (int64_t i = 0; i < D; i++) {
        const scalar_t e = exp(xr[i] - m);
        yr[i] = e;
        s += e;
      }
      #pragma omp simd
      for (int64_t i = 0; i < D; i++) yr[i] = yr[i] / s;
    }
  }
  return 0;
}

int burn_layer_norm_SUF(const scalar_t* restrict x, const scalar_t* restrict w,
                        const scalar_t* restrict b, scalar_t* restrict y, scalar_t* restrict mean,
                        scalar_t* restrict rstd, const int64_t* p) {
  const int64_t R = p[0], D = p[1];
  const scalar_t eps = (scalar_t)(*(const double*)(p + 2));
"""
    + _ROW_HEAD
    + r"""    scalar_t s = 0, q = 0;
    #pragma omp simd reduction(+:s)
    for (int64_t i = 0; i < D; i++) s += xr[i];
    const scalar_t mu = s / (scalar_t)D;
    #pragma omp simd reduction(+:q)
    for (int64_t i = 0; i < D; i++) q += (xr[i] - mu) * (xr[i] - mu);
    const scalar_t inv = (scalar_t)1 / sqrt(q / (scalar_t)D + eps);
    mean[r] = mu;
    rstd[r] = inv;
"""
    + _affine_output()
    + r"""  }
  return 0;
}
"""
)


def source() -> str:
    """The row family's C source (both float types)."""
    return _ops.header() + "#include <tgmath.h>\n" + _ops.typed(_TEMPLATE)


def softmax_rows(x: np.ndarray, log: bool = False, force: bool = False) -> np.ndarray | None:
    """softmax (log-softmax where ``log``) over the last dim of float32/float64 x, or None where the
    compiled kernel does not take it (too small, another dtype, no compiler, an empty last dim).
    ``force``: any size (tests, benchmarks)."""
    if not isinstance(x, np.ndarray) or x.dtype not in _ops.FLOAT_TYPES or x.ndim == 0 or x.shape[-1] == 0:
        return None
    if not force and not _ops.wanted("softmax", x.size):
        return None
    lib = _ops.library("rows", source)
    if lib is None:
        return None
    xd = _ops.dense(x, x.dtype)
    y = np.empty_like(xd)
    if y.size:
        p = _ops.params(x.size // x.shape[-1], x.shape[-1], int(log))
        _ops.function(lib, "burn_softmax", x.dtype, 3)(_ops.ptr(xd), _ops.ptr(y), _ops.ptr(p))
    return y


def layer_norm_rows(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
    force: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Layer norm over the last dim of float32/float64 x with optional weight and bias of shape
    (x.shape[-1],): (y, mean, rstd), mean and rstd = 1/sqrt(var + eps) of shape x.shape[:-1]; or None
    where the compiled kernel does not take it. ``force``: any size (tests, benchmarks)."""
    if not isinstance(x, np.ndarray) or x.dtype not in _ops.FLOAT_TYPES or x.ndim == 0 or x.shape[-1] == 0:
        return None
    d = x.shape[-1]
    if any(t is not None and (t.shape != (d,) or t.dtype != x.dtype) for t in (weight, bias)):
        return None
    if not force and not _ops.wanted("layer_norm", x.size):
        return None
    lib = _ops.library("rows", source)
    if lib is None:
        return None
    xd = _ops.dense(x, x.dtype)
    wd = None if weight is None else _ops.dense(weight, x.dtype)
    bd = None if bias is None else _ops.dense(bias, x.dtype)
    rows = math.prod(x.shape[:-1])
    y = np.empty_like(xd)
    mean = np.empty(x.shape[:-1], dtype=x.dtype)
    rstd = np.empty(x.shape[:-1], dtype=x.dtype)
    if y.size:
        p = _ops.params(rows, d, 0)
        p[2:3].view(np.float64)[0] = eps
        fn = _ops.function(lib, "burn_layer_norm", x.dtype, 7)
        fn(_ops.ptr(xd), _ops.ptr(wd), _ops.ptr(bd), _ops.ptr(y), _ops.ptr(mean), _ops.ptr(rstd), _ops.ptr(p))
    return y, mean, rstd
