"""The fusion decorator's planner, on the numpy backend with the reference runtime (plans run op by op):
what is deferred, what one plan writes, how limits split plans, and that every result equals the
unfused numpy backend's exactly (the same ops run in the same order)."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.fusion import FusedKernel, Fusion, ReferenceRuntime
from burn.fusion import _program as fusion_program
from burn.fusion import _stream as fusion_stream


class Recording(ReferenceRuntime):
    """The reference runtime, keeping every plan it ran and with limits a test chooses."""

    def __init__(self, backend, max_tensors=64, max_ops=64, refuse=()):
        super().__init__(backend)
        self.max_tensors, self.max_ops, self.refuse = max_tensors, max_ops, set(refuse)
        self.plans: list[FusedKernel] = []

    def fusable(self, kind, name, compute, out):
        return name not in self.refuse

    def execute(self, plan, inputs, scalars):
        assert len(plan.inputs) + len(plan.outputs) <= self.max_tensors
        assert len(plan.ops) <= self.max_ops
        self.plans.append(plan)
        return super().execute(plan, inputs, scalars)


def _fused(**limits):
    cpu = burn.device("cpu").backend
    runtime = Recording(cpu, **limits)
    backend = Fusion(cpu, runtime=runtime)
    return backend, runtime


def _t(backend, data, dtype=burn.float32):
    return backend.from_numpy(np.asarray(data), dtype)


def test_a_chain_is_one_plan_and_intermediates_stay_in_registers():
    b, rt = _fused()
    x = _t(b, [1.0, -2.0, 3.0])
    y = b.unary("exp", b.binary("add", b.binary("mul", x, 2.0), 1.0))
    assert b.stats["kernels"] == 0  # nothing ran yet
    out = b.to_numpy(y)
    np.testing.assert_array_equal(out, np.exp(np.array([1.0, -2.0, 3.0], np.float32) * 2 + 1))
    assert len(rt.plans) == 1 and len(rt.plans[0].ops) == 3 and len(rt.plans[0].outputs) == 1
    assert rt.plans[0].scalars == (burn.float32, burn.float32)
    assert b.stats["fused"] == 1


def test_a_held_intermediate_is_written_by_the_same_plan():
    b, rt = _fused()
    x = _t(b, [0.5, 1.5])
    h = b.binary("mul", x, x)
    y = b.unary("log", h)
    np.testing.assert_allclose(b.to_numpy(y), np.log(np.array([0.25, 2.25], np.float32)))
    assert len(rt.plans) == 1 and len(rt.plans[0].outputs) == 2
    np.testing.assert_array_equal(b.to_numpy(h), [0.25, 2.25])
    assert len(rt.plans) == 1  # h was written then: reading it launches nothing


def test_smaller_shapes_run_first_and_are_read_not_recomputed():
    b, rt = _fused()
    bias = b.binary("mul", _t(b, [1.0, 2.0, 3.0]), 10.0)  # (3,), held
    y = b.unary("relu", b.binary("sub", _t(b, np.arange(6.0).reshape(2, 3)), bias))
    np.testing.assert_array_equal(b.to_numpy(y), np.maximum(np.arange(6.0).reshape(2, 3) - [10, 20, 30], 0))
    assert [p.shape for p in rt.plans] == [(3,), (2, 3)]
    assert len(rt.plans[1].ops) == 2  # sub and relu: the bias is an input of the second plan


def test_plans_respect_the_binding_limit():
    b, rt = _fused(max_tensors=3)
    xs = [_t(b, np.full(4, float(i))) for i in range(6)]
    acc = xs[0]
    for x in xs[1:]:
        acc = b.binary("add", acc, x)
    np.testing.assert_array_equal(b.to_numpy(acc), np.full(4, 15.0))
    assert len(rt.plans) >= 3


def test_plans_respect_the_op_limit():
    b, rt = _fused(max_ops=8)
    x = _t(b, np.linspace(-1, 1, 5))
    ref = np.linspace(-1, 1, 5).astype(np.float32)
    y = x
    for i in range(50):
        y = b.binary("add", b.binary("mul", y, 0.5), float(i))
        ref = ref * np.float32(0.5) + np.float32(i)
    np.testing.assert_array_equal(b.to_numpy(y), ref)
    assert len(rt.plans) >= 100 // 8


def test_ops_the_runtime_cannot_render_run_eagerly():
    b, rt = _fused(refuse={"exp"})
    x = _t(b, [0.0, 1.0])
    y = b.binary("add", b.unary("exp", b.binary("mul", x, 2.0)), 1.0)
    np.testing.assert_allclose(b.to_numpy(y), np.exp([0.0, 2.0]) + 1, rtol=1e-6)
    assert all("exp" not in [op.name for op in p.ops] for p in rt.plans)


def test_a_long_stream_is_flushed(monkeypatch):
    monkeypatch.setattr(fusion_stream, "PENDING_LIMIT", 16)
    b, rt = _fused()
    x = _t(b, [1.0])
    held = [b.binary("add", x, float(i)) for i in range(40)]
    assert rt.plans  # flushed without a read
    assert [float(b.to_numpy(h)[0]) for h in held] == [1.0 + i for i in range(40)]


def test_a_runtime_stream_segment_cuts_the_stream_shorter():
    b, rt = _fused()
    rt.stream_segment = 10  # a runtime asking for shorter streams (burn-cuda: BURN_FUSION_SEGMENT)
    x = _t(b, [1.0])
    held = [b.binary("add", x, float(i)) for i in range(40)]
    assert b.stats["flushes"] >= 3  # 40 ops: run every 11 without a read
    assert [float(b.to_numpy(h)[0]) for h in held] == [1.0 + i for i in range(40)]


def test_sync_and_read_many_run_everything_in_one_pass():
    b, rt = _fused()
    x = _t(b, [1.0, 2.0])
    ys = [b.binary("mul", x, float(i)) for i in range(3)]
    b.sync()
    assert b.stats["flushes"] == 1 and len(rt.plans) == 1 and len(rt.plans[0].outputs) == 3
    zs = [b.binary("add", y, 1.0) for y in ys]
    outs = b.read_many(zs)
    assert b.stats["flushes"] == 2
    assert [o.tolist() for o in outs] == [[1.0, 1.0], [2.0, 3.0], [3.0, 5.0]]


# expressions over a float tensor x, an int tensor i and a bool tensor m, on the frontend
EXPRESSIONS = {
    "arith": lambda x, i, m: ((x * 3 - 1) / (x.abs() + 1)).exp().log1p(),
    "compare_where": lambda x, i, m: burn.where(x > 0.2, x, -x) * burn.where(m, 2.0, 0.5),
    "clamp_cast": lambda x, i, m: (x.clamp(-0.5, 0.5) * 100).int() + i,
    "int_ops": lambda x, i, m: (i * 7) // 3 + (i - 5) % 4 - (-i).abs(),
    "bool_ops": lambda x, i, m: (m & (x > 0)) | ~(i > 3),
    "activations": lambda x, i, m: (
        x.sigmoid()
        + burn.nn.functional.gelu(x)
        - burn.nn.functional.silu(x) * x.tanh()
        + burn.nn.functional.softplus(x)
    ),
    "broadcast": lambda x, i, m: x.reshape(4, 1) * x.reshape(1, 4) + x,
    "isnan": lambda x, i, m: (x.log()).isnan().int() + (x / 0.0).isinf().int(),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_results_equal_the_numpy_backend(name):
    rng = np.random.default_rng(3)
    xs, ints, mask = rng.standard_normal(4).astype(np.float32), rng.integers(-9, 9, 4), rng.random(4) > 0.5
    results = []
    for dev in (burn.device("cpu"), burn.device("cpu", fusion=True)):
        x, i, m = (burn.tensor(v, device=dev) for v in (xs, ints, mask))
        results.append(EXPRESSIONS[name](x, i, m))
    ref, got = results
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_gradients_through_fusion_equal_autodiff_on_numpy():
    rng = np.random.default_rng(0)
    w0, x0 = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    grads = []
    for dev in (burn.device("cpu", autodiff=True), burn.device("cpu", autodiff=True, fusion=True)):
        w = burn.tensor(w0, device=dev).require_grad()
        x = burn.tensor(x0, device=dev)
        loss = ((x @ w).tanh() * 2 + (x @ w).sigmoid()).square().mean()
        grads.append(loss.backward().get(w).numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)


def test_devices_name_and_switch_the_decorator(monkeypatch):
    dev = burn.device("cpu+fusion")
    assert dev == burn.device("cpu", fusion=True) and str(dev) == "cpu+fusion"
    assert isinstance(dev.backend, Fusion)
    assert burn.device("cpu+fusion+autodiff").autodiff
    assert burn.device(dev, fusion=False) == burn.device("cpu")
    with pytest.raises(TypeError, match="fusion="):
        burn.device("cpu", fusion="yes")


def test_fusion_does_not_wrap_autodiff():
    cpu = burn.device("cpu", autodiff=True).backend
    with pytest.raises(TypeError, match="autodiff wraps fusion"):
        Fusion(cpu)


def test_every_op_of_the_vocabulary_has_a_fusion_method():
    """Each op method of the vocabulary is Fusion's own (element-wise ops, values in and out) or one of
    ``InnerOps`` (recorded as a call, or run at once): none falls through to ``Backend``'s default
    unnoticed. ``activation`` is the one exception: its default reaches ``unary``, which fuses."""
    from burn.backend._vocabulary import OPS
    from burn.fusion._ops import INNER_OPS, InnerOps

    methods = {d.method for d in OPS.values()}
    assert not methods - set(vars(Fusion)) - set(INNER_OPS) - {"activation"}
    assert set(INNER_OPS) <= methods and not set(INNER_OPS) & set(vars(Fusion))
    assert all(name in vars(InnerOps) for name in INNER_OPS)


# ---------------------------------------------------------------------- the stream and its replay


def _training_losses(dev, steps, read_every=1, dropout=0.0, batches=None):
    """Losses of an MLP (with optional dropout) trained with Adam on ``dev``; the loss is read every
    ``read_every`` steps (0: only at the end); ``batches`` gives the batch size per step."""
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)

    class Net(nn.Module):
        def __init__(self):
            self.l1 = nn.LinearConfig(6, 8).init(dev)
            self.l2 = nn.LinearConfig(8, 3).init(dev)

        def forward(self, x):
            h = F.relu(self.l1(x))
            return self.l2(F.dropout(h, dropout) if dropout else h)

    model, opt = Net(), burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    held = []
    for i in range(steps):
        n = batches[i] if batches else 5
        x = burn.tensor(rng.standard_normal((n, 6)).astype(np.float32), device=dev)
        y = burn.tensor(rng.integers(0, 3, n), device=dev)
        # ignore_index=None: the default (-100) masks the targets first, and a host backend checks the
        # masked targets' range at once, which runs the stream mid-step (device backends defer it)
        loss = F.cross_entropy(model(x), y, ignore_index=None)
        model = opt.step(1e-2, model, loss.backward())
        held.append(loss)
        if read_every and i % read_every == 0:
            loss.item()
    return [float(v.item()) for v in held]


def _stats(dev):
    return dev.backend.inner.stats  # autodiff over fusion


def _assert_same_losses(got, ref, dev):
    """The reference runtime runs the same numpy ops: equal, not close. Compiled cpu kernels
    (``burn._native``, where a C compiler is present) compute the same within float32 rounding."""
    if type(dev.backend.inner.runtime) is burn.fusion.ReferenceRuntime:
        assert got == ref
    else:
        np.testing.assert_allclose(got, ref, rtol=2e-6)


@pytest.mark.parametrize("read_every", [1, 3, 0])
def test_a_repeated_training_step_is_planned_once_and_replayed(read_every):
    ref = _training_losses(burn.device("cpu", autodiff=True), 10, read_every)
    dev = burn.device("cpu", autodiff=True, fusion=True)
    before = dict(_stats(dev))
    got = _training_losses(dev, 10, read_every)
    _assert_same_losses(got, ref, dev)
    stats = {k: v - before[k] for k, v in _stats(dev).items()}
    # one stream per step, even when nothing is read (the step ends where the same step ended before)
    assert stats["flushes"] == 10
    assert stats["replays"] >= 7 and stats["plans"] <= 3  # the first steps differ (Adam's state starts)


def test_changed_shapes_plan_anew_and_dropout_draws_fresh_masks():
    batches = [5, 5, 5, 7, 7, 5, 5, 7]
    for dropout in (0.0, 0.5):
        ref = _training_losses(burn.device("cpu", autodiff=True), 8, 1, dropout, batches)
        dev = burn.device("cpu", autodiff=True, fusion=True)
        _assert_same_losses(_training_losses(dev, 8, 1, dropout, batches), ref, dev)


def test_a_program_is_not_replayed_when_a_register_value_is_held():
    b, rt = _fused()
    x = _t(b, [1.0, 2.0])

    def stream(keep):
        h = b.binary("mul", x, 3.0)
        y = b.unary("exp", b.binary("add", h, 1.0))
        return y, (h if keep else None)

    y, _ = stream(False)
    np.testing.assert_allclose(b.to_numpy(y), np.exp([4.0, 7.0]), rtol=1e-6)
    y, _ = stream(False)
    b.to_numpy(y)
    assert (b.stats["plans"], b.stats["replays"]) == (1, 1)
    y, h = stream(True)  # h was an intermediate in registers: now a tensor holds it
    np.testing.assert_allclose(b.to_numpy(y), np.exp([4.0, 7.0]), rtol=1e-6)
    np.testing.assert_array_equal(b.to_numpy(h), [3.0, 6.0])
    assert (b.stats["plans"], b.stats["replays"]) == (2, 1)


def test_calls_join_the_stream_and_replays_free_intermediates():
    b, rt = _fused()
    w = _t(b, np.eye(3))
    done = []
    for _ in range(3):
        x = _t(b, np.arange(6.0).reshape(2, 3))
        h = b.matmul(b.unary("relu", b.binary("sub", x, 1.0)), w)  # a call reading a lazy value
        y = b.reduce("sum", b.binary("mul", h, 2.0), (1,), False)
        assert b.stats["kernels"] == len(done) * 2  # nothing ran yet: the matmul is lazy too
        done.append(b.to_numpy(y))
    for out in done:
        np.testing.assert_array_equal(out, [2 * (0 + 0 + 1), 2 * (2 + 3 + 4)])
    assert (b.stats["plans"], b.stats["replays"]) == (1, 2)


def test_a_failed_stream_raises_and_its_values_say_so():
    class Failing(Recording):
        def execute(self, plan, inputs, scalars):
            if any(op.name == "log" for op in plan.ops):
                raise MemoryError("out of device memory (simulated)")
            return super().execute(plan, inputs, scalars)

    cpu = burn.device("cpu").backend
    b = Fusion(cpu, runtime=Failing(cpu))
    x = _t(b, [1.0, 2.0])
    y = b.unary("log", b.binary("mul", x, 2.0))
    z = b.binary("add", y, 1.0)
    with pytest.raises(MemoryError, match="simulated"):
        b.to_numpy(z)
    with pytest.raises(RuntimeError, match="never computed.*MemoryError"):
        b.to_numpy(z)
    with pytest.raises(RuntimeError, match="never computed"):
        b.binary("add", z, 1.0)  # using it in a new stream raises too (its value is computed-failed)
    np.testing.assert_array_equal(b.to_numpy(b.binary("add", x, 1.0)), [2.0, 3.0])  # the backend still works


def test_replay_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("BURN_FUSION_REPLAY", "0")
    b, rt = _fused()
    x = _t(b, [1.0])
    for _ in range(3):
        b.to_numpy(b.unary("exp", b.binary("mul", x, 2.0)))
    assert (b.stats["plans"], b.stats["replays"]) == (3, 0)


def test_programs_of_signatures_not_run_lately_are_dropped(monkeypatch):
    """A loop whose static arguments change each step (a slice at a moving offset) plans a new stream
    every step: only the ``SIGNATURES_KEPT`` most recently run signatures keep their programs, and a
    signature still in use keeps replaying."""
    monkeypatch.setattr(fusion_program, "SIGNATURES_KEPT", 3)
    dev = burn.device("cpu", fusion=True)
    b = dev.backend
    monkeypatch.setattr(b, "_programs", {})
    monkeypatch.setattr(b, "_lengths", set())
    data = np.arange(40, dtype=np.float32)
    x = burn.tensor(data, device=dev)
    replays = b.stats["replays"]
    for i in range(12):
        got = (x[i : i + 4] * 2).exp().sum()  # a new signature each step (the slice's offset)
        np.testing.assert_allclose(got.item(), np.exp(data[i : i + 4] * 2).sum(), rtol=1e-6)
        steady = (x * 3).relu().sum()  # the same signature every step
        assert steady.item() == pytest.approx(float((data * 3).sum()))
        assert len(b._programs) <= 3
    assert b.stats["replays"] - replays >= 10  # the steady signature stayed and replayed
    assert b._lengths == {p.length for kept in b._programs.values() for p in kept}


def test_mark_step_ends_a_stream_so_an_inference_loop_replays():
    dev = burn.device("cpu", fusion=True)
    b = dev.backend
    w = burn.tensor(np.eye(4, dtype=np.float32), device=dev)
    before = dict(b.stats)
    outs = []
    for i in range(5):
        x = burn.full((2, 4), float(i), device=dev)
        outs.append(((x @ w) * 2).relu().sum(1))
        burn.fusion.mark_step(dev)
    assert b.stats["flushes"] - before["flushes"] == 5
    assert b.stats["replays"] - before["replays"] >= 4
    assert [o.tolist() for o in outs] == [[8.0 * i] * 2 for i in range(5)]
    burn.fusion.mark_step("cpu")  # a device without fusion: nothing to do


def test_a_deferred_call_runs_under_the_settings_it_was_called_in():
    """A backend's ambient settings (burn-cuda's matmul precision) apply where the op was called, not
    where the stream runs: fusion records ``call_state()`` with the call and runs it in its scope."""
    import contextlib

    cpu = burn.device("cpu").backend
    mode = {"now": "plain"}

    class Moody(type(cpu)):
        def call_state(self):
            return mode["now"]

        @contextlib.contextmanager
        def call_state_scope(self, state):
            before, mode["now"] = mode["now"], state
            try:
                yield
            finally:
                mode["now"] = before

        def matmul(self, a, b):
            out = super().matmul(a, b)
            return out * 2 if mode["now"] == "double" else out

    b = Fusion(Moody())
    x = _t(b, np.eye(2))
    mode["now"] = "double"
    doubled = b.matmul(x, x)
    mode["now"] = "plain"
    plain = b.matmul(x, x)
    np.testing.assert_array_equal(b.to_numpy(doubled), 2 * np.eye(2))
    np.testing.assert_array_equal(b.to_numpy(plain), np.eye(2))


class Graphing(ReferenceRuntime):
    """A runtime that "captures" programs the way a CUDA-graph runtime does (``run_values`` over
    copied inputs, scalars read at each launch, outputs copied out), with numpy for the device."""

    def __init__(self, backend, fail=False):
        super().__init__(backend)
        self.fail, self.captures, self.launches = fail, 0, 0

    def capture_program(self, fusion, program, stream, leaves, scalars):
        runtime = self

        def kernel_with(scal):
            return lambda i, plan, ins, sidx: runtime.execute(plan, ins, [scal[j] for j in sidx])

        vals = program.run_values(
            fusion, stream, leaves, [leaf.value for leaf in leaves], kernel_with(scalars)
        )
        program.deliver(stream, vals)
        if self.fail:
            return None
        self.captures += 1

        class Graph:
            def launch(self, stream, leaves, scalars):
                runtime.launches += 1
                inputs = [np.array(leaf.value, copy=True) for leaf in leaves]
                values = program.run_values(fusion, stream, leaves, inputs, kernel_with(scalars))
                program.deliver(stream, values, copy=np.copy)

        return Graph()


@pytest.mark.parametrize("fail", [False, True])
def test_repeated_programs_are_captured_as_graphs_where_the_runtime_can(fail, monkeypatch):
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    runtime = Graphing(fb.inner, fail)
    for name, value in (("runtime", runtime), ("_capture", runtime.capture_program)):
        monkeypatch.setattr(fb, name, value)
    for name, value in (("_programs", {}), ("_lengths", set()), ("_plans", {})):
        monkeypatch.setattr(fb, name, value)
    before = dict(fb.stats)
    ref = _training_losses(burn.device("cpu", autodiff=True), 8, read_every=0, dropout=0.5)
    got = _training_losses(dev, 8, read_every=0, dropout=0.5)
    assert got == ref  # varying scalars (Adam's bias corrections) and fresh dropout masks each launch
    launches = fb.stats["graph_launches"] - before["graph_launches"]
    if fail:  # the runtime ran the stream but could not capture it: step by step from then on
        assert runtime.captures == 0 and launches == 0
    else:
        assert runtime.captures == 1 and runtime.launches == launches >= 3


def test_planning_and_capture_seconds_are_counted_apart_from_replays(monkeypatch):
    """``seconds["plan"]`` grows only on flushes that plan, ``seconds["capture"]`` only when a program
    is captured as a graph: a cold start's costs, reported apart from the steady steps."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    runtime = Graphing(fb.inner, False)
    for name, value in (("runtime", runtime), ("_capture", runtime.capture_program)):
        monkeypatch.setattr(fb, name, value)
    for name, value in (("_programs", {}), ("_lengths", set()), ("_plans", {})):
        monkeypatch.setattr(fb, name, value)
    before, seconds = dict(fb.stats), dict(fb.seconds)
    _training_losses(dev, 6, read_every=0)
    assert fb.stats["plans"] > before["plans"] and fb.seconds["plan"] > seconds["plan"]
    assert fb.stats["graphs"] - before["graphs"] == 1 and fb.seconds["capture"] > seconds["capture"]
    plans, seconds = fb.stats["plans"], dict(fb.seconds)
    _training_losses(dev, 3, read_every=0)  # the same steps: replayed as the captured graph
    assert fb.stats["plans"] == plans and fb.seconds == seconds


