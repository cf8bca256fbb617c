"""Fusion on the GPU backends: a training step with fusion off and on, against PyTorch eager CUDA, in one
run; prints one JSON object.

For each available GPU backend (cuda, wgpu) and each model of bench_cuda (the MLP 784-1024-1024-10,
batch 256, and the small CNN, batch 64; Adam, fp32): milliseconds per step, kernels launched, fused
kernels and host syncs per step (``burn.profile``), and where the host time of a fused step goes
(cProfile over a few steps: the share in fusion's own code (recording, planning, replay), in the
backend's launch code, in the rest of burn, and in the driver libraries). Fusion runs twice: planning
every stream (``fusion_on``, replay off), replaying planned streams step by step (``fusion_replay``)
and as device graphs where the runtime captures them (``fusion_graphs``: CUDA graphs; the default).
PyTorch eager on the same GPU (TF32 off) is the peer:
``ratio_vs_torch`` is burn's time over PyTorch's. ``--paired N`` adds N alternating rounds of PyTorch and
burn's default (fused, graphs) step per backend and model, each timed for ``--pair-time`` seconds, and
their median ratio: on a shared, noisy host the two then see the same load.

    python benchmarks/bench_fusion.py [--quick] [--backends cuda,wgpu] [--out results.json]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Any

from _common import emit_json, time_for
from bench_cuda import _burn_models, _data, _part, _torch_step, _torch_step_fn


def _step_fn(
    backend: str, kind: str, fusion: bool, replay: bool = True, graphs: bool = True
) -> tuple[Any, Any, Any]:
    import burn
    from burn.nn import functional as F

    dev = burn.device(backend, autodiff=True, fusion=fusion)
    if fusion:
        fb = dev.backend.inner  # the fusion backend under autodiff
        fb.replay = replay
        fb._capture = getattr(fb.runtime, "capture_program", None) if graphs else None
    burn.seed(0)
    model = _burn_models(dev)[kind]()
    opt = burn.optim.AdamConfig().init()
    x_np, y_np = _data(kind)
    y_np = y_np.astype("int32") if backend == "wgpu" else y_np
    x, y = burn.from_numpy(x_np, device=dev), burn.from_numpy(y_np, device=dev)
    state: dict[str, Any] = {"model": model}

    def step() -> None:
        loss = F.cross_entropy(state["model"](x), y)
        state["model"] = opt.step(1e-3, state["model"], loss.backward())
        state["loss"] = loss

    return dev, step, state


def profiled(step: Any, sync: Any, steps: int) -> dict[Any, Any]:
    """cProfile's statistics of ``steps`` calls of ``step`` (the device synced at the end): by
    (path, line, name), (primitive calls, calls, own time, cumulative time, callers)."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    sync()
    prof.disable()
    return pstats.Stats(prof).stats  # type: ignore[attr-defined]  # documented, not typed


