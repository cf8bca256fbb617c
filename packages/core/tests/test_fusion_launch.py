"""``burn.fusion.launch``: a whole element-wise plan as one node of a fusion stream (one kernel), op by op
elsewhere; and the optimizers' fused updates, compared with their op-by-op composition."""

import burn
import numpy as np
import pytest
from burn import nn
from burn.fusion import FusedKernel, FusedOp
from burn.optim._adam import _adam_direction

F32 = burn.float32


def _axpy_plan(shape):
    """(a * s + b, a * s): two outputs, one scalar."""
    ops = (FusedOp("binary", "mul", F32, F32, (0, 2)), FusedOp("binary", "add", F32, F32, (3, 1)))
    return FusedKernel(shape, (F32, F32), (F32,), ops, (4, 3))


@pytest.mark.parametrize("fusion", [False, True])
def test_launch_computes_every_output(fusion):
    dev = burn.device("cpu", fusion=fusion)
    a = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    b = burn.tensor([10.0, 20.0], device=dev)  # broadcasts to the plan's shape
    total, scaled = burn.fusion.launch(_axpy_plan((2, 2)), [a, b], [0.5])
    np.testing.assert_array_equal(total.numpy(), a.numpy() * 0.5 + b.numpy())
    np.testing.assert_array_equal(scaled.numpy(), a.numpy() * 0.5)


def test_launch_is_one_node_and_one_kernel_on_a_fusion_device():
    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    a, b = burn.ones((3,), device=dev), burn.ones((3,), device=dev)
    before = dict(fb.stats)
    outs = burn.fusion.launch(_axpy_plan((3,)), [a * 2, b], [3.0])  # a lazy input: computed first
    assert fb.stats["calls"] - before["calls"] == 1
    assert [o.tolist() for o in outs] == [[7.0] * 3, [6.0] * 3]
    assert fb.stats["kernels"] - before["kernels"] == 2  # a * 2, then the plan's kernel


def test_a_launched_stream_replays_with_new_scalars():
    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    plan = _axpy_plan((4,))
    x = burn.arange(4, device=dev).float()
    got = []
    for s in (1.0, 2.0, 3.0, 4.0):
        total, _ = burn.fusion.launch(plan, [x, x], [s])
        got.append(total.tolist())
    assert fb.stats["replays"] >= 2
    assert got == [[v * s + v for v in range(4)] for s in (1.0, 2.0, 3.0, 4.0)]


def test_plans_the_runtime_cannot_render_run_op_by_op(monkeypatch):
    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    monkeypatch.setattr(fb.runtime, "fusable", lambda kind, name, compute, out: name != "add")
    monkeypatch.setattr(fb, "_fusable", {})
    a = burn.tensor([1.0, 2.0], device=dev)
    before = fb.stats["calls"]
    total, scaled = burn.fusion.launch(_axpy_plan((2,)), [a, a], [2.0])
    assert fb.stats["calls"] == before  # recorded op by op, not as one node
    assert total.tolist() == [3.0, 6.0] and scaled.tolist() == [2.0, 4.0]


def test_launch_rejects_bad_inputs():
    dev = burn.device("cpu", fusion=True)
    a = burn.ones((2,), device=dev)
    plan = _axpy_plan((2,))
    with pytest.raises(ValueError, match="takes 2 tensors and 1 scalars, got 1 and 1"):
        burn.fusion.launch(plan, [a], [1.0])
    with pytest.raises(ValueError, match="input 1 is int64"):
        burn.fusion.launch(plan, [a, burn.ones((2,), dtype="int64", device=dev)], [1.0])
    with pytest.raises(ValueError, match=r"broadcasting to \[2\]"):
        burn.fusion.launch(plan, [a, burn.ones((3,), device=dev)], [1.0])
    with pytest.raises(ValueError, match="share one device"):
        burn.fusion.launch(plan, [a, burn.ones((2,))], [1.0])
    with pytest.raises(TypeError, match="burn Tensors"):
        burn.fusion.launch(plan, [np.ones(2), a], [1.0])
    with pytest.raises(ValueError, match="takes 2 tensors"):
        burn.fusion.launch(plan, [burn.ones((2,))], [1.0])  # the op-by-op path checks too


def _reference_adam(config, lr, w, g, state, decoupled):
    """The update composed of tensor ops (``_adam_direction``), as the optimizers computed it before."""
    if decoupled:
        d, state = _adam_direction(config, g, state)
        return w * (1.0 - lr * config.weight_decay) - d * lr, state
    if config.weight_decay:
        g = g + w * config.weight_decay
    d, state = _adam_direction(config, g, state)
    return w - d * lr, state


@pytest.mark.parametrize(
    "config",
    [
        burn.optim.AdamConfig(),
        burn.optim.AdamConfig(weight_decay=0.01),
        burn.optim.AdamWConfig(weight_decay=0.05),
    ],
    ids=["adam", "adam-l2", "adamw"],
)
@pytest.mark.parametrize("fusion", [False, True])
def test_fused_adam_equals_its_composition(config, fusion):
    """Five steps of the fused update equal the op-by-op composition exactly on numpy (the same ops in the
    same order over float32), with and without fusion; the state keeps its keys and step count."""
    dev = burn.device("cpu", fusion=fusion)
    rng = np.random.default_rng(0)
    w = burn.tensor(rng.standard_normal((3, 5)).astype("float32"), device=dev)
    w_ref, state, state_ref = w, None, None
    opt = config.init()
    decoupled = isinstance(config, burn.optim.AdamWConfig)
    for step in range(5):
        g = burn.tensor(rng.standard_normal((3, 5)).astype("float32"), device=dev)
        lr = 1e-2 * (step + 1)
        w, state = opt._update(lr, w, g, state)
        w_ref, state_ref = _reference_adam(config, lr, w_ref, g, state_ref, decoupled)
        np.testing.assert_array_equal(w.numpy(), w_ref.numpy())
        for key in ("moment_1", "moment_2"):
            np.testing.assert_array_equal(state[key].numpy(), state_ref[key].numpy())
        assert state["time"] == state_ref["time"] == step + 1


