"""Pooling and long-row reductions: burn cuda and burn wgpu against PyTorch CUDA in one run; prints
one JSON document.

Cases (issue 15's tuned pool and reduction families):

* max_pool 3x3, stride 2, padding 1 on (32, 64, 112, 112) fp32 (values and indices);
* avg_pool 2x2, stride 2 on (32, 64, 112, 112) fp32;
* sum and max over the last dim of (4096, 16384) fp32.

For each: ms per call for burn cuda (the backend's primitives: no autodiff, the tuned candidate, which
the first warm-up call tunes) and burn wgpu, PyTorch CUDA's ms, and the ratios torch_ms / burn_ms (1.0
is parity, above 1 burn is faster); the candidate each backend's tuner chose, and for burn cuda the
untuned reference path (``windows`` / ``cupy``) for comparison. Backends or peers that are missing are
skipped with the reason recorded. On a CPU wgpu adapter (lavapipe) or with ``--quick`` the shapes
shrink (the ratios then mean little).

    python benchmarks/bench_pool.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import emit_json, time_for

FULL = {"pool": (32, 64, 112, 112), "reduce": (4096, 16384)}
QUICK = {"pool": (2, 8, 32, 32), "reduce": (64, 4096)}
MIN_TIME = 0.3

# name -> (kind, arguments after the input)
CASES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "max_pool_3x3_s2_p1": ("max_pool", ((3, 3), (2, 2), (1, 1), (1, 1), False)),
    "avg_pool_2x2_s2": ("avg_pool", ((2, 2), (2, 2), (0, 0), True, False)),
    "sum_last_dim": ("sum", ()),
    "max_last_dim": ("max", ()),
}


def _call(backend: Any, kind: str, x: Any, args: tuple[Any, ...]) -> Callable[[], Any]:
    if kind == "max_pool":
        return lambda: backend.max_pool(x, *args)
    if kind == "avg_pool":
        return lambda: backend.avg_pool(x, *args)
    return lambda: backend.reduce(kind, x, (1,), False)


def _inputs(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(s, dtype=np.float32) for k, s in shapes.items()}


def _raw(dev: Any) -> Any:
    be = dev.backend
    return getattr(be, "inner", be)


def bench_burn(
    device: str, shapes: dict[str, tuple[int, ...]], data: dict[str, np.ndarray]
) -> dict[str, Any]:
    """ms per call of each case on a burn device's backend, and the tuned candidate."""
    import burn

    dev = burn.device(device)
    raw = _raw(dev)
    prims = {k: raw.from_numpy(v, burn.float32) for k, v in data.items()}
    out: dict[str, Any] = {}
    for name, (kind, args) in CASES.items():
        x = prims["reduce" if kind in ("sum", "max") else "pool"]
        sec = time_for(_call(raw, kind, x, args), raw.sync, MIN_TIME)
        row: dict[str, Any] = {"ms": round(sec * 1e3, 4)}
        row.update(_choice(device, raw, kind, x, args))
        out[name] = row
    return out


