"""burn.amp: autocast dtype rules per op, float32 gradients of float32 leaves, the loss scaler.

References: the same computation in float32 on the numpy backend (values and gradients). Tolerance
for a half-precision run against it: float16 keeps 11 significant bits (unit roundoff 2**-11 ~ 4.9e-4);
a few layers of products and sums with float32 accumulation stay within a relative error of 1e-2, the
bound used below (``HALF_RTOL``), measured as the norm of the difference over the norm of the reference.
"""

from __future__ import annotations

import re
import threading

import burn
import numpy as np
import pytest
from burn import nn
from burn.amp import GradScaler, autocast
from burn.nn import functional as F
from burn.optim import GradientsParams

HALF_RTOL = 1e-2

f16, f32 = burn.float16, burn.float32


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def _x(*shape: int, seed: int = 0, device: str = "cpu") -> burn.Tensor:
    rng = np.random.default_rng(seed)
    return burn.from_numpy(rng.standard_normal(shape).astype(np.float32), device=device)


# (name, fn(x) -> tensor, input shape, dtype under autocast): one row per op family
RULES = [
    ("matmul", lambda x: x @ _x(4, 3, seed=1), (2, 4), f16),
    ("rmatmul 1-d", lambda x: x @ _x(4, seed=1), (3, 4), f16),
    ("linear", lambda x: F.linear(x, _x(4, 3, seed=1), _x(3, seed=2)), (2, 4), f16),
    ("conv1d", lambda x: F.conv1d(x, _x(3, 2, 3, seed=1), _x(3, seed=2)), (1, 2, 6), f16),
    ("conv2d", lambda x: F.conv2d(x, _x(3, 2, 3, 3, seed=1), padding=1), (1, 2, 5, 5), f16),
    ("conv3d", lambda x: F.conv3d(x, _x(2, 2, 2, 2, 2, seed=1)), (1, 2, 3, 3, 3), f16),
    (
        "conv_transpose2d",
        lambda x: F.conv_transpose2d(x, _x(2, 3, 3, 3, seed=1), stride=2),
        (1, 2, 3, 3),
        f16,
    ),
    ("softmax", lambda x: F.softmax(x.cast(f16), 1), (2, 4), f32),
    ("log_softmax", lambda x: F.log_softmax(x.cast(f16), 1), (2, 4), f32),
    ("softplus", lambda x: F.softplus(x.cast(f16)), (2, 4), f32),
    ("cross_entropy", lambda x: F.cross_entropy(x.cast(f16), burn.tensor([0, 3])), (2, 4), f32),
    ("mse_loss", lambda x: F.mse_loss(x.cast(f16), x.cast(f16) * 0.5), (2, 4), f32),
    ("layer_norm", lambda x: F.layer_norm(x.cast(f16), 4), (2, 4), f32),
    ("group_norm", lambda x: F.group_norm(x.cast(f16), 2), (2, 4, 3), f32),
    ("sum", lambda x: x.cast(f16).sum(), (2, 4), f32),
    ("sum dim", lambda x: x.cast(f16).sum(1), (2, 4), f32),
    ("mean", lambda x: x.cast(f16).mean(0), (2, 4), f32),
    ("var", lambda x: x.cast(f16).var(1), (2, 4), f32),
    ("max stays half", lambda x: x.cast(f16).max(1), (2, 4), f16),
    ("relu stays half", lambda x: F.relu(x.cast(f16)), (2, 4), f16),
    ("exp of float32 stays", lambda x: x.exp(), (2, 4), f32),
    ("half + float32 promotes", lambda x: x.cast(f16) + x, (2, 4), f32),
    ("float32 * half promotes", lambda x: x * (x @ _x(4, 4, seed=3)), (2, 4), f32),
    ("int matmul stays int", lambda x: burn.tensor([[1, 2]]) @ burn.tensor([[3], [4]]), (1,), burn.int64),
]


@pytest.mark.parametrize(("name", "fn", "shape", "want"), RULES, ids=[r[0] for r in RULES])
def test_autocast_dtype_rule_and_value(name, fn, shape, want):
    x = _x(*shape)
    ref = fn(x)  # autocast off: every row computes in its input dtype (float32 here)
    with autocast("float16"):
        got = fn(x)
    assert got.dtype is want, name
    assert got.shape == ref.shape
    assert _rel_err(got.numpy(), ref.numpy()) < HALF_RTOL, name


