"""Hugging Face ``transformers`` checkpoints (``save_pretrained``'s model.safetensors of tiny random
BERT and GPT-2 configs, nothing downloaded) loaded into burn modules built from ``burn.nn`` parts with
``load_torch`` and a ``key_map``: outputs match the transformers model within 1e-5 (float32).
Skipped without torch and transformers.

* BERT: embeddings (word + position + token type, LayerNorm), ``nn.TransformerEncoder`` (post-norm, erf
  GELU: BERT's own layer) and the tanh pooler. Hugging Face's names map onto PyTorch's
  ``nn.TransformerEncoderLayer`` names, which ``load_torch`` converts.
* GPT-2: pre-norm blocks of ``nn.MultiHeadAttention`` (causal) and a tanh-GELU MLP. GPT-2's ``Conv1D``
  stores its weight (in, out), burn's layout already, where ``load_torch`` expects a Linear's (out, in):
  those weights are transposed before loading, and the packed ``c_attn`` goes in as ``in_proj_weight``,
  which ``load_torch`` splits into query, key and value.
"""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F
from burn.record import load_torch

torch = pytest.importorskip("torch")
T = pytest.importorskip("transformers")
st_numpy = pytest.importorskip("safetensors.numpy")
TOL = 1e-5
D, HEADS, FF, VOCAB, POSITIONS = 32, 4, 37, 99, 32


def _tokens() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCAB, (2, 7))
    mask = np.ones((2, 7), np.int64)
    mask[1, 5:] = 0
    return ids, mask


# -------------------------------------------------------------------- BERT
class BurnBert(nn.Module):
    def __init__(self, layers: int) -> None:
        self.word = nn.EmbeddingConfig(VOCAB, D).init()
        self.position = nn.EmbeddingConfig(POSITIONS, D).init()
        self.token_type = nn.EmbeddingConfig(2, D).init()
        self.norm = nn.LayerNormConfig(D, epsilon=1e-12).init()
        self.encoder = nn.TransformerEncoderConfig(
            D, FF, HEADS, layers, dropout=0.0, layer_norm_eps=1e-12
        ).init()
        self.pooler = nn.LinearConfig(D, D).init()

    def forward(
        self, ids: burn.Tensor, types: burn.Tensor, pad: burn.Tensor
    ) -> tuple[burn.Tensor, burn.Tensor]:
        positions = burn.arange(ids.shape[1]).reshape(1, -1)
        x = self.norm(self.word(ids) + self.position(positions) + self.token_type(types))
        h = self.encoder(x, mask_pad=pad)
        return h, self.pooler(h[:, 0]).tanh()


BERT_KEY_MAP = [
    (r"^embeddings\.word_embeddings\.", "word."),
    (r"^embeddings\.position_embeddings\.", "position."),
    (r"^embeddings\.token_type_embeddings\.", "token_type."),
    (r"^embeddings\.LayerNorm\.", "norm."),
    (r"^encoder\.layer\.(\d+)\.", r"encoder.layers.\1."),
    (r"attention\.self\.", "self_attn."),
    (r"attention\.output\.dense\.", "self_attn.out_proj."),
    (r"attention\.output\.LayerNorm\.", "norm1."),
    (r"intermediate\.dense\.", "linear1."),
    (r"output\.dense\.", "linear2."),
    (r"output\.LayerNorm\.", "norm2."),
    (r"^pooler\.dense\.", "pooler."),
]