def test_adam_training_on_fusion_launches_one_node_per_param():
    """An Adam step of a two-layer model records one launched node per param (4), not a dozen ops each."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    model = nn.LinearConfig(4, 3).init(dev)
    opt = burn.optim.AdamConfig().init()
    x = burn.ones((2, 4), device=dev)
    for _ in range(2):
        grads = model(x).sum().backward()
        ops_before, calls_before = fb.stats["ops"], fb.stats["calls"]
        model = opt.step(1e-3, model, grads)
        assert fb.stats["ops"] == ops_before  # no element-wise op recorded by the update
        assert fb.stats["calls"] - calls_before == 2  # weight and bias


def test_launch_on_an_autodiff_device_runs_op_by_op_and_gradients_flow():
    """On an autodiff device the plan's ops are recorded like any others, so a loss through it has the
    gradient of the composed expression: d/da sum(a * s + b) = s."""
    dev = burn.device("cpu", autodiff=True)
    a = burn.tensor([1.0, 2.0, 3.0], device=dev).require_grad()
    b = burn.tensor([0.5, 0.5, 0.5], device=dev).require_grad()
    total, scaled = burn.fusion.launch(_axpy_plan((3,)), [a, b], [4.0])
    grads = (total.sum() + scaled.sum()).backward()
    np.testing.assert_array_equal(a.grad(grads).numpy(), [8.0, 8.0, 8.0])
    np.testing.assert_array_equal(b.grad(grads).numpy(), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_fused_adam_runs_in_the_params_dtype(dtype):
    """The plan computes in the param's dtype: float16 and float64 params train through it like float32
    ones, equal to the op-by-op composition."""
    dev = burn.device("cpu", fusion=True)
    rng = np.random.default_rng(1)
    w = burn.tensor(rng.standard_normal((4,)).astype(dtype), device=dev)
    config = burn.optim.AdamConfig()
    opt = config.init()
    w_ref, state, state_ref = w, None, None
    for _ in range(3):
        g = burn.tensor(rng.standard_normal((4,)).astype(dtype), device=dev)
        w, state = opt._update(1e-2, w, g, state)
        w_ref, state_ref = _reference_adam(config, 1e-2, w_ref, g, state_ref, False)
        assert w.dtype == burn.dtype(dtype) and state["moment_2"].dtype == burn.dtype(dtype)
        np.testing.assert_array_equal(w.numpy(), w_ref.numpy())


def test_launch_on_plain_cpu_takes_the_compiled_runtime_where_a_compiler_works(monkeypatch):
    """A launch on the plain cpu device runs on the numpy backend's own fusion runtime (compiled C where
    a compiler works); numpy op by op without one (``BURN_CPU_NATIVE=0``); a device backend keeps the
    op-by-op runtime (its fusion runtime may expect the decorator's buffers)."""
    from burn._native import toolchain
    from burn._native._runtime import NativeRuntime
    from burn.fusion import ReferenceRuntime, _launch

    cpu = burn.device("cpu").backend
    runtime = _launch._plain_runtime(cpu)
    assert isinstance(runtime, NativeRuntime) == toolchain().available
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    assert type(_launch._plain_runtime(cpu)) is ReferenceRuntime

    class DeviceMemory:
        host_memory = False
        native_activations = frozenset()

        def fusion_runtime(self):
            raise AssertionError("a device backend's fusion runtime is not asked")

    assert type(_launch._plain_runtime(DeviceMemory())) is ReferenceRuntime  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_adam_on_plain_cpu_equals_its_composition(monkeypatch, dtype):
    """Twenty Adam steps on plain cpu, the update compiled from its first launch, equal the op-by-op
    composition within float rounding (the C compiler may contract a * b + c into one rounding:
    a few ulps of the moments, compounded over the steps)."""
    from burn._native import toolchain
    from burn._native._runtime import NativeRuntime
    from burn.fusion import _launch

    if not toolchain().available:
        pytest.skip(f"no working C compiler: {toolchain().reason}")
    dev = burn.device("cpu")
    runtime = NativeRuntime(dev.backend, toolchain(), after=0)
    monkeypatch.setitem(_launch._REFERENCE, dev.backend, runtime)
    rng = np.random.default_rng(3)
    w = burn.tensor(rng.standard_normal((17, 9)).astype(dtype), device=dev)
    config = burn.optim.AdamWConfig(weight_decay=0.01)
    opt = config.init()
    w_ref, state, state_ref = w, None, None
    for _ in range(20):
        g = burn.tensor(rng.standard_normal((17, 9)).astype(dtype), device=dev)
        w, state = opt._update(1e-2, w, g, state)
        w_ref, state_ref = _reference_adam(config, 1e-2, w_ref, g, state_ref, True)
    assert runtime.native_runs >= 19  # the first step's plan (no moments yet) too, once compiled
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(w.numpy(), w_ref.numpy(), rtol=tol, atol=tol)
    for key in ("moment_1", "moment_2"):
        np.testing.assert_allclose(state[key].numpy(), state_ref[key].numpy(), rtol=tol, atol=tol)
