"""In-place writes on burn-cuda (``CudaFusion.execute_reusing``): a dense element-wise kernel writes an
output into a dead input of its dtype (through the kernel variant whose pointers are not declared
exclusive); the values equal numpy's, broadcast or strided donors are not written, and a replayed
training step that writes in place equals training without fusion."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.fusion import FusedKernel, FusedOp
from burn.testing._training import small_training, two_output_plan

pytestmark = pytest.mark.gpu
f32 = burn.float32


@pytest.fixture(autouse=True)
def _tuning_blocks(monkeypatch):
    """These tests count graphs and in-place writes after a few steps: tuning runs before first use,
    as before background tuning (a program calling a kernel still tuning is not captured yet)."""
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")


def _plan(n):
    return two_output_plan(n)  # exp(in0) * in1 and in0 + in1 over (n,)


@pytest.mark.parametrize("donors", [(), (0,), (1,), (0, 1)])
def test_outputs_are_written_into_the_donated_inputs(cuda, donors):
    backend = burn.device("cuda:0", fusion=False).backend
    runtime = backend.fusion_runtime()
    rng = np.random.default_rng(len(donors))
    a, b = (rng.standard_normal(1001).astype(np.float32) for _ in range(2))
    ins = [backend.from_numpy(a, f32), backend.from_numpy(b, f32)]
    outs = runtime.execute_reusing(_plan(1001), list(ins), [], donors)
    np.testing.assert_allclose(backend.to_numpy(outs[0]), np.exp(a) * b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(backend.to_numpy(outs[1]), a + b, rtol=1e-6, atol=1e-6)
    assert [o is ins[i] for o, i in zip(outs, donors)] == [True] * len(donors)
    if not donors:
        assert all(o is not i for o in outs for i in ins)


def test_a_broadcast_or_strided_donor_is_not_written(cuda):
    backend = burn.device("cuda:0", fusion=False).backend
    runtime = backend.fusion_runtime()
    full = backend.from_numpy(np.arange(16, dtype=np.float32), f32)
    strided = full[::2]  # the output's shape, but a strided view
    row = backend.from_numpy(np.ones(1, np.float32), f32)
    ops = (FusedOp("binary", "add", f32, f32, (0, 1)),)
    outs = runtime.execute_reusing(FusedKernel((8,), (f32, f32), (), ops, (2,)), [strided, row], [], (0, 1))
    assert outs[0] is not strided and outs[0] is not row
    np.testing.assert_array_equal(backend.to_numpy(outs[0]), np.arange(0, 16, 2) + 1)
    np.testing.assert_array_equal(backend.to_numpy(full), np.arange(16, dtype=np.float32))


# the small model with LayerNorm (its backward leaves dense values dying at a kernel) and the
# benchmark's MLP (matmul epilogues read values that die there)
CONFIGS = {"layer_norm": {}, "mlp": {"layer_norm": False, "widths": (784, 256, 256, 10), "batch": 64}}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_a_replayed_training_step_writes_in_place_and_equals_unfused(cuda, config, monkeypatch):
    adev = burn.device("cuda:0", autodiff=True)
    fb = adev.backend.inner
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    monkeypatch.setattr(fb, "_capture", None)  # step by step (a CUDA graph has its own buffers)
    before = fb.stats["in_place"]
    got, _ = small_training(adev, **CONFIGS[config])
    plain, _ = small_training(burn.device("cuda:0", fusion=False, autodiff=True), **CONFIGS[config])
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["in_place"] > before
