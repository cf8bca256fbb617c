"""load_torch / save_torch / torch_state_dict without torch: PyTorch's names and layouts written here by
hand (numpy), safetensors files, sharded checkpoints with their index, key_map, the report and the
strict errors. The comparison with real PyTorch modules is in test_torch_interop.py."""

from __future__ import annotations

import json

import burn
import numpy as np
import pytest
from burn import nn
from burn.record import load_torch, save_torch, torch_state_dict
from safetensors.numpy import save_file


class Net(nn.Module):
    """A small CNN with batch norm, named as its PyTorch twin would be."""

    def __init__(self):
        self.conv = nn.Conv2dConfig((1, 4), (3, 3)).init()
        self.bn = nn.BatchNormConfig(4).init()
        self.fc = nn.LinearConfig(4, 3).init()

    def forward(self, x):
        h = nn.functional.relu(self.bn(self.conv(x)))
        return self.fc(h.mean((2, 3)))


def _torch_style(rng):
    """A PyTorch state dict of Net, by hand: Linear (out, in), norms weight/bias, num_batches_tracked."""
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return {
        "conv.weight": f(4, 1, 3, 3),
        "conv.bias": f(4),
        "bn.weight": f(4),
        "bn.bias": f(4),
        "bn.running_mean": f(4),
        "bn.running_var": np.abs(f(4)) + 0.5,
        "bn.num_batches_tracked": np.array(17, dtype=np.int64),
        "fc.weight": f(3, 4),
        "fc.bias": f(3),
    }


def test_layout_conversion_of_a_cnn():
    sd = _torch_style(np.random.default_rng(0))
    net = Net()
    report = load_torch(sd, net)
    assert report.ok and report.missing == report.unused == report.mismatched == []
    assert sorted(report.loaded) == sorted(n for n, _ in net.named_entries())
    np.testing.assert_array_equal(net.fc.weight.val().numpy(), sd["fc.weight"].T)  # burn's (in, out)
    np.testing.assert_array_equal(net.conv.weight.val().numpy(), sd["conv.weight"])
    np.testing.assert_array_equal(net.bn.gamma.val().numpy(), sd["bn.weight"])
    np.testing.assert_array_equal(net.bn.beta.val().numpy(), sd["bn.bias"])
    np.testing.assert_array_equal(net.bn.running_var.val().numpy(), sd["bn.running_var"])
    # and back: the same names and arrays, num_batches_tracked written as PyTorch expects one
    back = torch_state_dict(net)
    assert sorted(back) == sorted(sd)
    for k in sd:
        if k != "bn.num_batches_tracked":
            np.testing.assert_array_equal(back[k], sd[k])
    assert back["bn.num_batches_tracked"].dtype == np.int64


def test_attention_packed_in_proj_is_split():
    d, rng = 8, np.random.default_rng(1)
    in_w, in_b = rng.standard_normal((3 * d, d)), rng.standard_normal(3 * d)
    out_w, out_b = rng.standard_normal((d, d)), rng.standard_normal(d)
    mha = nn.MultiHeadAttentionConfig(d, 2).init()
    sd = {"in_proj_weight": in_w, "in_proj_bias": in_b, "out_proj.weight": out_w, "out_proj.bias": out_b}
    load_torch(sd, mha)
    for i, lin in enumerate((mha.query, mha.key, mha.value)):
        np.testing.assert_allclose(lin.weight.val().numpy(), in_w[i * d : (i + 1) * d].T, rtol=1e-6)
        np.testing.assert_allclose(lin.bias.val().numpy(), in_b[i * d : (i + 1) * d], rtol=1e-6)
    np.testing.assert_allclose(mha.output.weight.val().numpy(), out_w.T, rtol=1e-6)
    back = torch_state_dict(mha)
    assert list(back) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    np.testing.assert_allclose(back["in_proj_weight"], in_w, rtol=1e-6)
    # PyTorch's unpacked spelling (kdim/vdim differ) fills the same entries
    sep = {"q_proj_weight": in_w[:d], "k_proj_weight": in_w[d : 2 * d], "v_proj_weight": in_w[2 * d :]}
    fresh = nn.MultiHeadAttentionConfig(d, 2).init()
    load_torch({**sep, "in_proj_bias": in_b, "out_proj.weight": out_w, "out_proj.bias": out_b}, fresh)
    np.testing.assert_allclose(fresh.value.weight.val().numpy(), in_w[2 * d :].T, rtol=1e-6)


