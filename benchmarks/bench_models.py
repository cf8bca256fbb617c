"""Real models, one training step each: burn against PyTorch eager and ``torch.compile`` in one run, from
the same initial weights (copied through numpy) on the same batch; prints one JSON object.

Models (``--models``):
- ``gpt``: a GPT-2-style decoder, 6 layers, d 768, 12 heads, vocab 8192, seq 256, batch 16 (55 M
  parameters): token and position embeddings, pre-norm blocks (causal scaled dot-product attention,
  GELU MLP 4x), a final layer norm and a head tied to the token embedding; next-token cross-entropy.
- ``gpt12``: the same with 12 layers (GPT-2 small's depth and width).
- ``resnet18``: ResNet-18 at 224x224, batch 32, 1000 classes, BatchNorm in training mode.
Both frameworks run the model as their users would write it (PyTorch: ``F.scaled_dot_product_attention``
with ``is_causal=True``; burn: ``F.scaled_dot_product_attention``), AdamW (lr 3e-4, eps 1e-8, weight decay
0.01), fp32 (``--precision tf32`` lets both use TF32 matmuls: burn-cuda through
``burn_cuda.set_matmul_precision``, PyTorch through ``allow_tf32``).

Per model and framework: milliseconds per step (median of ``--steps`` synchronised steps after
``--warmup``), images or tokens per second, peak device memory and the first and last loss (the same
weights and batch: they must agree). Memory: PyTorch's ``max_memory_allocated`` and the driver's growth
(``cudaMemGetInfo`` before building the model and at the peak); burn's peak allocated and reserved (on cuda
the CuPy pool with its CUDA-graph pools, through ``burn.memory_stats``) and the same driver growth.

    python benchmarks/bench_models.py [--models gpt,resnet18] [--backends cuda] [--peers eager,compile]
        [--precision fp32|tf32] [--steps 20] [--warmup 5] [--tiny] [--out results.json]

``--tiny`` shrinks every model (for a CPU check of the script: ``--backends cpu --peers eager``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from _common import emit_json


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


SIZES: dict[str, Any] = {
    "gpt": GptSize(),
    "gpt12": GptSize(layers=12),
    "resnet18": ResNetSize(),
}
TINY: dict[str, Any] = {
    "gpt": GptSize(vocab=97, seq=16, d=32, heads=4, layers=2, batch=2),
    "gpt12": GptSize(vocab=97, seq=16, d=32, heads=4, layers=3, batch=2),
    "resnet18": ResNetSize(image=32, batch=2, classes=10, width=8),
}
LR = 3e-4


# ---------------------------------------------------------------------------------------------- data
def batch(name: str, size: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name.startswith("gpt"):
        tokens = rng.integers(0, size.vocab, (size.batch, size.seq + 1))
        return tokens[:, :-1].astype(np.int64), tokens[:, 1:].astype(np.int64)
    x = rng.standard_normal((size.batch, 3, size.image, size.image)).astype(np.float32)
    return x, rng.integers(0, size.classes, size.batch).astype(np.int64)


# ---------------------------------------------------------------------------------------------- torch
def torch_model(name: str, size: Any, torch: Any) -> Any:
    nn, F = torch.nn, torch.nn.functional
    if name.startswith("gpt"):
        d, h = size.d, size.heads

        class Block(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

            def forward(self, x: Any) -> Any:
                b, s, _ = x.shape
                q, k, v = self.qkv(self.ln_1(x)).split(d, dim=2)
                q, k, v = (t.reshape(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
                return x + self.out(F.gelu(self.fc(self.ln_2(x))))

        class Gpt(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.wte, self.wpe = nn.Embedding(size.vocab, d), nn.Embedding(size.seq, d)
                self.blocks = nn.ModuleList([Block() for _ in range(size.layers)])
                self.ln_f = nn.LayerNorm(d)

            def forward(self, idx: Any) -> Any:
                pos = torch.arange(idx.shape[1], device=idx.device)
                x = self.wte(idx) + self.wpe(pos)
                for block in self.blocks:
                    x = block(x)
                return self.ln_f(x) @ self.wte.weight.t()  # the head tied to the token embedding

        return Gpt()

    w = size.width

    class Basic(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = nn.Sequential(
                    nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
                )

        def forward(self, x: Any) -> Any:
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, w, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(w)
            widths = [w, 2 * w, 4 * w, 8 * w]
            c_in = w
            for i, c in enumerate(widths):
                stride = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", nn.Sequential(Basic(c_in, c, stride), Basic(c, c, 1)))
                c_in = c
            self.fc = nn.Linear(8 * w, size.classes)

        def forward(self, x: Any) -> Any:
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
            for i in range(4):
                x = getattr(self, f"layer{i + 1}")(x)
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

    if name.startswith("gpt"):
        d, h = size.d, size.heads

        class Block(nn.Module):
            def __init__(self) -> None:
                self.ln_1, self.ln_2 = nn.LayerNorm(d, device=dev), nn.LayerNorm(d, device=dev)
                self.qkv, self.proj = nn.Linear(d, 3 * d, device=dev), nn.Linear(d, d, device=dev)
                self.fc, self.out = nn.Linear(d, 4 * d, device=dev), nn.Linear(4 * d, d, device=dev)

            def forward(self, x: Any) -> Any:
                b, s, _ = x.shape
                q, k, v = self.qkv(self.ln_1(x)).split(d, 2)
                q, k, v = (t.reshape(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
                return x + self.out(F.gelu(self.fc(self.ln_2(x))))

        class Gpt(nn.Module):
            def __init__(self) -> None:
                self.wte = nn.Embedding(size.vocab, d, device=dev)
                self.wpe = nn.Embedding(size.seq, d, device=dev)
                self.blocks = [Block() for _ in range(size.layers)]
                self.ln_f = nn.LayerNorm(d, device=dev)

            def forward(self, idx: Any) -> Any:
                pos = burn.arange(idx.shape[1], device=idx.device).reshape(1, -1)
                x = self.wte(idx) + self.wpe(pos)
                for block in self.blocks:
                    x = block(x)
                return self.ln_f(x) @ self.wte.weight.val().transpose()

        return Gpt()

    w = size.width

    def conv(c_in: int, c_out: int, k: int, stride: int, padding: int) -> Any:
        return nn.Conv2d(c_in, c_out, k, stride=stride, padding=padding, bias=False, device=dev)

    class Basic(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            self.conv1, self.bn1 = conv(c_in, c_out, 3, stride, 1), nn.BatchNorm(c_out, device=dev)
            self.conv2, self.bn2 = conv(c_out, c_out, 3, 1, 1), nn.BatchNorm(c_out, device=dev)
            self.downsample = None
            if stride != 1 or c_in != c_out:
                self.downsample = [conv(c_in, c_out, 1, stride, 0), nn.BatchNorm(c_out, device=dev)]

        def forward(self, x: Any) -> Any:
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            skip = x if self.downsample is None else self.downsample[1](self.downsample[0](x))
            return F.relu(y + skip)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            self.conv1, self.bn1 = conv(3, w, 7, 2, 3), nn.BatchNorm(w, device=dev)
            c_in = w
            for i, c in enumerate([w, 2 * w, 4 * w, 8 * w]):
                setattr(self, f"layer{i + 1}", [Basic(c_in, c, 1 if i == 0 else 2), Basic(c, c, 1)])
                c_in = c
            self.fc = nn.Linear(8 * w, size.classes, device=dev)

        def forward(self, x: Any) -> Any:
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
            for i in range(4):
                for block in getattr(self, f"layer{i + 1}"):
                    x = block(x)
            return self.fc(F.adaptive_avg_pool2d(x, (1, 1)).flatten(1, 3))

    return ResNet()


# ---------------------------------------------------------------------------------------------- runs
@dataclass
class Result:
    ms_per_step: float
    per_second: float
    first_loss: float
    last_loss: float
    memory: dict[str, Any]
    setup_s: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "ms_per_step": round(self.ms_per_step, 3),
            "per_second": round(self.per_second, 1),
            "first_loss": round(self.first_loss, 5),
            "last_loss": round(self.last_loss, 5),
            "memory": self.memory,
            "setup_s": round(self.setup_s, 2),
        }


def _units(name: str, size: Any) -> int:
    return size.batch * size.seq if name.startswith("gpt") else size.batch


def _driver_used(torch: Any = None) -> int | None:
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        return int(total - free)
    except Exception:
        if torch is not None and torch.cuda.is_available():
            free, total = torch.cuda.mem_get_info()
            return int(total - free)
        return None


def _timed_steps(
    step: Any, sync: Any, args: argparse.Namespace, driver: Any
) -> tuple[float, float, int | None]:
    """``args.warmup`` then ``args.steps`` synchronised steps: (median ms of the timed ones, the last loss,
    the driver's largest used memory seen after a step, where ``driver`` reads it)."""
    times, loss = [], None
    peak = driver() if driver else None
    for i in range(args.warmup + args.steps):
        sync()
        s0 = time.perf_counter()
        loss = step()
        sync()
        if i >= args.warmup:
            times.append(time.perf_counter() - s0)
        if driver:
            peak = max(peak or 0, driver() or 0)
    return statistics.median(times) * 1e3, float(loss.item()), peak


def run_torch(
    name: str, size: Any, args: argparse.Namespace, compiled: bool
) -> tuple[Result, dict[str, np.ndarray]]:
    import torch

    cuda = torch.cuda.is_available() and "cpu" not in args.backends.split(",")
    device = torch.device("cuda" if cuda else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.manual_seed(0)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    before = _driver_used(torch) if cuda else None
    t0 = time.perf_counter()
    model = torch_model(name, size, torch)
    state = torch_state_for_burn(model)
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, eps=1e-8, weight_decay=0.01)
    xs, ys = batch(name, size)
    x, y = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)
    loss_fn = torch.nn.functional.cross_entropy

    def step() -> Any:
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = torch.compile(step)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    first = float(step().item())
    setup = time.perf_counter() - t0
    ms, last, peak_driver = _timed_steps(step, sync, args, (lambda: _driver_used(torch)) if cuda else None)
    memory: dict[str, Any] = {}
    if cuda:
        memory = {
            "max_memory_allocated": int(torch.cuda.max_memory_allocated()),
            "max_memory_reserved": int(torch.cuda.max_memory_reserved()),
            "driver_growth": None if before is None or peak_driver is None else peak_driver - before,
        }
    result = Result(ms, _units(name, size) / (ms / 1e3), first, last, memory, setup)
    return result, state


