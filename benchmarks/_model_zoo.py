"""The models of ``bench_models.py``, written once for PyTorch and once for burn as their users would,
with PyTorch's state dict mapped to burn's names so both start from the same weights.

- ``gpt`` / ``gpt12``: a GPT-2-style decoder (pre-norm blocks, causal attention, GELU MLP 4x, head tied
  to the token embedding), 6 or 12 layers of d 768, vocab 8192, seq 256, batch 16; next-token loss.
- ``resnet18`` / ``resnet50`` (``resnet50_b64``: batch 64): ResNet at 224x224, batch 32, 1000 classes,
  BatchNorm in training mode (basic blocks for 18, bottlenecks for 50).
- ``vit``: a ViT-B/16-style encoder at 224x224 (16x16 patches by a strided conv, a class token and
  learned positions, 12 pre-norm blocks of d 768), batch 32, 1000 classes.
- ``bert``: a BERT-base-style encoder fine-tuned for 2-class sequence classification (token and position
  embeddings with a layer norm, 12 post-norm blocks of d 768, vocab 30522), seq 128, batch 32.

A class token and learned positions are embeddings of fixed indices on both sides (``nn.Embedding``), so
the state dicts map one to one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GptSize:
    vocab: int = 8192
    seq: int = 256
    d: int = 768
    heads: int = 12
    layers: int = 6
    batch: int = 16


@dataclass(frozen=True)
class ResNetSize:
    image: int = 224
    batch: int = 32
    classes: int = 1000
    width: int = 64
    depth: int = 18


@dataclass(frozen=True)
class EncoderSize:
    kind: str = "vit"  # "vit": image patches, pre-norm; "bert": tokens, post-norm
    d: int = 768
    heads: int = 12
    layers: int = 12
    batch: int = 32
    image: int = 224
    patch: int = 16
    vocab: int = 30522
    seq: int = 128
    classes: int = 1000


SIZES: dict[str, Any] = {
    "gpt": GptSize(),
    "gpt12": GptSize(layers=12),
    "resnet18": ResNetSize(),
    "resnet50": ResNetSize(depth=50),
    "resnet50_b64": ResNetSize(depth=50, batch=64),
    "vit": EncoderSize(),
    "bert": EncoderSize(kind="bert", classes=2),
}
TINY: dict[str, Any] = {
    "gpt": GptSize(vocab=97, seq=16, d=32, heads=4, layers=2, batch=2),
    "gpt12": GptSize(vocab=97, seq=16, d=32, heads=4, layers=3, batch=2),
    "resnet18": ResNetSize(image=32, batch=2, classes=10, width=8),
    "resnet50": ResNetSize(image=64, batch=4, classes=10, width=8, depth=50),
    "resnet50_b64": ResNetSize(image=32, batch=3, classes=10, width=8, depth=50),
    "vit": EncoderSize(d=32, heads=4, layers=2, batch=2, image=32, patch=8, classes=10),
    "bert": EncoderSize(kind="bert", d=32, heads=4, layers=2, batch=2, vocab=101, seq=16, classes=2),
}
_BLOCKS = {18: ("basic", (2, 2, 2, 2)), 50: ("bottleneck", (3, 4, 6, 3))}


def batch(name: str, size: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One batch of inputs and integer targets for ``name``."""
    rng = np.random.default_rng(seed)
    if name.startswith("gpt"):
        tokens = rng.integers(0, size.vocab, (size.batch, size.seq + 1))
        return tokens[:, :-1].astype(np.int64), tokens[:, 1:].astype(np.int64)
    targets = rng.integers(0, size.classes, size.batch).astype(np.int64)
    if name == "bert":
        return rng.integers(0, size.vocab, (size.batch, size.seq)).astype(np.int64), targets
    return rng.standard_normal((size.batch, 3, size.image, size.image)).astype(np.float32), targets


def units(name: str, size: Any) -> int:
    """Tokens (language models) or images per step."""
    if name.startswith("gpt") or name == "bert":
        return size.batch * size.seq
    return size.batch


