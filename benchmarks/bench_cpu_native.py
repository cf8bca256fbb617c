"""Compiled cpu kernels (``burn._native``) against numpy and PyTorch CPU, in one run; prints one JSON object.

Workloads: an element-wise chain over a (1024, 1024) float32 tensor with a broadcast row
(``gelu(x * w + b) * sigmoid(x) - 0.5``, forward only), and bench_fusion's training steps (the MLP
784-1024-1024-10, batch 256, and the small CNN, batch 64; Adam, cross-entropy, fp32). Each runs on:

- ``numpy``: ``burn.device("cpu")``, today's default (one numpy call per op);
- ``fusion_numpy``: ``cpu`` with the fusion decorator, plans run op by op on numpy (``BURN_CPU_NATIVE=0``);
- ``fusion_native``: the same with compiled C kernels (where a C compiler works);
- ``torch``: PyTorch eager on the CPU, the same threads: ``OMP_NUM_THREADS`` where set (numpy's BLAS
  and the compiled kernels read it at start-up, PyTorch is set to it), else every core.

The two fused variants are one device whose compiled kernels are switched off and on (``_switch``);
the variants take turns, several rounds, and each figure is the median.
``ratios``: ``native_vs_fusion_numpy``, ``native_vs_numpy`` and ``*_vs_torch`` are time over time
(below 1: the first is faster).

``--ops``: instead, the plain cpu device's compiled ops (``burn._native._ops*``), one op per figure, on
``numpy`` (``BURN_CPU_NATIVE=0``: the numpy backend's own path), ``native`` (the compiled kernel, as
``burn.device("cpu")`` picks it past its size threshold) and ``torch`` (the same op in PyTorch eager,
same threads): depthwise 3x3 convs (MobileNetV2's, stride 1 and 2) and their input and weight gradients,
a grouped conv, max and avg pools,
the max pool's backward scatter, softmax, log-softmax and layer-norm rows (numpy's formula as the
numpy side: the plain device composes layer norm from basic ops).

    python benchmarks/bench_cpu_native.py [--quick] [--ops] [--workloads mlp,cnn] [--out results.json]
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cpu_native.py   # one thread
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from _common import emit_json, time_for

VARIANTS = ("numpy", "fusion_numpy", "fusion_native", "torch")
WORKLOADS = ("chain", "mlp", "cnn")
WARMUP = 24  # past the runs a plan waits before it is compiled (BURN_CPU_NATIVE_AFTER)


def _threads() -> int:
    """The threads every side uses: ``OMP_NUM_THREADS`` where set (numpy's BLAS and the compiled kernels
    read it at start-up; PyTorch is set to the same), else every core."""
    return int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)


def _burn_fn(variant: str, workload: str) -> tuple[Any, Any]:
    import burn
    import numpy as np
    from burn.nn import functional as F

    fusion = variant != "numpy"  # "numpy": the plain device; else the fused one
    if workload == "chain":
        dev = burn.device("cpu", fusion=fusion)
        rng = np.random.default_rng(0)
        x = burn.from_numpy(rng.standard_normal((1024, 1024), dtype=np.float32), device=dev)
        w = burn.from_numpy(rng.standard_normal((1, 1024), dtype=np.float32), device=dev)
        b = burn.from_numpy(rng.standard_normal((1, 1024), dtype=np.float32), device=dev)

        def chain() -> None:
            (F.gelu(x * w + b) * F.sigmoid(x) - 0.5).numpy()

        return chain, dev.backend.sync
    from bench_cuda import _burn_models, _data

    dev = burn.device("cpu", autodiff=True, fusion=fusion)
    burn.seed(0)
    model = _burn_models(dev)[workload]()
    opt = burn.optim.AdamConfig().init()
    x_np, y_np = _data(workload)
    x, y = burn.from_numpy(x_np, device=dev), burn.from_numpy(y_np, device=dev)
    state: dict[str, Any] = {"model": model}

    def step() -> None:
        loss = F.cross_entropy(state["model"](x), y)
        state["model"] = opt.step(1e-3, state["model"], loss.backward())
        loss.item()

    return step, dev.backend.sync


def _torch_fn(workload: str) -> tuple[Any, Any]:
    import numpy as np
    import torch

    torch.set_num_threads(_threads())
    if workload == "chain":
        rng = np.random.default_rng(0)
        x = torch.from_numpy(rng.standard_normal((1024, 1024), dtype=np.float32))
        w = torch.from_numpy(rng.standard_normal((1, 1024), dtype=np.float32))
        b = torch.from_numpy(rng.standard_normal((1, 1024), dtype=np.float32))

        def chain() -> None:
            (torch.nn.functional.gelu(x * w + b) * torch.sigmoid(x) - 0.5).numpy()

        return chain, lambda: None
    from bench_cuda import _data, _torch_models

    torch.manual_seed(0)
    model = _torch_models(torch)[workload]()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_np, y_np = _data(workload)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()

    return step, lambda: None


def _runtime(dev: Any) -> Any:
    """The fusion runtime under ``dev``'s decorators."""
    b = dev.backend
    while not hasattr(b, "runtime"):
        b = b.inner
    return b.runtime


