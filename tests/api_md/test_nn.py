"""API.md, nn (burn.nn): each module config's init and forward, the Module protocol, initializers."""

from __future__ import annotations

import math

import burn
import numpy as np
import pytest
from burn import nn
from burn_api_md._helpers import ADEV, CPU, _gelu, _layer_norm, _Net, _sigmoid, close, rng


def _np(t: burn.Tensor) -> np.ndarray:
    return t.numpy().astype(np.float64)


def _sinusoids(seq: int, d: int) -> np.ndarray:
    pos = np.arange(seq)[:, None]
    i = np.arange(d)[None, :]
    angle = pos / np.power(10000.0, (i - i % 2) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


# name, config, input shape (or a tensor maker), output shape, reference (module, x) -> array or None
# fmt: off
MODULES = [
    ("Linear", lambda: nn.LinearConfig(4, 3, bias=True, initializer=nn.init.XavierUniform()), (2, 4), (2, 3), lambda m, x: x @ _np(m.weight.val()) + _np(m.bias.val())),
    ("Embedding", lambda: nn.EmbeddingConfig(10, 4), lambda: burn.tensor([[1, 2, 9]]), (1, 3, 4), lambda m, x: _np(m.weight.val())[x]),
    ("Conv1d", lambda: nn.Conv1dConfig(2, 3, 3), (1, 2, 8), (1, 3, 6), None),
    ("Conv2d", lambda: nn.Conv2dConfig((2, 3), (3, 3), padding=1), (1, 2, 5, 5), (1, 3, 5, 5), None),
    ("Conv3d", lambda: nn.Conv3dConfig((1, 2), 3), (1, 1, 4, 4, 4), (1, 2, 2, 2, 2), None),
    ("ConvTranspose1d", lambda: nn.ConvTranspose1dConfig((2, 3), 3, stride=2), (1, 2, 4), (1, 3, 9), None),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2dConfig((2, 1), 2, stride=2), (1, 2, 3, 3), (1, 1, 6, 6), None),
    ("ConvTranspose3d", lambda: nn.ConvTranspose3dConfig((1, 1), 2), (1, 1, 2, 2, 2), (1, 1, 3, 3, 3), None),
    ("MaxPool1d", lambda: nn.MaxPool1dConfig(2, stride=2), (1, 2, 6), (1, 2, 3), lambda m, x: x.reshape(1, 2, 3, 2).max(-1)),
    ("MaxPool2d", lambda: nn.MaxPool2dConfig(2, stride=2), (1, 2, 4, 4), (1, 2, 2, 2), lambda m, x: x.reshape(1, 2, 2, 2, 2, 2).max((3, 5))),
    ("AvgPool1d", lambda: nn.AvgPool1dConfig(3), (1, 2, 6), (1, 2, 4), lambda m, x: np.stack([x[..., i : i + 3].mean(-1) for i in range(4)], -1)),
    ("AvgPool2d", lambda: nn.AvgPool2dConfig((2, 2), stride=2), (1, 1, 4, 4), (1, 1, 2, 2), lambda m, x: x.reshape(1, 1, 2, 2, 2, 2).mean((3, 5))),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1dConfig(3), (1, 2, 6), (1, 2, 3), lambda m, x: x.reshape(1, 2, 3, 2).mean(-1)),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2dConfig((2, 3)), (1, 2, 4, 6), (1, 2, 2, 3), lambda m, x: x.reshape(1, 2, 2, 2, 3, 2).mean((3, 5))),
    ("BatchNorm", lambda: nn.BatchNormConfig(3), (4, 3, 2, 2), (4, 3, 2, 2), lambda m, x: x / np.sqrt(1.0 + 1e-5)),  # off autodiff: running stats (mean 0, var 1)
    ("LayerNorm", lambda: nn.LayerNormConfig(4), (2, 3, 4), (2, 3, 4), lambda m, x: _layer_norm(x, (-1,))),
    ("GroupNorm", lambda: nn.GroupNormConfig(2, 4), (2, 4, 3), (2, 4, 3), lambda m, x: _layer_norm(x.reshape(2, 2, 6), (-1,)).reshape(2, 4, 3)),
    ("InstanceNorm", lambda: nn.InstanceNormConfig(3), (2, 3, 5), (2, 3, 5), lambda m, x: _layer_norm(x, (-1,))),
    ("RmsNorm", lambda: nn.RmsNormConfig(4), (2, 4), (2, 4), lambda m, x: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)),
    ("Dropout", lambda: nn.DropoutConfig(0.5), (3, 4), (3, 4), lambda m, x: x),  # off autodiff: identity
    ("Lstm", lambda: nn.LstmConfig(3, 5), (2, 4, 3), (2, 4, 5), None),
    ("Gru", lambda: nn.GruConfig(3, 5), (2, 4, 3), (2, 4, 5), None),
    ("MultiHeadAttention", lambda: nn.MultiHeadAttentionConfig(8, 2), (2, 5, 8), (2, 5, 8), None),
    ("TransformerEncoder", lambda: nn.TransformerEncoderConfig(8, 16, 2, 2), (2, 5, 8), (2, 5, 8), None),
    ("PositionalEncoding", lambda: nn.PositionalEncodingConfig(8), (2, 5, 8), (2, 5, 8), lambda m, x: x + _sinusoids(5, 8)),
    ("RotaryEncoding", lambda: nn.RotaryEncodingConfig(16, 8), (2, 5, 8), (2, 5, 8), None),
    ("Relu", lambda: nn.ReluConfig(), (3, 4), (3, 4), lambda m, x: np.maximum(x, 0.0)),
    ("Gelu", lambda: nn.GeluConfig(), (3, 4), (3, 4), lambda m, x: _gelu(x)),
    ("Silu", lambda: nn.SiluConfig(), (3, 4), (3, 4), lambda m, x: x * _sigmoid(x)),
    ("LeakyRelu", lambda: nn.LeakyReluConfig(negative_slope=0.1), (3, 4), (3, 4), lambda m, x: np.where(x > 0, x, 0.1 * x)),
    ("PRelu", lambda: nn.PReluConfig(), (3, 4), (3, 4), lambda m, x: np.where(x > 0, x, 0.25 * x)),
    ("Sigmoid", lambda: nn.SigmoidConfig(), (3, 4), (3, 4), lambda m, x: _sigmoid(x)),
    ("Tanh", lambda: nn.TanhConfig(), (3, 4), (3, 4), lambda m, x: np.tanh(x)),
    ("Sequential", lambda: nn.SequentialConfig([nn.LinearConfig(4, 8), nn.ReluConfig(), nn.LinearConfig(8, 2)]), (3, 4), (3, 2), None),
]
# fmt: on


