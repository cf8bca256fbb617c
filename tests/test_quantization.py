"""burn.quantization: explicit-parameter quantization against PyTorch's quantize_per_tensor /
quantize_per_channel (same int values) and an independent numpy formulation (half-to-even rounding),
dynamic parameters against PyTorch's MinMax observers, dynamic round trips within half a step, int8
matmul with exact integer accumulation, quantize_module and exact record round trips, on every
available backend."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.quantization import QuantizedLinear, QuantScheme, quantize_module, quantized_linear

DEVICES = ["cpu"] + [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]

SCHEMES = [
    QuantScheme(),
    QuantScheme(mode="affine"),
    QuantScheme(granularity="per_channel", axis=1),
    QuantScheme(mode="affine", granularity="per_channel", axis=0),
    QuantScheme(block_size=4),
    QuantScheme(mode="affine", block_size=8),
]


def _ref_quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> np.ndarray:
    """numpy's rint rounds half to even; x times the float32 reciprocal of the scale (PyTorch's
    quantize_val: ``value * (1.0f / scale)``)."""
    inv = np.float32(1.0) / np.asarray(scale, dtype=np.float32)
    q = np.rint(x.astype(np.float32) * inv) + zp
    return np.clip(q, -128, 127).astype(np.int8)


def _data(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 0.05) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32) * 3
    # exact ties (k + 0.5) * scale in a quarter of the entries: rounding half to even shows
    ties = rng.random(shape) < 0.25
    x[ties] = ((rng.integers(-200, 200, ties.sum()) + 0.5) * scale).astype(np.float32)
    return x


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("zero_point", [None, 3, -7])
def test_per_tensor_matches_numpy_reference(device, zero_point):
    rng = np.random.default_rng(0)
    x = _data(rng, (6, 5, 7), 0.0625)
    mode = "symmetric" if zero_point is None else "affine"
    q = burn.tensor(x, device=device).quantize(QuantScheme(mode=mode), 0.0625, zero_point)
    expected = _ref_quantize(x, np.float32(0.0625), zero_point or 0)
    assert q.int_repr().dtype in (burn.int8, burn.int32) and q.shape == x.shape
    np.testing.assert_array_equal(q.int_repr().numpy(), expected)
    assert q.scale().shape == () and q.zero_point().item() == (zero_point or 0)
    deq = (expected.astype(np.float32) - (zero_point or 0)) * np.float32(0.0625)
    np.testing.assert_array_equal(q.dequantize().numpy(), deq)
    assert q.dequantize().dtype is burn.float32


@pytest.mark.parametrize("device", DEVICES)
def test_per_channel_matches_numpy_reference(device):
    rng = np.random.default_rng(1)
    x = _data(rng, (4, 3, 5), 0.125)
    scale = np.array([0.125, 0.25, 0.5], dtype=np.float32)
    zp = np.array([0, 5, -9])
    s = QuantScheme(mode="affine", granularity="per_channel", axis=1)
    q = burn.tensor(x, device=device).quantize(
        s, burn.tensor(scale, device=device), burn.tensor(zp, device=device)
    )
    expected = _ref_quantize(x, scale.reshape(1, 3, 1), zp.reshape(1, 3, 1))
    np.testing.assert_array_equal(q.int_repr().numpy(), expected)
    np.testing.assert_allclose(q.scale().numpy(), scale)
    np.testing.assert_array_equal(q.zero_point().numpy(), zp)


def test_explicit_parameters_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = _data(rng, (8, 16), 0.05)
    for scale, zp in ((0.05, 0), (0.02, 17), (0.1, -100)):
        mode = "symmetric" if zp == 0 else "affine"
        got = burn.tensor(x).quantize(QuantScheme(mode=mode), scale, zp).int_repr().numpy()
        ref = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, torch.qint8).int_repr().numpy()
        np.testing.assert_array_equal(got, ref)
    scales = np.array([0.05, 0.1, 0.2, 0.03] * 4, dtype=np.float64)
    zps = np.array([0, 3, -4, 10] * 4)
    s = QuantScheme(mode="affine", granularity="per_channel", axis=1)
    got = (
        burn.tensor(x)
        .quantize(s, burn.tensor(scales.astype(np.float32)), burn.tensor(zps))
        .int_repr()
        .numpy()
    )
    ref = torch.quantize_per_channel(
        torch.from_numpy(x), torch.from_numpy(scales), torch.from_numpy(zps), 1, torch.qint8
    ).int_repr()
    np.testing.assert_array_equal(got, ref.numpy())


def test_dynamic_parameters_match_torch_observers():
    torch = pytest.importorskip("torch")
    from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver

    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 12)).astype(np.float32) * 2 + 0.5
    cases = [
        (QuantScheme(), MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)),
        (QuantScheme(mode="affine"), MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_affine)),
        (
            QuantScheme(granularity="per_channel", axis=0),
            PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
        ),
        (
            QuantScheme(mode="affine", granularity="per_channel", axis=1),
            PerChannelMinMaxObserver(ch_axis=1, dtype=torch.qint8, qscheme=torch.per_channel_affine),
        ),
    ]
    for scheme, obs in cases:
        obs(torch.from_numpy(x))
        scale, zp = obs.calculate_qparams()
        q = burn.tensor(x).quantize_dynamic(scheme)
        np.testing.assert_allclose(q.scale().numpy().reshape(-1), scale.numpy().reshape(-1), rtol=1e-6)
        np.testing.assert_array_equal(q.zero_point().numpy().reshape(-1), zp.numpy().reshape(-1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: f"{s.mode}-{s.granularity}")
def test_dynamic_round_trip_within_half_a_step(device, scheme):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 4, 16)) * rng.uniform(0.1, 10, (1, 4, 1))).astype(np.float32)
    q = burn.tensor(x, device=device).quantize_dynamic(scheme)
    step = q.scale().numpy()
    if scheme.granularity == "per_channel":
        view = [1, 1, 1]
        view[scheme.axis] = -1
        step = step.reshape(view)
    elif scheme.granularity == "per_block":
        step = np.repeat(step, scheme.block_size, axis=-1)
    err = np.abs(q.dequantize().numpy() - x)
    # half a step, up to float32 rounding of the scale (max|x| / 127.5 lands on the clamp edge)
    assert np.all(err <= step / 2 * (1 + 1e-4) + 1e-7), err.max()
    vals = q.int_repr().numpy()
    assert vals.min() >= -128 and vals.max() <= 127


def test_bad_arguments_are_clear_errors():
    x = burn.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="scale must be finite and > 0, got 0.0"):
        x.quantize(QuantScheme(), 0.0)
    with pytest.raises(ValueError, match="scale must be finite and > 0, got -1.0"):
        x.quantize(QuantScheme(granularity="per_channel"), burn.tensor([1.0, -1.0]))
    with pytest.raises(burn.DTypeError, match="x must be a float tensor, got int64"):
        burn.tensor([1, 2]).quantize(QuantScheme(), 0.1)
    with pytest.raises(ValueError, match="dtype must be one of \\['int8'\\], got 'int4'"):
        QuantScheme(dtype="int4")
    with pytest.raises(ValueError, match="mode must be one of"):
        QuantScheme(mode="asymmetric")
    with pytest.raises(ValueError, match="symmetric scheme has zero_point 0"):
        x.quantize(QuantScheme(), 0.1, 3)
    with pytest.raises(burn.ShapeError, match="scale must have shape \\(2,\\)"):
        x.quantize(QuantScheme(granularity="per_channel"), burn.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(burn.ShapeError, match="multiple of block_size=4"):
        burn.zeros((2, 6)).quantize_dynamic(QuantScheme(block_size=4))
    with pytest.raises(ValueError, match="zero_point must be in \\[-128, 127\\]"):
        x.quantize(QuantScheme(mode="affine"), 0.1, 200)
    with pytest.raises(TypeError, match="scheme must be a burn.quantization.QuantScheme"):
        x.quantize("int8", 0.1)


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_matmul_accumulates_exactly(device):
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (5, 2500)).astype(np.int8)  # deeper than one float32-exact chunk
    w = rng.integers(-128, 128, (2500, 7)).astype(np.int8)
    dev = burn.device(device)
    dt = burn.int8 if burn.int8 in dev.backend.dtypes else dev.backend.default_int
    ta, tw = burn.tensor(a, dtype=dt, device=dev), burn.tensor(w, dtype=dt, device=dev)
    got = burn.backend.from_primitive(dev.backend.quantized_matmul(ta.primitive, tw.primitive), dev.backend)
    np.testing.assert_array_equal(got.numpy(), a.astype(np.int64) @ w.astype(np.int64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["symmetric", "affine"])
def test_quantized_linear_equals_integer_reference(device, mode):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 40)).astype(np.float32)
    w = rng.standard_normal((40, 6)).astype(np.float32)
    qw = burn.tensor(w, device=device).quantize_dynamic(
        QuantScheme(mode=mode, granularity="per_channel", axis=1)
    )
    got = quantized_linear(burn.tensor(x, device=device), qw).numpy()
    # independent reference: quantize x per tensor (affine), integer products in int64, then rescale
    qx = burn.tensor(x.reshape(6, 40)).quantize_dynamic(QuantScheme(mode="affine"))
    a = qx.int_repr().numpy().astype(np.int64) - qx.zero_point().item()
    b = qw.int_repr().numpy().astype(np.int64) - qw.zero_point().numpy().astype(np.int64)
    ref = (a @ b).astype(np.float64) * qx.scale().item() * qw.scale().numpy().astype(np.float64)
    np.testing.assert_allclose(got.reshape(6, 6), ref, rtol=1e-5, atol=1e-5)
    assert np.abs(got - x @ w).max() < 0.03 * np.abs(x @ w).max()  # and close to the float product


class _Net(nn.Module):
    def __init__(self) -> None:
        self.conv = nn.Conv2dConfig((1, 4), 3, padding=1).init()
        self.fc = nn.LinearConfig(4 * 6 * 6, 5).init()

    def forward(self, x):
        return self.fc(burn.nn.functional.relu(self.conv(x)).flatten(1))


@pytest.mark.parametrize("scheme", SCHEMES[:4], ids=lambda s: f"{s.mode}-{s.granularity}")
def test_quantize_module_and_record_round_trip(scheme):
    burn.seed(0)
    model = _Net()
    x = burn.randn((2, 1, 6, 6))
    qmodel = quantize_module(model, scheme)
    assert isinstance(qmodel.fc, QuantizedLinear) and isinstance(model.fc, nn.Linear)
    rec = qmodel.record()
    assert rec["fc.weight_values"].dtype == np.int8 and rec["conv.weight_values"].dtype == np.int8
    y, yq = model(x).numpy(), qmodel(x).numpy()
    assert np.abs(y - yq).max() < 0.05 * np.abs(y).max()
    # a fresh quantized model loads the bytes and gives identical values and outputs
    blob = burn.record.to_bytes(qmodel)
    other = quantize_module(_Net(), scheme)
    burn.record.from_bytes(other, blob)
    for k, v in other.record().items():
        np.testing.assert_array_equal(v, rec[k])
        assert v.dtype == rec[k].dtype
    np.testing.assert_array_equal(other(x).numpy(), yq)
    # the weights' payload shrinks about 4x (int8 values; one float scale per tensor or channel)
    q_bytes = sum(v.nbytes for k, v in rec.items() if k.endswith("weight_values") or "weight_" in k)
    f_bytes = sum(v.nbytes for k, v in model.record().items() if k.endswith("weight"))
    assert q_bytes < 0.3 * f_bytes