def _choice(device: str, raw: Any, kind: str, x: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """The candidate the backend's tuner chose for a case (tuned by the timed calls' warm-up), and
    for cuda the reference path's time."""
    import burn

    family = "pool" if kind.endswith("_pool") else "reduce"
    op = {"max_pool": "max", "avg_pool": "avg"}.get(kind, kind)
    if device.startswith("cuda"):
        from burn_cuda import _pool, _reduce
    else:
        from burn_wgpu import _pool, _reduce  # type: ignore[no-redef]
    T: Any = _pool if family == "pool" else _reduce
    if family == "pool":
        key = T._pool_key(raw, op, x, *_pool_args(kind, args))
    elif device.startswith("cuda"):
        key = T._reduce_key(raw, op, x, x.shape[0], x.shape[1])
    else:
        key = T._reduce_key(raw, op, x, x.shape[0], x.shape[1], burn.float32)
    tuner = getattr(raw, "_autotuner", None)
    entry = tuner.cache.get(f"{family}|{key}") if tuner is not None else None
    row: dict[str, Any] = {"key": key, "tuned": entry["best"] if entry else "untuned (default candidate)"}
    if entry:
        row["candidates_ms"] = {k: round(v * 1e3, 4) for k, v in entry.get("seconds", {}).items()}
    if device.startswith("cuda"):
        if family == "pool":
            ref = lambda: T._pool_windows(raw, op, x, *_pool_args(kind, args))  # noqa: E731
        else:
            ref = lambda: T._reduce_cupy(raw, op, x, x.shape[0], x.shape[1])  # noqa: E731
        row["reference_ms"] = round(time_for(ref, raw.sync, MIN_TIME) * 1e3, 4)
    return row


def _pool_args(kind: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A case's arguments as the pool family takes them (kernel, stride, padding, dilation, ceil, cip)."""
    if kind == "max_pool":
        kernel, stride, padding, dilation, ceil = args
        return kernel, stride, padding, dilation, ceil, False
    kernel, stride, padding, cip, ceil = args
    return kernel, stride, padding, (1, 1), ceil, cip


def bench_torch(torch: Any, data: dict[str, np.ndarray]) -> dict[str, Any]:
    F = torch.nn.functional
    tp = torch.from_numpy(data["pool"]).cuda()
    tr = torch.from_numpy(data["reduce"]).cuda()
    calls = {
        "max_pool_3x3_s2_p1": lambda: F.max_pool2d(tp, 3, 2, 1, return_indices=True),
        "avg_pool_2x2_s2": lambda: F.avg_pool2d(tp, 2, 2),
        "sum_last_dim": lambda: tr.sum(1),
        "max_last_dim": lambda: tr.amax(1),
    }
    return {
        k: {"ms": round(time_for(fn, torch.cuda.synchronize, MIN_TIME) * 1e3, 4)} for k, fn in calls.items()
    }


def _peer_torch() -> tuple[Any, str]:
    try:
        import torch

        if not torch.cuda.is_available():
            return None, "torch is installed but CUDA is not available"
        return torch, ""
    except Exception as exc:
        return None, f"torch unavailable: {type(exc).__name__}: {exc}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    import burn

    global MIN_TIME
    shapes = QUICK if args.quick else FULL
    skipped: dict[str, str] = {}
    result: dict[str, Any] = {
        "benchmark": "bench_pool",
        "python": platform.python_version(),
        "burn": burn.__version__,
    }
    t0 = time.perf_counter()
    torch, why = _peer_torch()
    if why:
        skipped["torch"] = why
    figures: dict[str, dict[str, Any]] = {}
    for device in ("cuda", "wgpu"):
        try:
            dev = burn.device(device)
            if (
                device == "wgpu"
                and _raw(dev).ctx.adapter.info.get("adapter_type") == "CPU"
                and not args.quick
            ):
                skipped["wgpu_full_shapes"] = "a CPU adapter (lavapipe): wgpu runs the quick shapes"
                local = QUICK
            else:
                local = shapes
            if args.quick or local is QUICK:
                MIN_TIME = 0.0
            figures[device] = {"shapes": local, **bench_burn(device, local, _inputs(local))}
        except Exception as exc:
            skipped[device] = f"{type(exc).__name__}: {exc}"
    if torch is not None:
        figures["torch_cuda"] = {"shapes": shapes, **bench_torch(torch, _inputs(shapes))}
    for device in ("cuda", "wgpu"):
        fig = figures.get(device)
        peer = figures.get("torch_cuda")
        if fig is None or peer is None or fig["shapes"] != peer["shapes"]:
            continue
        for name in CASES:
            fig[name]["ratio_torch_over_burn"] = round(peer[name]["ms"] / fig[name]["ms"], 3)
    result.update(figures)
    result["skipped"] = skipped
    result["seconds"] = round(time.perf_counter() - t0, 2)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