def test_a_captured_program_keeps_only_what_outlives_it(monkeypatch):
    """``run_values`` (what a runtime capturing a program into a memory pool runs) drops each value
    after its last reader, as the step-by-step replay does: what it returns is only the values tensors
    hold (and the positions the runtime asked to keep), so a graph's pool reuses its intermediates'
    memory instead of holding every one of them."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    runtime = Graphing(fb.inner, False)
    kept: list[tuple[int, int, set]] = []  # (positions written, values returned, asked to keep)
    run_values = fusion_program._Program.run_values

    def recording(self, *args, **kwargs):
        vals = run_values(self, *args, **kwargs)
        kept.append((len(self.written), len(vals), set(kwargs.get("keep") or ())))
        return vals

    monkeypatch.setattr(fusion_program._Program, "run_values", recording)
    for name, value in (("runtime", runtime), ("_capture", runtime.capture_program)):
        monkeypatch.setattr(fb, name, value)
    for name, value in (("_programs", {}), ("_lengths", set()), ("_plans", {})):
        monkeypatch.setattr(fb, name, value)
    ref = _training_losses(burn.device("cpu", autodiff=True), 6, read_every=0, dropout=0.0)
    got = _training_losses(dev, 6, read_every=0, dropout=0.0)
    assert got == ref
    assert kept and all(returned < written for written, returned, _ in kept)
    # the positions the runtime asks to keep survive their last reader
    sizes: list[tuple[int, int]] = []

    def keep_everything(self, b, stream, leaves, leaf_values, kernel, call=None, keep=None):
        vals = run_values(self, b, stream, leaves, leaf_values, kernel, call, set(self.written))
        sizes.append((len(self.written), len(vals)))
        return vals

    monkeypatch.setattr(fusion_program._Program, "run_values", keep_everything)
    for name, value in (("_programs", {}), ("_lengths", set()), ("_plans", {})):
        monkeypatch.setattr(fb, name, value)
    assert _training_losses(dev, 6, read_every=0, dropout=0.0) == ref
    assert sizes and all(written == returned for written, returned in sizes)


def test_a_graph_that_cannot_run_now_stays_and_the_replay_runs_step_by_step(monkeypatch):
    """A launch that says ``LATER`` (a lent buffer still has a reader) keeps its graph: the replay runs
    step by step, and the next launch uses the graph again; ``LATER_LIMIT`` of them in a row drop it
    (captured again later). Losses equal training without graphs throughout."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    runtime = Graphing(fb.inner, False)
    answers: list = []  # what the next launches say before running: LATER, or None to run
    capture = runtime.capture_program

    def capture_program(*args):
        graph = capture(*args)
        launch = graph.launch

        def maybe(stream, leaves, scalars):
            if answers and answers.pop(0) is fusion_program.LATER:
                return fusion_program.LATER
            return launch(stream, leaves, scalars)

        graph.launch = maybe
        return graph

    for name, value in (("runtime", runtime), ("_capture", capture_program)):
        monkeypatch.setattr(fb, name, value)
    for name, value in (("_programs", {}), ("_lengths", set()), ("_plans", {})):
        monkeypatch.setattr(fb, name, value)
    monkeypatch.setattr(fusion_program, "LATER_LIMIT", 3)
    later = fusion_program.LATER
    answers += [None, later, later, None, later, later, later, later]
    before = dict(fb.stats)
    ref = _training_losses(burn.device("cpu", autodiff=True), 16, read_every=0, dropout=0.0)
    got = _training_losses(dev, 16, read_every=0, dropout=0.0)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    # one capture kept through two LATERs; the fourth LATER in a row (past the limit of 3) dropped it
    assert runtime.captures == 2
    assert fb.stats["graph_launches"] - before["graph_launches"] == runtime.launches >= 4