def _resnet_plan(size: Any) -> list[tuple[int, int, int]]:
    """(c_in, c_out, stride) per block; c_out is the block's output width."""
    kind, counts = _BLOCKS[size.depth]
    grow = 4 if kind == "bottleneck" else 1
    plan, c_in = [], size.width
    for stage, count in enumerate(counts):
        c_out = size.width * 2**stage * grow
        for j in range(count):
            plan.append((c_in, c_out, 2 if stage > 0 and j == 0 else 1))
            c_in = c_out
    return plan


def block_forward(blk: Any, F: Any, x: Any) -> Any:
    """A transformer block's forward, the same code for PyTorch's and burn's modules (``F`` is either
    framework's functional module): pre-norm (GPT, ViT) or post-norm (BERT)."""
    b, s, d = x.shape

    def attend(y: Any) -> Any:
        q, k, v = blk.qkv(y).split(d, 2)
        q, k, v = (t.reshape(b, s, blk.h, d // blk.h).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=blk.causal)
        return blk.proj(a.transpose(1, 2).reshape(b, s, d))

    if blk.pre:
        x = x + attend(blk.ln_1(x))
        return x + blk.out(F.gelu(blk.fc(blk.ln_2(x))))
    x = blk.ln_1(x + attend(x))
    return blk.ln_2(x + blk.out(F.gelu(blk.fc(x))))


# ---------------------------------------------------------------------------------------------- torch
def torch_model(name: str, size: Any, torch: Any) -> Any:
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):  # a transformer block: pre-norm (GPT, ViT) or post-norm (BERT)
        def __init__(self, d: int, h: int, causal: bool, pre: bool) -> None:
            super().__init__()
            self.d, self.h, self.causal, self.pre = d, h, causal, pre
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            return block_forward(self, F, x)

    if name.startswith("gpt"):

        class Gpt(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.wte, self.wpe = nn.Embedding(size.vocab, size.d), nn.Embedding(size.seq, size.d)
                self.blocks = nn.ModuleList(
                    [Block(size.d, size.heads, True, True) for _ in range(size.layers)]
                )
                self.ln_f = nn.LayerNorm(size.d)

            def forward(self, idx: Any) -> Any:
                x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
                for block in self.blocks:
                    x = block(x)
                return self.ln_f(x) @ self.wte.weight.t()  # the head tied to the token embedding

        return Gpt()
    if name in ("vit", "bert"):
        vit = name == "vit"

        class Encoder(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                d, tokens = size.d, (size.image // size.patch) ** 2 + 1 if vit else size.seq
                if vit:
                    self.patch = nn.Conv2d(3, d, size.patch, size.patch)
                    self.cls = nn.Embedding(1, d)
                else:
                    self.tok = nn.Embedding(size.vocab, d)
                    self.ln_e = nn.LayerNorm(d)
                self.pos = nn.Embedding(tokens, d)
                self.blocks = nn.ModuleList([Block(d, size.heads, False, vit) for _ in range(size.layers)])
                self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, size.classes)

            def forward(self, x: Any) -> Any:
                if vit:
                    x = self.patch(x).flatten(2).transpose(1, 2)
                    cls = self.cls.weight.reshape(1, 1, -1).expand(x.shape[0], 1, -1)
                    x = torch.cat([cls, x], 1) + self.pos.weight
                else:
                    x = self.ln_e(self.tok(x) + self.pos.weight)
                for block in self.blocks:
                    x = block(x)
                return self.head(self.ln_f(x[:, 0]))

        return Encoder()

    kind, _ = _BLOCKS[size.depth]

    class Unit(nn.Module):  # a basic block (two 3x3) or a bottleneck (1x1, 3x3, 1x1)
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            mid = c_out // 4 if kind == "bottleneck" else c_out
            shapes = [(c_in, mid, 3, stride), (mid, c_out, 3, 1)]
            if kind == "bottleneck":
                shapes = [(c_in, mid, 1, 1), (mid, mid, 3, stride), (mid, c_out, 1, 1)]
            self.convs = nn.ModuleList([nn.Conv2d(a, b, k, s, k // 2, bias=False) for a, b, k, s in shapes])
            self.bns = nn.ModuleList([nn.BatchNorm2d(b) for _, b, _, _ in shapes])
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = nn.Sequential(
                    nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
                )

        def forward(self, x: Any) -> Any:
            y = x
            for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
                y = bn(conv(y))
                y = F.relu(y) if i < len(self.convs) - 1 else y
            return F.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, size.width, 7, 2, 3, bias=False), nn.BatchNorm2d(size.width)
            plan = _resnet_plan(size)
            self.units = nn.ModuleList([Unit(*p) for p in plan])
            self.fc = nn.Linear(plan[-1][1], size.classes)

        def forward(self, x: Any) -> Any:
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
            for unit in self.units:
                x = unit(x)
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return ResNet()


def torch_state_for_burn(model: Any) -> dict[str, np.ndarray]:
    """PyTorch's state dict in burn's names and layouts (see ``burn.nn.Module.state_dict``): Linear
    weights transposed to (in, out), norm weight/bias as gamma/beta, no num_batches_tracked."""
    import torch

    kinds = {name: type(m) for name, m in model.named_modules()}
    out = {}
    for key, value in model.state_dict().items():
        owner, _, leaf = key.rpartition(".")
        kind = kinds[owner]
        if leaf == "num_batches_tracked":
            continue
        array = value.detach().cpu().numpy().copy()
        if kind is torch.nn.Linear and leaf == "weight":
            array = np.ascontiguousarray(array.T)
        if kind in (torch.nn.LayerNorm, torch.nn.BatchNorm2d) and leaf in ("weight", "bias"):
            leaf = "gamma" if leaf == "weight" else "beta"
        out[f"{owner}.{leaf}" if owner else leaf] = array
    return out


# ---------------------------------------------------------------------------------------------- burn
def burn_model(name: str, size: Any, dev: Any) -> Any:
    import burn
    from burn import nn
    from burn.nn import functional as F

    class Block(nn.Module):
        def __init__(self, d: int, h: int, causal: bool, pre: bool) -> None:
            self.d, self.h, self.causal, self.pre = d, h, causal, pre
            self.ln_1, self.ln_2 = nn.LayerNorm(d, device=dev), nn.LayerNorm(d, device=dev)
            self.qkv, self.proj = nn.Linear(d, 3 * d, device=dev), nn.Linear(d, d, device=dev)
            self.fc, self.out = nn.Linear(d, 4 * d, device=dev), nn.Linear(4 * d, d, device=dev)

        def forward(self, x: Any) -> Any:
            return block_forward(self, F, x)

    if name.startswith("gpt"):

        class Gpt(nn.Module):
            def __init__(self) -> None:
                self.wte = nn.Embedding(size.vocab, size.d, device=dev)
                self.wpe = nn.Embedding(size.seq, size.d, device=dev)
                self.blocks = [Block(size.d, size.heads, True, True) for _ in range(size.layers)]
                self.ln_f = nn.LayerNorm(size.d, device=dev)

            def forward(self, idx: Any) -> Any:
                pos = burn.arange(idx.shape[1], device=idx.device).reshape(1, -1)
                x = self.wte(idx) + self.wpe(pos)
                for block in self.blocks:
                    x = block(x)
                return self.ln_f(x) @ self.wte.weight.val().transpose()

        return Gpt()
    if name in ("vit", "bert"):
        vit = name == "vit"

        class Encoder(nn.Module):
            def __init__(self) -> None:
                d, tokens = size.d, (size.image // size.patch) ** 2 + 1 if vit else size.seq
                if vit:
                    self.patch = nn.Conv2d(3, d, size.patch, stride=size.patch, device=dev)
                    self.cls = nn.Embedding(1, d, device=dev)
                else:
                    self.tok = nn.Embedding(size.vocab, d, device=dev)
                    self.ln_e = nn.LayerNorm(d, device=dev)
                self.pos = nn.Embedding(tokens, d, device=dev)
                self.blocks = [Block(d, size.heads, False, vit) for _ in range(size.layers)]
                self.ln_f, self.head = nn.LayerNorm(d, device=dev), nn.Linear(d, size.classes, device=dev)

            def forward(self, x: Any) -> Any:
                if vit:
                    x = self.patch(x).flatten(2, 3).transpose(1, 2)
                    cls = self.cls.weight.val().reshape(1, 1, -1).expand((x.shape[0], 1, x.shape[2]))
                    x = burn.cat([cls, x], 1) + self.pos.weight.val()
                else:
                    x = self.ln_e(self.tok(x) + self.pos.weight.val())
                for block in self.blocks:
                    x = block(x)
                return self.head(self.ln_f(x[:, 0]))

        return Encoder()

    kind, _ = _BLOCKS[size.depth]

    def conv(c_in: int, c_out: int, k: int, stride: int) -> Any:
        return nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False, device=dev)

    class Unit(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            mid = c_out // 4 if kind == "bottleneck" else c_out
            shapes = [(c_in, mid, 3, stride), (mid, c_out, 3, 1)]
            if kind == "bottleneck":
                shapes = [(c_in, mid, 1, 1), (mid, mid, 3, stride), (mid, c_out, 1, 1)]
            self.convs = [conv(*s) for s in shapes]
            self.bns = [nn.BatchNorm(b, device=dev) for _, b, _, _ in shapes]
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = [conv(c_in, c_out, 1, stride), nn.BatchNorm(c_out, device=dev)]

        def forward(self, x: Any) -> Any:
            y = x
            for i, (c, bn) in enumerate(zip(self.convs, self.bns)):
                y = bn(c(y))
                y = F.relu(y) if i < len(self.convs) - 1 else y
            skip = x if self.downsample is None else self.downsample[1](self.downsample[0](x))
            return F.relu(y + skip)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            self.conv1 = nn.Conv2d(3, size.width, 7, stride=2, padding=3, bias=False, device=dev)
            self.bn1 = nn.BatchNorm(size.width, device=dev)
            plan = _resnet_plan(size)
            self.units = [Unit(*p) for p in plan]
            self.fc = nn.Linear(plan[-1][1], size.classes, device=dev)

        def forward(self, x: Any) -> Any:
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
            for unit in self.units:
                x = unit(x)
            return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).flatten(1, 3))

    return ResNet()


# ---------------------------------------------------------------------------------------------- steps
LR = 3e-4  # AdamW's learning rate (eps 1e-8, weight decay 0.01) in every training step here


def torch_training_step(model: Any, name: str, size: Any, torch: Any, device: Any, bf16: bool = False) -> Any:
    """One AdamW training step of PyTorch ``model`` (already on ``device``) on ``name``'s batch, its
    loss returned; ``bf16``: forward and loss under ``torch.autocast`` (the loss in fp32)."""
    import contextlib

    opt = torch.optim.AdamW(model.parameters(), lr=LR, eps=1e-8, weight_decay=0.01)
    xs, ys = batch(name, size)
    x, y = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)

    def step() -> Any:
        autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with autocast:
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1)
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def burn_training_step(
    name: str, size: Any, dev: Any, state: dict[str, np.ndarray], bf16: bool = False
) -> Any:
    """burn's model of ``name`` on ``dev`` from ``state`` (PyTorch's weights in burn's names) and one
    AdamW training step on its batch, its loss returned; ``bf16``: under ``burn.amp.autocast``."""
    import contextlib

    import burn
    from burn.nn import functional as F

    burn.seed(0)
    model = burn_model(name, size, dev)
    model.load_state_dict(state)
    opt = burn.optim.AdamWConfig(epsilon=1e-8, weight_decay=0.01).init()
    xs, ys = batch(name, size)
    x, y = burn.tensor(xs, device=dev), burn.tensor(ys, device=dev)
    holder = {"model": model}

    def step() -> Any:
        m = holder["model"]
        with burn.amp.autocast("bfloat16") if bf16 else contextlib.nullcontext():
            logits = m(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        holder["model"] = opt.step(LR, m, loss.backward())
        return loss

    return step, holder
