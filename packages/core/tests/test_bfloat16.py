"""bfloat16 on the numpy backend (ml_dtypes storage, float32 arithmetic rounded once per op), records,
autocast, and that ``import burn`` stays free of ml_dtypes.

References: float32 numpy on the same (bfloat16-exact) inputs, rounded to bfloat16 by ml_dtypes
(round to nearest even); safetensors' torch reader for the BF16 tag; the float32 run of the same
model for autocast gradients. bfloat16 keeps 8 significant bits (unit roundoff 2**-8 ~ 3.9e-3): a
few layers with float32 accumulation stay within a relative error of 2e-2 (``BF16_RTOL``), measured
as the norm of the difference over the norm of the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
BF16_RTOL = 2e-2


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def _bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(BF16)


def test_numpy_interop_is_ml_dtypes_bfloat16():
    arr = np.array([[1.0, -2.5], [3.25, 1e30]], dtype=BF16)
    x = burn.from_numpy(arr)
    assert x.dtype is burn.bfloat16 and x.shape == (2, 2)
    out = x.numpy()
    assert out.dtype == BF16
    np.testing.assert_array_equal(out.view(np.uint16), arr.view(np.uint16))  # bit exact
    assert burn.tensor([1.0, 2.0], dtype="bfloat16").numpy().dtype == BF16
    assert x.tolist() == [[1.0, -2.5], [3.25, float(arr[1, 1])]]
    assert "dtype=bfloat16" in repr(x)


@pytest.mark.parametrize("op", ["matmul", "sum", "mean", "cumsum", "softmax", "var", "conv2d"])
def test_accumulating_ops_use_float32_and_round_once(op):
    """matmul, conv and reductions equal float32 numpy on the same inputs rounded once to bfloat16
    (a bfloat16 running sum would lose digits after ~256 terms)."""
    rng = np.random.default_rng(0)
    a, b = _bf16(rng, 8, 512), _bf16(rng, 512, 6)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    ta, tb = burn.from_numpy(a), burn.from_numpy(b)
    if op == "matmul":
        got, ref = ta @ tb, a32 @ b32
    elif op == "sum":
        got, ref = ta.sum(1), a32.sum(1)
    elif op == "mean":
        got, ref = ta.mean(1), a32.mean(1)
    elif op == "cumsum":
        got, ref = ta.cumsum(1), np.cumsum(a32, 1)
    elif op == "softmax":
        e = np.exp(a32 - a32.max(1, keepdims=True))
        got, ref = F.softmax(ta, 1), e / e.sum(1, keepdims=True)
    elif op == "var":
        got, ref = ta.var(1), a32.var(1, ddof=1)
    else:
        x, w = _bf16(rng, 2, 3, 9, 9), _bf16(rng, 4, 3, 3, 3)
        got = F.conv2d(burn.from_numpy(x), burn.from_numpy(w))
        xs = np.lib.stride_tricks.sliding_window_view(x.astype(np.float32), (3, 3), axis=(2, 3))
        ref = np.einsum("ncijkl,ockl->noij", xs, w.astype(np.float32))
    assert got.dtype is burn.bfloat16
    want = np.asarray(ref, np.float32).astype(BF16).astype(np.float32)
    # float32 summation order may differ from numpy's: equal to within one bfloat16 step
    np.testing.assert_allclose(got.numpy().astype(np.float32), want, rtol=2**-7, atol=1e-6)


def test_elementwise_rounds_float32_result_and_scalars_stay_weak():
    x = burn.tensor([1.0, 3.0, 100.0], dtype=burn.bfloat16)
    y = x * 1.1 + 0.3  # Python floats keep the tensor's dtype (ml_dtypes alone would give float32)
    assert y.dtype is burn.bfloat16
    ref32 = np.float32(1.1) * np.array([1, 3, 100], np.float32)
    ref = (ref32.astype(BF16).astype(np.float32) + np.float32(0.3)).astype(BF16)
    np.testing.assert_array_equal(y.numpy().view(np.uint16), ref.view(np.uint16))
    assert (x > 2).dtype is burn.bool and (x > 2).tolist() == [False, True, True]
    assert x.sin().dtype is burn.bfloat16 and x.argmax().item() == 2
    assert burn.where(x > 2, x, 0.0).tolist() == [0.0, 3.0, 100.0]


@pytest.mark.parametrize("dt", [d for d in burn._dtype.ALL_DTYPES if d is not burn.bfloat16])
def test_casts_to_and_from_every_dtype(dt):
    values = np.array([0, 1, 2, 3, 100], dtype=np.float32)
    x = burn.from_numpy(values).cast(dt)
    there = x.cast(burn.bfloat16)
    assert there.dtype is burn.bfloat16
    np.testing.assert_array_equal(there.numpy().astype(np.float32), x.numpy().astype(np.float32))
    back = there.cast(dt)
    assert back.dtype is dt
    np.testing.assert_array_equal(back.numpy(), x.numpy())


def test_float32_to_bfloat16_rounds_to_nearest_even():
    # 1 + 2**-8 is halfway between 1 and 1 + 2**-7: ties to even (1.0); 1 + 3 * 2**-8 rounds up
    x = burn.tensor([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20], dtype=burn.float32)
    assert x.cast(burn.bfloat16).tolist() == [1.0, 1 + 2**-6, 1 + 2**-7]


def _bf16_linear(seed: int = 0) -> nn.Module:
    burn.seed(seed)
    return nn.LinearConfig(5, 3).init().map(lambda t: t.cast(burn.bfloat16))


def test_record_round_trip_is_exact(tmp_path):
    model = _bf16_linear(0)
    path = burn.record.save(model, tmp_path / "m")
    fresh = burn.record.load(_bf16_linear(1), path)
    for (name, a), (_, b) in zip(model.named_params(), fresh.named_params()):
        assert b.value.dtype is burn.bfloat16, name
        np.testing.assert_array_equal(a.value.numpy().view(np.uint16), b.value.numpy().view(np.uint16))


def test_record_uses_the_safetensors_bf16_tag():
    model = _bf16_linear(0)
    data = burn.record.to_bytes(model)
    n = int.from_bytes(data[:8], "little")
    assert b'"dtype":"BF16"' in data[8 : 8 + n] and n % 8 == 0
    torch = pytest.importorskip("torch")
    from safetensors.torch import load

    tensors = load(data)  # an independent reader of the BF16 tag
    assert tensors["weight"].dtype is torch.bfloat16
    ref = tensors["weight"].float().numpy()
    np.testing.assert_array_equal(model.weight.val().numpy().astype(np.float32), ref)


def test_record_saved_as_bfloat16_loads_into_float32():
    burn.seed(0)
    model = nn.LinearConfig(5, 3).init()
    restored = burn.record.from_bytes(
        nn.LinearConfig(5, 3).init(), burn.record.to_bytes(model, burn.bfloat16)
    )
    w, w0 = restored.weight.val(), model.weight.val().numpy()
    assert w.dtype is burn.float32
    np.testing.assert_array_equal(w.numpy(), w0.astype(BF16).astype(np.float32))


def test_autocast_bfloat16_gradients_of_float32_leaves_are_float32_and_close():
    dev = burn.device("cpu", autodiff=True)
    burn.seed(0)
    model = nn.Sequential(nn.LinearConfig(8, 16).init(dev), nn.Relu(), nn.LinearConfig(16, 3).init(dev))
    x = burn.randn((6, 8), device=dev)
    y = burn.tensor([0, 1, 2, 1, 0, 2], device=dev)

    def run(dtype):
        with burn.amp.autocast(dtype or "bfloat16", enabled=dtype is not None):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        grads = loss.backward()
        return logits, loss, {n: p.val().grad(grads) for n, p in model.named_params()}

    l32, loss32, g32 = run(None)
    lbf, lossbf, gbf = run("bfloat16")
    assert lbf.dtype is burn.bfloat16 and lossbf.dtype is burn.float32
    assert _rel_err(lossbf.numpy(), loss32.numpy()) < BF16_RTOL
    for name, ref in g32.items():
        assert gbf[name].dtype is burn.float32, name
        assert _rel_err(gbf[name].numpy(), ref.numpy()) < BF16_RTOL, name


def test_autocast_bfloat16_conv_runs_in_bfloat16():
    burn.seed(0)
    x, w = burn.randn((1, 2, 6, 6)), burn.randn((3, 2, 3, 3))
    with burn.amp.autocast("bfloat16", device="cpu"):
        y = F.conv2d(x, w)
    assert y.dtype is burn.bfloat16
    assert _rel_err(y.numpy().astype(np.float32), F.conv2d(x, w).numpy()) < BF16_RTOL


def test_import_burn_does_not_import_ml_dtypes():
    """ml_dtypes costs ~90 ms: only a bfloat16 lookup imports it, not import burn or float32 work."""
    code = (
        "import sys, burn\n"
        "x = burn.ones((2, 2)) @ burn.ones((2, 2)); x.numpy()\n"
        "assert burn.bfloat16 in burn.device('cpu').backend.dtypes\n"
        "assert 'ml_dtypes' not in sys.modules, 'imported early'\n"
        "assert burn.ones(2, dtype='bfloat16').numpy().dtype.name == 'bfloat16'\n"
        "assert 'ml_dtypes' in sys.modules\n"
    )
    env = dict(os.environ, BURN_DISABLE_PLUGIN_AUTOLOAD="1")  # plugins (onnx) may import it themselves
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
