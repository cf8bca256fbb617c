"""Attention forward + backward: burn's fused attention op against the composed form (two matmuls and a
softmax), time and peak memory, with PyTorch as the peer; prints one JSON document.

Case: q, k, v (B=2, H=4, L=S=256, E=64) float32, dense and causal; one step is
``F.scaled_dot_product_attention`` (the backend's ``attention`` op: burn-wgpu's flash kernels, the
composed default elsewhere) or ``softmax(q kᵀ / sqrt(E) [masked]) v`` written with tensor ops, then
``(out * g).sum().backward()`` on an autodiff device, synced. For each burn device: ms per step and the
peak bytes allocated during one step above what was allocated before it (``burn.memory_stats``; the
best of three timed rounds); the
composed form keeps the (B, H, L, S) weights for backward, the fused op only out and the row
log-sum-exp. PyTorch's ``scaled_dot_product_attention`` on cpu (and cuda where available) gives the
peer's ms per step and ``ratio_torch_over_burn`` (above 1: burn is faster).

``--dtype bfloat16`` (or float16) runs the inputs in that dtype on both sides (PyTorch's flash backend
takes 16-bit calls on cuda); ``--shapes`` takes several B,H,L,E shapes; ``--sdpa-target`` is the
real-scale preset: bfloat16, causal, L = 1024 and 4096 at head dims 64 and 128, 8192 tokens per batch,
against PyTorch cuda only (the composed form is skipped where its L x S scores would be huge).

    python benchmarks/bench_attention.py [--devices wgpu,cuda] [--quick] [--dtype bfloat16]
        [--shapes 2,4,256,64;1,8,1024,64] [--sdpa-target] [--out results.json]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import emit_json, time_for

SHAPE = (2, 4, 256, 64)  # B, H, L (= S), E
QUICK = (1, 2, 64, 32)
MIN_TIME = 1.0


def _best(step: Callable[[], Any], sync: Callable[[], None], rounds: int = 3) -> float:
    """Seconds per step: the best of ``rounds`` timed rounds (a shared machine's load shows up as
    slower rounds, not as a slower op)."""
    return min(time_for(step, sync, MIN_TIME / rounds) for _ in range(rounds))


COMPOSED_MAX_SCORES = 2**28  # B*H*L*S above this: the composed form is not run (memory)
TARGET_SHAPES = [(8, 16, 1024, 64), (8, 16, 1024, 128), (2, 16, 4096, 64), (2, 16, 4096, 128)]


def _inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]  # q, k, v, output gradient


def _composed(burn: Any, q: Any, k: Any, v: Any, causal: bool) -> Any:
    import burn.nn.functional as F

    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        scores = scores.mask_fill(~F.causal_mask(q.shape[-2], k.shape[-2], q.device), -3.0e38)
    return F.softmax(scores, -1) @ v


def _step(burn: Any, form: str, tensors: list[Any], causal: bool) -> Callable[[], Any]:
    import burn.nn.functional as F

    q, k, v, g = tensors

    def step() -> Any:
        if form == "fused":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            out = _composed(burn, q, k, v, causal)
        grads = (out * g).sum().backward()
        return q.grad(grads), k.grad(grads), v.grad(grads)

    return step


def _source(stats: Any) -> str:
    """What the device's memory figures count (the numpy backend samples process memory at calls, so
    its step peaks mean little; the GPU backends count their allocations)."""
    return str(getattr(stats, "source", "") or "")


def bench_burn(
    device: str, shape: tuple[int, ...], dtype: str = "float32", modes: tuple[bool, ...] = (False, True)
) -> dict[str, Any]:
    import burn

    dev = burn.device(device, autodiff=True)
    arrays = _inputs(shape)
    rows: dict[str, Any] = {"device": str(dev), "memory_source": _source(burn.memory_stats(dev))}
    b, h, n, _ = shape
    forms = ("fused", "composed") if b * h * n * n <= COMPOSED_MAX_SCORES else ("fused",)
    for causal in modes:
        for form in forms:
            tensors = [burn.tensor(a, device=dev, dtype=getattr(burn, dtype)) for a in arrays]
            tensors = [t.require_grad() for t in tensors[:3]] + tensors[3:]
            step = _step(burn, form, tensors, causal)
            sync = dev.backend.sync
            sec = _best(step, sync)
            sync()
            base = burn.memory_stats(dev).allocated
            burn.reset_peak_memory_stats(dev)
            keep = step()
            sync()
            peak = burn.memory_stats(dev).peak_allocated - base
            del keep
            name = f"{'causal' if causal else 'dense'}_{form}"
            rows[name] = {"ms": round(sec * 1e3, 3), "peak_step_bytes": int(peak)}
        for what in ("ms", "peak_step_bytes"):
            tag = "causal" if causal else "dense"
            if f"{tag}_composed" not in rows:
                continue
            fused, comp = rows[f"{tag}_fused"][what], rows[f"{tag}_composed"][what]
            rows[f"{tag}_fused_over_composed_{what}"] = round(fused / comp, 3) if comp else None
    return rows


def bench_torch(
    torch: Any,
    device: str,
    shape: tuple[int, ...],
    dtype: str = "float32",
    modes: tuple[bool, ...] = (False, True),
) -> dict[str, Any]:
    arrays = _inputs(shape)
    tdt = getattr(torch, dtype)
    q, k, v = (torch.tensor(a, device=device, dtype=tdt, requires_grad=True) for a in arrays[:3])
    g = torch.tensor(arrays[3], device=device, dtype=tdt)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rows: dict[str, Any] = {"device": device, "threads": torch.get_num_threads()}
    for causal in modes:

        def step(causal: bool = causal) -> Any:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return torch.autograd.grad((out * g).sum(), (q, k, v))

        rows[f"{'causal' if causal else 'dense'}"] = {"ms": round(_best(step, sync) * 1e3, 3)}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="wgpu,cuda", help="burn devices, comma-separated")
    ap.add_argument("--quick", action="store_true", help="a small shape (a smoke run)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--shapes", help="B,H,L,E shapes separated by ';' (default 2,4,256,64)")
    ap.add_argument(
        "--sdpa-target", action="store_true", help="bfloat16, causal, L 1024/4096, E 64/128, torch cuda peer"
    )
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    import burn

    global MIN_TIME
    shapes = [QUICK if args.quick else SHAPE]
    if args.shapes:
        shapes = [tuple(int(x) for x in part.split(",")) for part in args.shapes.split(";")]
    modes: tuple[bool, ...] = (False, True)
    dtype = args.dtype
    if args.sdpa_target:
        shapes, modes, dtype = TARGET_SHAPES, (True,), "bfloat16"
    if args.quick:
        MIN_TIME = 0.0
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "bench_attention",
        "python": platform.python_version(),
        "burn": burn.__version__,
        "dtype": dtype,
        "cases": [],
    }
    skipped: dict[str, str] = {}
    try:
        import torch
    except ImportError as exc:
        torch = None
        skipped["torch"] = f"torch unavailable: {exc}"
    for shape in shapes:
        case: dict[str, Any] = {"shape_bhle": shape}
        for device in args.devices.split(","):
            try:
                case[device] = bench_burn(device, shape, dtype, modes)
            except Exception as exc:
                skipped[f"{device} {shape}"] = f"{type(exc).__name__}: {exc}"
        if torch is not None:
            peers = ["cuda"] if torch.cuda.is_available() else []
            if not args.sdpa_target and dtype == "float32":
                peers = ["cpu"] + peers
            for peer in peers:
                case[f"torch_{peer}"] = bench_torch(torch, peer, shape, dtype, modes)
        for device in args.devices.split(","):
            fig = case.get(device)
            peer = case.get("torch_cuda" if device == "cuda" and "torch_cuda" in case else "torch_cpu")
            if fig is None or peer is None:
                continue
            for causal in modes:
                tag = "causal" if causal else "dense"
                fig[f"{tag}_ratio_torch_{peer['device']}_over_burn"] = round(
                    peer[tag]["ms"] / fig[f"{tag}_fused"]["ms"], 3
                )
        result["cases"].append(case)
    result["skipped"] = skipped
    result["seconds"] = round(time.perf_counter() - t0, 2)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
