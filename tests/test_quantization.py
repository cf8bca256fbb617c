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
    quantize_val: ``value * (1.0f / scale)``), the zero point added before rounding, as PyTorch does
    (torch 2.13: ``quantize_per_tensor([0.25, 0.75], 0.5, 1, qint8)`` gives [2, 2], not [1, 3])."""
    inv = np.float32(1.0) / np.asarray(scale, dtype=np.float32)
    q = np.rint(x.astype(np.float32) * inv + np.asarray(zp, dtype=np.float32))
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


@pytest.mark.parametrize("device", DEVICES)
def test_ties_with_odd_zero_points_round_as_pytorch(device):
    """x / scale = k + 0.5 exactly, zero points odd and even, per tensor and per channel: PyTorch adds the
    zero point before rounding half to even (values read off torch 2.13's quantize_per_tensor /
    quantize_per_channel), so k + 0.5 + zp rounds to the even neighbour of that sum."""
    x = np.array([0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 1.75, 2.25], np.float32)
    torch_values = {
        0: [0, 2, 2, 0, -2, -2, 4, 4],
        1: [2, 2, 4, 0, 0, -2, 4, 6],
        3: [4, 4, 6, 2, 2, 0, 6, 8],
        -3: [-2, -2, 0, -4, -4, -6, 0, 2],
    }
    for zp, want in torch_values.items():
        mode = "symmetric" if zp == 0 else "affine"
        got = burn.tensor(x, device=device).quantize(QuantScheme(mode=mode), 0.5, zp).int_repr()
        assert got.tolist() == want, zp
    s = QuantScheme(mode="affine", granularity="per_channel", axis=0)
    xc = np.stack([x, x, x])
    scales = burn.tensor(np.array([0.5, 0.5, 0.25], np.float32), device=device)
    zps = burn.tensor(np.array([1, 3, -1]), device=device)
    got = burn.tensor(xc, device=device).quantize(s, scales, zps).int_repr().tolist()
    assert got == [torch_values[1], torch_values[3], [0, 2, 4, -2, -4, -6, 6, 8]]


def test_explicit_parameters_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = _data(rng, (8, 16), 0.05)
    for scale, zp in ((0.05, 0), (0.02, 17), (0.1, -100), (0.0625, 3), (0.5, -7)):
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


# ---------------------------------------------------------------- integer kernels and the integer conv
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape",
    [((3, 1500), (1500, 5)), ((2, 3, 7, 2100), (2100, 9)), ((4, 1, 6, 33), (3, 33, 5)), ((1, 1), (1, 1))],
    ids=["deep", "batched-lhs", "broadcast-batch", "1x1"],
)
def test_quantized_matmul_extremes_and_batches(device, shape):
    """Exact int products (int64 numpy reference) for int8 extremes, K past a float32-exact chunk
    and broadcast batch dims."""
    rng = np.random.default_rng(11)
    sa, sw = shape
    a = rng.choice(np.array([-128, 127, -127, 0, 1], dtype=np.int8), sa)
    w = rng.choice(np.array([-128, 127, -1, 5], dtype=np.int8), sw)
    a.flat[0], w.flat[0] = -128, -128
    dev = burn.device(device)
    dt = burn.int8 if burn.int8 in dev.backend.dtypes else dev.backend.default_int
    ta, tw = burn.tensor(a, dtype=dt, device=dev), burn.tensor(w, dtype=dt, device=dev)
    got = burn.backend.from_primitive(dev.backend.quantized_matmul(ta.primitive, tw.primitive), dev.backend)
    np.testing.assert_array_equal(got.numpy(), np.matmul(a.astype(np.int64), w.astype(np.int64)))


def _int_conv2d_reference(x, qw, bias, stride, padding, dilation, groups):
    """An independent formulation: x zero-padded in float, quantized (affine per tensor, burn's
    dynamic parameters, checked against the documented formulas), the windows gathered with numpy's
    sliding_window_view and summed as int64 (values minus zero points), then scaled in float64."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    lo, hi = min(xp.min(), 0.0), max(xp.max(), 0.0)
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    zx = int(np.clip(-128 - np.rint(np.float32(lo) / scale), -128, 127))
    q = burn.tensor(xp).quantize_dynamic(QuantScheme(mode="affine"))
    np.testing.assert_allclose(q.scale().item(), scale, rtol=1e-6)
    assert q.zero_point().item() == zx
    a = q.int_repr().numpy().astype(np.int64) - zx
    w = qw.int_repr().numpy().astype(np.int64)
    zw = qw.zero_point().numpy().astype(np.int64).reshape(-1)
    w = w - (zw.reshape(-1, 1, 1, 1) if zw.size > 1 else zw[0])
    c_out, c_g, kh, kw = w.shape
    win = np.lib.stride_tricks.sliding_window_view(a, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # (N, C, OH, OW, kh, kw)
    per = c_out // groups
    outs = []
    for g in range(groups):
        wg = w[g * per : (g + 1) * per]
        xg = win[:, g * c_g : (g + 1) * c_g]
        outs.append(np.einsum("ncyxij,ocij->noyx", xg, wg))
    acc = np.concatenate(outs, axis=1)  # int64
    sw_ = qw.scale().numpy().astype(np.float64).reshape(-1)
    sw_ = sw_.reshape(1, -1, 1, 1) if sw_.size > 1 else sw_[0]
    y = acc.astype(np.float64) * float(q.scale().item()) * sw_
    return y + (0 if bias is None else bias.reshape(1, -1, 1, 1))


CONV_CASES = [  # (x shape, weight shape, stride, padding, dilation, groups)
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((1, 4, 10, 7), (6, 2, 3, 2), (2, 1), (1, 2), (1, 1), 2),
    ((2, 6, 11, 11), (6, 2, 3, 3), (1, 2), (2, 1), (2, 2), 3),
    ((1, 5, 6, 6), (7, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 2, 5, 5), (3, 2, 5, 5), (1, 1), (2, 2), (1, 1), 1),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["symmetric", "affine"])
@pytest.mark.parametrize("granularity", ["per_tensor", "per_channel"])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_quantized_conv2d_equals_integer_reference(device, mode, granularity, case):
    from burn.quantization import quantized_conv2d

    xs, ws, stride, padding, dilation, groups = CONV_CASES[case]
    rng = np.random.default_rng(20 + case)
    x = (rng.standard_normal(xs) + 0.4).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    bias = rng.standard_normal(ws[0]).astype(np.float32)
    qw = burn.tensor(w, device=device).quantize_dynamic(QuantScheme(mode=mode, granularity=granularity))
    got = quantized_conv2d(
        burn.tensor(x, device=device), qw, burn.tensor(bias, device=device), stride, padding, dilation, groups
    ).numpy()
    ref = _int_conv2d_reference(x, qw, bias, stride, padding, dilation, groups)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
    # and close to the float conv with the dequantized weights (activation rounding only)
    from burn.nn import functional as F

    fl = F.conv2d(
        burn.tensor(x),
        qw.dequantize().to("cpu"),
        burn.tensor(bias),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    ).numpy()
    assert np.abs(got - fl).max() < 0.03 * np.abs(fl).max()


@pytest.mark.parametrize("device", DEVICES)
def test_quantized_conv1d_module_is_the_2d_integer_conv(device):
    burn.seed(3)
    conv = nn.Conv1dConfig(4, 6, 3, stride=2, padding=1, dilation=1, groups=2).init(device)
    q = quantize_module(conv, QuantScheme(mode="affine", granularity="per_channel"))
    x = burn.tensor(np.random.default_rng(5).standard_normal((2, 4, 13)).astype(np.float32), device=device)
    got = q(x).numpy()
    w4 = q.weight().int_repr().numpy()[:, :, None, :]
    from burn.quantization import QuantizedTensor

    qt = QuantizedTensor(  # the same int values as a 4-d weight on cpu
        burn.tensor(w4, dtype=burn.int8),
        burn.tensor(q.weight().scale().numpy()),
        burn.tensor(q.weight().zero_point().numpy()),
        q.scheme,
    )
    ref = _int_conv2d_reference(
        x.numpy()[:, :, None, :], qt, q.bias.val().numpy(), (1, 2), (0, 1), (1, 1), 2
    )[:, :, 0, :]
    assert got.shape == (2, 6, 7)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
    y = conv(x).numpy()
    assert np.abs(got - y).max() < 0.05 * np.abs(y).max()


def test_weight_sums_follow_loaded_records():
    """The cached weight sums belong to the weight values: loading a record after a forward uses the
    loaded values (an identical output to the saved model's)."""
    burn.seed(0)
    a, b = _Net(), _Net()
    scheme = QuantScheme(mode="affine", granularity="per_channel")
    qa, qb = quantize_module(a, scheme), quantize_module(b, scheme)
    x = burn.randn((2, 1, 6, 6))
    ya, yb = qa(x).numpy(), qb(x).numpy()  # both forwards fill their caches
    assert np.abs(ya - yb).max() > 1e-3
    burn.record.from_bytes(qb, burn.record.to_bytes(qa))
    np.testing.assert_array_equal(qb(x).numpy(), ya)


def test_quantized_conv2d_bad_arguments():
    from burn.quantization import quantized_conv2d

    qw = burn.ones((4, 3, 3, 3)).quantize_dynamic(QuantScheme())
    with pytest.raises(TypeError, match="weight must be a QuantizedTensor"):
        quantized_conv2d(burn.ones((1, 3, 5, 5)), burn.ones((4, 3, 3, 3)))
    with pytest.raises(burn.ShapeError, match="expected \\(N, C, H, W\\)"):
        quantized_conv2d(burn.ones((3, 5, 5)), qw)
    with pytest.raises(burn.ShapeError, match="groups=2"):
        quantized_conv2d(burn.ones((1, 3, 5, 5)), qw, groups=2)
    with pytest.raises(ValueError, match="stride must be an int or a pair"):
        quantized_conv2d(burn.ones((1, 3, 5, 5)), qw, stride=(1, 2, 3))
    with pytest.raises(ValueError, match="per output channel \\(axis 0\\)"):
        quantized_conv2d(
            burn.ones((1, 3, 5, 5)),
            burn.ones((4, 3, 3, 3)).quantize_dynamic(QuantScheme(granularity="per_channel", axis=1)),
        )


def test_numpy_quantized_matmul_fast_path_and_wide_ints():
    """int8 operands take the chunked float32 path (exact); wider int operands (not int8-valued) the
    float64 one, still exact."""
    b = burn.device("cpu").backend
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (9, 4100)).astype(np.int8)
    w = np.full((4100, 3), -128, dtype=np.int8)  # every product at the extreme: |sum| ~ 2**26
    got = b.quantized_matmul(a, w)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a.astype(np.int64) @ w.astype(np.int64))
    wide_a = rng.integers(-5000, 5000, (4, 3000))
    wide_w = rng.integers(-5000, 5000, (3000, 2))
    np.testing.assert_array_equal(b.quantized_matmul(wide_a, wide_w), wide_a @ wide_w)


