"""Reduce kernels and matmul epilogues in the fusion planner, on the numpy backend with the reference
runtime (plans run op by op, so every result equals the unfused numpy backend's exactly): which chains
join a reduction or a matmul, which do not, and that a runtime without the capability plans as before."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.backend import Backend
from burn.fusion import FusedKernel, Fusion, ReferenceRuntime
from burn.fusion._plan import FusedReduce
from burn.nn import functional as F


class Recording(ReferenceRuntime):
    """The reference runtime keeping every plan it ran."""

    def __init__(self, backend):
        super().__init__(backend)
        self.plans: list[FusedKernel] = []

    def execute(self, plan, inputs, scalars):
        self.plans.append(plan)
        return super().execute(plan, inputs, scalars)


class ElementwiseOnly(Recording):
    """A runtime without reduce kernels or matmul epilogues (as burn-cuda's, for now)."""

    fuse_reduce = None
    fuse_matmul = None


def _fused(runtime=Recording):
    cpu = burn.device("cpu").backend
    rt = runtime(cpu)
    return Fusion(cpu, runtime=rt), rt


def _t(b, a):
    return b.from_numpy(np.asarray(a, np.float32), burn.float32)


RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 3, 7)).astype(np.float32)
ROW = RNG.standard_normal((7,)).astype(np.float32)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dims", [(2,), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_a_chain_feeding_a_reduction_runs_in_the_reduce_kernel(op, dims, keepdim):
    b, rt = _fused()
    x, r = _t(b, X), _t(b, ROW)
    chain = b.unary("exp", b.binary("mul", b.binary("sub", x, r), 0.5))  # a broadcast input and a scalar
    y = b.reduce(op, chain, dims, keepdim)
    del chain  # held by no tensor: never written
    got = b.to_numpy(y)
    cpu = burn.device("cpu").backend
    want = cpu.to_numpy(
        cpu.reduce(
            op,
            cpu.unary(
                "exp",
                cpu.binary(
                    "mul",
                    cpu.binary("sub", cpu.from_numpy(X, burn.float32), cpu.from_numpy(ROW, burn.float32)),
                    0.5,
                ),
            ),
            dims,
            keepdim,
        )
    )
    np.testing.assert_array_equal(got, want)
    (plan,) = rt.plans
    assert plan.reduce == FusedReduce(op, dims, keepdim) and len(plan.ops) == 3
    assert plan.out_shape() == want.shape and plan.fused
    assert b.stats["calls"] == 1 and b.stats["kernels"] == 1


def test_reductions_over_leading_dims_or_of_held_chains_are_calls():
    b, rt = _fused()
    x = _t(b, X)
    lead = b.reduce("sum", b.unary("exp", x), (0,), False)  # not trailing dims
    held = b.binary("mul", x, 2.0)
    s = b.reduce("sum", held, (2,), False)  # the chain is held: written, then reduced
    b.to_numpy(lead), b.to_numpy(s)
    assert all(p.reduce is None for p in rt.plans)
    np.testing.assert_array_equal(b.to_numpy(held), X * 2.0)
    np.testing.assert_allclose(b.to_numpy(s), (X * 2.0).sum(2), rtol=1e-6)


def test_a_chain_another_call_reads_is_written_not_fused():
    b, rt = _fused()
    x = _t(b, X)
    e = b.unary("exp", x)
    s = b.reduce("sum", e, (2,), False)
    p = b.permute(e, (2, 1, 0))  # a call reads the chain: it is written anyway
    del e
    b.to_numpy(s), b.to_numpy(p)
    assert all(plan.reduce is None for plan in rt.plans)


def test_softmax_recomputes_the_exponentials_instead_of_writing_them():
    b, rt = _fused()
    x = _t(b, X[0])
    y = b.to_numpy(Backend.softmax(b, x, 1))  # the contract's composition: max, exp, sum, div
    e = np.exp(X[0] - X[0].max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-6)
    reduce_plans = [p for p in rt.plans if p.reduce is not None]
    assert len(reduce_plans) == 1 and reduce_plans[0].reduce.op == "sum"  # exp(x - max) inside the sum
    assert len(rt.plans) == 2  # the reduce kernel and the division (exp computed again there)


def test_a_mean_of_a_computed_value_is_a_reduce_kernel_of_no_ops():
    b, rt = _fused()
    x = _t(b, X)
    m = b.reduce("mean", x, (2,), True)
    np.testing.assert_array_equal(b.to_numpy(m), X.mean(2, keepdims=True))
    (plan,) = rt.plans
    assert plan.ops == () and plan.outputs == (0,) and plan.out_dtypes() == (burn.float32,)
    assert not plan.fused


