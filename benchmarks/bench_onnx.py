"""burn-onnx against onnxruntime on a ResNet-like CNN, side by side in one run; prints one JSON document.

The model (built here with onnx.helper, random weights): a 3x3 stem conv + BN + ReLU + max pool, two basic
residual blocks at 32 channels, a strided block to 64 and one to 128 channels, global average pool and a
10-way Gemm; input (N, 3, 64, 64). For each batch size, ``burn_onnx.load`` runs it on each requested
burn device and onnxruntime runs it on the CPU with the same thread count as numpy's BLAS, from the same
inputs: milliseconds per forward, the ratio burn / onnxruntime, and the largest output difference.
``--runs N`` times each case N times, alternating burn and onnxruntime (a loaded machine drifts):
``*_ms`` and the ratio are the medians over the runs, ``runs`` lists each run's figures.
``--no-optimize`` loads with ``optimize=False`` (the file's nodes one by one, no BN folding).

``--profile`` adds, for each batch size, a conv-by-conv table to the ``cpu`` case (numpy device only; the
table is also printed to stderr): for each of the 11 convs in execution order, in microseconds,

- ``burn_us``: burn's fused conv step (conv, BN fold, residual, ReLU and, for the stem, the max pool),
  the median over ``--profile-runs`` forwards of a freshly loaded optimized model whose recorded plan
  steps are wrapped with a timer (the original step objects are put back afterwards);
- ``onnxruntime_us``: onnxruntime's kernel time for the same conv from its profiler (nodes paired by
  input shape, weight shape and whether a residual is added; its separate MaxPool node is added to the
  stem, which burn fuses);
- ``blas_floor_us``: an optimistic bound, ``numpy.matmul`` alone at the conv's im2col GEMM shape
  (C_out x C_in*kh*kw) @ (C_in*kh*kw x H_out*W_out): one image on BLAS's threads; for a batch of N
  the better of N such products and N one-thread products spread over the cores at perfect scaling;

and totals: burn's conv steps, its other steps and whole forward, onnxruntime's convs and whole run,
the floor, and ``floor_vs_onnxruntime``. ``profile_convs`` is the entry point tests call.

    python benchmarks/bench_onnx.py [--devices cpu,wgpu,cuda] [--batches 1,32] [--runs 3] [--out results.json]
    python benchmarks/bench_onnx.py --batches 1,32 --profile [--profile-runs 10]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import emit_json, time_for


def resnet_like(seed: int = 0) -> bytes:
    """The benchmark's model as ONNX bytes (opset 17)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes: list[Any] = []
    inits: list[Any] = []
    count = [0]

    def name(prefix: str) -> str:
        count[0] += 1
        return f"{prefix}{count[0]}"

    def weight(*shape: int, scale: float | None = None) -> str:
        n = name("w")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else (2.0 / fan_in) ** 0.5
        inits.append(numpy_helper.from_array(rng.normal(0.0, std, shape).astype(np.float32), n))
        return n

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        out = name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv_bn(x: str, cin: int, cout: int, k: int = 3, stride: int = 1) -> str:
        y = node("Conv", [x, weight(cout, cin, k, k)], pads=[k // 2] * 4, strides=[stride, stride])
        gamma, beta = weight(cout, scale=0.1), weight(cout, scale=0.1)
        mean, var = weight(cout, scale=0.1), name("var")
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), var))
        return node("BatchNormalization", [y, gamma, beta, mean, var])

    def block(x: str, cin: int, cout: int, stride: int) -> str:
        y = node("Relu", [conv_bn(x, cin, cout, stride=stride)])
        y = conv_bn(y, cout, cout)
        skip = x if cin == cout and stride == 1 else conv_bn(x, cin, cout, k=1, stride=stride)
        return node("Relu", [node("Add", [y, skip])])

    x = node("Relu", [conv_bn("x", 3, 32)])
    x = node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = block(block(x, 32, 32, 1), 32, 32, 1)
    x = block(block(x, 32, 64, 2), 64, 128, 2)
    x = node("Flatten", [node("GlobalAveragePool", [x])])
    nodes.append(helper.make_node("Gemm", [x, weight(10, 128), weight(10, scale=0.1)], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 64, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # opset 17's IR version: older onnxruntime builds refuse the newest IR
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _blas_threads() -> int:
    try:
        from threadpoolctl import threadpool_info

        counts = [int(p["num_threads"]) for p in threadpool_info() if p.get("user_api") == "blas"]
        if counts:
            return max(counts)
    except ImportError:
        pass
    return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------- --profile


def plan_steps(model: Any, *inputs: Any) -> list[Any] | None:
    """The step list of the plan ``model``'s runner recorded for the signature (shapes, dtypes, device) of
    ``inputs``: the very list its replay iterates, so replacing its items in place changes what runs.
    None while no call with that signature has recorded one (a model called with several shapes keeps
    one plan per signature)."""
    device = model._compute_device(inputs, {})
    feeds = model._bind(inputs, {}, device)
    runner = model._runner
    plan = runner._cache.get(runner.signature(feeds, device))
    return None if plan is None else plan.steps


def _is_conv(node: Any) -> bool:
    if node.op_type == "Conv" and not node.domain:
        return True
    return node.op_type == "FusedConv" and node.attrs.get("base") == "Conv"


def _conv_spatial(node: Any, x_shape: list[int], w_shape: list[int]) -> list[int]:
    """The conv's output spatial size before any fused pool, from its attributes."""
    spatial, kernel = x_shape[2:], w_shape[2:]
    nd = len(spatial)
    strides = list(node.attrs.get("strides") or [1] * nd)
    dilations = list(node.attrs.get("dilations") or [1] * nd)
    pads = list(node.attrs.get("pads") or [0] * (2 * nd))
    auto = node.attrs.get("auto_pad", "NOTSET")
    out = []
    for d in range(nd):
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-spatial[d] // strides[d]))
            continue
        total = 0 if auto == "VALID" else pads[d] + pads[d + nd]
        out.append((spatial[d] + total - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1)
    return out


def _burn_convs(model: Any, x: Any, runs: int) -> tuple[list[dict[str, Any]], float, float]:
    """burn's conv steps of the plan for ``x``, in execution order, each with its shapes and median
    seconds over ``runs`` forwards; also the median forward and the other steps' median sum.

    Every step of the plan is wrapped with a timer for those forwards (a perf_counter pair per step),
    then the list gets the original step objects back."""
    for _ in range(2):  # the first call records the plan, the second takes the fused kernels' fast path
        model(x)
    steps = plan_steps(model, x)
    if steps is None:
        raise RuntimeError("the model recorded no plan for the profiled input")
    original = list(steps)
    times: list[list[float]] = [[] for _ in original]
    shapes: dict[int, tuple[list[int], list[int]]] = {}

    def timed(i: int, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(ctx: Any, node: Any, *values: Any) -> Any:
            start = time.perf_counter()
            out = fn(ctx, node, *values)
            times[i].append(time.perf_counter() - start)
            if i not in shapes and _is_conv(node):
                shapes[i] = (list(values[0].shape), list(values[1].shape))
            return out

        return run

    forwards = []
    try:
        steps[:] = [step._replace(fn=timed(i, step.fn)) for i, step in enumerate(original)]
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            forwards.append(time.perf_counter() - start)
    finally:
        steps[:] = original
    convs, other = [], 0.0
    for i, step in enumerate(original):
        median = float(np.median(times[i]))
        if i not in shapes:
            other += median
            continue
        node = step.node
        x_shape, w_shape = shapes[i]
        pool = node.attrs.get("pool")
        convs.append(
            {
                "name": node.label,
                "weight_name": node.inputs[1],
                "input": x_shape,
                "weight": w_shape,
                "strides": list(node.attrs.get("strides") or [1] * (len(x_shape) - 2)),
                "conv_spatial": _conv_spatial(node, x_shape, w_shape),
                "residual": bool(node.attrs.get("residual")),
                "pool": None if pool is None else list(pool),
                "burn_s": median,
            }
        )
    return convs, float(np.median(forwards)), other


def _shape(entry: dict[str, Any]) -> list[int]:
    """A shape of onnxruntime's trace args: ``{"float": [1, 32, 8, 8]}``."""
    return [int(d) for d in next(iter(entry.values()))]


def _ort_nodes(data: bytes, feeds: dict[str, Any], runs: int, threads: int) -> tuple[list[dict], float]:
    """onnxruntime's nodes in execution order, each with its op, input and output shapes and median
    kernel microseconds over ``runs`` runs (after one warm-up run), from its profiler's trace (written to
    a temporary folder and removed); also the median whole run."""
    import onnxruntime as ort

    warmup = 1
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        for _ in range(warmup + runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as fh:
            trace = json.load(fh)
    nodes: dict[str, dict[str, Any]] = {}
    model_runs = []
    for event in trace:
        name, args = event.get("name", ""), event.get("args", {})
        if event.get("cat") == "Session" and name == "model_run":
            model_runs.append(float(event["dur"]))
        if event.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        node = nodes.setdefault(
            name.removesuffix("_kernel_time"),
            {
                "op": args.get("op_name", ""),
                "inputs": [_shape(s) for s in args.get("input_type_shape", [])],
                "output": [_shape(s) for s in args.get("output_type_shape", [])][:1],
                "durations": [],
            },
        )
        node["durations"].append(float(event["dur"]))
    found = []
    for name, node in nodes.items():
        durations = node.pop("durations")
        found.append({"name": name, **node, "us": float(np.median(durations[warmup:] or durations))})
    run_us = float(np.median(model_runs[warmup:] or model_runs)) if model_runs else float("nan")
    return found, run_us


def _ort_conv_key(node: dict[str, Any]) -> tuple | None:
    """(input shape, weight shape, residual added) of an onnxruntime conv node, None for other nodes.
    Its Conv (NCHWc or not) or FusedConv takes a residual as a further input of the output's shape."""
    ins = node["inputs"]
    if node["op"] not in ("Conv", "FusedConv") or len(ins) < 2 or len(ins[1]) != 4:
        return None
    residual = any(shape == node["output"][0] for shape in ins[2:]) if node["output"] else False
    return ins[0], ins[1], residual


def _pair(convs: list[dict[str, Any]], ort_nodes: list[dict[str, Any]]) -> set[int]:
    """Give each burn conv the onnxruntime conv of the same key (the first one not taken: equal convs
    run in the same order in both) and, where burn fused a max pool, onnxruntime's MaxPool node that
    reads that conv's output. Returns the indices of the onnxruntime nodes taken."""
    used: set[int] = set()
    free = list(range(len(ort_nodes)))
    for conv in convs:
        key = (conv["input"], conv["weight"], conv["residual"])
        taken = [next((i for i in free if _ort_conv_key(ort_nodes[i]) == key), -1)]
        if taken[0] >= 0 and conv["pool"]:
            out = ort_nodes[taken[0]]["output"]
            reads = (i for i in free if ort_nodes[i]["op"] == "MaxPool" and ort_nodes[i]["inputs"][:1] == out)
            taken.append(next(reads, -1))
        taken = [i for i in taken if i >= 0]
        used.update(taken)
        free = [i for i in free if i not in used]
        conv["onnxruntime_nodes"] = [ort_nodes[i]["name"] for i in taken]
        conv["onnxruntime_ops"] = [ort_nodes[i]["op"] for i in taken]
        conv["onnxruntime_us"] = sum(ort_nodes[i]["us"] for i in taken) if taken else None
    return used


def _median_seconds(fn: Callable[[], Any], samples: int, min_sample: float = 1e-3) -> float:
    """Median seconds per call of ``fn`` over ``samples`` samples of at least ``min_sample`` each."""
    fn()
    start = time.perf_counter()
    fn()
    reps = max(1, int(min_sample / max(time.perf_counter() - start, 1e-7)))
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - start) / reps)
    return float(np.median(times))


def blas_floor_us(c_out: int, depth: int, columns: int, batch: int, cores: int, samples: int = 5) -> float:
    """An optimistic bound on one conv, in microseconds: ``numpy.matmul`` alone at its im2col GEMM shape,
    (C_out x C_in*kh*kw) @ (C_in*kh*kw x H_out*W_out), with the operands preallocated and ``out=`` given:
    no im2col, bias, epilogue, allocation or layout work.

    One image runs on BLAS's own threads. For ``batch`` > 1 the smaller of (a) that per-image time
    x ``batch`` and (b) the time at one BLAS thread x ceil(batch / cores): the images spread over the
    cores, one BLAS thread each, at perfect scaling (no shared cache or memory bandwidth). (b) needs
    threadpoolctl (a dependency of burn's numpy backend) to hold BLAS at one thread; without it only (a)
    counts."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((c_out, depth), dtype=np.float32)
    b = rng.standard_normal((depth, columns), dtype=np.float32)
    out = np.empty((c_out, columns), dtype=np.float32)

    def call() -> None:
        np.matmul(a, b, out=out)

    seconds = _median_seconds(call, samples) * batch
    if batch > 1:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return seconds * 1e6
        with threadpool_limits(limits=1, user_api="blas"):
            single = _median_seconds(call, samples)
        seconds = min(seconds, single * math.ceil(batch / max(1, cores)))
    return seconds * 1e6


def profile_convs(
    data: bytes,
    batch: int,
    runs: int = 10,
    *,
    threads: int | None = None,
    model: Any = None,
    x: np.ndarray | None = None,
) -> dict[str, Any]:
    """burn's fused conv steps next to onnxruntime's conv kernels and a BLAS floor, conv by conv.

    ``data``: the ONNX model; ``model``: that model loaded on burn's numpy device (default: loaded here
    with ``optimize=True``); ``x``: its input, of batch ``batch`` (default: normal noise of the declared
    shape, symbolic dims = ``batch``). ``runs`` forwards each side (medians); onnxruntime runs on the CPU
    at ``threads`` intra-op threads (default: numpy's BLAS threads), as the floor's cores. The model
    runs as before afterwards: its plan's step objects are put back. Returns ``{"batch", "threads",
    "runs", "convs": [...], "totals": {...}}``, times in microseconds."""
    import burn
    import burn_onnx

    if model is None:
        model = burn_onnx.load(data, device="cpu")
    device = model._compute_device((), {})
    if device.backend.name != "ndarray":
        raise ValueError(f"profile_convs profiles burn's numpy device, got a model on {device}")
    info = model.inputs[0]
    if x is None:
        shape = tuple(d if isinstance(d, int) and d > 0 else batch for d in info.shape or ())
        x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    threads, runs = threads or _blas_threads(), max(1, runs)
    convs, forward_s, other_s = _burn_convs(model, burn.tensor(x, device=device), runs)
    ort_nodes, ort_run_us = _ort_nodes(data, {info.name: x}, runs, threads)
    used = _pair(convs, ort_nodes)
    for conv in convs:
        c_out, depth = conv["weight"][0], math.prod(conv["weight"][1:])
        floor = blas_floor_us(c_out, depth, math.prod(conv["conv_spatial"]), batch, threads)
        conv["burn_us"] = round(conv.pop("burn_s") * 1e6, 1)
        conv["onnxruntime_us"] = None if conv["onnxruntime_us"] is None else round(conv["onnxruntime_us"], 1)
        conv["gemm"] = [c_out, depth, math.prod(conv["conv_spatial"])]
        conv["blas_floor_us"] = round(floor, 1)
    ort_convs = sum(c["onnxruntime_us"] or 0.0 for c in convs)
    floor_sum = sum(c["blas_floor_us"] for c in convs)
    burn_convs = sum(c["burn_us"] for c in convs)
    totals = {
        "burn_convs_us": round(burn_convs, 1),
        "burn_other_steps_us": round(other_s * 1e6, 1),
        "burn_forward_us": round(forward_s * 1e6, 1),
        "onnxruntime_convs_us": round(ort_convs, 1),
        "onnxruntime_other_nodes_us": round(
            sum(n["us"] for i, n in enumerate(ort_nodes) if i not in used), 1
        ),
        "onnxruntime_run_us": round(ort_run_us, 1),
        "blas_floor_us": round(floor_sum, 1),
        "floor_vs_onnxruntime": round(floor_sum / ort_convs, 3) if ort_convs else None,
        "burn_vs_onnxruntime_convs": round(burn_convs / ort_convs, 3) if ort_convs else None,
    }
    return {"batch": batch, "threads": threads, "runs": runs, "convs": convs, "totals": totals}


def format_profile(profile: dict[str, Any]) -> str:
    """``profile_convs``'s result as a table (microseconds)."""

    def us(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f}"

    def row(*cells: str) -> str:
        i, conv, res, pool, burn, ort, floor, ratio = cells
        return f"{i:>2}  {conv:<28} {res:<3} {pool:<4} {burn:>9} {ort:>9} {floor:>9} {ratio:>8}"

    lines = [
        f"batch {profile['batch']}, {profile['threads']} threads, median of {profile['runs']} runs (us)",
        row("#", "conv", "res", "pool", "burn", "onnxrt", "floor", "burn/ort"),
    ]
    for i, c in enumerate(profile["convs"]):
        w, stride = c["weight"], c["strides"][0]
        conv = f"{w[1]}->{w[0]} {w[2]}x{w[3]}/{stride} at {c['input'][2]}x{c['input'][3]}"
        pool = "x".join(map(str, c["pool"])) if c["pool"] else "-"
        ort = c["onnxruntime_us"]
        ratio = f"{c['burn_us'] / ort:.2f}" if ort else "-"
        res = "yes" if c["residual"] else "-"
        lines.append(row(str(i), conv, res, pool, us(c["burn_us"]), us(ort), us(c["blas_floor_us"]), ratio))
    t = profile["totals"]
    ratio = t["burn_vs_onnxruntime_convs"]
    totals = (us(t["burn_convs_us"]), us(t["onnxruntime_convs_us"]), us(t["blas_floor_us"]))
    lines.append(row("", "convs", "", "", *totals, "-" if ratio is None else f"{ratio:.2f}"))
    lines.append(
        f"    burn forward {us(t['burn_forward_us'])} (other steps {us(t['burn_other_steps_us'])}), "
        f"onnxruntime run {us(t['onnxruntime_run_us'])} (other nodes {us(t['onnxruntime_other_nodes_us'])}), "
        f"floor / onnxruntime {t['floor_vs_onnxruntime']}"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu", help="comma list of burn devices (cpu, wgpu, cuda)")
    ap.add_argument("--batches", default="1,32", help="comma list of batch sizes")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds to time each case")
    ap.add_argument("--runs", type=int, default=1, help="time each case this many times (medians reported)")
    ap.add_argument("--no-optimize", action="store_true", help="load with burn_onnx.load(optimize=False)")
    ap.add_argument("--profile", action="store_true", help="add a conv-by-conv table to each cpu case")
    ap.add_argument("--profile-runs", type=int, default=10, help="forwards per side the profile takes")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()

    import burn
    import burn_onnx
    import onnxruntime as ort

    data = resnet_like()
    threads = _blas_threads()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    result: dict[str, Any] = {
        "env": {
            "python": platform.python_version(),
            "burn": burn.__version__,
            "onnxruntime": ort.__version__,
            "threads": threads,
            "machine": platform.machine(),
        },
        "model": "resnet-like, input (N, 3, 64, 64), 11 convs, opset 17",
        "cases": [],
    }
    rng = np.random.default_rng(1)
    for batch in (int(b) for b in args.batches.split(",")):
        x = rng.standard_normal((batch, 3, 64, 64)).astype(np.float32)
        (reference,) = session.run(None, {"x": x})
        for name in args.devices.split(","):
            case: dict[str, Any] = {"batch": batch, "device": name, "optimize": not args.no_optimize}
            try:
                dev = burn.device(name)
                model = burn_onnx.load(data, device=dev, optimize=not args.no_optimize)
                xt = burn.tensor(x, device=dev)
                runs = []
                for _ in range(max(1, args.runs)):
                    ort_s = time_for(lambda x=x: session.run(None, {"x": x}), lambda: None, args.min_time)
                    burn_s = time_for(lambda m=model, t=xt: m(t), dev.backend.sync, args.min_time)
                    runs.append(
                        {
                            "burn_ms": round(burn_s * 1e3, 3),
                            "onnxruntime_cpu_ms": round(ort_s * 1e3, 3),
                            "burn_vs_onnxruntime": round(burn_s / ort_s, 3),
                        }
                    )
                got = model(xt).numpy()
                case.update(
                    onnxruntime_cpu_ms=round(float(np.median([r["onnxruntime_cpu_ms"] for r in runs])), 3),
                    burn_ms=round(float(np.median([r["burn_ms"] for r in runs])), 3),
                    burn_vs_onnxruntime=round(float(np.median([r["burn_vs_onnxruntime"] for r in runs])), 3),
                    max_abs_diff=float(np.abs(got - reference).max()),
                )
                if len(runs) > 1:
                    case["runs"] = runs
            except Exception as exc:  # a device that cannot run here is recorded, not fatal
                case["skipped"] = f"{type(exc).__name__}: {exc}"
            if args.profile and "skipped" not in case and dev.backend.name == "ndarray":
                case["profile"] = profile_convs(data, batch, max(1, args.profile_runs), threads=threads, x=x)
                print(format_profile(case["profile"]), file=sys.stderr)
            result["cases"].append(case)
        if args.profile and not any(d.strip() == "cpu" for d in args.devices.split(",")):
            print("--profile: profiles the numpy device only; add cpu to --devices", file=sys.stderr)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
