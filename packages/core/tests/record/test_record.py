"""Record files: a round trip of every module, metadata, half precision, bytes, and clear errors that
leave the module untouched."""

import json

import burn
import numpy as np
import pytest
from burn import nn, record

CONFIGS = [
    nn.LinearConfig(3, 4),
    nn.EmbeddingConfig(5, 3),
    nn.Conv1dConfig(2, 3, 3),
    nn.Conv2dConfig((2, 3), (3, 3)),
    nn.Conv3dConfig((1, 2), 2),
    nn.ConvTranspose1dConfig((2, 3), 3),
    nn.ConvTranspose2dConfig((2, 3), 2),
    nn.ConvTranspose3dConfig((1, 2), 2),
    nn.MaxPool1dConfig(2),
    nn.MaxPool2dConfig(2),
    nn.AvgPool1dConfig(2),
    nn.AvgPool2dConfig(2),
    nn.AdaptiveAvgPool1dConfig(2),
    nn.AdaptiveAvgPool2dConfig(2),
    nn.BatchNormConfig(3),
    nn.LayerNormConfig(4),
    nn.GroupNormConfig(2, 4),
    nn.InstanceNormConfig(3),
    nn.RmsNormConfig(4),
    nn.DropoutConfig(0.1),
    nn.LstmConfig(3, 4),
    nn.GruConfig(3, 4),
    nn.MultiHeadAttentionConfig(4, 2),
    nn.TransformerEncoderConfig(4, 8, 2, 2),
    nn.PositionalEncodingConfig(4, 8),
    nn.RotaryEncodingConfig(8, 4),
    nn.ReluConfig(),
    nn.GeluConfig(),
    nn.SiluConfig(),
    nn.LeakyReluConfig(),
    nn.PReluConfig(3),
    nn.SigmoidConfig(),
    nn.TanhConfig(),
    nn.SequentialConfig([nn.LinearConfig(2, 3), nn.ReluConfig(), nn.LinearConfig(3, 1)]),
]


def _scramble(m):
    """Give every entry new random values so a round trip cannot pass by accident."""
    rng = np.random.default_rng(5)
    m.load_record({k: rng.normal(size=v.shape) for k, v in m.record().items()})
    return m


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_every_module_round_trips_through_a_file(config, tmp_path):
    burn.seed(0)
    src = _scramble(config.init())
    path = record.save(src, tmp_path / "m")
    assert path.endswith(".safetensors")
    burn.seed(1)
    dst = record.load(config.init(), path)
    a, b = src.record(), dst.record()
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
    assert dst.param_ids() == src.param_ids()
    meta = record.read_metadata(open(path, "rb").read())
    assert meta["format"] == "burn-record" and meta["burn_core_version"] == burn.__version__
    assert meta["module"].endswith(type(src).__name__)
    if hasattr(src, "_config"):
        assert type(config).from_json(meta["config"]) == config


def test_half_precision_save_restores_module_dtype():
    src = _scramble(nn.LinearConfig(8, 8).init())
    half = record.to_bytes(src, dtype=burn.float16)
    full = record.to_bytes(src)
    assert len(half) < len(full)
    dst = record.from_bytes(nn.LinearConfig(8, 8).init(), half)
    assert dst.weight.dtype == burn.float32
    np.testing.assert_allclose(dst.weight.val().numpy(), src.weight.val().numpy(), rtol=1e-3, atol=1e-3)
    assert record.read_metadata(half)["save_dtype"] == "float16"
    with pytest.raises(ValueError, match="float dtype"):
        record.to_bytes(src, dtype=burn.int32)


def test_mismatched_record_reports_every_problem_and_leaves_module_untouched(tmp_path):
    path = record.save(_scramble(nn.LinearConfig(3, 4).init()), tmp_path / "lin.safetensors")
    target = nn.LinearConfig(3, 5, bias=False).init()
    before = target.record()
    with pytest.raises(burn.RecordError) as info:
        record.load(target, path)
    msg = str(info.value)
    assert "lin.safetensors" in msg and "Linear" in msg
    assert "shape mismatch: weight: module has (3, 5), record has (3, 4)" in msg and "unexpected: bias" in msg
    assert all(np.array_equal(before[k], v) for k, v in target.record().items())


def test_dtype_mismatch_is_reported():
    src = nn.LinearConfig(2, 2).init()
    data = record.to_bytes(src.map(lambda t: t.cast(burn.float64)))
    with pytest.raises(
        burn.RecordError, match="dtype mismatch: weight: module has float32, record has float64"
    ):
        record.from_bytes(nn.LinearConfig(2, 2).init(), data)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:5],  # shorter than the length prefix
        lambda d: d[: len(d) // 2],  # truncated tensor data
        lambda d: (10**9).to_bytes(8, "little") + d[8:],  # absurd header length
        lambda d: d[:8] + b"[" + d[9:],  # broken JSON header
        lambda d: b"\x00" * len(d),
    ],
)
def test_corrupted_file_gives_record_error_and_module_untouched(damage, tmp_path):
    data = record.to_bytes(_scramble(nn.LinearConfig(3, 4).init()))
    path = tmp_path / "bad.safetensors"
    path.write_bytes(damage(data))
    target = nn.LinearConfig(3, 4).init()
    before = target.record()
    with pytest.raises(burn.RecordError, match="bad.safetensors"):
        record.load(target, path)
    assert all(np.array_equal(before[k], v) for k, v in target.record().items())


def test_save_is_atomic_and_overwrites(tmp_path):
    m = nn.LinearConfig(2, 2).init()
    p1 = record.save(m, tmp_path / "a.safetensors")
    record.save(_scramble(m), p1)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.safetensors"]
    entries = json.loads(record.read_metadata(open(p1, "rb").read())["entries"])
    assert entries["weight"] == {"id": m.weight.id, "dtype": "float32", "kind": "param"}


def test_batch_norm_running_stats_are_recorded():
    bn = nn.BatchNormConfig(2).init()
    bn.load_record(
        {
            "gamma": np.ones(2),
            "beta": np.zeros(2),
            "running_mean": np.array([1.0, 2.0]),
            "running_var": np.ones(2),
        }
    )
    back = record.from_bytes(nn.BatchNormConfig(2).init(), record.to_bytes(bn))
    assert np.array_equal(back.running_mean.val().numpy(), [1.0, 2.0])
    assert json.loads(record.read_metadata(record.to_bytes(bn))["entries"])["running_mean"]["kind"] == "state"


def test_values_held_as_strided_views_save_in_logical_order():
    """A param whose value is a strided view (an expand, a transpose, a numpy view it was loaded from)
    is written element by element in row-major order, not as its memory lies."""
    m = nn.LinearConfig(3, 4).init()
    weight = np.arange(12, dtype=np.float32).reshape(4, 3).T  # (3, 4), column-major in memory
    m.load_record({"weight": weight, "bias": np.broadcast_to(np.float32(2.0), (4,))})
    m.bias.set(burn.tensor(np.arange(4, dtype=np.float32)[None]).expand((3, 4))[1])
    back = record.from_bytes(nn.LinearConfig(3, 4).init(), record.to_bytes(m))
    np.testing.assert_array_equal(back.weight.val().numpy(), weight)
    np.testing.assert_array_equal(back.bias.val().numpy(), np.arange(4, dtype=np.float32))
