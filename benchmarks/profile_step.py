"""Where a training step's host time goes: cProfile's top functions (own time) of a few fused steps
of bench_fusion's models, for each GPU backend. Prints one JSON object.

    python benchmarks/profile_step.py [--backends cuda,wgpu] [--models mlp,cnn] [--steps 20] [--top 25]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _common import emit_json, time_for
from bench_fusion import _step_fn, profiled


def profile(backend: str, kind: str, steps: int, top: int) -> dict[str, Any]:
    dev, step, _state = _step_fn(backend, kind, fusion=True)
    sync = dev.backend.sync
    secs = time_for(step, sync, 0.5)
    stats = profiled(step, sync, steps)
    rows = sorted(stats.items(), key=lambda kv: -kv[1][2])
    whole = sum(v[2] for v in stats.values()) or 1.0
    out = []
    for (path, line, name), (_cc, calls, tottime, cumtime, _callers) in rows[:top]:
        short = "/".join(path.split("/")[-2:])
        out.append(
            {
                "fn": f"{short}:{line}:{name}",
                "calls_per_step": round(calls / steps, 1),
                "us_per_step": round(tottime / steps * 1e6, 1),
                "share": round(tottime / whole, 3),
                "cum_us_per_step": round(cumtime / steps * 1e6, 1),
            }
        )
    return {
        "ms_per_step": round(secs * 1e3, 3),
        "profiled_ms_per_step": round(whole / steps * 1e3, 3),
        "top": out,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cuda,wgpu")
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    start = time.perf_counter()
    result: dict[str, Any] = {"benchmark": "profile_step"}
    for backend in args.backends.split(","):
        for kind in args.models.split(","):
            result[f"{backend}_{kind}"] = profile(backend, kind, args.steps, args.top)
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