def test_transformer_and_sequential_names():
    enc = nn.TransformerEncoderConfig(8, 16, 2, 1).init()
    names = list(torch_state_dict(enc))
    assert names[:4] == [
        "layers.0.self_attn.in_proj_weight",
        "layers.0.self_attn.in_proj_bias",
        "layers.0.self_attn.out_proj.weight",
        "layers.0.self_attn.out_proj.bias",
    ]
    assert "layers.0.linear1.weight" in names and "layers.0.norm2.bias" in names
    seq = nn.Sequential(nn.LinearConfig(2, 3).init(), nn.Relu(), nn.LinearConfig(3, 1).init())
    assert list(torch_state_dict(seq)) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_key_map_regex_pairs_and_callable():
    sd = {f"model.backbone.{k}": v for k, v in _torch_style(np.random.default_rng(2)).items()}
    report = load_torch(sd, Net(), key_map=[(r"^model\.", ""), (r"^backbone\.", "")])
    assert report.ok
    net = Net()
    load_torch(sd, net, key_map=lambda k: k.removeprefix("model.backbone."))
    np.testing.assert_array_equal(net.fc.bias.val().numpy(), sd["model.backbone.fc.bias"])
    # a key mapped to None (or '') is dropped, not reported as unused
    extra = {**_torch_style(np.random.default_rng(3)), "head.extra": np.ones(2, np.float32)}
    assert load_torch(extra, Net(), key_map=lambda k: None if k.startswith("head.") else k).ok
    with pytest.raises(burn.RecordError, match="the same name 'fc.bias'"):
        load_torch({"a.fc.bias": np.ones(3), "b.fc.bias": np.ones(3)}, Net(), key_map=[(r"^[ab]\.", "")])


def test_strict_error_lists_every_problem_and_leaves_the_module_untouched():
    sd = _torch_style(np.random.default_rng(4))
    sd["fc.weight"] = sd["fc.weight"].T  # a burn-layout weight saved as if it were PyTorch's
    del sd["conv.bias"]
    sd["decoder.weight"] = np.ones(2, np.float32)
    net = Net()
    before = net.record()
    with pytest.raises(burn.RecordError) as info:
        load_torch(sd, net)
    msg = str(info.value)
    assert "1 missing, 1 unused, 1 mismatched" in msg
    assert "missing: conv.bias" in msg and "unused: decoder.weight" in msg
    assert "fc.weight: the module expects (3, 4) (burn: fc.weight (4, 3)), the file has (4, 3)" in msg
    for name, value in net.record().items():
        np.testing.assert_array_equal(value, before[name])


def test_non_strict_loads_what_fits_and_reports_the_rest():
    sd = _torch_style(np.random.default_rng(5))
    sd["bn.weight"] = np.ones(5, np.float32)  # wrong size
    sd["fc.bias"] = np.array([1, 2, 3], dtype=np.int64)  # wrong kind of dtype
    del sd["conv.weight"]
    net = Net()
    kept = net.conv.weight.val().numpy()
    report = load_torch(sd, net, strict=False)
    assert report.missing == ["conv.weight"] and report.unused == []
    assert len(report.mismatched) == 2 and "expects float, the file has int64" in report.mismatched[1]
    assert not report.ok and "bn.gamma" not in report.loaded and "fc.weight" in report.loaded
    np.testing.assert_array_equal(net.conv.weight.val().numpy(), kept)
    np.testing.assert_array_equal(net.fc.weight.val().numpy(), sd["fc.weight"].T)
    assert "missing: conv.weight" in str(report)


def test_prefix_hint():
    sd = {f"encoder.{k}": v for k, v in _torch_style(np.random.default_rng(6)).items()}
    with pytest.raises(burn.RecordError, match=r"hint: the file's keys start with 'encoder\.'"):
        load_torch(sd, Net())