def run_burn(
    name: str, size: Any, backend: str, state: dict[str, np.ndarray], args: argparse.Namespace
) -> Result:
    import burn
    from burn.nn import functional as F

    dev = burn.device(backend, autodiff=True)
    cuda = backend.startswith("cuda")
    burn.empty_cache(dev)
    burn.reset_peak_memory_stats(dev)
    before = _driver_used() if cuda else None
    t0 = time.perf_counter()
    burn.seed(0)
    model = burn_model(name, size, dev)
    model.load_state_dict(state)
    opt = burn.optim.AdamWConfig(epsilon=1e-8, weight_decay=0.01).init()
    xs, ys = batch(name, size)
    x = burn.tensor(xs, device=dev)
    y = burn.tensor(ys, device=dev)
    holder = {"model": model}

    def step() -> Any:
        m = holder["model"]
        logits = m(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        holder["model"] = opt.step(LR, m, loss.backward())
        return loss

    sync = dev.backend.sync
    first = float(step().item())
    setup = time.perf_counter() - t0
    ms, last, peak_driver = _timed_steps(step, sync, args, _driver_used if cuda else None)
    stats = burn.memory_stats(dev)
    memory: dict[str, Any] = {
        "peak_allocated": stats.peak_allocated,
        "peak_reserved": stats.peak_reserved,
        "source": stats.source,
        **stats.extra,
    }
    if cuda:
        memory["driver_growth"] = None if before is None or peak_driver is None else peak_driver - before
    result = Result(ms, _units(name, size) / (ms / 1e3), first, last, memory, setup)
    holder.clear()
    burn.empty_cache(dev)
    return result


def _release_torch(torch: Any) -> None:
    """Give PyTorch's cached blocks back to the driver so burn's run starts from the same free memory."""
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="gpt,resnet18", help=f"comma-separated, of {sorted(SIZES)}")
    ap.add_argument("--backends", default="cuda", help="burn backends, comma-separated (cuda, wgpu, cpu)")
    ap.add_argument("--peers", default="eager,compile", help="PyTorch peers: eager, compile")
    ap.add_argument("--precision", choices=("fp32", "tf32"), default="fp32")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="small sizes, to check the script on a CPU")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    if args.precision == "tf32" and "cuda" in args.backends:
        import burn_cuda

        burn_cuda.set_matmul_precision("tf32")
    table = TINY if args.tiny else SIZES
    report: dict[str, Any] = {"benchmark": "bench_models", "precision": args.precision, "models": {}}
    import torch

    report["torch"] = torch.__version__
    for name in args.models.split(","):
        size = table[name]
        entry: dict[str, Any] = {"size": vars(replace(size))}
        eager, state = run_torch(name, size, args, compiled=False)
        peers = {"torch_eager": eager}
        if "compile" in args.peers.split(","):
            try:
                peers["torch_compile"] = run_torch(name, size, args, compiled=True)[0]
            except Exception as exc:  # a missing compiler toolchain: say so, keep the other figures
                entry["torch_compile_error"] = f"{type(exc).__name__}: {exc}"[:300]
        for peer, res in peers.items():
            entry[peer] = res.as_dict()
        _release_torch(torch)
        for backend in args.backends.split(","):
            try:
                res = run_burn(name, size, backend, state, args)
            except Exception as exc:
                entry[f"burn_{backend}_error"] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            figures = res.as_dict()
            for peer, peer_res in peers.items():
                figures[f"step_vs_{peer}"] = round(res.ms_per_step / peer_res.ms_per_step, 3)
                mine, theirs = res.memory.get("driver_growth"), peer_res.memory.get("driver_growth")
                if mine and theirs:
                    figures[f"driver_memory_vs_{peer}"] = round(mine / theirs, 2)
                peak, theirs_peak = (
                    res.memory.get("peak_allocated"),
                    peer_res.memory.get("max_memory_allocated"),
                )
                if peak and theirs_peak:  # burn.memory_stats's peak against PyTorch's max_memory_allocated
                    figures[f"peak_memory_vs_{peer}"] = round(peak / theirs_peak, 2)
            # the same weights and batch: the first loss agrees to float32 rounding; after steps of
            # AdamW (which turns rounding-level gradients into full-size updates) the last loss may drift
            figures["first_loss_diff_vs_torch"] = abs(res.first_loss - eager.first_loss)
            figures["last_loss_diff_vs_torch"] = abs(res.last_loss - eager.last_loss)
            entry[f"burn_{backend}"] = figures
        report["models"][name] = entry
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
