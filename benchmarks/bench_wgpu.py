"""burn-wgpu benchmarks, side by side with peers in one run; prints one JSON document.

* matmul 1024/2048/4096 fp32 GFLOP/s vs CuPy (cuBLAS);
* element-wise add bandwidth vs the device's buffer-to-buffer copy bandwidth;
* per-op dispatch overhead: many tiny adds then one read (batched) vs a read after every op, and
  vs a batch size of 1 (one submit per dispatch);
* an MLP training step (784-1024-1024-10, batch 256, SGD) vs PyTorch CUDA.

Peers that are missing are skipped with the reason recorded. On a CPU adapter (lavapipe) the sizes
shrink so the run stays short; ``--full`` keeps the GPU sizes anyway.

    python benchmarks/bench_wgpu.py [--out results.json] [--full]
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

import burn
import numpy as np
from _common import emit_json, time_reps


def _peer_cupy() -> tuple[Any, str]:
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
        return cp, ""
    except Exception as exc:
        return None, f"cupy unavailable: {type(exc).__name__}: {exc}"


def _peer_torch() -> tuple[Any, str]:
    try:
        import torch

        if not torch.cuda.is_available():
            return None, "torch is installed but CUDA is not available"
        return torch, ""
    except Exception as exc:
        return None, f"torch unavailable: {type(exc).__name__}: {exc}"


def bench_matmul(dev, sizes, cp) -> list[dict]:
    be = dev.backend
    rows = []
    for n in sizes:
        rng = np.random.default_rng(0)
        a = burn.from_numpy(rng.standard_normal((n, n), dtype=np.float32), device=dev)
        b = burn.from_numpy(rng.standard_normal((n, n), dtype=np.float32), device=dev)
        reps = max(2, min(20, int(2e11 / (2 * n**3))))
        sec = time_reps(lambda a=a, b=b: a @ b, be.sync, reps)
        row = {"n": n, "wgpu_gflops": round(2 * n**3 / sec / 1e9, 1), "wgpu_ms": round(sec * 1e3, 3)}
        if cp is not None:
            ca, cb = cp.asarray(a.numpy()), cp.asarray(b.numpy())
            sync = cp.cuda.Device().synchronize
            csec = time_reps(lambda ca=ca, cb=cb: ca @ cb, sync, reps * 5)
            row.update(cupy_gflops=round(2 * n**3 / csec / 1e9, 1), cupy_ms=round(csec * 1e3, 3))
            row["wgpu_vs_cupy"] = round(csec / sec, 3)
            ref = cp.asnumpy(ca @ cb)  # a timing only counts if the result is right
            row["max_rel_err_vs_cupy"] = float(np.abs((a @ b).numpy() - ref).max() / np.abs(ref).max())
        elif n <= 1024:
            ref = a.numpy() @ b.numpy()
            row["max_rel_err_vs_numpy"] = float(np.abs((a @ b).numpy() - ref).max() / np.abs(ref).max())
        rows.append(row)
    return rows


def bench_bandwidth(dev, n: int, cp) -> dict:
    be = dev.backend
    x = burn.ones((n,), device=dev)
    y = burn.ones((n,), device=dev)
    sec_add = time_reps(lambda: x + y, be.sync, 20)
    src, dst = x.primitive, be.empty((n,), burn.float32)
    sec_copy = time_reps(lambda: be.ex.copy(src.buffer, 0, dst.buffer, 0, n * 4), be.sync, 20)
    add_gbs = 3 * n * 4 / sec_add / 1e9  # two reads, one write
    copy_gbs = 2 * n * 4 / sec_copy / 1e9  # one read, one write
    row = {
        "elements": n,
        "add_gb_s": round(add_gbs, 1),
        "copy_buffer_to_buffer_gb_s": round(copy_gbs, 1),
        "add_vs_copy": round(add_gbs / copy_gbs, 3),
    }
    if cp is not None:  # the device's copy bandwidth through CUDA, for scale
        ca, cb = cp.ones(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32)
        csec = time_reps(lambda: cp.copyto(cb, ca), cp.cuda.Device().synchronize, 50)
        row["cupy_copy_gb_s"] = round(2 * n * 4 / csec / 1e9, 1)
        row["add_vs_cupy_copy"] = round(add_gbs / row["cupy_copy_gb_s"], 3)
    return row


def bench_dispatch(dev, ops: int) -> dict:
    be = dev.backend
    x0 = burn.ones((16,), device=dev)

    def chain():
        x = x0
        for _ in range(ops):
            x = x + 1.0
        return x.numpy()

    def read_each():
        x = x0
        for _ in range(ops // 10):
            x = x + 1.0
            x.numpy()

    batched = time_reps(chain, be.sync, 3)
    before = be.ex.stats["submits"]
    chain()
    submits = be.ex.stats["submits"] - before
    each = time_reps(read_each, be.sync, 3)
    saved, be.ex.batch_size = be.ex.batch_size, 1
    try:
        unbatched = time_reps(chain, be.sync, 2)
    finally:
        be.ex.batch_size = saved
    return {
        "ops": ops,
        "batch_size": be.ex.batch_size,
        "batched_us_per_op": round(batched / ops * 1e6, 2),
        "submits_per_chain": submits,
        "batch_size_1_us_per_op": round(unbatched / ops * 1e6, 2),
        "read_after_each_op_us": round(each / (ops // 10) * 1e6, 2),
    }


def _mlp_data(batch: int, dims: tuple[int, ...]):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, dims[0]), dtype=np.float32)
    y = rng.integers(0, dims[-1], batch)
    ws = [
        (rng.standard_normal((i, o), dtype=np.float32) / np.sqrt(i)).astype(np.float32)
        for i, o in zip(dims, dims[1:])
    ]
    return x, y, ws


def bench_mlp(dev, batch: int, dims: tuple[int, ...], steps: int, torch) -> dict:
    import burn.nn.functional as F

    x_np, y_np, ws_np = _mlp_data(batch, dims)
    adev = burn.device(dev, autodiff=True)
    x = burn.from_numpy(x_np, device=adev)
    y = burn.from_numpy(y_np.astype(np.int32), device=adev)
    params = [burn.from_numpy(w, device=dev) for w in ws_np]
    lr = 0.01

    def step():
        leaves = [p.to(adev).require_grad() for p in params]
        h = x
        for i, w in enumerate(leaves):
            h = h @ w
            if i < len(leaves) - 1:
                h = F.relu(h)
        loss = F.cross_entropy(h, y)
        grads = loss.backward()
        for i, w in enumerate(leaves):
            params[i] = params[i] - lr * w.grad(grads)
        return loss

    be = dev.backend
    sec = time_reps(step, be.sync, steps, warmup=2)
    row = {"batch": batch, "dims": list(dims), "wgpu_ms_per_step": round(sec * 1e3, 3)}
    if torch is not None:
        tdev = torch.device("cuda")
        tx = torch.from_numpy(x_np).to(tdev)
        ty = torch.from_numpy(y_np).to(tdev)
        tw = [torch.from_numpy(w).to(tdev).requires_grad_() for w in ws_np]
        opt = torch.optim.SGD(tw, lr=lr)

        def tstep():
            opt.zero_grad()
            h = tx
            for i, w in enumerate(tw):
                h = h @ w
                if i < len(tw) - 1:
                    h = torch.relu(h)
            loss = torch.nn.functional.cross_entropy(h, ty)
            loss.backward()
            opt.step()

        tsec = time_reps(tstep, torch.cuda.synchronize, steps * 5, warmup=3)
        row.update(torch_ms_per_step=round(tsec * 1e3, 3), wgpu_vs_torch=round(tsec / sec, 3))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--full", action="store_true", help="GPU sizes even on a CPU adapter")
    args = ap.parse_args()
    dev = burn.device("wgpu")
    be = dev.backend
    info = be.ctx.adapter.info
    cpu_adapter = info.get("adapter_type") == "CPU" and not args.full
    cp, cp_reason = _peer_cupy()
    torch, torch_reason = _peer_torch()
    result: dict[str, Any] = {
        "benchmark": "bench_wgpu",
        "adapter": be.ctx.label,
        "portable_limits": be.ctx.portable,
        "python": platform.python_version(),
        "reduced_sizes_for_cpu_adapter": cpu_adapter,
        "skipped": {k: v for k, v in (("cupy", cp_reason), ("torch", torch_reason)) if v},
    }
    t0 = time.perf_counter()
    result["matmul"] = bench_matmul(dev, (128, 256) if cpu_adapter else (1024, 2048, 4096), cp)
    result["elementwise_bandwidth"] = bench_bandwidth(dev, 1 << 20 if cpu_adapter else 1 << 25, cp)
    result["dispatch_overhead"] = bench_dispatch(dev, 200 if cpu_adapter else 1000)
    mlp = ((64, (784, 128, 10)), 3) if cpu_adapter else ((256, (784, 1024, 1024, 10)), 20)
    result["mlp_train_step"] = bench_mlp(dev, mlp[0][0], mlp[0][1], mlp[1], torch)
    result["executor_stats"] = dict(be.ex.stats)
    result["pool_stats"] = dict(be.pool.stats)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
