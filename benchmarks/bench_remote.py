"""burn-remote over localhost against the same work on the local device; prints one JSON document.

Starts ``burn remote serve --backend BACKEND`` as a subprocess on a free port (or uses ``--url``), then
measures, in one run:

- ``stream``: a pipelined stream of 10,000 small element-wise ops on a (16,)-tensor followed by one read,
  remote against the same stream on the local numpy backend, best of 5 runs each, interleaved (goal:
  ratio <= 3);
- ``read_latency``: one small read (a round trip), median and p90 in microseconds;
- ``bandwidth``: a 256 MiB float32 tensor uploaded (``from_numpy`` + sync) and downloaded (``numpy()``),
  MB/s (goal >= 500);
- ``mlp_step`` (with ``--mlp``, for ``--backend cuda`` on the GPU machine): one training step of a
  784-512-512-10 MLP (batch 256, Adam) through the remote device, against the same step on the local
  BACKEND device: ms per step and the overhead of remoteness.

    python benchmarks/bench_remote.py [--backend cpu|cuda|wgpu] [--mlp] [--mib 256] [--out results.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import burn
import numpy as np
from _common import emit_json


def start_server(backend: str) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "burn", "remote", "serve", "--backend", backend, "--port", "0"]
    cmd += ["--max-session-mib", "8192", "--max-frame-mib", "64"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(120)
    if not line or "serving" not in line[0]:
        proc.kill()
        raise SystemExit(f"bench_remote: the server did not start ({line})")
    return proc, line[0].split()[-1]


def stream(dev: burn.Device, n: int) -> float:
    """Seconds for ``n`` small pipelined ops and one read at the end."""
    x = burn.tensor(np.linspace(-1, 1, 16, dtype=np.float32), device=dev)
    x.numpy()
    start = time.perf_counter()
    for _ in range(n // 4):
        x = x * 0.999
        x = x + 0.001
        x = x.relu()
        x = x - 0.0005
    x.numpy()
    return time.perf_counter() - start


def read_latency(dev: burn.Device, reps: int) -> dict[str, float]:
    x = burn.ones((4,), device=dev)
    x.numpy()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        x.numpy()
        times.append(time.perf_counter() - t0)
    times.sort()
    return {"median_us": 1e6 * statistics.median(times), "p90_us": 1e6 * times[int(0.9 * len(times))]}


def bandwidth(dev: burn.Device, mib: int) -> dict[str, float]:
    arr = np.random.default_rng(0).standard_normal(mib * (1 << 20) // 4).astype(np.float32)
    backend = dev.backend
    t0 = time.perf_counter()
    t = burn.from_numpy(arr, device=dev)
    backend.sync()
    up = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = t.numpy()
    down = time.perf_counter() - t0
    assert back.shape == arr.shape and back[-1] == arr[-1]
    mb = arr.nbytes / 1e6
    return {"mib": mib, "upload_mb_s": mb / up, "download_mb_s": mb / down}


def mlp_step(dev: burn.Device, steps: int) -> float:
    """Milliseconds per training step of a 784-512-512-10 MLP, batch 256, Adam."""
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)
    layers = [nn.LinearConfig(a, b).init(dev) for a, b in ((784, 512), (512, 512), (512, 10))]
    model = nn.Sequential(layers[0], nn.Relu(), layers[1], nn.Relu(), layers[2])
    opt = burn.optim.AdamConfig().init()
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((256, 784)).astype(np.float32), device=dev)
    y = burn.tensor(rng.integers(0, 10, 256), device=dev)

    def step() -> Any:
        nonlocal model
        loss = F.cross_entropy(model(x), y)
        model = opt.step(1e-3, model, loss.backward())
        return loss

    for _ in range(6):  # past planning and (on cuda) the CUDA-graph capture of the step: steady steps
        step().item()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    loss.item()
    return 1e3 * (time.perf_counter() - t0) / steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="cpu", help="the server's backend (default cpu)")
    p.add_argument("--url", default=None, help="use a running server instead of starting one")
    p.add_argument("--token", default=os.environ.get("BURN_REMOTE_TOKEN"), help="its token")
    p.add_argument("--ops", type=int, default=10_000)
    p.add_argument("--mib", type=int, default=256, help="size of the bandwidth tensor")
    p.add_argument("--mlp", action="store_true", help="also time an MLP training step (for cuda)")
    p.add_argument("--mlp-steps", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()

    proc = None
    url = args.url
    if url is None:
        proc, url = start_server(args.backend)
    try:
        remote = burn.device("remote", url=url, token=args.token)
        local_cpu = burn.device("cpu")
        stream(remote, 400), stream(local_cpu, 400)  # warm both paths
        # interleaved, best of 5 each: on a shared machine both sides see the same background load
        remote_runs, local_runs = [], []
        for _ in range(5):
            remote_runs.append(stream(remote, args.ops))
            local_runs.append(stream(local_cpu, args.ops))
        remote_s, local_s = min(remote_runs), min(local_runs)
        result: dict[str, Any] = {
            "benchmark": "bench_remote",
            "server_backend": args.backend,
            "url": url,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "stream": {
                "ops": args.ops,
                "remote_s": remote_s,
                "local_numpy_s": local_s,
                "remote_us_per_op": 1e6 * remote_s / args.ops,
                "local_us_per_op": 1e6 * local_s / args.ops,
                "ratio": remote_s / local_s,
                "goal_ratio": 3.0,
            },
            "read_latency": read_latency(remote, 200),
            "bandwidth": {**bandwidth(remote, args.mib), "goal_mb_s": 500},
        }
        if args.mlp:
            adev = burn.device("remote", url=url, token=args.token, autodiff=True)
            local = burn.device(args.backend, autodiff=True)
            remote_ms, local_ms = mlp_step(adev, args.mlp_steps), mlp_step(local, args.mlp_steps)
            result["mlp_step"] = {
                "local_device": str(local),
                "remote_ms": remote_ms,
                "local_ms": local_ms,
                "overhead_ratio": remote_ms / local_ms,
            }
        emit_json(result, args.out)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(10)


if __name__ == "__main__":
    main()
