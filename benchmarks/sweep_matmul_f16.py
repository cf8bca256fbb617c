"""Sweep the wgpu matmul family: every float32 and every float16 candidate, timed on the device.

For each size n (square n x n @ n x n, row-major operands) every candidate of
``burn_wgpu._matmul.MATMUL`` that applies to the operands and fits the adapter's limits is run once
and checked against the family's reference candidate (the family's own ``close`` rule: a wrong
candidate is reported, its time kept apart), then timed with ``burn_wgpu._timer.GpuTimer``
(timestamp queries, the median over ``--reps`` calls after ``--warmup``; the host timer where the
adapter has no timestamps, as the autotuner does), after ``--warm`` seconds of matmuls that bring the
GPU to its working clocks, and ``--burst`` seconds of each candidate's own calls just before its timing
(every candidate is compiled and checked first: the host's pauses let the clocks drop, and a few
milliseconds of timed calls at 1024-2048 then ran at idle clocks, reading 40-60% of the warm figure).
Prints one JSON document: TFLOP/s per candidate and dtype, the best float32 and float16 candidates and
the float16 / float32 ratio per size (the issue's target: >= 1.5).

    python benchmarks/sweep_matmul_f16.py 1024 2048 4096 [--reps 10] [--only b128] [--out sweep.json]

On a CPU adapter (lavapipe) use a small size (``256``): it checks that every candidate compiles
and is right, not how fast it is.
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

import burn
import numpy as np
from _common import emit_json, time_for, warm_up_gpu


def _raw(dev: Any) -> Any:
    be = dev.backend
    return getattr(be, "inner", be)


def _timer(raw: Any, warmup: int, reps: int) -> tuple[Any, str]:
    from burn.autotune import median_timer
    from burn_wgpu._timer import GpuTimer

    if "timestamp-query" in raw.ctx.features:
        return GpuTimer(raw, warmup=warmup, reps=reps), "gpu timestamps"
    return median_timer(raw.sync, warmup=warmup, reps=reps), "host (no timestamp-query)"


def _sweep_dtype(raw: Any, n: int, dtype: Any, timer: Any, only: str | None, burst: float) -> dict[str, Any]:
    """Every applicable candidate at n for one dtype: {name: TFLOP/s}, wrong ones and failures. Each
    right one is timed after ``burst`` seconds of its own calls (working clocks again)."""
    from burn_wgpu import _matmul

    family = _matmul.MATMUL
    np_dt = np.float16 if dtype is burn.float16 else np.float32
    rng = np.random.default_rng(0)
    a = raw.from_numpy(rng.standard_normal((n, n)).astype(np_dt), dtype)
    b = raw.from_numpy(rng.standard_normal((n, n)).astype(np_dt), dtype)
    ref = raw.to_numpy(family.by_name[family.reference].fn(raw, a, b))
    flops = 2 * n**3
    tflops: dict[str, float] = {}
    wrong: dict[str, float] = {}
    failed: dict[str, str] = {}
    fallbacks: list[str] = []
    checked = []
    for cand in family.candidates:  # each compiled and checked first: a compile idles the GPU
        if only and only not in cand.name and cand.name != family.reference:
            continue
        if cand.applies is not None and not cand.applies(raw, a, b):
            continue
        try:
            out = raw.to_numpy(cand.fn(raw, a, b))
        except Exception as exc:  # a candidate the driver refuses: reported, the sweep goes on
            failed[cand.name] = f"{type(exc).__name__}: {str(exc).splitlines()[-1] if str(exc) else ''}"
            continue
        if family.close(out, ref):
            checked.append(cand)
        else:
            scale = float(np.abs(ref.astype(np.float64)).max()) or 1.0
            wrong[cand.name] = float(np.abs(out.astype(np.float64) - ref.astype(np.float64)).max() / scale)
    for cand in checked:
        run = functools.partial(cand.fn, raw, a, b)
        time_for(run, raw.sync, burst)  # back at working clocks after the host's pauses
        sec = timer(run)
        if getattr(timer, "last_source", "gpu") == "host":  # timestamps out of range: wall time
            fallbacks.append(cand.name)
        tflops[cand.name] = float(f"{flops / sec / 1e12:.4g}")  # 4 significant digits (lavapipe: ~1e-3)
    result: dict[str, Any] = {"tflops": dict(sorted(tflops.items(), key=lambda kv: -kv[1]))}
    if tflops:
        best = max(tflops, key=tflops.__getitem__)
        result["best"] = {"candidate": best, "tflops": tflops[best]}
    if fallbacks:
        result["host_timed"] = fallbacks
    if wrong:
        result["wrong_max_rel_err"] = wrong
    if failed:
        result["failed"] = failed
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1024, 2048, 4096], help="square sizes n")
    ap.add_argument("--reps", type=int, default=10, help="timed calls per candidate (median)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls per candidate first")
    ap.add_argument("--only", help="time only candidates whose name holds this (and the reference)")
    ap.add_argument(
        "--warm", type=float, default=2.0, help="seconds of matmuls first, to reach working clocks"
    )
    ap.add_argument(
        "--burst", type=float, default=0.1, help="seconds of a candidate's calls before timing it"
    )
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    if any(n < 1 for n in args.sizes):
        ap.error(f"sizes must be positive integers, got {args.sizes}")
    if args.reps < 1 or args.warmup < 0:
        ap.error(f"--reps must be >= 1 and --warmup >= 0, got {args.reps} and {args.warmup}")
    dev = burn.device("wgpu")
    raw = _raw(dev)
    if raw.ctx.adapter.info.get("adapter_type") == "CPU":  # no clocks to raise (and 2048^2 is slow there)
        args.warm = args.burst = 0.0
    warm_up_gpu(dev, args.warm)
    timer, source = _timer(raw, args.warmup, args.reps)
    has_f16 = burn.float16 in raw.dtypes
    result: dict[str, Any] = {
        "benchmark": "sweep_matmul_f16",
        "adapter": raw.ctx.label,
        "portable_limits": raw.ctx.portable,
        "timer": source,
        "reps": args.reps,
        "shader_f16": has_f16,
        "sizes": [],
    }
    t0 = time.perf_counter()
    for n in args.sizes:
        row: dict[str, Any] = {
            "n": n,
            "float32": _sweep_dtype(raw, n, burn.float32, timer, args.only, args.burst),
        }
        if has_f16:
            row["float16"] = _sweep_dtype(raw, n, burn.float16, timer, args.only, args.burst)
            b32, b16 = row["float32"].get("best"), row["float16"].get("best")
            if b32 and b16:
                row["f16_vs_f32"] = round(b16["tflops"] / b32["tflops"], 3)
                row["target_1_5x_met"] = row["f16_vs_f32"] >= 1.5
        result["sizes"].append(row)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
