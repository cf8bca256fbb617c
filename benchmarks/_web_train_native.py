"""``bench_web_train.py --native``: no browser and no npm. Per model, the exported trainer's schedule
replayed natively through wgpu-py (``burn_wgpu.web.NativeTrainer``: the page's buffers, dispatches and
one submission per step, on this machine's adapter) beside burn-wgpu's own training step (the same
model, initial weights, batches and Adam through burn on the wgpu device, autodiff and fusion on) and,
where a CUDA GPU and torch are there, PyTorch CUDA eager (the same architecture, its own initial
weights, Adam with burn's epsilon).

Each engine: one first step (timed apart: compiles), ``warmup`` more, then ``steps`` steps that read the
loss back (``read``: median and min ms) and ``blocks`` blocks of ``block`` steps that read only the
last loss (``pipelined``: ms per step, median over blocks). Engines alternate step by step (read) and
block by block (pipelined), so on a shared host they see the same load. Ratios are native / other
(below 1: the page's schedule is faster)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Step = Callable[[dict[str, Any], bool], "float | None"]


def native_engine(folder: Path, lr: float) -> tuple[Step, dict[str, Any]]:
    import burn_wgpu.web

    trainer = burn_wgpu.web.NativeTrainer(folder)

    def step(batch: dict[str, Any], read: bool) -> float | None:
        out = trainer.step(batch, lr=lr, read=read)
        return None if out is None else out["loss"]

    return step, {"adapter": trainer.adapter}


def burn_wgpu_engine(model: Any, step_fn: Any, lr: float) -> tuple[Step, dict[str, Any]]:
    import burn

    dev = burn.device("wgpu", autodiff=True, fusion=True)
    state = {"model": model.to(dev)}
    opt = burn.optim.AdamConfig().init()
    cache: dict[int, tuple[Any, Any]] = {}

    def step(batch: dict[str, Any], read: bool) -> float | None:
        key = id(batch)
        if key not in cache:  # batches uploaded once, as the page's are written once per step
            cache[key] = (burn.tensor(batch["x"], device=dev), burn.tensor(batch["y"], device=dev))
        x, y = cache[key]
        loss = step_fn(state["model"], x, y)
        state["model"] = opt.step(lr, state["model"], loss.backward())
        return float(loss.item()) if read else None

    return step, {"device": "wgpu", "fusion": True}


def torch_cuda_engine(name: str, lr: float, classes: int) -> tuple[Step | None, dict[str, Any]]:
    """PyTorch CUDA eager, or (None, why not)."""
    try:
        import torch
    except ImportError:
        return None, {"skipped": "torch is not installed"}
    if not torch.cuda.is_available():
        return None, {"skipped": f"torch {torch.__version__}: no CUDA device"}
    nn = torch.nn
    torch.manual_seed(0)
    if name == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, classes))
    else:
        model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(128, classes),
        )  # fmt: skip
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-5)  # burn.optim.AdamConfig's epsilon
    cache: dict[int, tuple[Any, Any]] = {}

    def step(batch: dict[str, Any], read: bool) -> float | None:
        key = id(batch)
        if key not in cache:
            x = torch.from_numpy(batch["x"]).cuda()
            cache[key] = (x, torch.from_numpy(batch["y"]).long().cuda())
        x, y = cache[key]
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if read:
            return float(loss.item())
        return None

    return step, {"device": torch.cuda.get_device_name(), "torch": torch.__version__}


def run_engines(
    engines: dict[str, Step], batches: list[dict[str, Any]], steps: int, warmup: int, block: int, blocks: int
) -> dict[str, dict[str, Any]]:
    """The figures of each engine, alternated as the module's docstring says."""
    out: dict[str, dict[str, Any]] = {}
    k = 0
    for name, step in engines.items():
        s = time.perf_counter()
        loss = step(batches[0], True)
        out[name] = {"first_step_ms": (time.perf_counter() - s) * 1e3, "losses": [loss], "times": []}
    for _ in range(warmup):
        k += 1
        for step in engines.values():
            step(batches[k % len(batches)], True)
    try:
        from burn import autotune

        autotune.wait()  # burn-wgpu's kernels tuned before the clock starts
    except (ImportError, AttributeError):
        pass
    names = list(engines)
    for i in range(steps):
        k += 1
        for name in names if i % 2 == 0 else names[::-1]:
            s = time.perf_counter()
            out[name]["losses"].append(engines[name](batches[k % len(batches)], True))
            out[name]["times"].append((time.perf_counter() - s) * 1e3)
    per_block: dict[str, list[float]] = {n: [] for n in names}
    for b in range(blocks):
        for name in names if b % 2 == 0 else names[::-1]:
            s = time.perf_counter()
            loss = None
            for i in range(block):
                loss = engines[name](batches[(k + i) % len(batches)], i == block - 1)
            per_block[name].append((time.perf_counter() - s) * 1e3 / block)
            out[name]["losses"].append(loss)
        k += block
    for name in names:
        o = out[name]
        times, losses = o.pop("times"), o.pop("losses")
        o["read"] = {"median_ms": statistics.median(times), "min_ms": min(times)}
        o["pipelined"] = {"ms_per_step": statistics.median(per_block[name]), "block": block, "blocks": blocks}
        o["loss_first"], o["loss_last"] = losses[0], losses[-1]
    return out


def bench_native_model(bench: Any, name: str, args: Any, work: Path) -> dict[str, Any]:
    """One model's row: export, then the native replay, burn-wgpu and (where it runs) PyTorch CUDA."""
    batches = bench.digits_batches(args.batch_size)
    row: dict[str, Any] = {"model": name, "batch_size": args.batch_size}
    row["burn_export"] = bench.export_burn(name, batches[0], args.lr, work / name)
    native, native_info = native_engine(work / name, args.lr)
    model, step_fn = bench.burn_model(name)  # the exported model's initial weights (seeded)
    ours, ours_info = burn_wgpu_engine(model, step_fn, args.lr)
    torch_step, torch_info = torch_cuda_engine(name, args.lr, bench.CLASSES)
    engines: dict[str, Step] = {"native": native, "burn_wgpu": ours}
    if torch_step is not None:
        engines["torch_cuda"] = torch_step
    figures = run_engines(engines, batches, args.steps, args.warmup, args.block, args.blocks)
    figures["native"].update(native_info)
    figures["burn_wgpu"].update(ours_info)
    figures.setdefault("torch_cuda", {}).update(torch_info)
    row.update({k: bench._round(v) for k, v in figures.items()})
    for other in ("burn_wgpu", "torch_cuda"):
        if "read" in row[other]:
            row[f"ratio_native_over_{other}"] = {
                "read_median": bench._ratio(
                    row["native"]["read"]["median_ms"], row[other]["read"]["median_ms"]
                ),
                "pipelined": bench._ratio(
                    row["native"]["pipelined"]["ms_per_step"], row[other]["pipelined"]["ms_per_step"]
                ),
            }
    return row