def _switch(fn: Any, runtime: Any, native: bool) -> Any:
    """``fn`` with the compiled kernels on or off: off raises the runs a plan waits before it is compiled
    past reach, so every plan runs op by op on numpy (``BURN_CPU_NATIVE=0``'s path) on the same device."""
    after = getattr(runtime, "after", None)

    def run() -> None:
        if after is not None:
            runtime.after = after if native else 1 << 60
        fn()

    return run


def bench_workload(workload: str, rounds: int, min_time: float) -> dict[str, Any]:
    """Milliseconds per call of ``workload`` on each variant: the median of ``rounds`` rounds, the
    variants taking turns in each (on a shared, noisy host they then see the same load)."""
    import burn

    fns: dict[str, Any] = {}
    fn, sync = _burn_fn("numpy", workload)
    fns["numpy"] = (fn, sync)
    fn, sync = _burn_fn("fusion", workload)
    dev = burn.device("cpu", autodiff=workload != "chain", fusion=True)
    rt = _runtime(dev)
    if hasattr(rt, "after"):
        fns["fusion_numpy"] = (_switch(fn, rt, False), sync)
        fns["fusion_native"] = (_switch(fn, rt, True), sync)
    else:  # no compiler here: the fused device runs on numpy only
        fns["fusion_numpy"] = (fn, sync)
    try:
        fns["torch"] = _torch_fn(workload)
    except ImportError:
        pass
    times: dict[str, list[float]] = {v: [] for v in fns}
    for _ in range(rounds):
        for v, (f, s) in fns.items():
            times[v].append(time_for(f, s, min_time, warmup=WARMUP))
    out = {v: round(sorted(t)[len(t) // 2] * 1e3, 3) for v, t in times.items()}
    if hasattr(rt, "compiled"):
        out["compiled_kernels"] = rt.compiled
    return out


def _op_fns() -> dict[str, tuple[Any, Any]]:
    """Each op benchmark: (burn call on the plain cpu backend's numpy arrays, torch call)."""
    import burn
    import numpy as np
    from burn._native import _ops_rows

    b = burn.device("cpu").backend
    rng = np.random.default_rng(0)

    def arr(*shape: int) -> Any:
        return rng.standard_normal(shape, dtype=np.float32)

    dw, dw_w = arr(8, 96, 56, 56), arr(96, 1, 3, 3)
    gx, gw = arr(8, 64, 28, 28), arr(64, 8, 3, 3)
    px, ax = arr(8, 64, 112, 112), arr(8, 64, 56, 56)
    _, idx = b.max_pool(px, (3, 3), (2, 2), (1, 1), (1, 1), False)
    grad, zero, flat = arr(*idx.shape), np.zeros((8, 64, 112 * 112), np.float32), idx.reshape(8, 64, -1)
    rows, ln_w, ln_b = arr(4096, 1024), arr(1024), arr(1024)

    def layer_norm() -> Any:
        if _ops_rows.layer_norm_rows(rows, ln_w, ln_b, 1e-5) is None:  # numpy: the composed formula
            mean = rows.mean(-1, keepdims=True)
            diff = rows - mean
            return diff / np.sqrt((diff * diff).mean(-1, keepdims=True) + 1e-5) * ln_w + ln_b
        return None

    burn_ops = {
        "dwconv3x3_s1": lambda: b.conv(dw, dw_w, None, (1, 1), (1, 1), (1, 1), 96),
        "dwconv3x3_s2": lambda: b.conv(dw, dw_w, None, (2, 2), (1, 1), (1, 1), 96),
        "dwconv3x3_grad_input": lambda: b.conv_transpose(dw, dw_w, None, (1, 1), (1, 1), (0, 0), (1, 1), 96),
        "dwconv3x3_grad_weight": lambda: b.conv_weight_grad(
            dw, dw, (96, 1, 3, 3), (1, 1), (1, 1), (1, 1), 96
        ),
        "gconv3x3_g8": lambda: b.conv(gx, gw, None, (1, 1), (1, 1), (1, 1), 8),
        "max_pool3x3_s2": lambda: b.max_pool(px, (3, 3), (2, 2), (1, 1), (1, 1), False),
        "avg_pool3x3_s1": lambda: b.avg_pool(ax, (3, 3), (1, 1), (1, 1), True, False),
        "max_pool_backward": lambda: b.scatter_add(zero, 2, flat, grad.reshape(8, 64, -1)),
        "softmax": lambda: b.softmax(rows, 1),
        "log_softmax": lambda: b.log_softmax(rows, 1),
        "layer_norm": layer_norm,
    }
    try:
        import torch
    except ImportError:
        return {k: (f, None) for k, f in burn_ops.items()}
    torch.set_num_threads(_threads())
    T = torch.from_numpy
    tf = torch.nn.functional
    tdw, tdw_w, tgx, tgw, tpx, tax, trows = (T(a) for a in (dw, dw_w, gx, gw, px, ax, rows))
    tidx, tgrad = T(idx), T(grad)
    t_ops = {
        "dwconv3x3_s1": lambda: tf.conv2d(tdw, tdw_w, None, 1, 1, 1, 96),
        "dwconv3x3_s2": lambda: tf.conv2d(tdw, tdw_w, None, 2, 1, 1, 96),
        "dwconv3x3_grad_input": lambda: torch.ops.aten.convolution_backward(
            tdw, tdw, tdw_w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 96, [True, False, False]
        ),
        "dwconv3x3_grad_weight": lambda: torch.ops.aten.convolution_backward(
            tdw, tdw, tdw_w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 96, [False, True, False]
        ),
        "gconv3x3_g8": lambda: tf.conv2d(tgx, tgw, None, 1, 1, 1, 8),
        "max_pool3x3_s2": lambda: tf.max_pool2d(tpx, 3, 2, 1, return_indices=True),
        "avg_pool3x3_s1": lambda: tf.avg_pool2d(tax, 3, 1, 1),
        "max_pool_backward": lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            tgrad, tpx, [3, 3], [2, 2], [1, 1], [1, 1], False, tidx
        ),
        "softmax": lambda: torch.softmax(trows, 1),
        "log_softmax": lambda: torch.log_softmax(trows, 1),
        "layer_norm": lambda: tf.layer_norm(trows, (1024,), T(ln_w), T(ln_b)),
    }
    return {k: (f, t_ops[k]) for k, f in burn_ops.items()}


def bench_ops(rounds: int, min_time: float) -> dict[str, Any]:
    """Milliseconds per op on numpy (``BURN_CPU_NATIVE=0``), native and torch: medians of ``rounds``
    rounds, the variants taking turns; ratios native/numpy and native/torch."""

    def switched(fn: Any, native: bool) -> Any:
        def run() -> None:
            if native:
                os.environ.pop("BURN_CPU_NATIVE", None)
            else:
                os.environ["BURN_CPU_NATIVE"] = "0"
            fn()

        return run

    out: dict[str, Any] = {}
    for name, (fn, tfn) in _op_fns().items():
        variants = {"numpy": switched(fn, False), "native": switched(fn, True)}
        if tfn is not None:
            variants["torch"] = tfn
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(rounds):
            for v, f in variants.items():
                times[v].append(time_for(f, lambda: None, min_time, warmup=2))
        row: dict[str, Any] = {v: round(sorted(t)[len(t) // 2] * 1e3, 3) for v, t in times.items()}
        row["native_vs_numpy"] = round(row["native"] / row["numpy"], 3)
        if "torch" in row:
            row["native_vs_torch"] = round(row["native"] / row["torch"], 3)
        out[name] = row
    os.environ.pop("BURN_CPU_NATIVE", None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds of 0.5 s per figure (default 5 of 1.5 s)")
    ap.add_argument("--ops", action="store_true", help="the plain cpu device's compiled ops, one by one")
    ap.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="comma-separated subset of the workloads"
    )
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    rounds, min_time = (3, 0.5) if args.quick else (5, 1.5)
    import burn._native

    result: dict[str, Any] = {"threads": _threads(), "cpu_kernels": burn._native.describe()}
    try:
        import torch

        result["torch"] = torch.__version__
    except ImportError:
        result["torch"] = None
    if args.ops:
        result["ops_ms"] = bench_ops(rounds, min_time)
        emit_json(result, args.out)
        return
    figures = {w: bench_workload(w, rounds, min_time) for w in args.workloads.split(",")}
    result["ms"] = figures
    ratios: dict[str, Any] = {}
    for w, row in figures.items():
        plain, off, nat, tor = (row.get(v) for v in VARIANTS)
        r = ratios[w] = {}
        if nat and off:
            r["native_vs_fusion_numpy"] = round(nat / off, 3)
        if nat and plain:
            r["native_vs_numpy"] = round(nat / plain, 3)
        for name, value in (("fusion_native", nat), ("fusion_numpy", off), ("numpy", plain)):
            if value and tor:
                r[f"{name}_vs_torch"] = round(value / tor, 3)
    result["ratios"] = ratios
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
