"""Shared by the module-op tests (``test_module_ops*.py``): the two backends each op runs on and the
comparison with the numpy references.

- ``ndarray``: the numpy backend with its fast overrides (im2col + BLAS, col2im, strided windows);
- ``core``: the conformance suite's ``burn.testing.CoreOnlyBackend``, which implements only the
  required core (delegating to numpy), so every module op runs through the defaults in ``burn.backend``.

Tolerances: float64 1e-10, float32 1e-5 (relative to the output's scale); indices are compared exactly.
"""

from __future__ import annotations

import burn
import numpy as np
from burn._tensor import _wrap
from burn.testing import CoreOnlyBackend

CORE = CoreOnlyBackend()
BACKENDS = ["ndarray", "core"]
TOL = {np.float64: 1e-10, np.float32: 1e-5}


def as_tensor(arr: np.ndarray, backend_name: str) -> burn.Tensor:
    """A copy of ``arr`` on the named backend (``"ndarray"`` or ``"core"``)."""
    if backend_name == "ndarray":
        return burn.from_numpy(arr, device=burn.device("cpu"))
    return _wrap(np.array(arr), CORE)


def assert_close(got: burn.Tensor, want: np.ndarray, dtype) -> None:
    """Same shape, ``dtype``, and values within ``TOL[dtype]`` of ``want`` (scaled by its magnitude)."""
    got = got.numpy()
    assert got.shape == want.shape
    assert got.dtype == dtype
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def randn(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape)