def _output(out: object) -> burn.Tensor:
    """The main tensor of a forward result: Lstm returns (output, state), attention an MhaOutput."""
    if isinstance(out, nn.MhaOutput):
        return out.context
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name, config, x_in, shape, ref", MODULES, ids=[m[0] for m in MODULES])
def test_module_configs_init_and_forward(name, config, x_in, shape, ref):
    cfg = config()
    assert type(cfg) is getattr(nn, f"{name}Config")
    burn.seed(0)
    module = cfg.init(CPU)
    assert isinstance(module, getattr(nn, name)) and isinstance(module, nn.Module)
    x = x_in() if callable(x_in) else burn.tensor(rng(2).normal(size=x_in).astype(np.float32))
    out = _output(module(x))
    assert out.shape == shape and out.device == CPU
    assert np.isfinite(out.numpy()).all()
    if ref is not None:
        close(
            out,
            ref(module, x.numpy().astype(np.float64) if x.dtype.is_float else x.numpy()),
            rtol=1e-4,
            atol=1e-5,
        )


def test_module_protocol():
    layer = nn.LinearConfig(d_input=3, d_output=4, bias=False, initializer=nn.init.Zeros()).init(device=CPU)
    assert (
        isinstance(layer, nn.Linear)
        and layer.bias is None
        and layer(burn.ones((2, 3))).tolist() == [[0.0] * 4] * 2
    )
    burn.seed(1)
    model = _Net(ADEV)
    names = [n for n, _ in model.named_params()]
    assert {"fc.weight", "fc.bias", "norm.gamma", "norm.beta"} <= set(names)
    assert any(n.startswith("blocks.") for n in names) and any(n.startswith("heads.") for n in names)
    assert len(model.params()) == len(names) == 8
    assert model.num_params() == (3 * 4 + 4) + (4 * 4 + 4) + (4 * 2 + 2) + 2 * 4
    x = burn.tensor(rng(3).normal(size=(5, 3)).astype(np.float32), device=ADEV)
    assert model(x).shape == (5, 2) and model.forward(x).shape == (5, 2)

    on_cpu = model.to(CPU)
    assert all(p.val().device == CPU for p in on_cpu.params())
    valid = model.valid()  # inner backend: no autodiff, dropout off, running stats
    assert all(p.val().device == CPU for p in valid.params())
    xv = x.inner()
    close(valid(xv), valid(xv).numpy())  # deterministic without dropout

    record = valid.record()
    assert isinstance(record, dict) and all(isinstance(v, np.ndarray) for v in record.values())
    assert "norm.running_mean" in record and "fc.weight" in record
    fresh = _Net(CPU)
    assert fresh.load_record(record) is fresh
    close(fresh(xv), valid(xv).numpy())


