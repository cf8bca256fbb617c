"""nn.Module traversal, copies, records, repr, config errors and initializers."""

import math

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import init


class Block(nn.Module):
    def __init__(self, device=None):
        self.layers = [nn.LinearConfig(3, 4).init(device), nn.LinearConfig(4, 2).init(device)]
        self.heads = {"a": nn.LinearConfig(2, 1, bias=False).init(device)}
        self.norm = nn.BatchNormConfig(2).init(device)
        self.scale = 0.5  # plain attributes are not state

    def forward(self, x):
        h = self.layers[1](burn.nn.functional.relu(self.layers[0](x)))
        return self.heads["a"](self.norm(h.unsqueeze(-1)).squeeze(-1)) * self.scale


def test_params_are_found_in_lists_dicts_and_submodules():
    m = Block()
    names = [n for n, _ in m.named_params()]
    assert names == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "heads.a.weight",
        "norm.gamma",
        "norm.beta",
    ]
    assert m.num_params() == 3 * 4 + 4 + 4 * 2 + 2 + 2 + 2 + 2
    assert set(m.record()) == set(names) | {"norm.running_mean", "norm.running_var"}
    assert len({p.id for p in m.params()}) == len(names)
    assert m(burn.ones((5, 3))).shape == (5, 1)


def test_repr_shows_structure_and_counts():
    text = repr(Block())
    assert "layers.0: Linear {d_input: 3, d_output: 4, params: 16}" in text
    assert "params: 32" in text and "norm: BatchNorm" in text


def test_clone_to_and_valid_copy_with_the_same_ids():
    m = Block()
    for copy in (m.clone(), m.to("cpu"), m.valid()):
        assert copy is not m and copy.layers[0] is not m.layers[0]
        assert copy.param_ids() == m.param_ids()
        for (n1, a), (n2, b) in zip(copy.named_entries(), m.named_entries()):
            assert n1 == n2 and np.array_equal(a.value.numpy(), b.value.numpy())
        assert copy.scale == 0.5


def test_load_record_checks_everything_first_and_leaves_module_untouched():
    m = nn.LinearConfig(3, 2).init()
    before = m.record()
    bad = {"weight": np.zeros((2, 3), np.float32), "extra": np.zeros(1)}
    with pytest.raises(burn.RecordError) as info:
        m.load_record(bad)
    msg = str(info.value)
    assert "3 problem(s)" in msg
    assert "shape mismatch: weight" in msg and "missing: bias" in msg and "unexpected: extra" in msg
    after = m.record()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    with pytest.raises(burn.RecordError, match="dtype mismatch: bias"):
        m.load_record({"weight": before["weight"], "bias": np.zeros(2, np.int64)})
    # float64 arrays load into float32 params (cast), ids may be restored
    m.load_record({"weight": np.ones((3, 2)), "bias": np.zeros(2)}, ids={"weight": "w-id"})
    assert m.weight.dtype == burn.float32 and m.weight.id == "w-id"
    assert np.array_equal(m.weight.val().numpy(), np.ones((3, 2), np.float32))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: nn.LinearConfig(0, 2).init(), "d_input"),
        (lambda: nn.DropoutConfig(1.5).init(), "prob"),
        (lambda: nn.MultiHeadAttentionConfig(10, 3).init(), "n_heads"),
        (lambda: nn.GroupNormConfig(3, 4).init(), "num_groups"),
        (lambda: nn.BatchNormConfig(2, momentum=2.0).init(), "momentum"),
        (lambda: nn.PositionalEncodingConfig(5).init(), "even"),
        (lambda: nn.GeluConfig("fast").init(), "approximate"),
    ],
)
def test_config_errors_name_the_field(make, match):
    with pytest.raises(burn.ConfigError, match=match):
        make()


def test_module_configs_round_trip_through_json():
    c = nn.TransformerEncoderConfig(8, 16, 2, 1, initializer=init.XavierUniform(gain=2.0))
    back = nn.TransformerEncoderConfig.from_json(c.to_json())
    assert back == c and isinstance(back.initializer, init.XavierUniform)
    s = nn.SequentialConfig([nn.LinearConfig(2, 3), nn.ReluConfig()])
    back = nn.SequentialConfig.from_json(s.to_json())
    assert back == s and back.init()(burn.ones((1, 2))).shape == (1, 3)


# ----------------------------------------------------------------------------------- initializers
N = (200, 300)  # 60 000 draws: sample moments within ~1% of the target


def _draw(initializer, shape=N, fan_in=None, fan_out=None):
    burn.seed(3)
    return initializer.init(shape, fan_in, fan_out).numpy().astype(np.float64)


def test_constant_ones_zeros():
    assert np.all(_draw(init.Constant(2.5), (3, 4)) == 2.5)
    assert np.all(_draw(init.Ones(), (3,)) == 1) and np.all(_draw(init.Zeros(), (3,)) == 0)


def test_uniform_and_normal_moments():
    u = _draw(init.Uniform(-2.0, 3.0))
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    n = _draw(init.Normal(1.0, 2.0))
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.03


@pytest.mark.parametrize(
    "initializer, bound",
    [
        (init.KaimingUniform(), 1 / math.sqrt(200)),  # Burn's default: gain 1/sqrt(3) -> 1/sqrt(fan_in)
        (init.KaimingUniform(gain=math.sqrt(2), fan_out_only=True), math.sqrt(2) * math.sqrt(3 / 300)),
        (init.XavierUniform(gain=1.5), 1.5 * math.sqrt(6 / 500)),
    ],
)
def test_uniform_family_bounds(initializer, bound):
    w = _draw(initializer, N, fan_in=200, fan_out=300)
    assert np.abs(w).max() <= bound * (1 + 1e-6)
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound  # std of U(-a, a) is a / sqrt(3)


@pytest.mark.parametrize(
    "initializer, std",
    [(init.KaimingNormal(), math.sqrt(2 / 200)), (init.XavierNormal(gain=2.0), 2 * math.sqrt(2 / 500))],
)
def test_normal_family_std(initializer, std):
    w = _draw(initializer, N, fan_in=200, fan_out=300)
    assert abs(w.std() - std) < 0.02 * std


def test_fans_follow_pytorch_for_conv_weights():
    assert init.fans((8, 3, 5, 5)) == (75, 200)
    m = nn.Conv2dConfig((3, 8), 5, initializer=init.KaimingUniform(gain=1.0)).init()
    assert np.abs(m.weight.val().numpy()).max() <= math.sqrt(3 / 75) * (1 + 1e-6)


def test_orthogonal():
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        w = _draw(init.Orthogonal(gain=2.0), shape).reshape(shape[0], -1)
        small = min(w.shape)
        gram = w @ w.T if w.shape[0] == small else w.T @ w
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)
    with pytest.raises(burn.ConfigError, match="Orthogonal"):
        init.Orthogonal().init((5,))


def test_named_params_are_the_params_of_named_entries_in_order():
    class Outer(nn.Module):
        def __init__(self):
            self.pairs = ((Block(), 3), [None, {"x": Block(), "n": "name"}])
            self.frozen = nn.LinearConfig(2, 2).init()
            self.frozen.weight.require_grad = False
            self.stride = (1, 2)

    m = Outer()
    want = [(n, e) for n, e in m.named_entries() if isinstance(e, nn.Param)]
    got = m.named_params()
    assert [n for n, _ in got] == [n for n, _ in want]
    assert all(a is b for (_, a), (_, b) in zip(got, want))
    assert "pairs.1.1.x.heads.a.weight" in dict(got) and "frozen.weight" in dict(got)
