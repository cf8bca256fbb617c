"""cumsum / cumprod on the CUDA backend over every layout autodiff produces (contiguous, flipped,
broadcast, transposed views) and every dtype, against numpy. CuPy's own scan gave wrong sums for
broadcast views on the H200, which the autodiff gradcheck of cumsum caught; burn_cuda scans with its
own kernel since."""

from __future__ import annotations

import burn
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

LAYOUTS = {
    "contiguous": lambda B, p: p,
    "flipped": lambda B, p: B.flip(p, (2,)),
    "broadcast": lambda B, p: B.expand(B.slice(p, ((0, 2, 1), (0, 1, 1), (0, 3, 1))), (2, 5, 3)),
    "transposed": lambda B, p: B.permute(p, (0, 2, 1)),
}
DTYPES = {"float32": 1e-5, "float64": 1e-12, "int32": 0, "int64": 0}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_matches_numpy(op, dtype, layout, cpu, cuda):
    rng = np.random.default_rng(1)
    arr = (rng.uniform(0.5, 1.5, (2, 5, 3)) * (3 if dtype.startswith("int") else 1)).astype(dtype)
    dt = burn.dtype(dtype)
    got_b, ref_b = cuda.backend, cpu.backend
    view = LAYOUTS[layout](got_b, got_b.from_numpy(arr, dt))
    ref_view = LAYOUTS[layout](ref_b, ref_b.from_numpy(arr, dt))
    for dim in range(3):
        got = got_b.to_numpy(getattr(got_b, op)(view, dim))
        ref = ref_b.to_numpy(getattr(ref_b, op)(ref_view, dim))
        np.testing.assert_allclose(got, ref, rtol=DTYPES[dtype], err_msg=f"{op} {layout} dim {dim}")


def test_float16_scan_accumulates_in_float32(cpu, cuda):
    arr = np.random.default_rng(2).uniform(0.0, 1.0, (4, 300)).astype(np.float16)
    got = cuda.backend.to_numpy(cuda.backend.cumsum(cuda.backend.from_numpy(arr, burn.float16), 1))
    ref = np.cumsum(arr.astype(np.float32), 1).astype(np.float16)  # one rounding at the end
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=1e-3)