def test_safetensors_sharded_index_and_folder(tmp_path):
    sd = _torch_style(np.random.default_rng(7))
    save_file(sd, str(tmp_path / "one.safetensors"))
    net = Net()
    assert load_torch(tmp_path / "one.safetensors", net).ok
    np.testing.assert_array_equal(net.fc.weight.val().numpy(), sd["fc.weight"].T)
    # a Hugging Face sharded checkpoint: shards plus model.safetensors.index.json
    folder = tmp_path / "hf"
    folder.mkdir()
    names = list(sd)
    shards = {"model-00001-of-00002.safetensors": names[:4], "model-00002-of-00002.safetensors": names[4:]}
    for shard, keys in shards.items():
        save_file({k: sd[k] for k in keys}, str(folder / shard))
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    for source in (folder / "model.safetensors.index.json", folder):
        net = Net()
        assert load_torch(source, net).ok
        np.testing.assert_array_equal(net.bn.running_mean.val().numpy(), sd["bn.running_mean"])
    # the index names a tensor its shard lacks
    index["weight_map"]["fc.extra"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(burn.RecordError, match=r"lacks \['fc.extra'\]"):
        load_torch(folder, Net())


def test_top_level_key(tmp_path):
    from burn.record._torch_write import write_torch_file

    sd = _torch_style(np.random.default_rng(8))
    assert load_torch({"state_dict": sd, "epoch": 3}, Net(), top_level_key="state_dict").ok
    # without it, nested dicts are flattened with dots ('state_dict.fc.weight'), and the error says so
    with pytest.raises(burn.RecordError, match=r"hint: the file's keys start with 'state_dict\.'"):
        load_torch({"state_dict": sd, "epoch": 3}, Net())
    assert load_torch({"state_dict": sd}, Net(), key_map=[(r"^state_dict\.", "")]).ok
    with pytest.raises(burn.RecordError, match=r"pass top_level_key= one of \['meta'\]"):
        load_torch({"meta": {"epoch": 3}}, Net())
    write_torch_file(sd, str(tmp_path / "sd.pt"))
    with pytest.raises(burn.RecordError, match="no top-level key 'model'"):
        load_torch(tmp_path / "sd.pt", Net(), top_level_key="model")


@pytest.mark.parametrize("suffix", ["", ".safetensors", ".pt"])
def test_save_torch_round_trip(tmp_path, suffix):
    net = Net()
    path = save_torch(net, tmp_path / f"net{suffix}")
    assert path.endswith(suffix or ".safetensors")
    copy = Net()
    assert load_torch(path, copy).ok
    for name, value in net.record().items():
        np.testing.assert_array_equal(copy.record()[name], value)


def test_bfloat16_weights_load_into_float32_params(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    sd = {k: v.astype(ml_dtypes.bfloat16) for k, v in _torch_style(np.random.default_rng(9)).items()}
    sd["bn.num_batches_tracked"] = np.array(0, dtype=np.int64)
    from burn.record._file import safetensors_bytes

    (tmp_path / "bf16.safetensors").write_bytes(safetensors_bytes(sd, {"format": "pt"}))
    net = Net()
    assert load_torch(tmp_path / "bf16.safetensors", net).ok
    assert net.fc.weight.val().dtype == burn.float32
    np.testing.assert_array_equal(net.fc.weight.val().numpy(), sd["fc.weight"].astype(np.float32).T)


def test_save_torch_key_map(tmp_path):
    net = Net()
    path = save_torch(net, tmp_path / "net.pt", key_map=[(r"^fc\.", "head."), (r"^", "model.")])
    from burn.record._torch_read import read_torch_file

    saved = read_torch_file(path)
    assert "model.head.weight" in saved and "model.bn.num_batches_tracked" in saved
    copy = Net()
    assert load_torch(path, copy, key_map=[(r"^model\.", ""), (r"^head\.", "fc.")]).ok
    np.testing.assert_array_equal(copy.fc.weight.val().numpy(), net.fc.weight.val().numpy())
    with pytest.raises(burn.RecordError, match="the same name 'x'"):
        save_torch(net, tmp_path / "bad.safetensors", key_map=lambda k: "x")
