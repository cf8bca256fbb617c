"""Real PyTorch modules saved by PyTorch (torch.save, safetensors.torch, sharded Hugging Face-style
checkpoints), loaded into the equivalent burn modules: outputs match PyTorch's within 1e-5 (float32).
And the reverse: burn's export loads into the PyTorch module with strict=True. Skipped without torch."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn.record import load_torch, save_torch

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")
tnn = torch.nn
TOL = 1e-5


def _close(burn_out, torch_out):
    np.testing.assert_allclose(burn_out.numpy(), torch_out.detach().numpy(), rtol=TOL, atol=TOL)


# -------------------------------------------------------------------- MLP: torch.save(state_dict)
def _torch_mlp():
    torch.manual_seed(0)
    return tnn.Sequential(tnn.Linear(6, 16), tnn.ReLU(), tnn.Linear(16, 16), tnn.Tanh(), tnn.Linear(16, 3))


def _burn_mlp():
    return nn.Sequential(
        nn.LinearConfig(6, 16).init(),
        nn.Relu(),
        nn.LinearConfig(16, 16).init(),
        nn.Tanh(),
        nn.LinearConfig(16, 3).init(),
    )


def test_mlp_from_torch_save(tmp_path):
    tm = _torch_mlp()
    torch.save(tm.state_dict(), tmp_path / "mlp.pt")
    bm = _burn_mlp()
    assert load_torch(tmp_path / "mlp.pt", bm).ok
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    _close(bm(burn.tensor(x)), tm(torch.tensor(x)))


# -------------------------------------------------------------------- CNN with batch norm: safetensors
class TorchCnn(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = tnn.Conv2d(1, 4, 3, padding=1), tnn.BatchNorm2d(4)
        self.conv2, self.bn2 = tnn.Conv2d(4, 8, 3, stride=2, bias=False), tnn.BatchNorm2d(8)
        self.fc = tnn.Linear(8, 5)

    def forward(self, x):
        x = tnn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


class BurnCnn(nn.Module):
    def __init__(self):
        self.conv1, self.bn1 = nn.Conv2dConfig((1, 4), 3, padding=1).init(), nn.BatchNormConfig(4).init()
        self.conv2 = nn.Conv2dConfig((4, 8), 3, stride=2, bias=False).init()
        self.bn2 = nn.BatchNormConfig(8).init()
        self.fc = nn.LinearConfig(8, 5).init()

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2, 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


def _trained_cnn():
    """Running statistics away from their initial 0/1, as a real checkpoint has them."""
    torch.manual_seed(1)
    tm = TorchCnn()
    opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        tm(torch.randn(8, 1, 12, 12) * 2 + 1).pow(2).mean().backward()
        opt.step()
    return tm.eval()


def test_cnn_with_batch_norm_from_safetensors(tmp_path):
    tm = _trained_cnn()
    st_torch.save_file(tm.state_dict(), str(tmp_path / "cnn.safetensors"))
    bm = BurnCnn()
    report = load_torch(tmp_path / "cnn.safetensors", bm)
    assert report.ok and len(report.loaded) == 13  # num_batches_tracked ignored, not "unused"
    x = np.random.default_rng(1).standard_normal((3, 1, 12, 12)).astype(np.float32)
    _close(bm(burn.tensor(x)), tm(torch.tensor(x)))


def test_checkpoint_dict_with_optimizer_state(tmp_path):
    tm = _trained_cnn()
    opt = torch.optim.Adam(tm.parameters())
    tm(torch.randn(2, 1, 12, 12)).sum().backward()
    opt.step()
    torch.save({"model": tm.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")
    bm = BurnCnn()
    assert load_torch(tmp_path / "ckpt.pt", bm, top_level_key="model").ok
    x = np.random.default_rng(2).standard_normal((2, 1, 12, 12)).astype(np.float32)
    _close(bm(burn.tensor(x)), tm.eval()(torch.tensor(x)))


# -------------------------------------------------------------------- embedding + transformer encoder
D, FF, HEADS, VOCAB = 16, 32, 4, 40


class TorchEncoder(tnn.Module):
    def __init__(self, norm_first):
        super().__init__()
        self.embed = tnn.Embedding(VOCAB, D)
        layer = tnn.TransformerEncoderLayer(
            D, HEADS, FF, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm_first
        )
        self.encoder = tnn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, ids, pad=None):
        return self.encoder(self.embed(ids), src_key_padding_mask=pad)


class BurnEncoder(nn.Module):
    def __init__(self, norm_first):
        self.embed = nn.EmbeddingConfig(VOCAB, D).init()
        self.encoder = nn.TransformerEncoderConfig(D, FF, HEADS, 2, dropout=0.0, norm_first=norm_first).init()

    def forward(self, ids, pad=None):
        return self.encoder(self.embed(ids), mask_pad=pad)


def _write_sharded(sd, folder, fmt):
    """Hugging Face's layout: shards plus an index mapping each tensor to its shard."""
    names = list(sd)
    half = len(names) // 2
    ext, base = ("safetensors", "model") if fmt == "safetensors" else ("bin", "pytorch_model")
    weight_map = {}
    for i, keys in enumerate((names[:half], names[half:]), 1):
        shard = f"{base}-{i:05d}-of-00002.{ext}"
        part = {k: sd[k].contiguous() for k in keys}
        st_torch.save_file(part, str(folder / shard)) if ext == "safetensors" else torch.save(
            part, folder / shard
        )
        weight_map.update(dict.fromkeys(keys, shard))
    index = folder / f"{base}.{ext}.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return index


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_embedding_and_transformer_encoder_from_sharded_checkpoint(tmp_path, fmt, norm_first):
    torch.manual_seed(2)
    tm = TorchEncoder(norm_first).eval()
    index = _write_sharded(tm.state_dict(), tmp_path, fmt)
    bm = BurnEncoder(norm_first)
    assert load_torch(index, bm).ok
    rng = np.random.default_rng(3)
    ids = rng.integers(0, VOCAB, (2, 7))
    _close(bm(burn.tensor(ids)), tm(torch.tensor(ids)))
    pad = np.zeros((2, 7), dtype=bool)
    pad[1, 5:] = True
    got = bm(burn.tensor(ids), burn.tensor(pad)).numpy()
    want = tm(torch.tensor(ids), torch.tensor(pad)).detach().numpy()
    np.testing.assert_allclose(got[~pad], want[~pad], rtol=TOL, atol=TOL)  # padded rows are undefined