def test_a_runtime_without_the_capability_plans_as_before(monkeypatch):
    for runtime in (ElementwiseOnly, Recording):
        b, rt = _fused(runtime)
        if runtime is Recording:
            b.anchors = False  # what BURN_FUSION_ANCHORS=0 sets
        x, w = _t(b, X[0]), _t(b, RNG.standard_normal((7, 5)))
        y = b.binary("add", b.matmul(x, w), 1.0)
        s = b.reduce("mean", b.unary("exp", x), (1,), False)
        b.to_numpy(y), b.to_numpy(s)
        assert all(p.reduce is None and not p.matmul for p in rt.plans)
        assert b.stats["calls"] == 2 and b.stats["kernels"] == 2
    monkeypatch.setenv("BURN_FUSION_ANCHORS", "0")
    assert not _fused()[0].anchors


def test_a_matmul_epilogue_runs_bias_and_activation_on_the_product():
    b, rt = _fused()
    xs, ws, bs = (RNG.standard_normal(s).astype(np.float32) for s in ((6, 7), (7, 5), (5,)))
    x, w, bias = _t(b, xs), _t(b, ws), _t(b, bs)
    pre = b.binary("add", b.matmul(x, w), bias)  # held: written by the same kernel
    y = b.unary("relu", pre)
    np.testing.assert_array_equal(b.to_numpy(y), np.maximum(xs @ ws + bs, 0))
    np.testing.assert_array_equal(b.to_numpy(pre), xs @ ws + bs)
    (plan,) = rt.plans
    assert plan.matmul and len(plan.ops) == 2 and len(plan.outputs) == 2 and plan.fused
    assert b.stats["calls"] == 1 and b.stats["kernels"] == 1


def test_a_product_read_otherwise_is_written_by_the_epilogue_kernel_too():
    b, rt = _fused()
    xs, ws = X[0], RNG.standard_normal((7, 7)).astype(np.float32)
    x, w = _t(b, xs), _t(b, ws)
    p = b.matmul(x, w)
    y = b.unary("relu", p)
    z = b.matmul(p, w)  # a call reads the product too
    np.testing.assert_array_equal(b.to_numpy(y), np.maximum(xs @ ws, 0))
    np.testing.assert_allclose(b.to_numpy(z), xs @ ws @ ws, rtol=1e-5)
    fused = [plan for plan in rt.plans if plan.matmul]
    assert len(fused) == 1 and fused[0].outputs[0] == 0  # value 0: the product
    b2, rt2 = _fused()
    held = b2.matmul(_t(b2, xs), _t(b2, ws))  # the product itself is held
    out = b2.unary("relu", held)
    np.testing.assert_array_equal(b2.to_numpy(out), np.maximum(xs @ ws, 0))
    np.testing.assert_array_equal(b2.to_numpy(held), xs @ ws)
    (plan,) = rt2.plans
    assert plan.matmul and plan.outputs[0] == 0 and b2.stats["kernels"] == 1


def test_a_product_without_element_wise_readers_is_a_call():
    b, rt = _fused()
    x, w = _t(b, X[0]), _t(b, RNG.standard_normal((7, 7)))
    p = b.matmul(x, w)
    b.to_numpy(b.matmul(p, w))
    assert rt.plans == [] and b.stats["calls"] == 2


def _train(dev, steps=6):
    burn.seed(0)
    model = burn.nn.Sequential(
        burn.nn.LinearConfig(12, 16).init(dev),
        burn.nn.Relu(),
        burn.nn.LayerNormConfig(16).init(dev),
        burn.nn.LinearConfig(16, 4).init(dev),
    )
    opt = burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((8, 12)).astype(np.float32), device=dev)
    y = burn.tensor(rng.integers(0, 4, 8).astype(np.int32), device=dev)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        model = opt.step(1e-2, model, loss.backward())
        losses.append(loss.item())
    return losses


def test_training_with_reduce_kernels_and_epilogues_equals_numpy_and_replays():
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    before = dict(fb.stats)
    got = _train(dev)
    assert got == _train(burn.device("cpu", autodiff=True))
    assert fb.stats["replays"] - before["replays"] >= 4
    plans = list(fb._plans.values())
    assert any(p.reduce is not None and p.ops for p in plans)  # LayerNorm's variance, the loss
    assert any(p.matmul for p in plans)  # Linear + relu, and relu's backward on a product


def test_a_mean_of_a_held_call_result_is_a_reduce_kernel_too():
    b, rt = _fused()
    x = b.permute(_t(b, X), (1, 0, 2))  # a call's result, held by a tensor
    m = b.reduce("mean", x, (2,), False)
    np.testing.assert_array_equal(b.to_numpy(m), X.transpose(1, 0, 2).mean(2))
    (plan,) = rt.plans
    assert plan.reduce == FusedReduce("mean", (2,), False) and plan.ops == ()
