"""Autodiff overhead of burn (numpy backend behind ``Autodiff``) against PyTorch CPU, and the memory
balanced checkpointing saves.

Two models, written once and run on both frameworks with the same float32 data and weights:

- ``mlp``: 784 -> 512 -> 512 -> 10, each hidden layer linear -> layer norm (written as tensor ops) ->
  relu; cross-entropy through log_softmax, batch 128;
- ``cnn``: conv3x3(1->16, pad 1) -> relu -> max_pool 2 -> conv3x3(16->32, pad 1) -> relu -> max_pool 2
  -> linear(1568 -> 10), cross-entropy, batch 32 of 28x28 images.

Figures per model, best of ``--repeat`` rounds (burn, burn balanced and PyTorch alternate within each
round, so load on a shared machine hits them alike): forward seconds (graph recorded), step seconds (forward +
backward), ``overhead = step / forward``; the same for PyTorch when importable, and ``step_ratio = burn
step / torch step`` (goal: under 1.5). ``graph_bytes`` is what the graph keeps alive at the end of the
forward (``Autodiff.graph_bytes``) with checkpointing "none" and "balanced"; the balanced step time is
reported too. Gradients are checked in float64 against PyTorch (when importable) and between the
checkpointing modes before timing; float32 is not compared element-wise because max pooling may pick a
different element of a near-tied window under different float32 rounding.

    python benchmarks/bench_autodiff.py [--repeat 30] [--quick] [--install-torch]

``--install-torch`` runs ``pip install torch==2.13.0`` (the CPU wheel) when torch is not importable;
without it, a missing torch is reported as unavailable.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

import burn
import burn.nn.functional as F
import numpy as np

TORCH_SPEC = "torch==2.13.0"


# ---------------------------------------------------------------- one model definition, two frameworks
class BurnOps:
    conv2d = staticmethod(F.conv2d)
    max_pool2d = staticmethod(F.max_pool2d)

    @staticmethod
    def log_softmax(x: Any, dim: int) -> Any:
        return F.log_softmax(x, dim)


class TorchOps:
    def __init__(self, torch: Any) -> None:
        self.conv2d = torch.nn.functional.conv2d
        self.max_pool2d = torch.nn.functional.max_pool2d
        self.log_softmax = torch.nn.functional.log_softmax


def _layer_norm(h: Any) -> Any:
    mean = h.mean(1, keepdim=True)
    var = h.var(1, correction=0, keepdim=True)
    return (h - mean) / (var + 1e-5).sqrt()


def mlp_loss(ops: Any, p: dict, x: Any, onehot: Any) -> Any:
    h = _layer_norm(x @ p["w1"] + p["b1"]).relu()
    h = _layer_norm(h @ p["w2"] + p["b2"]).relu()
    logits = h @ p["w3"] + p["b3"]
    return -(ops.log_softmax(logits, 1) * onehot).sum(1).mean()


def cnn_loss(ops: Any, p: dict, x: Any, onehot: Any) -> Any:
    h = ops.max_pool2d(ops.conv2d(x, p["c1"], p["cb1"], padding=1).relu(), 2)
    h = ops.max_pool2d(ops.conv2d(h, p["c2"], p["cb2"], padding=1).relu(), 2)
    logits = h.reshape(h.shape[0], -1) @ p["w"] + p["b"]
    return -(ops.log_softmax(logits, 1) * onehot).sum(1).mean()


def _init(rng: np.random.Generator, shapes: dict) -> dict:
    out = {}
    for k, shape in shapes.items():
        fan_in = int(np.prod(shape[1:])) if len(shape) > 2 else shape[0]
        scale = 0.0 if len(shape) == 1 else np.sqrt(2.0 / fan_in)
        out[k] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return out


MODELS = {
    "mlp": (
        mlp_loss,
        {"w1": (784, 512), "b1": (512,), "w2": (512, 512), "b2": (512,), "w3": (512, 10), "b3": (10,)},
        (128, 784),
    ),
    "cnn": (
        cnn_loss,
        {"c1": (16, 1, 3, 3), "cb1": (16,), "c2": (32, 16, 3, 3), "cb2": (32,), "w": (1568, 10), "b": (10,)},
        (32, 1, 28, 28),
    ),
}


# ---------------------------------------------------------------- timing
class Runner:
    """One framework's forward and step closures for one model, plus what a first step produced."""

    def __init__(self, forward: Any, step: Any, extra: dict) -> None:
        self.forward, self.step, self.extra = forward, step, extra


def _burn_runner(name: str, data: dict, checkpointing: str) -> tuple[Runner, dict]:
    loss_fn, _, _ = MODELS[name]
    dev = burn.device("cpu", autodiff=True, checkpointing=checkpointing)
    params = {k: burn.from_numpy(v, device=dev).require_grad() for k, v in data["params"].items()}
    x = burn.from_numpy(data["x"], device=dev)
    onehot = burn.from_numpy(data["onehot"], device=dev)

    def forward() -> Any:
        return loss_fn(BurnOps, params, x, onehot)

    def step() -> Any:
        return forward().backward()

    loss = forward()
    extra = {"graph_bytes": dev.backend.graph_bytes(loss.primitive), "loss": loss.item()}
    grads = loss.backward()
    return Runner(forward, step, extra), {k: t.grad(grads).numpy() for k, t in params.items()}