# -------------------------------------------------------------------- one case per layout rule
LAYERS = {
    "conv1d": (
        lambda: tnn.Conv1d(4, 6, 3, stride=2, groups=2),
        lambda: nn.Conv1dConfig(4, 6, 3, stride=2, groups=2),
        (2, 4, 11),
    ),
    "conv_transpose2d": (
        lambda: tnn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        lambda: nn.ConvTranspose2dConfig((4, 6), 3, stride=2, padding=1, padding_out=1, groups=2),
        (2, 4, 5, 5),
    ),
    "group_norm": (lambda: tnn.GroupNorm(2, 6), lambda: nn.GroupNormConfig(2, 6), (2, 6, 4, 4)),
    "instance_norm": (
        lambda: tnn.InstanceNorm2d(6, affine=True),
        lambda: nn.InstanceNormConfig(6),
        (2, 6, 4, 4),
    ),
    "layer_norm": (lambda: tnn.LayerNorm(6), lambda: nn.LayerNormConfig(6), (2, 3, 6)),
    "rms_norm": (lambda: tnn.RMSNorm(6, eps=1e-5), lambda: nn.RmsNormConfig(6), (2, 3, 6)),
    "prelu": (lambda: tnn.PReLU(6), lambda: nn.PReluConfig(6), (2, 6, 3)),
    "linear_no_bias": (
        lambda: tnn.Linear(6, 4, bias=False),
        lambda: nn.LinearConfig(6, 4, bias=False),
        (3, 6),
    ),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_each_layer_rule_matches_torch(name):
    make_torch, make_config, shape = LAYERS[name]
    torch.manual_seed(3)
    tm = make_torch().eval()
    with torch.no_grad():  # norms start at ones/zeros: move them so the names really matter
        for p in tm.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    bm = make_config().init()
    assert load_torch(tm.state_dict(), bm).ok
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    _close(bm(burn.tensor(x)), tm(torch.tensor(x)))
    back = burn.record.torch_state_dict(bm)
    assert list(back) == list(tm.state_dict())


# -------------------------------------------------------------------- recurrent layers, tensors in memory
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_recurrent_from_torch_tensors_in_memory(kind):
    torch.manual_seed(4)
    tm = tnn.LSTM(5, 7, batch_first=True) if kind == "lstm" else tnn.GRU(5, 7, batch_first=True)
    bm = (nn.LstmConfig if kind == "lstm" else nn.GruConfig)(5, 7).init()
    assert load_torch(dict(tm.state_dict()), bm).ok
    x = np.random.default_rng(4).standard_normal((2, 6, 5)).astype(np.float32)
    out = bm(burn.tensor(x))
    _close(out[0] if kind == "lstm" else out, tm(torch.tensor(x))[0])


def test_bfloat16_tensors_in_memory_and_in_a_pt_file(tmp_path):
    pytest.importorskip("ml_dtypes")
    tm = _torch_mlp().to(torch.bfloat16)
    torch.save(tm.state_dict(), tmp_path / "bf16.pt")
    for source in (tm.state_dict(), tmp_path / "bf16.pt"):
        bm = _burn_mlp()
        assert load_torch(source, bm).ok
        want = tm[0].weight.detach().float().numpy().T
        np.testing.assert_array_equal(bm.layers[0].weight.val().numpy(), want)


# -------------------------------------------------------------------- Hugging Face names through key_map
class HfStyleLayer(tnn.Module):
    """A BERT layer under Hugging Face's names (separate q/k/v, post-norm, gelu)."""

    def __init__(self):
        super().__init__()
        self.attention = tnn.Module()
        self.attention.self = tnn.Module()
        for n in ("query", "key", "value"):
            setattr(self.attention.self, n, tnn.Linear(D, D))
        self.attention.output = tnn.Module()
        self.attention.output.dense, self.attention.output.LayerNorm = tnn.Linear(D, D), tnn.LayerNorm(D)
        self.intermediate = tnn.Module()
        self.intermediate.dense = tnn.Linear(D, FF)
        self.output = tnn.Module()
        self.output.dense, self.output.LayerNorm = tnn.Linear(FF, D), tnn.LayerNorm(D)

    def forward(self, x):
        b, s, _ = x.shape
        a = self.attention.self
        q, k, v = (
            getattr(a, n)(x).view(b, s, HEADS, D // HEADS).transpose(1, 2) for n in ("query", "key", "value")
        )
        ctx = tnn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, D)
        h = self.attention.output.LayerNorm(x + self.attention.output.dense(ctx))
        ff = self.output.dense(tnn.functional.gelu(self.intermediate.dense(h)))
        return self.output.LayerNorm(h + ff)


HF_KEY_MAP = [
    (r"^bert\.encoder\.layer\.(\d+)\.", r"layers.\1."),
    (r"attention\.self\.", "self_attn."),
    (r"attention\.output\.dense\.", "self_attn.out_proj."),
    (r"attention\.output\.LayerNorm\.", "norm1."),
    (r"intermediate\.dense\.", "linear1."),
    (r"output\.dense\.", "linear2."),
    (r"output\.LayerNorm\.", "norm2."),
]


def test_hugging_face_names_through_key_map(tmp_path):
    torch.manual_seed(5)
    layers = tnn.ModuleList([HfStyleLayer(), HfStyleLayer()]).eval()
    sd = {f"bert.encoder.layer.{k}": v for k, v in layers.state_dict().items()}
    sd["bert.pooler.dense.weight"] = torch.zeros(D, D)
    st_torch.save_file(sd, str(tmp_path / "model.safetensors"))
    bm = nn.TransformerEncoderConfig(D, FF, HEADS, 2, dropout=0.0).init()
    with pytest.raises(burn.RecordError, match="unused: bert.pooler.dense.weight"):
        load_torch(tmp_path, bm, key_map=HF_KEY_MAP)
    report = load_torch(tmp_path, bm, key_map=HF_KEY_MAP, strict=False)
    assert report.unused == ["bert.pooler.dense.weight"] and not report.missing and not report.mismatched
    x = np.random.default_rng(5).standard_normal((2, 6, D)).astype(np.float32)
    t = torch.tensor(x)
    for layer in layers:
        t = layer(t)
    _close(bm(burn.tensor(x)), t)


# -------------------------------------------------------------------- the reverse: burn -> PyTorch
@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_export_loads_into_torch(tmp_path, suffix):
    bm = BurnEncoder(norm_first=False)
    path = save_torch(bm, tmp_path / f"enc{suffix}")
    if suffix == ".pt":
        sd = torch.load(path, weights_only=True, mmap=True)
    else:
        sd = st_torch.load_file(path)
    tm = TorchEncoder(norm_first=False).eval()
    tm.load_state_dict(sd, strict=True)
    ids = np.random.default_rng(6).integers(0, VOCAB, (2, 5))
    _close(bm(burn.tensor(ids)), tm(torch.tensor(ids)))
    cnn = BurnCnn()
    tc = TorchCnn().eval()
    tc.load_state_dict(st_torch.load_file(save_torch(cnn, tmp_path / "cnn.safetensors")), strict=True)
    x = np.random.default_rng(7).standard_normal((2, 1, 12, 12)).astype(np.float32)
    _close(cnn(burn.tensor(x)), tc(torch.tensor(x)))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit is deprecated, still written
def test_whole_pickled_models_and_torchscript_are_refused(tmp_path):
    torch.save(_torch_mlp(), tmp_path / "whole.pt")
    with pytest.raises(burn.RecordError, match=r"refusing to load 'torch.nn.modules.container.Sequential'"):
        load_torch(tmp_path / "whole.pt", _burn_mlp())
    torch.jit.save(torch.jit.script(_torch_mlp()), str(tmp_path / "scripted.pt"))
    with pytest.raises(burn.RecordError, match="TorchScript archive"):
        load_torch(tmp_path / "scripted.pt", _burn_mlp())


def test_readme_example_runs_as_written(tmp_path):
    readme = (Path(__file__).resolve().parents[4] / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Load pretrained PyTorch weights")
    match = re.compile(r"```python\n(.*?)```", re.S).search(readme, start)
    assert match is not None
    (tmp_path / "snippet.py").write_text(match.group(1), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "max difference" in proc.stdout