# fmt: off
INITIALIZERS = [
    ("Constant", nn.init.Constant(value=0.5), lambda w: np.all(w == 0.5)),
    ("Ones", nn.init.Ones(), lambda w: np.all(w == 1.0)),
    ("Zeros", nn.init.Zeros(), lambda w: np.all(w == 0.0)),
    ("Uniform", nn.init.Uniform(min=-0.1, max=0.3), lambda w: w.min() >= -0.1 and w.max() < 0.3 and abs(w.mean() - 0.1) < 0.01),
    ("Normal", nn.init.Normal(mean=1.0, std=0.5), lambda w: abs(w.mean() - 1.0) < 0.02 and abs(w.std() - 0.5) < 0.02),
    # fan_in 100, fan_out 200; bounds and stds from the papers' formulas
    ("KaimingUniform", nn.init.KaimingUniform(gain=1.0), lambda w: abs(np.abs(w).max() - math.sqrt(3 / 100)) < 0.005),
    ("KaimingNormal", nn.init.KaimingNormal(), lambda w: abs(w.std() - math.sqrt(2 / 100)) < 0.005),
    ("XavierUniform", nn.init.XavierUniform(), lambda w: abs(np.abs(w).max() - math.sqrt(6 / 300)) < 0.005),
    ("XavierNormal", nn.init.XavierNormal(), lambda w: abs(w.std() - math.sqrt(2 / 300)) < 0.003),
    ("Orthogonal", nn.init.Orthogonal(), lambda w: np.allclose(w.T @ w, np.eye(100), atol=1e-5)),
]
# fmt: on


@pytest.mark.parametrize("init, check", [i[1:] for i in INITIALIZERS], ids=[i[0] for i in INITIALIZERS])
def test_initializers(init, check):
    burn.seed(4)
    w = init.init((200, 100), fan_in=100, fan_out=200, device=CPU)
    assert w.shape == (200, 100) and w.dtype is burn.float32
    assert check(w.numpy().astype(np.float64))
    # every initializer plugs into a config (no bias: Orthogonal needs 2-d shapes, as in PyTorch)
    layer = nn.LinearConfig(100, 200, bias=False, initializer=init).init(CPU)
    assert layer.weight.val().shape == (100, 200)