def _host_shares(step: Any, sync: Any, steps: int) -> dict[str, float]:
    """Shares of host time (cProfile's own time per function) by where the function lives."""
    totals = {"fusion": 0.0, "backend_launch": 0.0, "burn_other": 0.0, "driver_and_rest": 0.0}
    stats = profiled(step, sync, steps)
    for (path, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.items():
        if "/burn/fusion/" in path:
            totals["fusion"] += tottime
        elif "/burn_cuda/" in path or "/burn_wgpu/" in path:
            totals["backend_launch"] += tottime
        elif "/burn/" in path or "/burn_autodiff/" in path:
            totals["burn_other"] += tottime
        else:
            totals["driver_and_rest"] += tottime
    whole = sum(totals.values()) or 1.0
    return {k: round(v / whole, 3) for k, v in totals.items()}


def bench_backend(backend: str, kind: str, quick: bool) -> dict[str, Any]:
    import burn

    min_time = 0.5 if quick else 2.0
    row: dict[str, Any] = {}
    for label, fusion, replay, graphs in (
        ("fusion_off", False, False, False),
        ("fusion_on", True, False, False),
        ("fusion_replay", True, True, False),
        ("fusion_graphs", True, True, True),
    ):
        dev, step, state = _step_fn(backend, kind, fusion, replay, graphs)
        sync = dev.backend.sync
        step()
        first = float(state["loss"].item())
        secs = time_for(step, sync, min_time)
        fb = dev.backend.inner if fusion else None
        before = dict(fb.stats) if fb else {}
        with burn.profile(dev) as p:
            step()
            sync()
        entry: dict[str, Any] = {
            "ms_per_step": round(secs * 1e3, 3),
            "kernels_per_step": p.kernels,
            "fused_per_step": p.fused,
            "syncs_per_step": p.syncs,
            "first_loss": round(first, 4),
            "last_loss": round(float(state["loss"].item()), 4),
        }
        if fb:
            entry["streams_per_step"] = fb.stats["flushes"] - before["flushes"]
            entry["replayed_per_step"] = fb.stats["replays"] - before["replays"]
            entry["graph_launches_per_step"] = fb.stats["graph_launches"] - before["graph_launches"]
            entry["host_time_shares"] = _host_shares(step, sync, 3 if quick else 10)
        row[label] = entry
    return row


def paired(backend: str, kind: str, rounds: int, min_time: float) -> dict[str, Any]:
    """Alternating rounds of PyTorch eager and burn's default step (fusion, replay, graphs): per-round
    milliseconds and the median of the per-round ratios."""
    import statistics

    import torch

    dev, step, _state = _step_fn(backend, kind, fusion=True)
    t_step, _t_state = _torch_step_fn(kind)
    for _ in range(5):  # plan, replay, capture: warm before the first round
        step()
        t_step()
    burn_ms, torch_ms = [], []
    for _ in range(rounds):
        torch_ms.append(time_for(t_step, torch.cuda.synchronize, min_time) * 1e3)
        burn_ms.append(time_for(step, dev.backend.sync, min_time) * 1e3)
    ratios = [b / t for b, t in zip(burn_ms, torch_ms)]
    return {
        "burn_ms": [round(v, 3) for v in burn_ms],
        "torch_ms": [round(v, 3) for v in torch_ms],
        "median_ratio_vs_torch": round(statistics.median(ratios), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timings")
    parser.add_argument("--backends", default="cuda,wgpu", help="comma-separated GPU backends to run")
    parser.add_argument("--paired", type=int, default=0, help="alternating burn/PyTorch rounds (0: none)")
    parser.add_argument("--pair-time", type=float, default=0.5, help="seconds per paired measurement")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    start = time.perf_counter()
    import burn

    available = {i.name: i for i in burn.backends()}
    result: dict[str, Any] = {"benchmark": "bench_fusion", "burn": burn.__version__}
    torch_ms: dict[str, Any] = {}
    for kind in ("mlp", "cnn"):
        torch_ms[kind] = _part(lambda kind=kind: _torch_step(kind, 0.5 if args.quick else 2.0))
    result["torch_cuda_eager"] = torch_ms
    for backend in args.backends.split(","):
        info = available.get(backend)
        if info is None or not info.available:
            result[backend] = {"skipped": info.reason if info else "not installed"}
            continue
        per: dict[str, Any] = {}
        for kind in ("mlp", "cnn"):
            row = _part(lambda kind=kind, backend=backend: bench_backend(backend, kind, args.quick))
            t = torch_ms[kind].get("ms_per_step")
            for label in ("fusion_off", "fusion_on", "fusion_replay", "fusion_graphs"):
                if t and label in row:
                    row[label]["ratio_vs_torch"] = round(row[label]["ms_per_step"] / t, 2)
            if args.paired:
                row["paired"] = _part(
                    lambda kind=kind, backend=backend: paired(backend, kind, args.paired, args.pair_time)
                )
            per[kind] = row
        result[backend] = per
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
