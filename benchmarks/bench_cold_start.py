"""Cold start: how long a fresh process takes to its first training step, then steps 2-5 and the steady
step, for burn with an empty and with a warm tuning cache, beside PyTorch eager and ``torch.compile``
(a fresh inductor cache) on the same device in the same run; prints one JSON object.

Each figure comes from its own fresh process (``--child``), timed from the process start: imports,
building the model from the same weights (``_model_zoo``), the first step (synchronised), steps 2-5 one
by one, and the median of ``--steps`` steady steps after them (burn's process loads the initial weights
from a file the parent wrote: it never imports PyTorch). burn "cold" runs with an empty
``BURN_CACHE_DIR`` (tuning and compiling from scratch, tuning in the background as in training); burn
"warm" runs again over the cache the cold run left; its fusion costs (planning and graph-capture
seconds) are reported apart, and so are the seconds spent tuning and waiting for kernel compiles. To see
what a driver's own on-disk shader cache saves, run with ``MESA_SHADER_CACHE_DISABLE=true`` (lavapipe)
or ``__GL_SHADER_DISK_CACHE=0`` (NVIDIA) beside a run without. Ratios: burn's first step against PyTorch
eager's and torch.compile's.

    python benchmarks/bench_cold_start.py [--models gpt,resnet18] [--backend cuda|wgpu|cpu]
        [--peers eager,compile] [--steps 10] [--tiny] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

START = time.perf_counter()


def _child(args: argparse.Namespace) -> dict[str, Any]:
    from _model_zoo import SIZES, TINY, burn_training_step, torch_model, torch_training_step

    size = (TINY if args.tiny else SIZES)[args.model]
    if args.framework == "burn":  # the weights the parent saved: burn's process never imports PyTorch
        import burn
        import numpy as np

        with np.load(args.weights) as saved:
            state = {k: saved[k] for k in saved.files}
        dev = burn.device(args.backend, autodiff=True)
        step, _ = burn_training_step(args.model, size, dev, state)
        sync = dev.backend.sync
    else:
        import torch

        device = torch.device("cuda" if args.backend.startswith("cuda") else "cpu")
        torch.manual_seed(0)  # the weights the parent saved for burn
        tmodel = torch_model(args.model, size, torch).to(device).train()
        step = torch_training_step(tmodel, args.model, size, torch, device)
        if args.framework == "compile":
            step = torch.compile(step)

        def sync() -> None:
            if device.type == "cuda":
                torch.cuda.synchronize()

    ready = time.perf_counter() - START  # imports, weights and model built
    times = []
    for _ in range(5 + args.steps):
        t0 = time.perf_counter()
        loss = step()
        sync()
        times.append(time.perf_counter() - t0)
    out: dict[str, Any] = {
        "first_step_s": round(times[0], 3),
        "setup_s": round(ready, 3),
        "first_step_from_start_s": round(ready + times[0], 3),
        "steps_2_5_s": [round(t, 3) for t in times[1:5]],
        "steady_ms": round(statistics.median(times[5:]) * 1e3, 3),
        "last_loss": round(float(loss.item()), 5),
    }
    if args.framework == "burn":
        from _common import fusion_costs

        costs = fusion_costs(dev)
        if costs:
            out["fusion"] = costs
        from burn import autotune

        out["tuning_pending_after"] = autotune.pending()
        out["tune_s"] = round(autotune.seconds(), 3)  # host seconds spent tuning, all steps
        out["compile_wait_s"] = round(autotune.compile_seconds(), 3)  # the caller's waits for compiles
    return out


def _save_weights(model: str, args: argparse.Namespace, path: str) -> None:
    """PyTorch's initial weights (seed 0) in burn's names, for burn's child process."""
    import numpy as np
    import torch
    from _model_zoo import SIZES, TINY, torch_model, torch_state_for_burn

    torch.manual_seed(0)
    size = (TINY if args.tiny else SIZES)[model]
    np.savez(path, **torch_state_for_burn(torch_model(model, size, torch)))


def _run_child(args: argparse.Namespace, model: str, framework: str, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", "--model", model, "--framework", framework]
    cmd += ["--weights", args.weights]
    cmd += ["--backend", args.backend, "--steps", str(args.steps)] + (["--tiny"] if args.tiny else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).parent)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {
            "error": (proc.stderr or proc.stdout).strip().splitlines()[-1][:300] if proc.stderr else "failed"
        }
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = round(wall, 3)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="gpt,resnet18")
    ap.add_argument(
        "--backend", default="cuda", help="burn's device (cuda, wgpu, cpu); PyTorch runs on cuda or cpu"
    )
    ap.add_argument("--peers", default="eager,compile")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--tiny", action="store_true", help="small models, to check the script on a CPU")
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--framework", help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args)))
        return
    from _common import emit_json

    report: dict[str, Any] = {"benchmark": "bench_cold_start", "backend": args.backend, "models": {}}
    for model in args.models.split(","):
        entry: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as inductor:
            args.weights = str(Path(cache) / "weights.npz")
            _save_weights(model, args, args.weights)
            env = dict(os.environ, BURN_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=inductor)
            env.pop("BURN_AUTOTUNE_BLOCKING", None)  # training's default: tuning in the background
            entry["burn_cold"] = _run_child(args, model, "burn", env)
            entry["burn_warm"] = _run_child(args, model, "burn", env)
            for peer in args.peers.split(","):
                if peer:
                    entry[f"torch_{peer}"] = _run_child(
                        args, model, peer if peer == "compile" else "eager", env
                    )
        for peer in [k for k in entry if k.startswith("torch_")]:
            theirs = entry[peer].get("first_step_from_start_s")
            for run in ("burn_cold", "burn_warm"):
                mine = entry[run].get("first_step_from_start_s")
                if mine and theirs:
                    entry[run][f"first_step_vs_{peer}"] = round(mine / theirs, 2)
        report["models"][model] = entry
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
