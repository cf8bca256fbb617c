"""In-place writes on wgpu (``WgpuFusion.execute_reusing``): an element-wise kernel writes an output
into a dead input of its dtype and shape, reading that input through the output's binding (a dispatch
may not bind one buffer both read-only and writable); the values equal numpy's, and a replayed training
step that writes in place equals training without fusion."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.fusion import FusedKernel, FusedOp
from burn.testing._training import small_training, two_output_plan

f32 = burn.float32


def _plan(n):
    return two_output_plan(n)  # exp(in0) * in1 and in0 + in1 over (n,)


@pytest.mark.parametrize("n", [1000, 1001])  # vec4 and scalar kernels
@pytest.mark.parametrize("donors", [(0,), (1,), (0, 1)])
def test_outputs_are_written_into_the_donated_inputs(dev, n, donors):
    backend = dev.backend.inner
    runtime = backend.fusion_runtime()
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    ins = [backend.from_numpy(a, f32), backend.from_numpy(b, f32)]
    outs = runtime.execute_reusing(_plan(n), list(ins), [], donors)
    np.testing.assert_allclose(backend.to_numpy(outs[0]), np.exp(a) * b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(backend.to_numpy(outs[1]), a + b, rtol=1e-6, atol=1e-6)
    # outputs take the donors in order: the first output the first donor, the second the next
    assert [o is ins[i] for o, i in zip(outs, donors)] == [True] * len(donors)


def test_a_broadcast_or_strided_donor_is_not_written(dev):
    backend = dev.backend.inner
    runtime = backend.fusion_runtime()
    a = np.arange(8, dtype=np.float32)
    row = backend.from_numpy(np.ones(1, np.float32), f32)  # broadcast: not the output's shape
    full = backend.from_numpy(np.arange(16, dtype=np.float32), f32)
    strided = backend.slice(full, [(0, 16, 2)])  # the output's shape, but a view with strides
    ops = (FusedOp("binary", "add", f32, f32, (0, 1)),)
    outs = runtime.execute_reusing(FusedKernel((8,), (f32, f32), (), ops, (2,)), [strided, row], [], (0, 1))
    assert outs[0] is not strided and outs[0] is not row
    np.testing.assert_array_equal(backend.to_numpy(outs[0]), a * 2 + 1)
    np.testing.assert_array_equal(backend.to_numpy(full), np.arange(16, dtype=np.float32))


# the benchmark's MLP: its matmul epilogues leave values that die at the next kernel (a replay reuses them)
MLP = {"layer_norm": False, "widths": (784, 256, 256, 10), "batch": 64}


def test_a_replayed_training_step_writes_in_place_and_equals_unfused(dev, raw_dev, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "off")  # the blocked matmul, whose epilogues these values leave
    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    monkeypatch.setattr(fb, "_capture", None)  # replays step by step (a recorded program has its own buffers)
    before = fb.stats["in_place"]
    got, _ = small_training(adev, **MLP)
    plain, _ = small_training(burn.device(raw_dev, autodiff=True), **MLP)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert fb.stats["in_place"] > before