def test_autocast_off_changes_nothing_and_restores_on_exit():
    x = _x(2, 4)
    assert (x @ _x(4, 3)).dtype is f32
    with autocast("float16"):
        with autocast("float16", enabled=False):
            assert (x @ _x(4, 3)).dtype is f32  # nested off
            assert burn.amp.autocast_dtype() is None
        assert burn.amp.is_autocast_enabled()
    assert not burn.amp.is_autocast_enabled() and (x @ _x(4, 3)).dtype is f32

    @autocast("float16")
    def forward(t: burn.Tensor) -> burn.Tensor:
        return F.linear(t, _x(4, 2))

    assert forward(x).dtype is f16
    with pytest.raises(RuntimeError), autocast("float16"):
        raise RuntimeError("boom")
    assert burn.amp.autocast_dtype() is None  # restored after an exception too


def test_autocast_is_per_thread():
    seen = []
    with autocast("float16"):
        t = threading.Thread(target=lambda: seen.append((_x(2, 4) @ _x(4, 3)).dtype))
        t.start()
        t.join()
    assert seen == [f32]


def test_attention_matmuls_run_in_half_and_match_float32():
    burn.seed(0)
    mha = nn.MultiHeadAttentionConfig(8, 2).init(burn.device("cpu"))
    x = _x(2, 5, 8)
    ref = mha(x, x, x)
    with autocast("float16"):
        got = mha(x, x, x)
    assert got.context.dtype is f16  # the output projection is a half linear
    assert got.weights.dtype is f32  # the softmax of the half scores runs in float32
    assert _rel_err(got.context.numpy(), ref.context.numpy()) < HALF_RTOL
    assert _rel_err(got.weights.numpy(), ref.weights.numpy()) < HALF_RTOL


def test_bad_dtypes_give_clear_errors(monkeypatch):
    with pytest.raises(ValueError, match=r"autocast: dtype must be 'float16' or 'bfloat16', got 'float32'"):
        autocast("float32")
    with pytest.raises(ValueError, match="dtype must be"):
        autocast("nope")
    # a numpy backend without ml_dtypes (Pyodide) has no bfloat16: at entry when the device is named,
    # else at the first op
    cpu = burn.device("cpu").backend
    monkeypatch.setattr(cpu, "dtypes", cpu.dtypes - {burn.bfloat16})
    msg = (
        r"autocast dtype bfloat16 is not supported on device cpu.*float16.*use burn.amp.autocast\('float16'\)"
    )
    with pytest.raises(burn.DTypeError, match=msg):
        autocast("bfloat16", device="cpu")
    with pytest.raises(burn.DTypeError, match=r"matmul: autocast dtype bfloat16 .* device cpu"):
        with autocast("bfloat16"):
            _x(2, 2) @ _x(2, 2)
    with pytest.raises(burn.DTypeError, match=r"conv2d: autocast dtype bfloat16"):
        with autocast("bfloat16"):
            F.conv2d(_x(1, 1, 3, 3), _x(1, 1, 2, 2))


class _Net(nn.Module):
    """conv -> relu -> linear: the shapes of the digits example, small."""

    def __init__(self, device: burn.Device) -> None:
        self.conv = nn.Conv2dConfig((1, 4), 3, padding=1).init(device)
        self.fc = nn.LinearConfig(4 * 4 * 4, 5).init(device)
        self.norm = nn.LayerNormConfig(5).init(device)

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        return self.norm(self.fc(F.relu(self.conv(x)).flatten(1)))


def _grads(dtype: str | None, scale: float | None = None):
    burn.seed(3)
    dev = burn.device("cpu", autodiff=True)
    net = _Net(dev)
    x = _x(8, 1, 4, 4, seed=5).to(dev)
    y = burn.tensor([0, 1, 2, 3, 4, 0, 1, 2], device=dev)
    if dtype is None:
        loss = F.cross_entropy(net(x), y)
        grads = loss.backward()
    else:
        with autocast(dtype):
            loss = F.cross_entropy(net(x), y)
        grads = loss.backward() if scale is None else GradScaler(scale).scale(loss).backward()
    return net, loss, [(p.id, p.value.grad(grads)) for p in net.params()]  # ids differ per model


