"""burn's CUDA backend on one GPU against PyTorch eager and raw CuPy; prints one JSON object.

Parts (each skipped with a recorded reason where its libraries or the GPU are missing):
  matmul     n = 1024, 2048, 4096 square float32 products in burn's fp32/tf32/bf16/fp16 modes against
             torch.matmul (fp32 with TF32 off, fp32 with TF32 on, bf16 tensors): TFLOP/s and ratio.
  overhead   per-op time of a 16-element add: burn tensor, burn backend call, raw CuPy, PyTorch (µs).
  conv       conv2d 3x3, 64->64 channels, 56x56, batch 32, padding 1 (the issue's shape) in float32 and
             float16 against PyTorch (cuDNN) with TF32 off and on: ms and ratio.
  training   one training step (forward, backward, Adam update) of an MLP and of a small CNN, burn
             (autodiff on cuda, fp32) against PyTorch eager (fp32, TF32 off): ms per step and ratio.

    python benchmarks/bench_cuda.py [--quick] [--out results.json]

Runs in about a minute on an H200 (most of it kernel compilation on the first calls).
"""

from __future__ import annotations

import argparse
import platform
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import emit_json, time_for


def _env() -> dict[str, Any]:
    import burn

    info: dict[str, Any] = {"python": platform.python_version(), "burn": burn.__version__}
    try:
        import cupy

        info["cupy"] = cupy.__version__
        props = cupy.cuda.runtime.getDeviceProperties(0)
        info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    except Exception as exc:
        info["cupy"] = f"unavailable: {exc}"
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = "not installed"
    return info


def bench_matmul(quick: bool) -> dict[str, Any]:
    import burn
    import burn_cuda

    dev = burn.device("cuda")
    sizes = [1024, 2048] if quick else [1024, 2048, 4096]
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a_np, b_np = (
            rng.standard_normal((n, n), dtype=np.float32),
            rng.standard_normal((n, n), dtype=np.float32),
        )
        a, b = burn.from_numpy(a_np, device=dev), burn.from_numpy(b_np, device=dev)
        flops = 2.0 * n**3
        peers: dict[str, float] = {}
        if torch is not None:
            ta, tb = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
            for name, allow, x, y in (
                ("fp32", False, ta, tb),
                ("tf32", True, ta, tb),
                ("bf16", False, ta.bfloat16(), tb.bfloat16()),
                ("fp16", False, ta.half(), tb.half()),
            ):
                torch.backends.cuda.matmul.allow_tf32 = allow
                secs = time_for(lambda x=x, y=y: torch.matmul(x, y), torch.cuda.synchronize, 0.2)
                peers[name] = flops / secs / 1e12
            torch.backends.cuda.matmul.allow_tf32 = False
        for mode in ("fp32", "tf32", "bf16", "fp16"):
            with burn_cuda.matmul_precision(mode):
                secs = time_for(lambda a=a, b=b: a @ b, lambda: burn_cuda.synchronize(dev), 0.2)
            tflops = flops / secs / 1e12
            peer = peers.get(mode)
            rows.append(
                {
                    "n": n,
                    "mode": mode,
                    "burn_tflops": round(tflops, 2),
                    "torch_tflops": None if peer is None else round(peer, 2),
                    "ratio_burn_over_torch": None if peer is None else round(tflops / peer, 3),
                }
            )
    note = (
        "burn bf16/fp16 take fp32 tensors (cuBLAS FAST_16BF/16F compute); torch's peers are bf16/fp16 tensors"
    )
    return {"rows": rows, "note": note}


def bench_overhead(quick: bool) -> dict[str, Any]:
    import burn
    import burn_cuda
    import cupy

    dev = burn.device("cuda")
    x_np = np.arange(16, dtype=np.float32)
    a, b = burn.from_numpy(x_np, device=dev), burn.from_numpy(x_np, device=dev)
    backend = dev.backend
    pa, pb = a.primitive, b.primitive
    ca, cb = cupy.asarray(x_np), cupy.asarray(x_np)
    min_time = 0.1 if quick else 0.3
    out = {
        "burn_tensor_add_us": time_for(lambda: a + b, lambda: burn_cuda.synchronize(dev), min_time, 50) * 1e6,
        "burn_backend_add_us": time_for(
            lambda: backend.binary("add", pa, pb), lambda: burn_cuda.synchronize(dev), min_time, 50
        )
        * 1e6,
        "cupy_add_us": time_for(lambda: ca + cb, cupy.cuda.Device().synchronize, min_time, 50) * 1e6,
    }
    try:
        import torch

        ta, tb = torch.from_numpy(x_np).cuda(), torch.from_numpy(x_np).cuda()
        out["torch_add_us"] = time_for(lambda: ta + tb, torch.cuda.synchronize, min_time, 50) * 1e6
    except ImportError:
        out["torch_add_us"] = None
    out = {k: (None if v is None else round(v, 2)) for k, v in out.items()}
    out["ratio_burn_over_cupy"] = round(out["burn_tensor_add_us"] / out["cupy_add_us"], 2)
    if out["torch_add_us"]:
        out["ratio_burn_over_torch"] = round(out["burn_tensor_add_us"] / out["torch_add_us"], 2)
    return out


