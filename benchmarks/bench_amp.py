"""Mixed precision (burn.amp) against float32 on one device, with PyTorch AMP as the peer; one JSON object.

Two parts:

- ``mlp``: one training step (forward, backward, Adam) of an MLP ``--width`` wide with ``--layers``
  hidden layers (linear -> relu), batch ``--batch``, on random inputs with labels from a fixed random
  teacher. Step seconds in float32 and in float16 mixed precision (``autocast("float16")`` + a
  ``GradScaler`` + float32 master weights), the speed-up, and the training accuracy after ``--steps``
  steps from the same init (both must learn alike). PyTorch (when importable with CUDA, or on cpu)
  runs the same model with ``torch.autocast`` + ``torch.amp.GradScaler``.
- ``digits``: the digits example (``burn_train.examples.digits``) with and without
  ``--mixed-precision float16``: wall seconds and final validation accuracy (same seed and epochs;
  the issue's goal: within 1 point).
- ``matmul``: ``--matmul-size`` square matmul of half tensors (``--dtype``) against PyTorch's on half
  tensors of the same dtype on the same device (the issue's target on cuda at 4096: >= 0.8x).

``--dtype bfloat16`` runs all three in bfloat16 instead (no loss scaling, as PyTorch does not scale
bfloat16; the PyTorch peer autocasts to bfloat16 too).

    python benchmarks/bench_amp.py --device cuda [--width 4096 --layers 4 --batch 512] [--out amp.json]
    python benchmarks/bench_amp.py --device cuda --dtype bfloat16 --matmul-size 4096
    python benchmarks/bench_amp.py --device cpu --width 256 --batch 64 --steps 50 --skip-digits
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from _common import emit_json, time_for


def _data(width: int, batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    teacher = rng.standard_normal((width, 10)).astype(np.float32)
    return x, (x @ teacher).argmax(1).astype(np.int64)


def _init(width: int, layers: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Weights (d_in, d_out) and biases of every layer: hidden ``width`` x ``width``, last to 10."""
    rng = np.random.default_rng(seed + 1)
    dims = [width] * (layers + 1) + [10]
    return [
        (
            (rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
            np.zeros(b, np.float32),
        )
        for a, b in zip(dims[:-1], dims[1:])
    ]


def _burn(device: str, mixed: bool, args: argparse.Namespace) -> dict[str, Any]:
    import burn
    from burn import nn
    from burn.nn import functional as F

    dev = burn.device(device, autodiff=True)
    weights = _init(args.width, args.layers)

    class Mlp(nn.Module):
        def __init__(self) -> None:
            self.layers = [nn.LinearConfig(w.shape[0], w.shape[1]).init(dev) for w, _ in weights]

        def forward(self, x: Any) -> Any:
            for layer in self.layers[:-1]:
                x = F.relu(layer(x))
            return self.layers[-1](x)

    model = Mlp()
    model.load_record(
        {f"layers.{i}.{k}": v for i, (w, b) in enumerate(weights) for k, v in (("weight", w), ("bias", b))}
    )
    x_np, y_np = _data(args.width, args.batch)
    x, y = burn.from_numpy(x_np, device=dev), burn.from_numpy(y_np, device=dev)
    opt = burn.optim.AdamConfig().init()
    scaler = burn.amp.GradScaler(enabled=mixed and args.dtype == "float16")  # bfloat16: no scaling
    state = {"model": model}

    def step() -> None:
        m = state["model"]
        with burn.amp.autocast(args.dtype, enabled=mixed):
            loss = F.cross_entropy(m(x), y)
        state["model"] = scaler.step(opt, args.lr, m, scaler.scale(loss).backward())

    sync = dev.backend.sync
    for _ in range(args.steps):
        step()
    sync()
    with burn.amp.autocast(args.dtype, enabled=mixed):
        accuracy = float((state["model"].valid()(x.inner()).argmax(1) == y.inner()).float().mean().item())
    seconds = time_for(step, sync, args.min_time)
    return {
        "step_seconds": round(seconds, 6),
        "train_accuracy": round(accuracy, 4),
        "skipped_steps": scaler.skipped_steps,
        "final_scale": scaler.get_scale(),
    }


def _torch(device: str, mixed: bool, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    tdev = torch.device("cuda" if device == "cuda" else "cpu")
    layers = []
    for w, b in _init(args.width, args.layers):
        lin = torch.nn.Linear(w.shape[0], w.shape[1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(tdev)
    x_np, y_np = _data(args.width, args.batch)
    x, y = torch.from_numpy(x_np).to(tdev), torch.from_numpy(y_np).to(tdev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-5)
    half = args.dtype == "float16" and tdev.type == "cuda"  # CPU autocast is bfloat16 only
    scaler = torch.amp.GradScaler(tdev.type, enabled=mixed and half)
    dtype = torch.float16 if half else torch.bfloat16

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(tdev.type, dtype=dtype, enabled=mixed):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def sync() -> None:
        if tdev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.steps):
        step()
    sync()
    with torch.no_grad(), torch.autocast(tdev.type, dtype=dtype, enabled=mixed):
        accuracy = float((model(x).argmax(1) == y).float().mean())
    seconds = time_for(step, sync, args.min_time)
    return {
        "step_seconds": round(seconds, 6),
        "train_accuracy": round(accuracy, 4),
        "autocast_dtype": str(dtype),
    }


def _digits(device: str, epochs: int, half: str) -> dict[str, Any]:
    import tempfile

    from burn_train.examples import digits

    out: dict[str, Any] = {}
    for name, extra in (("float32", []), (half, ["--mixed-precision", half])):
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["--backend", device, "--epochs", str(epochs), "--renderer", "none", "--artifacts", tmp]
            start = time.perf_counter()
            accuracy = digits.main([*argv, *extra], prog="bench_amp")
            out[name] = {
                "seconds": round(time.perf_counter() - start, 2),
                "valid_accuracy": round(accuracy, 4),
            }
    out["accuracy_points_apart"] = round(
        100 * abs(out[half]["valid_accuracy"] - out["float32"]["valid_accuracy"]), 2
    )
    return out


def _matmul(device: str, n: int, half: str, min_time: float) -> dict[str, Any]:
    """TFLOP/s of an n x n x n matmul of ``half`` tensors, burn and PyTorch, same data, same device."""
    import burn

    dev = burn.device(device)
    rng = np.random.default_rng(n)
    a_np, b_np = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    a = burn.from_numpy(a_np, device=dev).cast(half)
    b = burn.from_numpy(b_np, device=dev).cast(half)
    flops = 2.0 * n**3
    secs = time_for(lambda: a @ b, dev.backend.sync, min_time)
    out: dict[str, Any] = {"n": n, "dtype": half, "burn_tflops": round(flops / secs / 1e12, 3)}
    try:
        import torch

        tdev = torch.device("cuda" if device == "cuda" else "cpu")
        if tdev.type == "cuda" and not torch.cuda.is_available():
            raise ImportError("torch has no CUDA here")
        tdt = torch.float16 if half == "float16" else torch.bfloat16
        ta, tb = torch.from_numpy(a_np).to(tdev, tdt), torch.from_numpy(b_np).to(tdev, tdt)

        def tsync() -> None:
            if tdev.type == "cuda":
                torch.cuda.synchronize()

        tsecs = time_for(lambda: torch.matmul(ta, tb), tsync, min_time)
        out["torch_tflops"] = round(flops / tsecs / 1e12, 3)
        out["ratio_burn_over_torch"] = round(tsecs / secs, 3)
    except ImportError as exc:
        out["torch"] = f"unavailable: {exc}"
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", help="cpu, wgpu or cuda")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=30, help="training steps before the accuracy is read")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-time", type=float, default=2.0, help="seconds of timed steps per configuration")
    p.add_argument("--epochs", type=int, default=8, help="digits example epochs")
    p.add_argument("--skip-digits", action="store_true")
    p.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16", help="the half dtype")
    p.add_argument(
        "--matmul-size", type=int, default=None, help="half matmul size (default 4096 on cuda, 512 else)"
    )
    p.add_argument("--skip-matmul", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args()

    import burn

    half = args.dtype
    result: dict[str, Any] = {
        "device": args.device,
        "dtype": half,
        "mlp": {"width": args.width, "layers": args.layers, "batch": args.batch, "steps": args.steps},
    }
    mlp = result["mlp"]
    for name, mixed in (("float32", False), (half, True)):
        mlp[f"burn_{name}"] = _burn(args.device, mixed, args)
    mlp["burn_speedup"] = round(mlp["burn_float32"]["step_seconds"] / mlp[f"burn_{half}"]["step_seconds"], 3)
    try:
        import torch

        if args.device == "cuda" and not torch.cuda.is_available():
            raise ImportError("torch has no CUDA here")
        for name, mixed in (("float32", False), ("amp", True)):
            mlp[f"torch_{name}"] = _torch(args.device, mixed, args)
        mlp["torch_speedup"] = round(
            mlp["torch_float32"]["step_seconds"] / mlp["torch_amp"]["step_seconds"], 3
        )
        mlp["burn_amp_over_torch_amp"] = round(
            mlp[f"burn_{half}"]["step_seconds"] / mlp["torch_amp"]["step_seconds"], 3
        )
    except ImportError as exc:
        mlp["torch"] = f"unavailable: {exc}"
    if not args.skip_matmul:
        size = args.matmul_size or (4096 if args.device == "cuda" else 512)
        result["matmul"] = _matmul(args.device, size, half, args.min_time)
    if not args.skip_digits:
        result["digits"] = _digits(args.device, args.epochs, half)
    result["burn_version"] = burn.__version__
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
