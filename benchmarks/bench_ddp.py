"""Data-parallel training over MPI ranks, burn against PyTorch DDP: step scaling and all-reduce bandwidth.

Each configuration is a fresh ``mpiexec -n N`` job of this script in worker mode, one process per device.
Every rank trains the same model on its own synthetic batch of ``--batch`` items (weak scaling: the global
batch is N x batch), with SGD (momentum 0.9):

- ``--model mlp``: 784 -> hidden -> hidden -> 10, cross-entropy;
- ``--model resnet``: a ResNet-like CNN on (3, 32, 32) images: a 3x3 stem to 64 channels, then one basic
  residual block (two 3x3 conv + batch norm, 1x1 projection where the shape changes) per stage at
  64/128/256/512 channels (strides 1/2/2/2), global average pool, 10-way linear; 4.9 M parameters.

burn's step is the DDP Learner strategy's: forward, backward handing each gradient to its bucket the moment
it is final (buckets of ``--bucket-mb`` start their all-reduce while backward goes on; ``--no-overlap`` waits
for backward), one optimizer step on the item-weighted average. The peer (``--peer torch``, cuda only) is
``torch.nn.parallel.DistributedDataParallel`` on the same model, batch, buckets and optimizer, over NCCL with
TF32 off on cuda (burn-cuda's matmuls are exact fp32 by default), over gloo with one thread a rank on cpu.

Per configuration, rank 0 reports ``step_ms`` (median over ``--blocks`` timed blocks of ``--steps`` steps,
each block started at a barrier), ``items_per_s`` (global) and ``efficiency`` = items/s(N) / (N x items/s of
one process training alone, without any data-parallel machinery). Then the all-reduce bandwidth of
``--allreduce-mb`` float32 buffers through burn's collective and through the library underneath called
directly (NCCL's ``allReduce`` through CuPy, or mpi4py's ``Allreduce``), as algbw = bytes / time and busbw =
algbw x 2 (N - 1) / N (NCCL's convention), with ``burn / library`` time ratios.

    python benchmarks/bench_ddp.py [--ranks 1,2] [--backend cpu|cuda] [--model mlp|resnet] [--peer torch]

CPU ranks run numpy with one BLAS thread each (OMP/OPENBLAS/MKL_NUM_THREADS=1), so N ranks use N cores; on
a machine with fewer cores than ranks the figure measures contention, not scaling. ``--backend cuda`` puts
rank r on ``cuda:<local rank>`` and reduces with NCCL (``--collective mpi`` to compare). NVLink multicast
stays off (``NCCL_NVLS_ENABLE=0``). ``BENCH_DDP_PROFILE=<folder>`` writes a cProfile of burn's steps there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
RESNET_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # (channels, stride) of each stage's block
IMAGE = (3, 32, 32)
CLASSES = 10


# --------------------------------------------------------------------------- timing (both peers)
def _timed_blocks(
    step: Callable[[], None], sync: Callable[[], None], barrier: Callable[[], None], args: argparse.Namespace
) -> float:
    """Seconds per step: the median over ``args.blocks`` blocks of ``args.steps`` steps, each block
    starting at a barrier on a synced device (one late rank then shows as a slow block)."""
    for _ in range(args.warmup):
        step()
    sync()
    blocks = []
    for _ in range(args.blocks):
        barrier()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        sync()
        blocks.append((time.perf_counter() - t0) / args.steps)
    blocks.sort()
    return blocks[len(blocks) // 2]


def _profile(
    name: str, step: Callable[[], None], sync: Callable[[], None], args: argparse.Namespace, device: Any
) -> dict[str, float]:
    """With ``BENCH_DDP_PROFILE=<folder>``: cProfile ``args.steps`` warm steps into ``<folder>/<name>.txt``
    (the 40 costliest functions by cumulative time): where a slow step's host time goes; returns the
    device's counts per step (``burn.profile``: kernels, submits, host syncs, fused kernels)."""
    folder = os.environ.get("BENCH_DDP_PROFILE")
    if not folder:
        return {}
    import cProfile
    import io
    import pstats

    import burn

    profiler = cProfile.Profile()
    with burn.profile(device) as counts:
        profiler.enable()
        for _ in range(args.steps):
            step()
        sync()
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
    with open(os.path.join(folder, f"{args.worker}-{name}.txt"), "w") as handle:
        handle.write(text.getvalue())
    return {k: v / args.steps for k, v in counts.as_dict().items()}


def _bandwidth(seconds: float, nbytes: int, size: int) -> dict[str, float]:
    algbw = nbytes / seconds
    return {
        "ms": round(1e3 * seconds, 4),
        "algbw_gb_s": round(algbw / 1e9, 2),
        "busbw_gb_s": round(algbw * 2 * (size - 1) / size / 1e9, 2),
    }