def _torch_runner(torch: Any, name: str, data: dict) -> tuple[Runner, dict]:
    loss_fn, _, _ = MODELS[name]
    params = {k: torch.tensor(v, requires_grad=True) for k, v in data["params"].items()}
    x, onehot = torch.tensor(data["x"]), torch.tensor(data["onehot"])
    ops = TorchOps(torch)

    def forward() -> Any:
        return loss_fn(ops, params, x, onehot)

    def step() -> Any:
        for p in params.values():
            p.grad = None
        forward().backward()

    step()
    return Runner(forward, step, {}), {k: p.grad.numpy().copy() for k, p in params.items()}


def _time_interleaved(runners: dict[str, Runner], repeat: int) -> dict[str, dict]:
    """Best-of-``repeat`` forward and step seconds per runner. Runs alternate between runners within
    each round, so a load spike on a shared machine hits all of them alike."""
    best = {k: {"forward_s": float("inf"), "step_s": float("inf")} for k in runners}
    for r in runners.values():  # warm-up
        r.step()
    for _ in range(repeat):
        for key, r in runners.items():
            for what, fn in (("forward_s", r.forward), ("step_s", r.step)):
                t0 = time.perf_counter()
                fn()
                best[key][what] = min(best[key][what], time.perf_counter() - t0)
    for key, r in runners.items():
        best[key]["overhead"] = best[key]["step_s"] / best[key]["forward_s"]
        best[key].update(r.extra)
    return best


def _check_gradients(torch: Any, name: str, data: dict) -> None:
    """float64 gradients: balanced == none, and == PyTorch's when torch is importable."""
    d64 = {
        "params": {k: v.astype(np.float64) for k, v in data["params"].items()},
        "x": data["x"].astype(np.float64),
        "onehot": data["onehot"].astype(np.float64),
    }
    _, ref = _burn_runner(name, d64, "none")
    _, bal = _burn_runner(name, d64, "balanced")
    others = [("balanced", bal)]
    if torch is not None:
        others.append(("torch", _torch_runner(torch, name, d64)[1]))
    for label, grads in others:
        for k in ref:
            np.testing.assert_allclose(grads[k], ref[k], rtol=1e-9, atol=1e-12, err_msg=f"{name} {k} {label}")


def _torch(install: bool) -> tuple[Any, str]:
    try:
        return importlib.import_module("torch"), ""
    except ImportError as exc:
        if not install:
            return None, f"not importable ({exc}); run with --install-torch"
    cmd = [sys.executable, "-m", "pip", "install", "-q", TORCH_SPEC]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"pip install {TORCH_SPEC} failed: {done.stderr.strip()[-300:]}"
    importlib.invalidate_caches()
    try:
        return importlib.import_module("torch"), ""
    except ImportError as exc:
        return None, f"installed but not importable: {exc}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="3 repeats (smoke run)")
    parser.add_argument("--install-torch", action="store_true", help=f"pip install {TORCH_SPEC} if missing")
    args = parser.parse_args()
    repeat = 3 if args.quick else args.repeat
    torch, torch_reason = _torch(args.install_torch)
    rng = np.random.default_rng(0)
    report: dict[str, Any] = {
        "benchmark": "autodiff",
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "burn": burn.__version__,
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__ if torch is not None else None,
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        # numpy's BLAS and torch's pools both read these; set them equal (e.g. OMP_NUM_THREADS=4
        # OPENBLAS_NUM_THREADS=4) so neither framework gets more cores or spins on the other's
        "thread_env": {
            k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        },
        "torch_unavailable": torch_reason or None,
        "repeat": repeat,
        "goal": "burn step time within 1.5x of PyTorch's on the same model (step_ratio <= 1.5)",
        "models": {},
    }
    for name, (_, shapes, x_shape) in MODELS.items():
        labels = rng.integers(0, 10, size=x_shape[0])
        data = {
            "params": _init(rng, shapes),
            "x": rng.standard_normal(x_shape).astype(np.float32),
            "onehot": np.eye(10, dtype=np.float32)[labels],
        }
        _check_gradients(torch, name, data)
        runners = {
            "burn": _burn_runner(name, data, "none")[0],
            "burn_balanced": _burn_runner(name, data, "balanced")[0],
        }
        if torch is not None:
            runners["torch"] = _torch_runner(torch, name, data)[0]
        entry: dict[str, Any] = _time_interleaved(runners, repeat)
        kept = {"none": entry["burn"]["graph_bytes"], "balanced": entry["burn_balanced"]["graph_bytes"]}
        entry["graph_bytes"] = kept
        entry["memory_saved_fraction"] = 1.0 - kept["balanced"] / kept["none"]
        if torch is not None:
            entry["step_ratio"] = entry["burn"]["step_s"] / entry["torch"]["step_s"]
            entry["within_goal"] = entry["step_ratio"] <= 1.5
        report["models"][name] = entry
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
