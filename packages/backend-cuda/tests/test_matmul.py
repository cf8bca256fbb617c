"""cuBLAS matmul on the GPU: every precision mode against a float64 reference, with tolerances that
also prove the mode took effect (tf32/bf16/fp16 must be measurably less exact than fp32)."""

from __future__ import annotations

import burn
import burn_cuda
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(1)
# relative Frobenius error bounds for K = 512 products of N(0, 1) data (fp32 ~1e-7, tf32 ~3e-4,
# bf16 ~3e-3, fp16 ~4e-4 measured; bounds leave an order of magnitude)
BOUND = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 3e-2, "fp16": 5e-3}


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


CASES = {
    "2d": ((96, 512), (512, 80), lambda a, b: a @ b),
    "batched": ((3, 64, 512), (3, 512, 48), lambda a, b: a @ b),
    "broadcast": ((2, 3, 64, 512), (512, 48), lambda a, b: a @ b),
    "lhs_transposed": ((512, 96), (512, 80), lambda a, b: a.transpose(0, 1) @ b),
    "rhs_transposed": ((96, 512), (80, 512), lambda a, b: a @ b.transpose(0, 1)),
    "batch_transposed": ((3, 512, 64), (3, 48, 512), lambda a, b: a.transpose(1, 2) @ b.transpose(1, 2)),
    "sliced": ((96, 700), (512, 80), lambda a, b: a[:, 100:612] @ b),
    "batch_row_stride": ((3, 128, 512), (3, 512, 40), lambda a, b: a[:, ::2] @ b),
    "batch_needs_copy": ((3, 64, 1024), (3, 512, 40), lambda a, b: a[:, :, ::2] @ b),
}


@pytest.mark.parametrize("mode", list(BOUND))
@pytest.mark.parametrize("case", list(CASES))
def test_precision_modes(mode, case, cuda):
    sa, sb, fn = CASES[case]
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    ref = fn(burn.from_numpy(a.astype(np.float64)), burn.from_numpy(b.astype(np.float64))).numpy()
    with burn_cuda.matmul_precision(mode):
        got = fn(burn.from_numpy(a, device=cuda), burn.from_numpy(b, device=cuda))
    assert got.dtype == burn.float32 and got.shape == ref.shape
    err = _rel_err(got.numpy().astype(np.float64), ref)
    assert err < BOUND[mode], f"{mode} {case}: relative error {err:.2e} >= {BOUND[mode]:.0e}"
    if mode != "fp32":
        assert err > 1e-6, f"{mode} {case}: error {err:.1e} is fp32-exact; the mode did not take effect"


@pytest.mark.parametrize("case", list(CASES))
def test_float16_tensors_multiply_on_tensor_cores_with_float32_accumulation(case, cuda):
    """float16 operands (rounded from float32 data) against the float64 product of those same rounded
    values: only the float16 rounding of the result and float32 accumulation remain."""
    sa, sb, fn = CASES[case]
    a = RNG.standard_normal(sa).astype(np.float16)
    b = RNG.standard_normal(sb).astype(np.float16)
    ref = fn(burn.from_numpy(a.astype(np.float64)), burn.from_numpy(b.astype(np.float64))).numpy()
    got = fn(burn.from_numpy(a, device=cuda), burn.from_numpy(b, device=cuda))
    assert got.dtype == burn.float16 and got.shape == ref.shape
    assert _rel_err(got.numpy().astype(np.float64), ref) < 2e-3  # float16 results: ~5e-4 per value


def test_global_setting_applies(cuda):
    a = burn.from_numpy(RNG.standard_normal((128, 512)).astype(np.float32), device=cuda)
    exact = (a @ a.transpose(0, 1)).numpy()
    burn_cuda.set_matmul_precision("bf16")
    try:
        rough = (a @ a.transpose(0, 1)).numpy()
    finally:
        burn_cuda.set_matmul_precision("fp32")
    assert not np.array_equal(exact, rough)
    np.testing.assert_allclose(rough, exact, rtol=0.05, atol=0.5)


@pytest.mark.parametrize("shape", [((0, 4), (4, 3)), ((2, 0), (0, 3)), ((1, 1), (1, 1)), ((5, 1), (1, 7))])
def test_degenerate_shapes(shape, cuda):
    a = RNG.standard_normal(shape[0]).astype(np.float32)
    b = RNG.standard_normal(shape[1]).astype(np.float32)
    got = (burn.from_numpy(a, device=cuda) @ burn.from_numpy(b, device=cuda)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-6, atol=1e-6)