def _round_first(x: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> np.ndarray:
    """ONNX QuantizeLinear's rule (also PyTorch's CUDA kernels'): round x / scale half to even, then
    add the zero point."""
    q = np.rint(x.astype(np.float32) / np.asarray(scale, np.float32)) + np.asarray(zp)
    return np.clip(q, -128, 127).astype(np.int8)


def _zero_point_first(x: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> np.ndarray:
    """burn's rule: round_half_even(x * (1 / scale) + zero_point), clamped to int8."""
    inv = np.float32(1.0) / np.asarray(scale, np.float32)
    q = np.rint(x.astype(np.float32) * inv + np.asarray(zp, np.float32))
    return np.clip(q, -128, 127).astype(np.int8)


@pytest.mark.parametrize("device", DEVICES)
def test_exact_ties_per_tensor_and_per_channel(device):
    """Issue 32: x / scale = k + 0.5 exactly, odd and even zero points, per tensor and per channel, up to
    the clamp edges, on every backend, against the documented rule (the zero point added before rounding
    half to even). Where torch is installed it is compared too: PyTorch's own CPU builds differ here
    (torch 2.13's CPU kernels add the zero point first, as burn does; torch 2.11 on the H200 machine's
    host rounds x / scale first, as its CUDA kernels and ONNX do), so torch must follow one of the two
    rules, and burn must equal it whenever it follows burn's. The inputs tell the two rules apart."""
    try:
        import torch
    except ImportError:
        torch = None
    k = np.arange(-140, 140, dtype=np.float32)
    for scale in (0.5, 0.25, 0.0625):
        x = ((k + 0.5) * scale).astype(np.float32)  # exact in float32, x * (1 / scale) exact too
        for zp in (0, 1, 2, 3, -3, -8, 7, 127, -128):
            mode = "symmetric" if zp == 0 else "affine"
            got = burn.tensor(x, device=device).quantize(QuantScheme(mode=mode), scale, zp).int_repr()
            want = _zero_point_first(x, np.float32(scale), np.int32(zp))
            np.testing.assert_array_equal(got.numpy(), want, err_msg=f"scale={scale} zp={zp}")
            first = _round_first(x, np.float32(scale), zp)
            if zp % 2:  # the rules differ on every in-range tie when the zero point is odd
                assert np.any(want != first)
            if torch is not None:
                ref = (
                    torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, torch.qint8).int_repr().numpy()
                )
                assert np.array_equal(ref, want) or np.array_equal(ref, first), (
                    f"torch: scale={scale} zp={zp}"
                )
                if np.array_equal(ref, want):
                    np.testing.assert_array_equal(got.numpy(), ref)
    xc = np.stack([((k + 0.5) * s).astype(np.float32) for s in (0.5, 0.25, 0.125, 0.5)], axis=1)
    scales = np.array([0.5, 0.25, 0.125, 0.5])
    zps = np.array([1, -3, 4, 0])
    s = QuantScheme(mode="affine", granularity="per_channel", axis=1)
    got = burn.tensor(xc, device=device).quantize(
        s, burn.tensor(scales.astype(np.float32), device=device), burn.tensor(zps, device=device)
    )
    want = _zero_point_first(xc, scales.astype(np.float32), zps)
    np.testing.assert_array_equal(got.int_repr().numpy(), want)
    if torch is not None:
        ref = torch.quantize_per_channel(
            torch.from_numpy(xc), torch.from_numpy(scales), torch.from_numpy(zps), 1, torch.qint8
        ).int_repr()
        first = _round_first(xc, scales.astype(np.float32), zps)
        assert np.array_equal(ref.numpy(), want) or np.array_equal(ref.numpy(), first)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: f"{s.mode}-{s.granularity}")
def test_int_repr_dtype(device, scheme):
    """int_repr() is int8 on every backend, as in PyTorch (wgpu stores int8 widened, one value per
    32-bit word, and reads it back as int8), with the numpy backend's integers."""
    x = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    q = burn.tensor(x, device=device).quantize_dynamic(scheme)
    values = q.int_repr()
    assert values.dtype is burn.int8
    assert values.numpy().dtype == np.int8
    v = values.numpy()
    assert v.min() >= -128 and v.max() <= 127
    on_cpu = q.to("cpu")
    assert on_cpu.int_repr().dtype is burn.int8
    np.testing.assert_array_equal(on_cpu.int_repr().numpy(), v.astype(np.int8))
    ref = burn.tensor(x).quantize_dynamic(scheme).int_repr()
    assert ref.dtype is burn.int8
    # the same integers as the numpy backend, up to one step where a device's float32 scale differs
    np.testing.assert_allclose(v, ref.numpy(), rtol=0, atol=1)
