"""Each module's forward pass against an independent numpy formulation, using the module's own
parameters read back with ``record()``."""

import math

import burn
import numpy as np
import pytest
from burn import nn

from . import _reference as R

rng = np.random.default_rng(1)


def t(a, dtype="float32"):
    return burn.tensor(np.asarray(a), dtype=dtype)


def close(x, ref, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(x.numpy(), dtype=np.float64), ref, rtol=rtol, atol=atol)


def rec(m):
    return {k: v.astype(np.float64) for k, v in m.record().items()}


@pytest.fixture(autouse=True)
def _seed():
    burn.seed(0)


def test_linear_and_embedding():
    m = nn.LinearConfig(4, 3).init()
    p = rec(m)
    assert p["weight"].shape == (4, 3) and p["bias"].shape == (3,)
    x = rng.normal(size=(2, 5, 4))
    close(m(t(x)), x @ p["weight"] + p["bias"])
    m = nn.LinearConfig(4, 3, bias=False).init()
    assert m.bias is None and list(m.record()) == ["weight"]
    e = nn.EmbeddingConfig(10, 4).init()
    idx = np.array([[1, 9], [0, 1]])
    close(e(burn.tensor(idx)), rec(e)["weight"][idx])
    with pytest.raises(burn.DTypeError, match="Embedding"):
        e(t([[1.0]]))


