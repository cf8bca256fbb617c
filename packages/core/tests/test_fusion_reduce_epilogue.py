"""Reduce epilogues: the element-wise chain that reads a reduction's result (``rsqrt(var + eps)``,
``log(sum) + max``) runs on each result inside the reduce kernel (``FusedReduce.post``). Checked on
the reference runtime against numpy: the plans carry the epilogue, one kernel less runs than with
the chain on its own, and the values are numpy's, for inputs read before and after the reduction,
an input only the epilogue reads (with the reduced dims dropped), and a reduced value a tensor keeps."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.fusion import ReferenceRuntime
from burn.testing._reductions import CASES, SAVED, C, X

rng = np.random.default_rng(5)


class Recording(ReferenceRuntime):
    """Records the plans fusion runs (not the epilogue plans it runs itself after a reduction)."""

    def __init__(self, backend):
        super().__init__(backend)
        self.plans = []
        self.depth = 0

    def execute(self, plan, inputs, scalars):
        if not self.depth:
            self.plans.append(plan)
        self.depth += 1
        try:
            return super().execute(plan, inputs, scalars)
        finally:
            self.depth -= 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_chain_after_a_reduction_runs_in_its_kernel(case, monkeypatch):
    fn, want_fn = CASES[case]
    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    kernels, ops = {}, {}
    for epilogues in (False, True):
        with monkeypatch.context() as mp:
            runtime = Recording(fb.inner)
            mp.setattr(fb, "runtime", runtime)
            for name in ("_programs", "_lengths", "_plans"):
                mp.setattr(fb, name, type(getattr(fb, name))())
            if not epilogues:
                mp.setattr(fb, "_post_chain", lambda *a: [])
            held: dict = {}
            got = fn(burn.tensor(X, device=dev), burn.tensor(C, device=dev), held).numpy()
            np.testing.assert_allclose(got, want_fn(X, C), rtol=1e-5, atol=1e-5)
            if "var" in held:
                np.testing.assert_allclose(held["var"].numpy(), (X * X).mean(-1, keepdims=True), rtol=1e-6)
            kernels[epilogues] = len(runtime.plans)
            ops[epilogues] = sum(
                len(p.ops) * (1 if p.reduce is None else p.shape[-1]) for p in runtime.plans
            )  # per-row op count: a plan's ops run once per element of its rows
            posts = [p.reduce.post for p in runtime.plans if p.reduce is not None]
            assert any(posts) == epilogues
    assert kernels[True] == kernels[False] - SAVED[case]
    if case == "layer_norm_stats":  # the chain no longer runs for every element
        assert ops[True] < ops[False]


def test_an_epilogue_plan_runs_the_same_as_its_split_form():
    """``FusedReduce.epilogue``: the post ops as a plan of their own over the result, renumbered."""
    from burn.fusion import FusedKernel, FusedOp, FusedReduce

    f32 = burn.float32
    # sum(exp(in0)) over the last dim, then * in1 + s1 (in1 read per result)
    pre = (FusedOp("unary", "exp", f32, f32, (0,)),)
    post = (FusedOp("binary", "mul", f32, f32, (4, 1)), FusedOp("binary", "add", f32, f32, (5, 2)))
    red = FusedReduce("sum", (1,), False, post, (4, 6))
    plan = FusedKernel((3, 4), (f32, f32), (f32,), pre, (3,), red)
    assert red.reduced_value(plan) == 4 and red.stores(plan) == (4, 6)
    sub, ins, scs = red.epilogue(plan)
    assert ins == (1,) and scs == (0,) and sub.shape == (3,)
    assert [op.args for op in sub.ops] == [(0, 1), (3, 2)] and sub.outputs == (4,)
    cpu = burn.device("cpu").backend
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    out = ReferenceRuntime(cpu).execute(plan, [cpu.from_numpy(x, f32), cpu.from_numpy(w, f32)], [0.5])
    s = np.exp(x).sum(-1)
    np.testing.assert_allclose(cpu.to_numpy(out[0]), s, rtol=1e-6)
    np.testing.assert_allclose(cpu.to_numpy(out[1]), s * w + 0.5, rtol=1e-6)


def test_a_runtime_that_does_not_offer_epilogues_gets_none(monkeypatch):
    """A runtime with reduce kernels but no ``reduce_epilogues`` (a third party's, written before
    epilogues existed) is never handed a plan with post ops, and the results are the same."""

    class Older(Recording):
        reduce_epilogues = False

    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    runtime = Older(fb.inner)
    monkeypatch.setattr(fb, "runtime", runtime)
    for name in ("_programs", "_lengths", "_plans"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    fn, want_fn = CASES["log_sum_exp"]
    got = fn(burn.tensor(X, device=dev), burn.tensor(C, device=dev), {}).numpy()
    np.testing.assert_allclose(got, want_fn(X, C), rtol=1e-5, atol=1e-5)
    reduces = [p.reduce for p in runtime.plans if p.reduce is not None]
    assert reduces and not any(r.post for r in reduces)
