"""Data-parallel training throughput over MPI ranks: 1 rank against N ranks, and all-reduce bandwidth.

Each configuration is a fresh ``mpiexec -n N`` job of this script in worker mode. Every rank trains an
MLP (784 -> hidden -> hidden -> 10, cross-entropy) on synthetic data with ``--batch`` items per rank
(weak scaling: the global batch is N x batch) through burn_train.distributed's pieces, as the DDP
Learner strategy does: forward + backward, gradients packed into buckets and all-reduced
(``GradientReducer``), one optimizer step. Per configuration, rank 0 reports the step time (median of
``--steps`` steps after warm-up), the global throughput in items/s, the share of the step spent
reducing, and the all-reduce bandwidth of a ``--allreduce-mb`` float32 buffer (algbw = bytes/time;
busbw = algbw * 2 (N - 1) / N, NCCL's convention). ``efficiency`` = throughput(N) / (N x
throughput(1)).

    python benchmarks/bench_ddp.py [--ranks 1,2] [--backend cpu|cuda] [--steps 30] [--out result.json]

CPU ranks run numpy with one BLAS thread each (OMP/OPENBLAS/MKL_NUM_THREADS=1), so N ranks use N cores;
on a machine with fewer cores than ranks the figure measures contention, not scaling. ``--backend
cuda`` puts rank r on ``cuda:<local rank>`` and reduces with NCCL (``--collective mpi`` to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _worker(args: argparse.Namespace) -> None:
    import burn
    import numpy as np
    from burn import nn
    from burn.nn import functional as F
    from burn.optim import GradientsParams
    from burn_train.distributed import GradientReducer, world

    w = world(timeout=300.0)
    kind = args.backend
    dev = burn.device(kind, autodiff=True)
    if kind == "cuda":
        dev = w.device_for(dev)
    collective = w.collective_for(dev.inner, args.collective)

    class Mlp(nn.Module):
        def __init__(self) -> None:
            self.l1 = nn.LinearConfig(784, args.hidden).init(dev)
            self.l2 = nn.LinearConfig(args.hidden, args.hidden).init(dev)
            self.l3 = nn.LinearConfig(args.hidden, 10).init(dev)

        def forward(self, x: Any) -> Any:
            return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))

    burn.seed(0)
    model = Mlp()
    record = w.mpi.broadcast_object(model.record() if w.rank == 0 else None)
    model.load_record(record)
    reducer = GradientReducer(collective, model, dev.inner, int(args.bucket_mb * 2**20))
    opt = burn.optim.SgdConfig(momentum=0.9).init()
    rng = np.random.default_rng(w.rank)
    x = burn.from_numpy(rng.standard_normal((args.batch, 784), dtype=np.float32), device=dev)
    y = burn.from_numpy(rng.integers(0, 10, args.batch), device=dev).cast(burn.int64)

    def sync() -> None:
        if kind == "cuda":
            import burn_cuda

            burn_cuda.synchronize(dev.inner)

    def step(model: Any) -> tuple[Any, float]:
        loss = F.cross_entropy(model(x), y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        sync()
        t0 = time.perf_counter()
        reduction = reducer.start(args.batch)
        for pid, _, _ in reducer.params:
            g = grads.get(pid)
            if g is not None:
                reduction.add(pid, g)
        reduced, _, _ = reduction.finish()
        sync()
        reduce_s = time.perf_counter() - t0
        return opt.step(0.01, model, reduced), reduce_s

    for _ in range(args.warmup):
        model, _ = step(model)
    times, reduces = [], []
    for _ in range(args.steps):
        w.mpi.barrier()
        t0 = time.perf_counter()
        model, r = step(model)
        sync()
        times.append(time.perf_counter() - t0)
        reduces.append(r)
    # all-reduce bandwidth on the collective's own buffers
    n = int(args.allreduce_mb * 2**20 // 4)
    if collective.name == "nccl":
        import cupy

        with cupy.cuda.Device(dev.inner.index):
            buf = cupy.ones(n, dtype=cupy.float32)
    else:
        buf = np.ones(n, dtype=np.float32)
    collective.all_reduce(buf)
    ar = []
    for _ in range(args.allreduce_reps):
        w.mpi.barrier()
        t0 = time.perf_counter()
        collective.all_reduce(buf)
        ar.append(time.perf_counter() - t0)
    step_s = float(np.median(times))
    ar_s = float(np.median(ar))
    algbw = n * 4 / ar_s
    result = {
        "ranks": w.size,
        "collective": collective.name,
        "device": str(dev.inner),
        "buckets": len(reducer.buckets),
        "params": sum(int(np.prod(shape)) for _, shape, _ in reducer.params),
        "step_ms": 1e3 * step_s,
        "reduce_ms": 1e3 * float(np.median(reduces)),
        "reduce_share": float(np.median(reduces)) / step_s,
        "items_per_s": w.size * args.batch / step_s,
        "allreduce_mb": args.allreduce_mb,
        "allreduce_ms": 1e3 * ar_s,
        "allreduce_algbw_gb_s": algbw / 1e9,
        "allreduce_busbw_gb_s": algbw * 2 * (w.size - 1) / w.size / 1e9,
    }
    if w.rank == 0:
        with open(args.result, "w") as handle:
            json.dump(result, handle)


def _launcher() -> str:
    from burn_train.distributed._info import find_launcher

    launcher = find_launcher()
    if launcher is None:
        raise SystemExit("bench_ddp: no mpiexec found: pip install 'burn-core[mpi]'")
    return launcher


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts to run")
    p.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--collective", choices=("auto", "mpi", "nccl"), default="auto")
    p.add_argument("--batch", type=int, default=128, help="items per rank per step")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--allreduce-mb", type=float, default=64.0)
    p.add_argument("--allreduce-reps", type=int, default=10)
    p.add_argument("--out", help="also write the JSON here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        _worker(args)
        return
    ranks = [int(r) for r in args.ranks.split(",")]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on the lent machines
    runs = []
    skip_next = {"--ranks", "--out"}  # the parent's own options; the rest goes to the workers
    forwarded, prev = [], None
    for a in sys.argv[1:]:
        if prev in skip_next or a.split("=")[0] in skip_next:
            prev = a
            continue
        forwarded.append(a)
        prev = a
    for n in ranks:
        with tempfile.TemporaryDirectory() as tmp:
            result = os.path.join(tmp, "result.json")
            cmd = [_launcher(), "-n", str(n), sys.executable, os.path.join(HERE, "bench_ddp.py"), *forwarded]
            cmd += ["--worker", "--result", result]
            started = time.monotonic()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
            if done.returncode != 0 or not os.path.exists(result):
                raise SystemExit(
                    f"bench_ddp: {n} rank(s) failed ({done.returncode}):\n{done.stdout}{done.stderr}"
                )
            with open(result) as handle:
                run = json.load(handle)
            run["job_s"] = time.monotonic() - started
            runs.append(run)
    base = next((r["items_per_s"] for r in runs if r["ranks"] == 1), None)
    for r in runs:
        r["efficiency"] = r["items_per_s"] / (r["ranks"] * base) if base else None
    out = {
        "benchmark": "ddp",
        "backend": args.backend,
        "model": f"mlp 784-{args.hidden}-{args.hidden}-10",
        "batch_per_rank": args.batch,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "runs": runs,
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