def test_bert_from_save_pretrained(tmp_path):
    torch.manual_seed(0)
    config = T.BertConfig(
        vocab_size=VOCAB,
        hidden_size=D,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        intermediate_size=FF,
        max_position_embeddings=POSITIONS,
        initializer_range=0.2,  # larger weights than the default 0.02: outputs of order 1
    )
    tm = T.BertModel(config).eval()
    tm.save_pretrained(tmp_path)
    bm = BurnBert(layers=2)
    report = load_torch(tmp_path / "model.safetensors", bm, key_map=BERT_KEY_MAP)
    assert report.ok and not report.unused and not report.missing
    ids, mask = _tokens()
    types = (np.arange(7) >= 4).astype(np.int64)[None].repeat(2, 0)
    with torch.no_grad():
        want = tm(torch.tensor(ids), torch.tensor(mask), torch.tensor(types))
    hidden, pooled = bm(burn.tensor(ids), burn.tensor(types), burn.tensor(mask == 0))
    assert np.abs(want.pooler_output.numpy()).max() > 0.5
    np.testing.assert_allclose(hidden.numpy(), want.last_hidden_state.numpy(), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(pooled.numpy(), want.pooler_output.numpy(), rtol=TOL, atol=TOL)


# -------------------------------------------------------------------- GPT-2
class BurnGpt2Block(nn.Module):
    def __init__(self) -> None:
        self.ln_1 = nn.LayerNormConfig(D).init()
        self.attn = nn.MultiHeadAttentionConfig(D, HEADS, dropout=0.0).init()
        self.ln_2 = nn.LayerNormConfig(D).init()
        self.fc = nn.LinearConfig(D, 4 * D).init()
        self.proj = nn.LinearConfig(4 * D, D).init()

    def forward(self, x: burn.Tensor, pad: burn.Tensor) -> burn.Tensor:
        x = x + self.attn(self.ln_1(x), mask_pad=pad, causal=True, need_weights=False).context
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class BurnGpt2(nn.Module):
    def __init__(self, layers: int) -> None:
        self.wte = nn.EmbeddingConfig(VOCAB, D).init()
        self.wpe = nn.EmbeddingConfig(POSITIONS, D).init()
        self.blocks = [BurnGpt2Block() for _ in range(layers)]
        self.ln_f = nn.LayerNormConfig(D).init()

    def forward(self, ids: burn.Tensor, pad: burn.Tensor) -> burn.Tensor:
        x = self.wte(ids) + self.wpe(burn.arange(ids.shape[1]).reshape(1, -1))
        for block in self.blocks:
            x = block(x, pad)
        return self.ln_f(x) @ self.wte.weight.val().transpose(0, 1)  # the LM head is tied to wte


GPT2_KEY_MAP = [
    (r"^(transformer\.)?h\.(\d+)\.", r"blocks.\2."),
    (r"attn\.c_attn\.weight$", "attn.in_proj_weight"),
    (r"attn\.c_attn\.bias$", "attn.in_proj_bias"),
    (r"attn\.c_proj\.", "attn.out_proj."),
    (r"mlp\.c_fc\.", "fc."),
    (r"mlp\.c_proj\.", "proj."),
    (r"^(transformer\.)?", ""),
]
CONV1D = ("c_attn.weight", "c_proj.weight", "c_fc.weight")


def test_gpt2_from_save_pretrained(tmp_path):
    torch.manual_seed(1)
    config = T.GPT2Config(
        vocab_size=VOCAB, n_positions=POSITIONS, n_embd=D, n_layer=2, n_head=HEADS, initializer_range=0.2
    )
    tm = T.GPT2LMHeadModel(config).eval()
    tm.save_pretrained(tmp_path)
    saved = st_numpy.load_file(str(tmp_path / "model.safetensors"))
    assert saved["transformer.h.0.attn.c_attn.weight"].shape == (D, 3 * D)  # Conv1D: (in, out)
    state = {k: (v.T if k.endswith(CONV1D) else v) for k, v in saved.items()}
    bm = BurnGpt2(layers=2)
    report = load_torch(state, bm, key_map=GPT2_KEY_MAP)
    assert report.ok and not report.unused and not report.missing
    ids, mask = _tokens()
    with torch.no_grad():
        want = tm(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    got = bm(burn.tensor(ids), burn.tensor(mask == 0)).numpy()
    keep = mask.astype(bool)  # a padded query's output is left undefined by both
    assert np.abs(want).max() > 1.0  # logits of order 1, so atol 1e-5 tells
    np.testing.assert_allclose(got[keep], want[keep], rtol=TOL, atol=TOL)
