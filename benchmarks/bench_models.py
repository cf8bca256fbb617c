"""Real models, one training step each: burn against PyTorch eager and ``torch.compile`` in one run, from
the same initial weights (copied through numpy) on the same batch; prints one JSON object.

Models (``--models``, defined in ``_model_zoo``): ``gpt`` (GPT-2-style decoder, 6x768, seq 256, batch 16),
``gpt12`` (12 layers), ``resnet18``, ``resnet50`` and ``resnet50_b64`` (224x224, batch 32 / 64, BatchNorm in
training mode), ``vit`` (ViT-B/16-style, batch 32) and ``bert`` (BERT-base-style encoder fine-tuned for
2 classes, seq 128, batch 32).
Both frameworks run the model as their users would write it (PyTorch: ``F.scaled_dot_product_attention``
with ``is_causal=True``; burn: ``F.scaled_dot_product_attention``), AdamW (lr 3e-4, eps 1e-8, weight decay
0.01), fp32 (``--precision tf32`` lets both use TF32 matmuls and convolutions: burn-cuda through
``burn_cuda.set_matmul_precision``, PyTorch through ``allow_tf32``; ``--precision bf16`` runs the forward and
loss under ``burn.amp.autocast("bfloat16")`` and ``torch.autocast(dtype=torch.bfloat16)``, the loss in fp32).

Per model and framework: milliseconds per step (median of ``--steps`` synchronised steps after
``--warmup``), images or tokens per second, peak device memory and the first and last loss (the same
weights and batch: they must agree). Memory: PyTorch's ``max_memory_allocated`` and the driver's growth
(``cudaMemGetInfo`` before building the model and at the peak); burn's peak allocated and reserved (on cuda
the CuPy pool with its CUDA-graph pools, through ``burn.memory_stats``) and the same driver growth.

    python benchmarks/bench_models.py [--models gpt,resnet18] [--backends cuda] [--peers eager,compile]
        [--precision fp32|tf32|bf16] [--steps 20] [--warmup 5] [--tiny] [--out results.json]

Kernels are tuned before their first use (``BURN_AUTOTUNE_BLOCKING=1`` unless ``--background-tuning``),
so the timed steps are the steady state; a cold start is measured separately.

``--tiny`` shrinks every model (for a CPU check of the script: ``--backends cpu --peers eager``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from _common import emit_json, fusion_costs
from _model_zoo import (
    SIZES,
    TINY,
    burn_training_step,
    torch_model,
    torch_state_for_burn,
    torch_training_step,
    units,
)


# ---------------------------------------------------------------------------------------------- runs
@dataclass
class Result:
    ms_per_step: float
    per_second: float
    first_loss: float
    last_loss: float
    memory: dict[str, Any]
    setup_s: float
    fusion: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ms_per_step": round(self.ms_per_step, 3),
            "per_second": round(self.per_second, 1),
            "first_loss": round(self.first_loss, 5),
            "last_loss": round(self.last_loss, 5),
            "memory": self.memory,
            "setup_s": round(self.setup_s, 2),
            **({"fusion": self.fusion} if self.fusion else {}),
        }


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
        elif i == args.warmup - 1:  # burn's kernels met in the warm-up tune now: the timed steps run winners
            from burn import autotune

            autotune.wait()
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
    step = torch_training_step(model, name, size, torch, device, args.precision == "bf16")

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
    result = Result(ms, units(name, size) / (ms / 1e3), first, last, memory, setup)
    return result, state


def run_burn(
    name: str, size: Any, backend: str, state: dict[str, np.ndarray], args: argparse.Namespace
) -> Result:
    import burn

    dev = burn.device(backend, autodiff=True)
    cuda = backend.startswith("cuda")
    burn.empty_cache(dev)
    burn.reset_peak_memory_stats(dev)
    before = _driver_used() if cuda else None
    t0 = time.perf_counter()
    step, holder = burn_training_step(name, size, dev, state, args.precision == "bf16")
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
    result = Result(ms, units(name, size) / (ms / 1e3), first, last, memory, setup, fusion_costs(dev))
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
    ap.add_argument("--precision", choices=("fp32", "tf32", "bf16"), default="fp32")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument(
        "--background-tuning",
        action="store_true",
        help="tune in the background as in training (default: BURN_AUTOTUNE_BLOCKING=1, steady-state steps)",
    )
    ap.add_argument("--tiny", action="store_true", help="small sizes, to check the script on a CPU")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    if not args.background_tuning:  # steady-state steps: every kernel tuned before its first use
        os.environ.setdefault("BURN_AUTOTUNE_BLOCKING", "1")
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