ACTS = {
    "relu": (nn.ReluConfig(), lambda x: np.maximum(x, 0)),
    "gelu": (nn.GeluConfig(), R.gelu),
    "silu": (nn.SiluConfig(), lambda x: x * R.sigmoid(x)),
    "sigmoid": (nn.SigmoidConfig(), R.sigmoid),
    "tanh": (nn.TanhConfig(), np.tanh),
    "leaky": (nn.LeakyReluConfig(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "prelu": (nn.PReluConfig(num_parameters=3, alpha=0.3), lambda x: np.where(x > 0, x, 0.3 * x)),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_activation_modules(name):
    config, ref = ACTS[name]
    x = rng.normal(size=(2, 3, 4))
    close(config.init()(t(x)), ref(x))


def test_norm_modules():
    x = rng.normal(size=(2, 4, 6)) * 3 + 1
    ln = nn.LayerNormConfig(6).init()
    close(ln(t(x)), R.layer_norm(x, 1.0, 0.0))
    rms = nn.RmsNormConfig(6).init()
    close(rms(t(x)), x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5))
    gn = nn.GroupNormConfig(2, 4).init()
    g = x.reshape(2, 2, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    close(gn(t(x)), ref)
    inorm = nn.InstanceNormConfig(4, affine=False).init()
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    close(inorm(t(x)), ref)
    assert inorm.num_params() == 0


def test_batch_norm_inference_uses_running_stats():
    bn = nn.BatchNormConfig(3).init()
    rm, rv = rng.normal(size=3), rng.uniform(0.5, 2.0, size=3)
    bn.load_record({"gamma": np.full(3, 2.0), "beta": np.full(3, 0.5), "running_mean": rm, "running_var": rv})
    x = rng.normal(size=(4, 3, 5))
    ref = (x - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5) * 2.0 + 0.5
    close(bn(t(x)), ref)
    assert bn.num_params() == 6  # gamma + beta; running statistics are not parameters


def test_dropout_module_is_off_without_autodiff():
    x = t(rng.normal(size=(3, 4)))
    assert nn.DropoutConfig(0.9).init()(x) is x


def test_sequential():
    m = nn.SequentialConfig([nn.LinearConfig(3, 5), nn.ReluConfig(), nn.LinearConfig(5, 2)]).init()
    p = rec(m)
    x = rng.normal(size=(4, 3))
    h = np.maximum(x @ p["layers.0.weight"] + p["layers.0.bias"], 0)
    close(m(t(x)), h @ p["layers.2.weight"] + p["layers.2.bias"])
    assert len(m) == 3


def test_lstm_matches_numpy_loop():
    m = nn.LstmConfig(3, 4).init()
    p = rec(m)
    x = rng.normal(size=(2, 5, 3))
    c, h = np.zeros((2, 4)), np.zeros((2, 4))
    outs = []
    for step in range(5):
        z = x[:, step] @ p["input_transform.weight"] + p["input_transform.bias"]
        z = z + h @ p["hidden_transform.weight"] + p["hidden_transform.bias"]
        i, f, g, o = R.sigmoid(z[:, :4]), R.sigmoid(z[:, 4:8]), np.tanh(z[:, 8:12]), R.sigmoid(z[:, 12:])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    out, state = m(t(x))
    close(out, np.stack(outs, 1))
    close(state.cell, c)
    close(state.hidden, h)


def test_gru_matches_numpy_loop():
    m = nn.GruConfig(3, 4).init()
    p = rec(m)
    x = rng.normal(size=(2, 5, 3))
    h = rng.normal(size=(2, 4))
    h0 = h.copy()
    outs = []
    for step in range(5):
        xi = x[:, step] @ p["input_transform.weight"] + p["input_transform.bias"]
        hh = h @ p["hidden_transform.weight"] + p["hidden_transform.bias"]
        r = R.sigmoid(xi[:, :4] + hh[:, :4])
        z = R.sigmoid(xi[:, 4:8] + hh[:, 4:8])
        n = np.tanh(xi[:, 8:] + r * hh[:, 8:])
        h = (1 - z) * n + z * h
        outs.append(h)
    close(m(t(x), t(h0)), np.stack(outs, 1))


def _np_mha(p, prefix, q, k, v, n_heads, mask=None):
    def lin(name, x):
        return x @ p[f"{prefix}{name}.weight"] + p[f"{prefix}{name}.bias"]

    b, sq, d = q.shape
    dk = d // n_heads
    qh = lin("query", q).reshape(b, sq, n_heads, dk).transpose(0, 2, 1, 3)
    kh = lin("key", k).reshape(b, -1, n_heads, dk).transpose(0, 2, 1, 3)
    vh = lin("value", v).reshape(b, -1, n_heads, dk).transpose(0, 2, 1, 3)
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(dk)
    if mask is not None:
        scores = np.where(mask[:, None, None, :], -1e4, scores)
    w = R.softmax(scores)
    ctx = (w @ vh).transpose(0, 2, 1, 3).reshape(b, sq, d)
    return lin("output", ctx), w


def test_multi_head_attention_with_padding_mask():
    m = nn.MultiHeadAttentionConfig(8, 2, dropout=0.0).init()
    p = rec(m)
    q, kv = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 4, 8))
    mask = np.array([[False, False, True, True], [False, False, False, False]])
    out = m(t(q), t(kv), t(kv), mask_pad=burn.tensor(mask))
    ref, w = _np_mha(p, "", q, kv, kv, 2, mask)
    close(out.context, ref)
    close(out.weights, w)
    assert np.allclose(out.weights.numpy()[0, :, :, 2:], 0, atol=1e-6)
    with pytest.raises(burn.ShapeError, match="query"):
        m(t(rng.normal(size=(2, 3, 5))))


def test_quiet_softmax_is_softmax_with_an_extra_zero_logit():
    from burn.nn._attention import quiet_softmax

    x = rng.normal(size=(3, 5)) * 3
    padded = np.concatenate([x, np.zeros((3, 1))], axis=1)
    close(quiet_softmax(t(x), -1), R.softmax(padded)[:, :5])


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_one_layer(norm_first):
    m = nn.TransformerEncoderConfig(8, 16, 2, 1, dropout=0.0, norm_first=norm_first).init()
    p = rec(m)
    x = rng.normal(size=(2, 3, 8))

    def ln(name, h):
        return R.layer_norm(h, p[f"layers.0.{name}.gamma"], p[f"layers.0.{name}.beta"])

    def ff(h):
        inner = R.gelu(h @ p["layers.0.pwff.linear_inner.weight"] + p["layers.0.pwff.linear_inner.bias"])
        return inner @ p["layers.0.pwff.linear_outer.weight"] + p["layers.0.pwff.linear_outer.bias"]

    def att(h):
        return _np_mha(p, "layers.0.mha.", h, h, h, 2)[0]

    if norm_first:
        h = x + att(ln("norm_1", x))
        ref = h + ff(ln("norm_2", h))
    else:
        h = ln("norm_1", x + att(x))
        ref = ln("norm_2", h + ff(h))
    close(m(t(x)), ref, atol=1e-4)


def test_positional_encoding():
    m = nn.PositionalEncodingConfig(6, max_sequence_size=10).init()
    x = rng.normal(size=(2, 4, 6))
    pe = np.zeros((4, 6))
    for pos in range(4):
        for i in range(0, 6, 2):
            pe[pos, i] = math.sin(pos / 10000 ** (i / 6))
            pe[pos, i + 1] = math.cos(pos / 10000 ** (i / 6))
    close(m(t(x)), x + pe)
    assert m.num_params() == 0 and m.record() == {}
    with pytest.raises(burn.ShapeError, match="PositionalEncoding"):
        m(t(rng.normal(size=(1, 11, 6))))


def test_rotary_encoding_matches_complex_rotation():
    m = nn.RotaryEncodingConfig(16, 6).init()
    x = rng.normal(size=(2, 5, 6))
    z = x[..., 0::2] + 1j * x[..., 1::2]
    pos = np.arange(3, 8)[:, None]
    freqs = 10000.0 ** (-np.arange(0, 6, 2) / 6)
    rotated = z * np.exp(1j * pos * freqs)
    ref = np.empty_like(x)
    ref[..., 0::2], ref[..., 1::2] = rotated.real, rotated.imag
    close(m(t(x), start=3), ref)


# ----------------------------------------------------------------------------------- conv and pool
CONVS = [
    (nn.Conv1dConfig(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    (nn.Conv2dConfig((3, 4), (3, 2), stride=(1, 2), dilation=(2, 1), padding=(2, 0)), (2, 3, 7, 6)),
    (nn.Conv2dConfig((2, 4), 3, padding="same"), (1, 2, 5, 5)),
    (nn.Conv3dConfig((2, 3), 2, bias=False), (1, 2, 4, 3, 3)),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_modules(case):
    config, shape = CONVS[case]
    m = config.init()
    p = rec(m)
    x = rng.normal(size=shape)
    ref = R.conv(x, p["weight"], p.get("bias"), m.stride, m.padding, m.dilation, m.groups)
    close(m(t(x)), ref, atol=1e-4)


TRANSPOSED = [
    (nn.ConvTranspose1dConfig((4, 2), 3, stride=2, padding=1, padding_out=1, groups=2), (2, 4, 5)),
    (nn.ConvTranspose2dConfig((3, 2), (2, 3), stride=(2, 1), dilation=(1, 2)), (1, 3, 3, 4)),
    (nn.ConvTranspose3dConfig((2, 2), 2, stride=2), (1, 2, 2, 2, 2)),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSED)))
def test_conv_transpose_modules(case):
    config, shape = TRANSPOSED[case]
    m = config.init()
    p = rec(m)
    x = rng.normal(size=shape)
    ref = R.conv_transpose(
        x, p["weight"], p["bias"], m.stride, m.padding, m.padding_out, m.dilation, m.groups
    )
    close(m(t(x)), ref, atol=1e-4)


def test_conv_config_errors():
    with pytest.raises(burn.ConfigError, match="groups"):
        nn.Conv2dConfig((3, 4), 3, groups=2).init()
    with pytest.raises(burn.ConfigError, match="same"):
        nn.Conv2dConfig((3, 4), 2, padding="same").init()
    with pytest.raises(burn.ConfigError, match="kernel_size"):
        nn.Conv1dConfig(3, 4, 0).init()


POOLS = [
    (nn.MaxPool1dConfig(3, stride=2, padding=1), (2, 3, 8), "max"),
    (nn.MaxPool2dConfig((2, 3), stride=(2, 1), dilation=(1, 2)), (2, 2, 6, 7), "max"),
    (nn.AvgPool1dConfig(3, stride=1, padding=1), (2, 3, 6), "avg"),
    (nn.AvgPool2dConfig(2, stride=2, padding=1, count_include_pad=False), (1, 2, 5, 5), "avg"),
    (nn.AvgPool2dConfig((3, 2), stride=(1, 2)), (1, 2, 5, 6), "avg"),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pool_modules(case):
    config, shape, kind = POOLS[case]
    m = config.init()
    x = rng.normal(size=shape)
    extra = {"dilation": m.dilation} if kind == "max" else {"count_include_pad": m.count_include_pad}
    close(m(t(x)), R.pool(x, m.kernel_size, m.stride, m.padding, kind, **extra))


def test_adaptive_avg_pool_modules():
    x = rng.normal(size=(2, 3, 7))
    close(nn.AdaptiveAvgPool1dConfig(3).init()(t(x)), R.adaptive_avg_pool(x, (3,)))
    x = rng.normal(size=(2, 3, 7, 5))
    close(nn.AdaptiveAvgPool2dConfig((3, 2)).init()(t(x)), R.adaptive_avg_pool(x, (3, 2)))
