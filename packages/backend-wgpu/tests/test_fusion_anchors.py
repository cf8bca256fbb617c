"""Reduce kernels and matmul epilogues on wgpu: a chain feeding a sum/mean/max/min runs inside one
reduction kernel, a bias and activation run in the blocked matmul's store; results equal the unfused
kernels within float32 tolerance (the summation order differs), fewer kernels launch (counted with
burn.profile), and recorded training steps still equal training without fusion."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn_wgpu import _matmul


def _both(dev, raw_dev, fn, *arrays):
    """(fused result, unfused result, fused kernels, unfused kernels, fused kernels of several ops)."""
    out = []
    for d in (dev, raw_dev):
        with burn.profile(d) as p:
            out.append(fn(*(burn.tensor(a, device=d) for a in arrays)).numpy())
        out.append(p)
    fused, p_on, plain, p_off = out
    return fused, plain, p_on, p_off


def _reduce(op, x, dims, keepdim):
    return getattr(x, op)(dims, keepdim=keepdim) if dims is not None else getattr(x, op)()


SHAPES = {
    "odd": (5, 7),
    "one_row": (1, 3),
    "long_rows": (3, 1000),  # rows longer than a workgroup: each invocation takes several elements
    "3d": (2, 3, 65),
}


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dims", ["last", "all"])
def test_fused_reductions_equal_the_unfused_ones(dev, raw_dev, op, shape, dims):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(SHAPES[shape]).astype(np.float32)
    row = rng.standard_normal(SHAPES[shape][-1:]).astype(np.float32)
    keep = dims == "last"
    axis = -1 if dims == "last" else None

    def fn(t, r):  # a broadcast input and scalars
        chain = ((t - r) * 0.5).exp() + (t > 0).float()
        return _reduce(op, chain, axis, keep)

    fused, plain, p_on, p_off = _both(dev, raw_dev, fn, x, row)
    want = ((x - row) * 0.5).astype(np.float32)
    want = np.exp(want) + (x > 0)
    want = getattr(np, op)(want, axis=axis, keepdims=keep)
    np.testing.assert_allclose(fused, plain, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(fused, want, rtol=2e-5, atol=1e-5)
    assert p_on.kernels == 1 < p_off.kernels and p_on.fused == 1


def test_a_strided_input_and_nan_propagate_like_the_unfused_reduction(dev, raw_dev):
    x = np.random.default_rng(4).standard_normal((6, 300)).astype(np.float32)
    x[2, 18] = np.nan  # an even column: the view keeps it

    def fn(t):
        return (t.permute(1, 0)[::2].permute(1, 0) * 2.0).max(-1)  # a strided view, NaN in row 2

    fused, plain, p_on, p_off = _both(dev, raw_dev, fn, x)
    np.testing.assert_array_equal(fused, plain)
    assert np.isnan(fused[2]) and p_on.kernels < p_off.kernels


def test_a_chain_a_tensor_holds_is_written_and_reduced(dev):
    x = burn.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev)
    h = (x * 2.0).exp()
    s = (h * 0.0 + h).sum(-1)  # the held value is read by the reduction's chain
    np.testing.assert_allclose(s.numpy(), np.exp(np.arange(12).reshape(3, 4) * 2.0).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(h.numpy(), np.exp(np.arange(12).reshape(3, 4) * 2.0), rtol=1e-5)


def _count(dev, raw_dev, fn, *arrays, rtol=2e-5):
    fused, plain, p_on, p_off = _both(dev, raw_dev, fn, *arrays)
    np.testing.assert_allclose(fused, plain, rtol=rtol, atol=1e-5)
    return p_on.kernels, p_off.kernels


def test_layer_norm_softmax_and_cross_entropy_launch_fewer_kernels(dev, raw_dev, monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 300)).astype(np.float32)
    y = rng.integers(0, 300, 16).astype(np.int32)
    w = rng.standard_normal(300).astype(np.float32)
    counts = {
        "layer_norm": _count(dev, raw_dev, lambda t, g: F.layer_norm(t, 300, g, g * 0.5), x, w),
        "softmax": _count(dev, raw_dev, lambda t: F.softmax(t, 1), x),
        "log_softmax": _count(dev, raw_dev, lambda t: F.log_softmax(t, 1), x),
        "cross_entropy": _count(dev, raw_dev, lambda t, c: F.cross_entropy(t, c), x, y),
    }
    fb = dev.backend
    monkeypatch.setattr(fb, "anchors", False)  # element-wise fusion only, planned anew
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    before = {
        name: _count(dev, raw_dev, fn, *args)[0]
        for name, (fn, args) in {
            "layer_norm": (lambda t, g: F.layer_norm(t, 300, g, g * 0.5), (x, w)),
            "softmax": (lambda t: F.softmax(t, 1), (x,)),
            "log_softmax": (lambda t: F.log_softmax(t, 1), (x,)),
            "cross_entropy": (lambda t, c: F.cross_entropy(t, c), (x, y)),
        }.items()
    }
    for name, (on, off) in counts.items():
        assert on < before[name] <= off, (name, on, before[name], off)
    assert counts["layer_norm"][0] <= 3 and counts["softmax"][0] <= 3


# a float32 matmul large enough to be tuned, so the blocked kernel runs it (BURN_AUTOTUNE=off: the
# default b64x64k16r4x4); dims that are not multiples of 4 store through the scalar path too
LINEAR_SHAPES = [((96, 200), (200, 520)), ((2, 130, 203), (203, 333))]


@pytest.mark.parametrize("xs, ws", LINEAR_SHAPES)
def test_linear_relu_runs_in_the_matmul_store(dev, raw_dev, monkeypatch, xs, ws):
    monkeypatch.setenv("BURN_AUTOTUNE", "off")
    rng = np.random.default_rng(6)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.1).astype(np.float32)
    b = rng.standard_normal(ws[1]).astype(np.float32)
    inner = dev.backend.inner
    assert _matmul.fits_epilogue(inner, inner.from_numpy(x, burn.float32), inner.from_numpy(w, burn.float32))

    def fn(x, w, b):
        return F.relu(x @ w + b)

    fused, plain, p_on, p_off = _both(dev, raw_dev, fn, x, w, b)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)
    assert (p_on.kernels, p_off.kernels) == (1, 3) and p_on.fused == 1


def test_an_epilogue_writes_several_outputs_and_reads_broadcast_inputs(dev, raw_dev, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "off")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((96, 200)).astype(np.float32)
    w = (rng.standard_normal((200, 520)) * 0.1).astype(np.float32)
    col = rng.standard_normal((96, 1)).astype(np.float32)
    held = {}

    def fn(x, w, c):
        pre = x @ w * 0.5 + c  # a column broadcast and scalars
        held["pre"] = pre
        return F.gelu(pre) + (pre > 0).float()

    fused, plain, p_on, p_off = _both(dev, raw_dev, fn, x, w, col)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(held["pre"].numpy(), x @ w * 0.5 + col, rtol=1e-4, atol=1e-4)
    assert p_on.kernels == 1 and p_on.kernels < p_off.kernels


def test_a_recorded_training_step_with_epilogues_and_reduce_kernels_equals_unfused(dev, raw_dev, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "off")

    def run(device):
        burn.seed(0)
        model = nn.Sequential(
            nn.LinearConfig(200, 128).init(device),
            nn.Relu(),
            nn.LayerNormConfig(128).init(device),
            nn.LinearConfig(128, 10).init(device),
        )
        opt = burn.optim.AdamConfig().init()
        rng = np.random.default_rng(0)
        x = burn.tensor(rng.standard_normal((384, 200)).astype(np.float32), device=device)
        y = burn.tensor(rng.integers(0, 10, 384).astype(np.int32), device=device)
        losses = []
        for _ in range(8):
            loss = F.cross_entropy(model(x), y)
            model = opt.step(1e-3, model, loss.backward())
            losses.append(loss)
        return [v.item() for v in losses]

    adev = burn.device(dev, autodiff=True)
    fb = adev.backend.inner
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    before = dict(fb.stats)
    plain = run(burn.device(raw_dev, autodiff=True))
    got = run(adev)
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)
    assert plain[-1] < plain[0]
    assert fb.stats["graph_launches"] - before["graph_launches"] >= 3, fb.runtime.capture_failures
    plans = [p for programs in fb._programs.values() for prog in programs for p in _plans(prog)]
    assert any(p.matmul for p in plans) and any(p.reduce is not None and p.ops for p in plans)


def _plans(program):
    return [step[1] for step in program.steps if step[0] == 0]  # KERNEL steps