# ---------------------------------------------------------------- training steps
MLP = {"batch": 256, "sizes": (784, 1024, 1024, 10)}
CNN = {"batch": 64, "image": (1, 28, 28), "channels": (32, 64), "classes": 10}


def _burn_models(dev: Any) -> dict[str, Any]:
    from burn import nn
    from burn.nn import functional as F

    class BurnMlp(nn.Module):
        def __init__(self) -> None:
            s = MLP["sizes"]
            self.l1 = nn.LinearConfig(s[0], s[1]).init(dev)
            self.l2 = nn.LinearConfig(s[1], s[2]).init(dev)
            self.l3 = nn.LinearConfig(s[2], s[3]).init(dev)

        def forward(self, x):
            return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))

    class BurnCnn(nn.Module):
        def __init__(self) -> None:
            c1, c2 = CNN["channels"]
            self.c1 = nn.Conv2dConfig((1, c1), 3, padding=1).init(dev)
            self.c2 = nn.Conv2dConfig((c1, c2), 3, padding=1).init(dev)
            self.pool = nn.MaxPool2dConfig(2, stride=2).init(dev)
            self.fc = nn.LinearConfig(c2 * 7 * 7, CNN["classes"]).init(dev)

        def forward(self, x):
            x = self.pool(F.relu(self.c1(x)))
            x = self.pool(F.relu(self.c2(x)))
            return self.fc(x.flatten(1, 3))

    return {"mlp": BurnMlp, "cnn": BurnCnn}


def _torch_models(torch: Any) -> dict[str, Any]:
    tnn = torch.nn
    s = MLP["sizes"]
    c1, c2 = CNN["channels"]
    return {
        "mlp": lambda: tnn.Sequential(
            tnn.Linear(s[0], s[1]), tnn.ReLU(), tnn.Linear(s[1], s[2]), tnn.ReLU(), tnn.Linear(s[2], s[3])
        ),
        "cnn": lambda: tnn.Sequential(
            tnn.Conv2d(1, c1, 3, padding=1),
            tnn.ReLU(),
            tnn.MaxPool2d(2, 2),
            tnn.Conv2d(c1, c2, 3, padding=1),
            tnn.ReLU(),
            tnn.MaxPool2d(2, 2),
            tnn.Flatten(),
            tnn.Linear(c2 * 49, CNN["classes"]),
        ),
    }


def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    if kind == "mlp":
        x = rng.standard_normal((MLP["batch"], MLP["sizes"][0]), dtype=np.float32)
        y = rng.integers(0, MLP["sizes"][-1], MLP["batch"])
    else:
        x = rng.standard_normal((CNN["batch"], *CNN["image"]), dtype=np.float32)
        y = rng.integers(0, CNN["classes"], CNN["batch"])
    return x, y


def _burn_step(kind: str, min_time: float) -> dict[str, Any]:
    import burn
    import burn_cuda
    from burn.nn import functional as F

    dev = burn.device("cuda", autodiff=True)
    burn.seed(0)
    model = _burn_models(dev)[kind]()
    opt = burn.optim.AdamConfig().init()
    x_np, y_np = _data(kind)
    x, y = burn.from_numpy(x_np, device=dev), burn.from_numpy(y_np, device=dev)
    state = {"model": model, "loss": None}

    def step():
        loss = F.cross_entropy(state["model"](x), y)
        grads = loss.backward()
        state["model"] = opt.step(1e-3, state["model"], grads)
        state["loss"] = loss

    first = None
    step()
    first = float(state["loss"].item())
    secs = time_for(step, lambda: burn_cuda.synchronize(dev.inner), min_time)
    return {
        "ms_per_step": round(secs * 1e3, 3),
        "first_loss": round(first, 4),
        "last_loss": round(float(state["loss"].item()), 4),
    }