def _median_time(call: Callable[[], None], barrier: Callable[[], None], reps: int) -> float:
    call()
    times = []
    for _ in range(reps):
        barrier()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


# --------------------------------------------------------------------------- burn
def _burn_model(args: argparse.Namespace, dev: Any) -> Any:
    from burn import nn
    from burn.nn import functional as F

    if args.model == "mlp":

        class Mlp(nn.Module):
            def __init__(self) -> None:
                self.l1 = nn.LinearConfig(784, args.hidden).init(dev)
                self.l2 = nn.LinearConfig(args.hidden, args.hidden).init(dev)
                self.l3 = nn.LinearConfig(args.hidden, CLASSES).init(dev)

            def forward(self, x: Any) -> Any:
                return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))

        return Mlp()

    def conv_bn(c_in: int, c_out: int, k: int, stride: int) -> tuple[Any, Any]:
        conv = nn.Conv2dConfig((c_in, c_out), k, stride=stride, padding=k // 2, bias=False).init(dev)
        return conv, nn.BatchNormConfig(c_out).init(dev)

    class Block(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            self.c1, self.b1 = conv_bn(c_in, c_out, 3, stride)
            self.c2, self.b2 = conv_bn(c_out, c_out, 3, 1)
            self.proj = list(conv_bn(c_in, c_out, 1, stride)) if (c_in, stride) != (c_out, 1) else []

        def forward(self, x: Any) -> Any:
            y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
            skip = self.proj[1](self.proj[0](x)) if self.proj else x
            return F.relu(y + skip)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            self.stem, self.bn = conv_bn(IMAGE[0], RESNET_STAGES[0][0], 3, 1)
            widths = [RESNET_STAGES[0][0], *(c for c, _ in RESNET_STAGES)]
            self.blocks = [Block(widths[i], c, s) for i, (c, s) in enumerate(RESNET_STAGES)]
            self.fc = nn.LinearConfig(RESNET_STAGES[-1][0], CLASSES).init(dev)

        def forward(self, x: Any) -> Any:
            x = F.relu(self.bn(self.stem(x)))
            for block in self.blocks:
                x = block(x)
            return self.fc(x.mean((2, 3)))

    return ResNet()


def _batch(args: argparse.Namespace, rank: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(rank)
    shape = (args.batch, 784) if args.model == "mlp" else (args.batch, *IMAGE)
    return rng.standard_normal(shape, dtype=np.float32), rng.integers(0, CLASSES, args.batch)


def _burn_worker(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    import burn
    import numpy as np
    from burn.nn import functional as F
    from burn.optim import GradientsParams
    from burn_train.distributed import GradientReducer, world
    from burn_train.distributed._strategy import _early_gradients

    w = world(timeout=300.0)
    dev = burn.device(args.backend, autodiff=True)
    if args.backend == "cuda":
        dev = w.device_for(dev)
    inner = dev.inner
    collective = w.collective_for(inner, args.collective)
    burn.seed(0)
    model = _burn_model(args, dev)
    record = w.mpi.broadcast_object(model.record() if w.rank == 0 else None)
    model.load_record(record)
    opt = burn.optim.SgdConfig(momentum=0.9).init()
    x_np, y_np = _batch(args, w.rank)
    x = burn.from_numpy(x_np, device=dev)
    y = burn.from_numpy(y_np, device=dev).cast(burn.int64)
    state = {"model": model}

    def sync() -> None:
        if args.backend == "cuda":
            import burn_cuda

            burn_cuda.synchronize(inner)  # runs the fusion decorator's recorded ops first

    def plain_step() -> None:
        loss = F.cross_entropy(state["model"](x), y)
        state["model"] = opt.step(0.01, state["model"], loss.backward())

    reducer = GradientReducer(collective, model, inner, int(args.bucket_mb * 2**20))

    def ddp_step() -> None:
        m = state["model"]
        reduction = reducer.start(args.batch)
        early: dict[str, Any] = {}
        overlap = _early_gradients(m, reduction, early) if args.overlap else contextlib.nullcontext()
        with overlap:
            grads = GradientsParams.from_grads(F.cross_entropy(m(x), y).backward(), m)
        for pid, _, _ in reducer.params:
            g = grads.get(pid)
            if pid not in early and g is not None:
                reduction.add(pid, g)
        reduced, _, _ = reduction.finish()
        if args.wait_each_step:  # the host waits for this step's all-reduces before the optimizer
            reducer.wait()
        state["model"] = opt.step(0.01, m, reduced)

    result: dict[str, Any] = {
        "ranks": w.size,
        "collective": collective.name,
        "device": str(inner),
        "params": sum(int(np.prod(shape)) for _, shape, _ in reducer.params),
        "buckets": len(reducer.buckets),
    }
    if w.size == 1:  # the efficiency's base: one process, no data-parallel machinery
        result["alone_step_ms"] = 1e3 * _timed_blocks(plain_step, sync, lambda: None, args)
        result["alone_counts"] = _profile("alone", plain_step, sync, args, inner)
    result["step_ms"] = 1e3 * _timed_blocks(ddp_step, sync, w.mpi.barrier, args)
    counts = _profile(f"ddp-{w.size}-rank{w.rank}", ddp_step, sync, args, inner)
    if counts:
        result["counts"] = counts
    result["allreduce"] = _burn_allreduce(args, w, collective)
    return w.rank, result


def _library_call(collective: Any, buf: Any) -> Callable[[], None]:
    """The all-reduce of ``buf`` through the library under ``collective``, called directly: NCCL's
    ``allReduce`` on the same communicator and stream (waited on with a stream sync), or mpi4py's
    blocking ``Allreduce``."""
    if collective.name == "nccl":
        nccl, stream, ptr = collective.nccl, collective.stream, buf.data.ptr

        def nccl_call() -> None:
            with collective.device:
                collective.comm.allReduce(ptr, ptr, buf.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
                stream.synchronize()

        return nccl_call
    MPI = collective.MPI
    return lambda: collective.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)


def _burn_allreduce(args: argparse.Namespace, w: Any, collective: Any) -> list[dict[str, Any]]:
    """All-reduce of each size through burn's collective and through the library it wraps."""
    import numpy as np

    rows = []
    for mb in args.allreduce_mb:
        n = int(mb * 2**20 // 4)
        if collective.name == "nccl":
            with collective.device:
                buf = collective.cupy.ones(n, dtype=collective.cupy.float32)
        else:
            buf = np.ones(n, dtype=np.float32)
        burn_s = _median_time(partial(collective.all_reduce, buf), w.mpi.barrier, args.allreduce_reps)
        lib_s = _median_time(_library_call(collective, buf), w.mpi.barrier, args.allreduce_reps)
        rows.append(
            {
                "mb": mb,
                "burn": _bandwidth(burn_s, n * 4, w.size),
                "library": _bandwidth(lib_s, n * 4, w.size),
                "burn_over_library": round(burn_s / lib_s, 3),
            }
        )
    return rows


# --------------------------------------------------------------------------- PyTorch DDP (the peer)
def _torch_model(args: argparse.Namespace, torch: Any) -> Any:
    tnn = torch.nn
    if args.model == "mlp":
        h = args.hidden
        return tnn.Sequential(
            tnn.Linear(784, h), tnn.ReLU(), tnn.Linear(h, h), tnn.ReLU(), tnn.Linear(h, CLASSES)
        )

    def conv_bn(c_in: int, c_out: int, k: int, stride: int) -> Any:
        return tnn.Sequential(
            tnn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False), tnn.BatchNorm2d(c_out)
        )

    class Block(tnn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.body = tnn.Sequential(
                conv_bn(c_in, c_out, 3, stride), tnn.ReLU(), conv_bn(c_out, c_out, 3, 1)
            )
            self.proj = conv_bn(c_in, c_out, 1, stride) if (c_in, stride) != (c_out, 1) else tnn.Identity()

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.proj(x))

    widths = [RESNET_STAGES[0][0], *(c for c, _ in RESNET_STAGES)]
    return tnn.Sequential(
        conv_bn(IMAGE[0], widths[0], 3, 1),
        tnn.ReLU(),
        *(Block(widths[i], c, s) for i, (c, s) in enumerate(RESNET_STAGES)),
        tnn.AdaptiveAvgPool2d(1),
        tnn.Flatten(),
        tnn.Linear(widths[-1], CLASSES),
    )


def _torch_worker(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    import torch
    import torch.distributed as dist
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    if args.backend == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        torch.cuda.set_device(local)
        dev, group = torch.device("cuda", local), "nccl"
    else:
        torch.set_num_threads(1)  # as burn's CPU ranks: one BLAS thread each
        dev, group = torch.device("cpu"), "gloo"
    port = comm.bcast(_free_port() if rank == 0 else None, root=0)
    dist.init_process_group(group, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
    torch.manual_seed(0)
    model = _torch_model(args, torch).to(dev)
    x_np, y_np = _batch(args, rank)
    x, y = torch.from_numpy(x_np).to(dev), torch.from_numpy(y_np).to(dev)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def stepper(net: Any) -> Callable[[], None]:
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()

        return step

    result: dict[str, Any] = {"ranks": size, "collective": group, "device": str(dev)}
    if size == 1:
        result["alone_step_ms"] = 1e3 * _timed_blocks(stepper(model), sync, lambda: None, args)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model,
        device_ids=[local] if dev.type == "cuda" else None,
        bucket_cap_mb=args.bucket_mb,
        gradient_as_bucket_view=True,
    )
    result["step_ms"] = 1e3 * _timed_blocks(stepper(ddp), sync, comm.Barrier, args)
    dist.destroy_process_group()
    return rank, result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- launching
def _launcher() -> str:
    from burn_train.distributed._info import find_launcher

    launcher = find_launcher()
    if launcher is None:
        raise SystemExit("bench_ddp: no mpiexec found: pip install 'burn-core[mpi]'")
    return launcher


def _job(peer: str, n: int, forwarded: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        cmd = [_launcher(), "-n", str(n), sys.executable, os.path.join(HERE, "bench_ddp.py"), *forwarded]
        cmd += ["--worker", peer, "--result", result]
        started = time.monotonic()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode != 0 or not os.path.exists(result):
            raise SystemExit(
                f"bench_ddp: {peer} with {n} rank(s) failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            )
        with open(result) as handle:
            run: dict[str, Any] = json.load(handle)
    if run["ranks"] != n:  # a launcher of another MPI than mpi4py's: each process a job of its own
        raise SystemExit(f"bench_ddp: {peer} was launched as {n} ranks but ran as {run['ranks']}")
    run["job_s"] = round(time.monotonic() - started, 1)
    return run


def _scaling(runs: list[dict[str, Any]], batch: int) -> None:
    """items/s and efficiency against one process alone, in place."""
    alone = next((r["alone_step_ms"] for r in runs if "alone_step_ms" in r), None)
    for r in runs:
        r["items_per_s"] = round(r["ranks"] * batch / (r["step_ms"] / 1e3), 1)
        if alone is not None:
            r["efficiency"] = round(alone / r["step_ms"], 3)  # = items/s(N) / (N x items/s alone)
        for key in ("step_ms", "alone_step_ms"):
            if key in r:
                r[key] = round(r[key], 3)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts to run")
    p.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--model", choices=("mlp", "resnet"), default="mlp")
    p.add_argument("--peer", choices=("none", "torch"), default="none", help="also run PyTorch DDP")
    p.add_argument("--collective", choices=("auto", "mpi", "nccl"), default="auto")
    p.add_argument("--batch", type=int, default=128, help="items per rank per step")
    p.add_argument("--hidden", type=int, default=1024, help="the MLP's hidden width")
    p.add_argument("--steps", type=int, default=10, help="steps per timed block")
    p.add_argument("--blocks", type=int, default=5, help="timed blocks (the median is reported)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--no-overlap", dest="overlap", action="store_false", help="reduce after backward")
    p.add_argument(
        "--wait-each-step",
        action="store_true",
        help="burn waits for each step's all-reduces before its optimizer step (NCCL does not need to)",
    )
    p.add_argument(
        "--allreduce-mb",
        type=lambda s: [float(v) for v in s.split(",")],
        default=[64.0],
        help="comma-separated all-reduce buffer sizes in MiB",
    )
    p.add_argument("--allreduce-reps", type=int, default=10)
    p.add_argument("--out", help="also write the JSON here")
    p.add_argument("--worker", choices=("burn", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = _parser().parse_args()
    if args.worker:
        rank, result = _burn_worker(args) if args.worker == "burn" else _torch_worker(args)
        if rank == 0:
            with open(args.result, "w") as handle:
                json.dump(result, handle)
        return
    ranks = [int(r) for r in args.ranks.split(",")]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on the lent machines
    skip_next = {"--ranks", "--out", "--peer"}  # the parent's own options; the rest goes to the workers
    forwarded, prev = [], None
    for a in sys.argv[1:]:
        if prev in skip_next or a.split("=")[0] in skip_next:
            prev = a
            continue
        forwarded.append(a)
        prev = a
    peers = ["burn"] + (["torch"] if args.peer == "torch" else [])
    out: dict[str, Any] = {
        "benchmark": "ddp",
        "backend": args.backend,
        "model": args.model if args.model == "resnet" else f"mlp 784-{args.hidden}-{args.hidden}-10",
        "batch_per_rank": args.batch,
        "overlap": args.overlap,
        "wait_each_step": args.wait_each_step,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }
    for peer in peers:
        runs = [_job(peer, n, forwarded, env) for n in ranks]
        _scaling(runs, args.batch)
        out[peer] = runs
    if "torch" in out:
        out["burn_over_torch_step"] = {
            str(b["ranks"]): round(b["step_ms"] / t["step_ms"], 3) for b, t in zip(out["burn"], out["torch"])
        }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