def test_gradients_of_float32_leaves_are_float32_and_match_a_float32_run():
    net32, loss32, g32 = _grads(None)
    net16, loss16, g16 = _grads("float16")
    assert loss16.dtype is f32
    assert [p.id for p in net16.params()] and all(p.value.dtype is f32 for p in net16.params())
    assert len(g16) == len(g32) == 6
    for (pid, got), (_, ref) in zip(g16, g32):
        assert got is not None and got.dtype is f32, pid
        assert _rel_err(got.numpy(), ref.numpy()) < HALF_RTOL, pid
    assert abs(loss16.item() - loss32.item()) < HALF_RTOL * abs(loss32.item())


def test_scaled_gradients_unscale_to_the_unscaled_ones():
    scale = 2.0**10
    _, _, plain = _grads("float16")
    _, _, scaled = _grads("float16", scale)
    scaler = GradScaler(scale)
    unscaled = scaler.unscale(GradientsParams(dict(scaled)))
    for (pid, _), (_, ref) in zip(scaled, plain):
        # powers of two scale exactly; the half backward sees other roundings, hence a tolerance
        assert _rel_err(unscaled.get(pid).numpy(), ref.numpy()) < HALF_RTOL


def test_scaled_backward_seeds_backward_with_the_scale():
    dev = burn.device("cpu", autodiff=True)
    x = burn.tensor([1.0, -2.0], device=dev).require_grad()
    scaler = GradScaler(init_scale=64.0)
    with scaler.scaled_backward():
        g = x.grad((x * x).sum().backward())
        h = x.grad((x.cast(f16) * 3.0).sum().backward())  # a half loss is widened, not overflowed
    assert g.tolist() == [128.0, -256.0] and g.dtype is f32
    assert h.tolist() == [192.0, 192.0]
    assert x.grad((x * x).sum().backward()).tolist() == [2.0, -4.0]  # outside: ones again


def _linear_model():
    burn.seed(0)
    dev = burn.device("cpu", autodiff=True)
    return nn.LinearConfig(3, 2).init(dev)


def test_skipped_step_on_injected_inf_leaves_params_unchanged_and_backs_off():
    model = _linear_model()
    before = model.record()
    opt = burn.optim.AdamConfig().init()
    scaler = GradScaler(init_scale=1024.0, backoff_factor=0.25, growth_interval=3)
    grads = GradientsParams(
        {
            model.weight.id: burn.tensor([[1.0, float("inf")], [0.0, 1.0], [2.0, 3.0]]),
            model.bias.id: burn.tensor([1.0, 1.0]),
        }
    )
    model = scaler.step(opt, 0.1, model, grads)
    assert scaler.last_step_skipped and scaler.skipped_steps == 1
    assert scaler.get_scale() == 256.0
    for name, arr in model.record().items():
        np.testing.assert_array_equal(arr, before[name])  # bit-exact: no update happened
    nan = GradientsParams({model.bias.id: burn.tensor([float("nan"), 0.0])})
    model = scaler.step(opt, 0.1, model, nan)
    assert scaler.last_step_skipped and scaler.get_scale() == 64.0


def test_scale_grows_after_the_interval_and_finite_steps_update_params():
    model = _linear_model()
    before = model.record()
    opt = burn.optim.SgdConfig().init()
    scaler = GradScaler(init_scale=8.0, growth_factor=2.0, growth_interval=3)
    scales = []
    for _ in range(7):
        grads = GradientsParams({model.bias.id: burn.tensor([8.0, -8.0])})  # scaled by 8: unscaled +-1
        model = scaler.step(opt, 0.5, model, grads)
        scales.append(scaler.get_scale())
        assert not scaler.last_step_skipped
    assert scales == [8.0, 8.0, 16.0, 16.0, 16.0, 32.0, 32.0]
    # SGD with lr 0.5 on unscaled grads 8/scale each step: bias moved by the sum of 0.5 * 8 / scale
    moved = 0.5 * 8.0 * (1 / 8 + 1 / 8 + 1 / 8 + 1 / 16 + 1 / 16 + 1 / 16 + 1 / 32)
    np.testing.assert_allclose(model.record()["bias"], before["bias"] + np.array([-moved, moved]), rtol=1e-6)