def _torch_step_fn(kind: str) -> tuple[Callable[[], None], dict[str, Any]]:
    """PyTorch eager's training step of ``kind`` on CUDA (TF32 off) and the dict its loss lands in."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    model = _torch_models(torch)[kind]().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_np, y_np = _data(kind)
    x, y = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()
    state = {}

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        state["loss"] = loss

    return step, state


def _torch_step(kind: str, min_time: float) -> dict[str, Any]:
    import torch

    step, state = _torch_step_fn(kind)
    step()
    first = float(state["loss"].item())
    secs = time_for(step, torch.cuda.synchronize, min_time)
    return {
        "ms_per_step": round(secs * 1e3, 3),
        "first_loss": round(first, 4),
        "last_loss": round(float(state["loss"].item()), 4),
    }


def bench_conv(quick: bool) -> dict[str, Any]:
    """conv2d of burn-cuda (its default precision, then the fp16 tensors) against cuDNN through PyTorch."""
    import burn
    import torch
    from burn.nn import functional as F

    dev = burn.device("cuda", fusion=False)
    n, c, hw, co = 32, 64, 56, 64
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    w_np = (rng.standard_normal((co, c, 3, 3), dtype=np.float32) / 24).astype(np.float32)
    flops = 2 * n * co * hw * hw * c * 9
    min_time = 0.3 if quick else 1.0
    out: dict[str, Any] = {"x": [n, c, hw, hw], "c_out": co, "kernel": [3, 3], "padding": 1}
    ref = torch.nn.functional.conv2d(
        torch.from_numpy(x_np).double(), torch.from_numpy(w_np).double(), padding=1
    ).numpy()
    for dtype in ("float32", "float16"):
        bd = getattr(burn, dtype)
        x = burn.from_numpy(x_np, device=dev).cast(bd)
        w = burn.from_numpy(w_np, device=dev).cast(bd)
        got = F.conv2d(x, w, None, 1, 1).cast(burn.float32).numpy()
        err = float(np.abs(got - ref).max() / np.abs(ref).max())
        sec = time_for(lambda x=x, w=w: F.conv2d(x, w, None, 1, 1), dev.backend.sync, min_time)
        row: dict[str, Any] = {"burn_ms": round(sec * 1e3, 3), "burn_tflops": round(flops / sec / 1e12, 2)}
        row["max_rel_err"] = float(f"{err:.2e}")
        tdt = getattr(torch, dtype)
        tx = torch.from_numpy(x_np).cuda().to(tdt)
        tw = torch.from_numpy(w_np).cuda().to(tdt)
        for tf32 in (False, True) if dtype == "float32" else (False,):
            torch.backends.cudnn.allow_tf32 = tf32
            tsec = time_for(
                lambda tx=tx, tw=tw: torch.nn.functional.conv2d(tx, tw, padding=1),
                torch.cuda.synchronize,
                min_time,
            )
            key = "torch_tf32" if tf32 else "torch"
            row[f"{key}_ms"] = round(tsec * 1e3, 3)
            row[f"burn_vs_{key}"] = round(tsec / sec, 3)  # >= 1 means burn is faster
        torch.backends.cudnn.allow_tf32 = True
        out[dtype] = row
    return out


def bench_training(quick: bool) -> dict[str, Any]:
    min_time = 0.5 if quick else 2.0
    out: dict[str, Any] = {
        "mlp_config": MLP,
        "cnn_config": CNN,
        "optimizer": "Adam lr=1e-3",
        "precision": "fp32",
    }
    for kind in ("mlp", "cnn"):
        row: dict[str, Any] = {}
        row["burn"] = _part(lambda kind=kind: _burn_step(kind, min_time))
        row["torch"] = _part(lambda kind=kind: _torch_step(kind, min_time))
        b, t = row["burn"].get("ms_per_step"), row["torch"].get("ms_per_step")
        row["ratio_burn_over_torch"] = round(b / t, 2) if b and t else None
        out[kind] = row
    return out


def _part(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        result = fn()
    except ImportError as exc:
        return {"skipped": f"missing library: {exc}"}
    except Exception as exc:  # one failing part is recorded; the others still run
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=6)}
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and shorter timings")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    start = time.perf_counter()
    import burn_cuda

    ok, reason = burn_cuda.is_available()
    result: dict[str, Any] = {"benchmark": "bench_cuda", "env": _env()}
    if not ok:
        result["skipped"] = f"CUDA backend unavailable: {reason}"
    else:
        result["matmul"] = _part(lambda: bench_matmul(args.quick))
        result["overhead"] = _part(lambda: bench_overhead(args.quick))
        result["conv"] = _part(lambda: bench_conv(args.quick))
        result["training"] = _part(lambda: bench_training(args.quick))
    result["total_seconds"] = round(time.perf_counter() - start, 1)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