def test_creation_constants_are_made_once_on_device_backends():
    """On a backend whose arrays live on a device, ``full``/``arange`` results are kept and handed out
    again for equal arguments (a graph then reads them in place); 0.0 and -0.0, 1 and True, and
    each dtype stay apart. On host backends every call makes a new array."""
    from burn.fusion import ReferenceRuntime

    inner = burn.device("cpu").backend

    class DeviceLike(type(inner)):
        host_memory = False

    b = Fusion(DeviceLike(), runtime=ReferenceRuntime(DeviceLike()))
    f32, i32, b8 = burn.float32, burn.int32, burn.bool_
    one = b.full((2, 3), 1.0, f32)
    assert b.inner_prim(b.full((2, 3), 1.0, f32)) is b.inner_prim(one)
    assert b.inner_prim(b.arange(0, 5, 1, i32)) is b.inner_prim(b.arange(0, 5, 1, i32))
    zero, negzero = b.full((2,), 0.0, f32), b.full((2,), -0.0, f32)
    assert np.signbit(b.to_numpy(negzero)).all() and not np.signbit(b.to_numpy(zero)).any()
    assert b.inner_prim(b.full((2,), 1, i32)) is not b.inner_prim(b.full((2,), True, b8))
    assert b.to_numpy(b.full((2,), True, b8)).dtype == np.bool_
    assert b.inner_prim(b.full((2,), 1.0, f32)) is not b.inner_prim(b.full((3,), 1.0, f32))
    big = (fusion_stream.CONSTANT_MAX_BYTES // 4 + 1,)
    assert b.inner_prim(b.full(big, 2.0, f32)) is not b.inner_prim(b.full(big, 2.0, f32))
    for i in range(fusion_stream.CONSTANTS_KEPT + 5):  # bounded: the oldest are dropped
        b.full((1,), float(i), f32)
    assert len(b._constants) == fusion_stream.CONSTANTS_KEPT
    quarter = (fusion_stream.CONSTANTS_MAX_BYTES // 16,)  # a quarter of the byte budget in float32
    for i in range(6):
        b.full(quarter, float(i), f32)
    assert sum(size for _, size in b._constants.values()) <= fusion_stream.CONSTANTS_MAX_BYTES
    assert b.inner_prim(b.full(quarter, 5.0, f32)) is b.inner_prim(b.full(quarter, 5.0, f32))
    np.testing.assert_array_equal(b.to_numpy(one), np.ones((2, 3), np.float32))
    host = Fusion(inner)  # numpy: a new array each call (its arrays may be handed out writable)
    assert host.inner_prim(host.full((2,), 1.0, f32)) is not host.inner_prim(host.full((2,), 1.0, f32))


def _manual_sgd(adev, steps):
    """A hand-written loop as bench_wgpu's: parameters on the inner device, lifted to ``adev`` (autodiff)
    each step, updated with tensor ops, no optimizer, nothing read until the end; the final weights."""
    rng_ = np.random.default_rng(11)
    inner = adev.backend.inner
    x = burn.tensor(rng_.standard_normal((16, 8)).astype(np.float32), device=adev)
    y = burn.tensor(rng_.standard_normal((16, 1)).astype(np.float32), device=adev)
    params = [
        burn.backend.from_primitive(inner.from_numpy(w, burn.float32), inner)
        for w in (rng_.standard_normal((8, 12)) * 0.3, rng_.standard_normal((12, 1)) * 0.3)
    ]
    params = [p.cast(burn.float32) for p in params]
    for _ in range(steps):
        w1, w2 = (p.to(adev).require_grad() for p in params)
        loss = ((burn.nn.functional.relu(x @ w1) @ w2 - y) ** 2).mean()
        grads = loss.backward()
        params = [p - 0.05 * w.grad(grads) for p, w in zip(params, (w1, w2))]
    return [p.numpy() for p in params]


def test_a_loop_without_optimizer_or_reads_replays_its_steps():
    """No ``mark_step`` and no read per step: the step boundary comes from autodiff's backward
    (``backward_begins``), so after the first steps every step is the same stream, replayed, not
    planned again; the weights equal the unfused loop's."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    before = dict(fb.stats)
    got = _manual_sgd(dev, 12)
    want = _manual_sgd(burn.device("cpu", autodiff=True), 12)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    plans = fb.stats["plans"] - before["plans"]
    replays = fb.stats["replays"] - before["replays"]
    assert replays >= 9 and plans <= 3, (plans, replays)
