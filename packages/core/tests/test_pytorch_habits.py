"""PyTorch spellings burn accepts where they are unambiguous, and one-line errors naming the burn
spelling where they are not (issue 32): varargs shapes for the random creators, ``nn.Linear(16, 64,
device=...)`` for the common modules, PyTorch's tuple forms of conv/pool arguments, ``parameters()``,
``named_parameters()``, ``state_dict()`` / ``load_state_dict()``, ``train()`` / ``eval()``, and dtype
errors that name the dtype."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F


def test_random_creators_take_varargs_shapes_like_zeros():
    for fn in (burn.randn, burn.rand):
        burn.seed(7)
        a = fn(2, 3)
        burn.seed(7)
        b = fn((2, 3))
        burn.seed(7)
        c = fn(shape=(2, 3))
        assert a.shape == burn.zeros(2, 3).shape == (2, 3)
        assert a.tolist() == b.tolist() == c.tolist()
    assert burn.randn(4).shape == (4,) and burn.randn(2, 3, dtype=burn.float64).dtype is burn.float64
    with pytest.raises(TypeError, match=r"randn: give the dtype by keyword"):
        burn.randn((2, 3), burn.float16)


def _same_params(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        np.testing.assert_array_equal(sa[k].numpy(), sb[k].numpy(), err_msg=k)


@pytest.mark.parametrize(
    ("short", "config"),
    [
        (lambda d: nn.Linear(16, 64, device=d), lambda d: nn.LinearConfig(16, 64).init(d)),
        (lambda d: nn.Linear(16, 64, bias=False), lambda d: nn.LinearConfig(16, 64, bias=False).init(d)),
        (lambda d: nn.Embedding(10, 4, device=d), lambda d: nn.EmbeddingConfig(10, 4).init(d)),
        (lambda d: nn.Conv2d(3, 8, 3, padding=1), lambda d: nn.Conv2dConfig((3, 8), 3, padding=1).init(d)),
        (lambda d: nn.Conv1d(4, 6, 3, stride=2), lambda d: nn.Conv1dConfig(4, 6, 3, stride=2).init(d)),
        (lambda d: nn.ConvTranspose2d(4, 2, 3), lambda d: nn.ConvTranspose2dConfig((4, 2), 3).init(d)),
        (lambda d: nn.BatchNorm(8, device=d), lambda d: nn.BatchNormConfig(8).init(d)),
        (lambda d: nn.LayerNorm(8), lambda d: nn.LayerNormConfig(8).init(d)),
        (lambda d: nn.MaxPool2d(2, stride=2), lambda d: nn.MaxPool2dConfig(2, stride=2).init(d)),
    ],
)
def test_module_shorthand_is_the_config_init(short, config):
    dev = burn.device("cpu")
    burn.seed(3)
    a = short(dev)
    burn.seed(3)
    b = config(dev)
    assert type(a) is type(b) and repr(a) == repr(b)
    _same_params(a, b)


def test_module_shorthand_keeps_the_config_form_and_names_the_burn_spelling():
    dev = burn.device("cpu")
    assert nn.Linear(nn.LinearConfig(3, 4), dev).weight.shape == (3, 4)
    with pytest.raises(TypeError) as info:
        nn.BatchNorm(16, eps=1e-3)
    msg = str(info.value)
    assert "\n" not in msg and "nn.BatchNormConfig(num_features, epsilon, momentum).init(device)" in msg
    with pytest.raises(TypeError, match="by keyword: burn's positional order differs"):
        nn.Conv2d(3, 8, 3, 1, 1)  # PyTorch's stride, padding positionally: burn orders them otherwise


def test_conv_and_pool_configs_take_pytorchs_tuple_forms():
    x = burn.tensor(np.random.default_rng(0).standard_normal((2, 4, 9)).astype(np.float32))
    burn.seed(1)
    a = nn.Conv1dConfig(4, 6, (3,), stride=(2,), padding=(1,), dilation=(1,)).init()
    burn.seed(1)
    b = nn.Conv1dConfig(4, 6, 3, stride=2, padding=1).init()
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    burn.seed(1)
    t1 = nn.ConvTranspose1dConfig((4, 2), (3,), padding=(1,), padding_out=(1,), stride=(2,)).init()
    burn.seed(1)
    t2 = nn.ConvTranspose1dConfig((4, 2), 3, padding=1, padding_out=1, stride=2).init()
    np.testing.assert_array_equal(t1(x).numpy(), t2(x).numpy())
    for tuple_form, int_form in (
        (nn.MaxPool1dConfig((3,), stride=(2,), padding=(1,)), nn.MaxPool1dConfig(3, stride=2, padding=1)),
        (nn.AvgPool1dConfig((2,), padding=(1,)), nn.AvgPool1dConfig(2, padding=1)),
    ):
        np.testing.assert_array_equal(tuple_form.init()(x).numpy(), int_form.init()(x).numpy())
    with pytest.raises(burn.config.ConfigTypeError, match="Conv1dConfig: field 'padding'"):
        nn.Conv1dConfig(4, 6, 3, padding=(1, 1))


def test_tuple_forms_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(2).standard_normal((2, 4, 9)).astype(np.float32)
    conv = nn.Conv1dConfig(4, 6, (3,), stride=(2,), padding=(1,)).init()
    ref = torch.nn.functional.conv1d(
        torch.from_numpy(x),
        torch.from_numpy(conv.weight.val().numpy()),
        torch.from_numpy(conv.bias.val().numpy()),
        stride=(2,),
        padding=(1,),
    )
    np.testing.assert_allclose(conv(burn.tensor(x)).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_parameters_and_state_dict_round_trip():
    class Net(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(3, 4)
            self.norm = nn.BatchNorm(4)

        def forward(self, x):
            return self.norm(self.fc(x).unsqueeze(-1)).squeeze(-1)

    a, b = Net(), Net()
    names = [n for n, _ in a.named_parameters()]
    assert names == ["fc.weight", "fc.bias", "norm.gamma", "norm.beta"]
    assert sum(p.numel() for p in a.parameters()) == a.num_params() == 3 * 4 + 4 + 4 + 4
    sd = a.state_dict()
    assert set(sd) == set(names) | {"norm.running_mean", "norm.running_var"}
    assert sd["fc.weight"].shape == (3, 4)  # burn's (d_input, d_output) layout
    x = burn.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    assert b.load_state_dict(sd) is b
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    # numpy arrays load too; a wrong shape or a missing name is one RecordError, the module untouched
    before = b.fc.weight.val().numpy()
    bad = {k: v.numpy() for k, v in sd.items()}
    bad["fc.weight"] = np.zeros((4, 3), np.float32)
    del bad["fc.bias"]
    with pytest.raises(burn.RecordError) as info:
        b.load_state_dict(bad)
    assert "shape mismatch: fc.weight" in str(info.value) and "missing: fc.bias" in str(info.value)
    np.testing.assert_array_equal(b.fc.weight.val().numpy(), before)
    # strict=False: names the module lacks are skipped, names the dict lacks keep their values
    c = Net()
    partial = {"fc.weight": sd["fc.weight"], "extra": np.zeros(2)}
    c.load_state_dict(partial, strict=False)
    np.testing.assert_array_equal(c.fc.weight.val().numpy(), sd["fc.weight"].numpy())
    with pytest.raises(TypeError, match="state_dict must be a dict"):
        c.load_state_dict([1, 2])


def test_train_and_eval_move_between_autodiff_and_inner_devices():
    m = nn.Linear(4, 4)
    trained = m.train()
    assert trained.weight.val().device.autodiff and not m.weight.val().device.autodiff
    evaluated = trained.eval()
    assert not evaluated.weight.val().device.autodiff
    assert not trained.train(False).weight.val().device.autodiff
    drop = nn.Dropout(0.5)
    x = burn.ones(1000, device=trained.weight.val().device)
    assert sorted(set(drop(x).tolist())) == [0.0, 2.0]  # on the train() device dropout trains


def test_dtype_errors_name_the_dtype():
    with pytest.raises(burn.DTypeError, match="linear: x must be a float tensor, got int64"):
        nn.Linear(4, 2)(burn.tensor([[1, 2, 3, 4]], dtype=burn.int64))
    with pytest.raises(burn.DTypeError, match="conv2d: x must be a float tensor"):
        nn.Conv2d(1, 2, 3)(burn.ones(1, 1, 4, 4, dtype=burn.int64))
    with pytest.raises(burn.DTypeError, match=r"class indices and must be an int tensor, got float32"):
        F.cross_entropy(burn.randn(4, 3), burn.tensor([0.0, 1.0, 2.0, 1.0]))
    probs = F.softmax(burn.randn(4, 3), 1)  # float targets of the logits' shape: probabilities
    assert F.cross_entropy(burn.randn(4, 3), probs).shape == ()


def test_every_creator_takes_shapes_alike_and_refuses_a_positional_dtype():
    for fn in (burn.zeros, burn.ones, burn.empty, burn.rand, burn.randn):
        assert fn(2, 3).shape == fn((2, 3)).shape == fn([2, 3]).shape == fn(shape=(2, 3)).shape == (2, 3)
        name = fn.__name__
        with pytest.raises(TypeError, match=rf"^{name}: give the dtype by keyword, {name}\(2, 3, dtype="):
            fn((2, 3), burn.float16)
        with pytest.raises(TypeError, match=rf"^{name}: give the dtype by keyword"):
            fn(2, 3, "float64")
        with pytest.raises(TypeError, match=rf"^{name}: the shape must be ints, got a Tensor"):
            fn(burn.zeros(2))
    with pytest.raises(TypeError, match="give the shape positionally or as shape=, not both"):
        burn.empty(2, shape=(2,))


def test_randint_takes_pytorchs_high_and_size_form():
    burn.seed(5)
    a = burn.randint(7, (4, 5))
    burn.seed(5)
    b = burn.randint(0, 7, (4, 5))
    assert a.shape == (4, 5) and a.tolist() == b.tolist()
    assert 0 <= min(a.flatten().tolist()) and max(a.flatten().tolist()) < 7
    with pytest.raises(
        TypeError, match=r"randint: give low, high and shape .* got low=10, high=3, shape=None"
    ):
        burn.randint(10, 3)  # PyTorch needs a size tuple here too; burn says what it takes


def test_bernoulli_of_a_probability_tensor_names_the_burn_spelling():
    with pytest.raises(TypeError, match=r"burn.rand\(probs.shape, device=probs.device\) < probs"):
        burn.bernoulli(burn.rand(3), 0.5)


@pytest.mark.parametrize(
    ("short", "config"),
    [
        (lambda d: nn.Dropout(0.2), lambda d: nn.DropoutConfig(0.2).init(d)),
        (lambda d: nn.Dropout(), lambda d: nn.DropoutConfig().init(d)),
        (lambda d: nn.PRelu(3, alpha=0.1, device=d), lambda d: nn.PReluConfig(3, 0.1).init(d)),
        (lambda d: nn.PositionalEncoding(16), lambda d: nn.PositionalEncodingConfig(16).init(d)),
        (lambda d: nn.RotaryEncoding(16, 8), lambda d: nn.RotaryEncodingConfig(16, 8).init(d)),
        (
            lambda d: nn.TransformerEncoder(16, 32, 4, 2, device=d),
            lambda d: nn.TransformerEncoderConfig(16, 32, 4, 2).init(d),
        ),
    ],
)
def test_more_module_shorthands_are_the_config_init(short, config):
    dev = burn.device("cpu")
    burn.seed(4)
    a = short(dev)
    burn.seed(4)
    b = config(dev)
    assert type(a) is type(b) and repr(a) == repr(b)
    _same_params(a, b)


@pytest.mark.parametrize(
    ("call", "hint"),
    [
        (lambda: nn.Dropout(p=0.1), "PyTorch's p is prob in burn"),
        (
            lambda: nn.Linear(in_features=2, out_features=3),
            "in_features is d_input, out_features is d_output",
        ),
        (lambda: nn.BatchNorm(8, eps=1e-3), "PyTorch's eps is epsilon in burn"),
        (lambda: nn.Embedding(num_embeddings=5, embedding_dim=2), "num_embeddings is n_embedding"),
        (lambda: nn.Conv1d(in_channels=2, out_channels=3, kernel_size=3), "in_channels is channels_in"),
        (
            lambda: nn.Conv2d(in_channels=2, out_channels=3, kernel_size=3),
            "in_channels is channels=(in, out)",
        ),
    ],
)
def test_pytorch_keyword_names_are_a_one_line_error_naming_burns(call, hint):
    with pytest.raises(TypeError) as info:
        call()
    msg = str(info.value)
    assert "\n" not in msg and hint in msg and "burn spells it nn." in msg


def test_load_state_dict_lists_unexpected_keys_and_dtype_mismatches():
    m = nn.Linear(3, 4)
    sd = {k: v.numpy() for k, v in m.state_dict().items()}
    sd["extra.w"] = np.zeros(2)
    sd["weight"] = np.zeros((3, 4), np.int32)
    with pytest.raises(burn.RecordError) as info:
        m.load_state_dict(sd)
    msg = str(info.value)
    assert "unexpected: extra.w" in msg and "dtype mismatch: weight" in msg and "record has int32" in msg


def test_state_dict_layouts_against_torch():
    """The documented layout: a torch Linear's (out, in) weight loads transposed; a conv's as it is."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t_lin, t_conv = torch.nn.Linear(5, 3), torch.nn.Conv2d(2, 4, 3, padding=1)
    lin, conv = nn.Linear(5, 3), nn.Conv2d(2, 4, 3, padding=1)
    lin.load_state_dict(
        {"weight": t_lin.weight.detach().numpy().T.copy(), "bias": t_lin.bias.detach().numpy()}
    )
    conv.load_state_dict({k: v.detach().numpy() for k, v in t_conv.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 5)).astype(np.float32)
    img = np.random.default_rng(2).standard_normal((1, 2, 6, 6)).astype(np.float32)
    with torch.no_grad():
        ref_lin, ref_conv = t_lin(torch.from_numpy(x)).numpy(), t_conv(torch.from_numpy(img)).numpy()
    np.testing.assert_allclose(lin(burn.tensor(x)).numpy(), ref_lin, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(conv(burn.tensor(img)).numpy(), ref_conv, rtol=1e-5, atol=1e-5)
    with pytest.raises(burn.RecordError, match=r"shape mismatch: weight"):  # torch's (out, in) as it is
        nn.Linear(5, 3).load_state_dict({k: v.detach().numpy() for k, v in t_lin.state_dict().items()})


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_takes_leading_dims_against_torch(reduction):
    """logits (..., C) with int targets (...) (API.md), against torch's (N, C, d) layout."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    t = rng.integers(0, 3, (4, 5))
    t[0, 0] = t[2, 3] = 2
    w = np.array([0.5, 1.0, 2.0], np.float32)
    adev = burn.device("cpu", autodiff=True)
    logits = burn.tensor(x, device=adev).require_grad()
    got = F.cross_entropy(
        logits,
        burn.tensor(t, device=adev),
        weight=burn.tensor(w, device=adev),
        ignore_index=2,
        label_smoothing=0.1,
        reduction=reduction,
    )
    tx = torch.from_numpy(x).requires_grad_()
    ref = torch.nn.functional.cross_entropy(
        tx.permute(0, 2, 1),
        torch.from_numpy(t),
        weight=torch.from_numpy(w),
        ignore_index=2,
        label_smoothing=0.1,
        reduction=reduction,
    )
    assert got.shape == tuple(ref.shape)
    np.testing.assert_allclose(got.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    ref.sum().backward()
    np.testing.assert_allclose(
        logits.grad(got.sum().backward()).numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6
    )
    probs = F.softmax(burn.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32)), -1)
    ref_p = torch.nn.functional.cross_entropy(
        torch.from_numpy(x).permute(0, 2, 1),
        torch.from_numpy(probs.numpy()).permute(0, 2, 1),
        reduction=reduction,
    )
    np.testing.assert_allclose(
        F.cross_entropy(burn.tensor(x), probs, reduction=reduction).numpy(),
        ref_p.numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_cross_entropy_leading_dims_errors_name_the_cause():
    logits = burn.randn(4, 5, 3)
    with pytest.raises(
        burn.DTypeError, match=r"targets of shape \(4, 5\) are class indices and must be an int"
    ):
        F.cross_entropy(logits, burn.rand(4, 5))
    with pytest.raises(burn.ShapeError, match=r"int targets must have shape \(4, 5\) for logits \(4, 5, 3\)"):
        F.cross_entropy(logits, burn.zeros(4, 3, dtype=burn.int64))
    with pytest.raises(burn.ShapeError, match=r"logits must be \(..., C\)"):
        F.cross_entropy(burn.tensor(1.0), burn.tensor(1))