def test_scaler_record_round_trips_and_validates():
    s = GradScaler(init_scale=4.0, growth_interval=2)
    s.update(False)
    s.update(True)
    s.update(False)
    rec = s.record()
    t = GradScaler(init_scale=4.0, growth_interval=2).load_record(rec)
    assert t.record() == rec == {"scale": 2.0, "growth_tracker": 1, "skipped_steps": 0, "enabled": True}
    t.update(False)
    s.update(False)
    assert t.get_scale() == s.get_scale() == 4.0
    for kwargs, match in [
        ({"init_scale": 0.0}, "init_scale must be > 0"),
        ({"init_scale": float("inf")}, "init_scale must be a finite number"),
        ({"growth_factor": 1.0}, "growth_factor must be > 1"),
        ({"backoff_factor": 1.5}, "backoff_factor must be < 1"),
        ({"growth_interval": 0}, "growth_interval must be an int >= 1"),
    ]:
        with pytest.raises(ValueError, match=match):
            GradScaler(**kwargs)
    with pytest.raises(ValueError, match="load_record: expected a dict with 'scale'"):
        GradScaler().load_record({})
    with pytest.raises(TypeError, match="expected a burn.Gradients or an optim.GradientsParams"):
        GradScaler().unscale([1.0])


def test_disabled_scaler_is_a_plain_step():
    model = _linear_model()
    scaler = GradScaler(enabled=False)
    assert scaler.get_scale() == 1.0
    loss = model(burn.ones((2, 3), device=model.weight.device)).sum()
    assert scaler.scale(loss) is loss
    grads = GradientsParams({model.bias.id: burn.tensor([float("inf"), 0.0])})
    with np.errstate(invalid="ignore"):  # the step multiplies inf by lr 0
        scaler.step(burn.optim.SgdConfig().init(), 0.0, model, grads)
    assert not scaler.last_step_skipped and scaler.get_scale() == 1.0


# ---------------------------------------------------------------- GPU backends


def _gpu_device(name: str) -> burn.Device:
    info = next((b for b in burn.backends() if b.name == name), None)
    if info is None or not info.available:
        pytest.skip(f"{name} backend unavailable: {getattr(info, 'reason', 'not installed')}")
    dev = burn.device(name)
    if f16 not in dev.backend.dtypes:
        pytest.skip(f"{name} device {dev} has no float16 (wgpu: the adapter lacks shader-f16)")
    return dev


@pytest.mark.parametrize("backend", ["wgpu", "cuda"])
def test_autocast_on_gpu_matches_numpy_float32(backend):
    dev = _gpu_device(backend)
    burn.seed(1)
    x, w, b = _x(16, 32, seed=1), _x(32, 8, seed=2), _x(8, seed=3)
    ref = F.log_softmax(F.linear(x, w, b), 1).numpy()
    xd, wd, bd = x.to(dev), w.to(dev), b.to(dev)
    with autocast("float16"):
        h = F.linear(xd, wd, bd)
        out = F.log_softmax(h, 1)
    assert h.dtype is f16 and out.dtype is f32
    assert _rel_err(out.numpy(), ref) < HALF_RTOL
    if burn.bfloat16 not in dev.backend.dtypes:  # CuPy and WGSL have no bfloat16
        with pytest.raises(burn.DTypeError, match=re.escape(f"bfloat16 is not supported on device {dev}")):
            autocast("bfloat16", device=dev)


@pytest.mark.parametrize("backend", ["wgpu", "cuda"])
def test_mixed_precision_gradients_on_gpu_match_float32(backend):
    _gpu_device(backend)
    adev = burn.device(backend, autodiff=True)
    burn.seed(3)
    net = _Net(adev)
    x = _x(8, 1, 4, 4, seed=5).to(adev)
    y = burn.tensor([0, 1, 2, 3, 4, 0, 1, 2], device=adev)
    grads32 = F.cross_entropy(net(x), y).backward()
    with autocast("float16"):
        loss = F.cross_entropy(net(x), y)
    grads16 = GradScaler(2.0**10).scale(loss).backward()
    scaler = GradScaler(2.0**10)
    g16 = scaler.unscale(grads16)
    assert scaler.all_finite(g16)
    for p in net.params():
        got, want = p.value.grad(g16), p.value.grad(grads32)
        assert got.dtype is f32
        assert _rel_err(got.numpy(), want.numpy()) < HALF_RTOL, p.id
