"""``benchmarks/bench_onnx.py --profile``'s conv-by-conv profile, run on the benchmark's own model at batch 1:
every conv found and paired with onnxruntime's kernel, and the profiled model left exactly as it was.
No timing is asserted (the machines are noisy), only that the times are positive finite numbers."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import burn
import numpy as np
import pytest

pytest.importorskip("onnx", reason="the benchmark's model is built with onnx.helper")
pytest.importorskip("onnxruntime", reason="the profile compares with onnxruntime's profiler")

_BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"

# (input C, H, W), weight shape, residual added: the 11 convs in execution order (a block's residual conv
# runs at its Add's place, after the 1x1 projection of the strided blocks)
_CONVS = [
    ([3, 64, 64], [32, 3, 3, 3], False),
    ([32, 32, 32], [32, 32, 3, 3], False),
    ([32, 32, 32], [32, 32, 3, 3], True),
    ([32, 32, 32], [32, 32, 3, 3], False),
    ([32, 32, 32], [32, 32, 3, 3], True),
    ([32, 32, 32], [64, 32, 3, 3], False),
    ([32, 32, 32], [64, 32, 1, 1], False),
    ([64, 16, 16], [64, 64, 3, 3], True),
    ([64, 16, 16], [128, 64, 3, 3], False),
    ([64, 16, 16], [128, 64, 1, 1], False),
    ([128, 8, 8], [128, 128, 3, 3], True),
]


@pytest.fixture(scope="module")
def bench():
    """The benchmark script as a module (it imports ``_common`` from its own folder, which is on
    ``sys.path`` while it is imported)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(_BENCHMARKS))
        return importlib.import_module("bench_onnx")


def _positive(value) -> bool:
    return isinstance(value, float | int) and math.isfinite(value) and value > 0


def test_profile_pairs_every_conv_and_leaves_the_model_unchanged(bench):
    import burn_onnx

    data = bench.resnet_like()
    model = burn_onnx.load(data, device="cpu")
    other = burn.tensor(np.zeros((2, 3, 64, 64), np.float32), device="cpu")
    model(other)  # a plan for another signature: the profile must wrap the one of its own input
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
    xt = burn.tensor(x, device="cpu")
    for _ in range(2):  # record the plan, then replay it once (the fused kernels' path from then on)
        model(xt)
    before = model(xt).numpy()
    steps, other_steps = bench.plan_steps(model, xt), bench.plan_steps(model, other)
    assert steps is not None and other_steps is not None and steps is not other_steps
    kept, other_kept = list(steps), list(other_steps)

    profile = bench.profile_convs(data, 1, runs=3, model=model, x=x)

    assert bench.plan_steps(model, xt) is steps
    assert len(steps) == len(kept) and all(a is b for a, b in zip(steps, kept))
    assert all(a is b for a, b in zip(other_steps, other_kept))
    np.testing.assert_array_equal(model(xt).numpy(), before)  # exact: the same kernels on the same data

    convs = profile["convs"]
    assert [(c["input"][1:], c["weight"], c["residual"]) for c in convs] == _CONVS
    assert all(c["input"][0] == 1 for c in convs)
    assert convs[0]["pool"] == [2, 2] and all(c["pool"] is None for c in convs[1:])
    assert sum(c["residual"] for c in convs) == 4
    for c in convs:
        assert c["onnxruntime_ops"] and c["onnxruntime_ops"][0] in ("Conv", "FusedConv"), c
        assert _positive(c["burn_us"]) and _positive(c["onnxruntime_us"]) and _positive(c["blas_floor_us"]), c
    assert convs[0]["onnxruntime_ops"][1:] == ["MaxPool"]  # the stem carries onnxruntime's pool too
    assert all(len(c["onnxruntime_nodes"]) == 1 for c in convs[1:])
    assert len({n for c in convs for n in c["onnxruntime_nodes"]}) == 12  # no onnxruntime node used twice
    totals = profile["totals"]
    for key in ("burn_convs_us", "burn_forward_us", "onnxruntime_convs_us", "blas_floor_us"):
        assert _positive(totals[key]), key
    assert _positive(totals["floor_vs_onnxruntime"])
    assert len(bench.format_profile(profile).splitlines()) == 2 + len(_CONVS) + 2  # titles, rows, totals
