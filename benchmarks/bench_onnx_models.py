"""burn-onnx on cpu against onnxruntime on real PyTorch exports, at fixed thread counts; one JSON document.

Models (``_onnx_exports``: built with torch and ``torch.onnx.export``, random weights): ResNet-18,
MobileNetV2, a BERT-style encoder, a GPT-2-style decoder and a ViT, plus bench_onnx's ResNet-like CNN.
For each thread count (``--threads 1,all``) a worker process runs with numpy's BLAS, OpenMP (burn's
compiled kernels) and onnxruntime's intra-op pool all at that count, and times, taking turns:
onnxruntime; ``burn``: ``burn_onnx.load(data, device="cpu")``, what a user gets where a C compiler is
present (compiled kernels); ``burn_numpy``: a second such model on numpy alone (its element-wise chains
first ran under ``BURN_CPU_NATIVE=0``). Per model and batch: milliseconds per forward, wall
(``*_ms``) and process CPU time (``*_cpu_ms``), medians of ``--runs`` timings of at least
``--min-time`` s each, after ``--warmup`` untimed forwards (past compilation: steady-state inference);
``*_vs_onnxruntime``: burn's time over onnxruntime's, by CPU time at one thread (robust to a machine
shared with other work) and by wall time otherwise; ``*_max_diff``: the largest difference from
onnxruntime's output. ``--profile`` adds burn's time by ONNX op type (the replayed plan's steps timed
one by one) and onnxruntime's profiler's time by op type.

    python benchmarks/bench_onnx_models.py [--models resnet18,bert] [--batches 1,32] [--threads 1,all]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_MODELS = ("resnet_like", "resnet18", "mobilenetv2", "bert", "gpt2", "vit")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def _model(name: str) -> tuple[bytes, Any]:
    if name == "resnet_like":
        import numpy as np
        from bench_onnx import resnet_like

        return resnet_like(), lambda b: np.random.default_rng(1).standard_normal((b, 3, 64, 64)).astype("f4")
    from _onnx_exports import export, inputs

    return export(name), lambda b: inputs(name, b)


def _timing(fn: Any, min_time: float) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) per call of ``fn``, over at least ``min_time`` s."""
    n, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        fn()
        n += 1
        if time.perf_counter() - start >= min_time and n >= 2:
            return (time.perf_counter() - start) / n, (time.process_time() - cpu) / n


def _burn_profile(model: Any, x: Any, runs: int) -> dict[str, float]:
    """Milliseconds per forward by op type, from the plan's steps wrapped with a timer."""
    from bench_onnx import plan_steps

    steps = plan_steps(model, x)
    if steps is None:
        return {}
    original, per = list(steps), defaultdict(float)

    def timed(step: Any) -> Any:
        def run(ctx: Any, node: Any, *values: Any) -> Any:
            t = time.perf_counter()
            out = step.fn(ctx, node, *values)
            per[node.op_type] += time.perf_counter() - t
            return out

        return run

    try:
        steps[:] = [s._replace(fn=timed(s)) for s in original]
        for _ in range(runs):
            model(x)
    finally:
        steps[:] = original
    return {k: round(v / runs * 1e3, 3) for k, v in sorted(per.items(), key=lambda kv: -kv[1])}


def _ort_profile(data: bytes, x: Any, threads: int, runs: int) -> dict[str, float]:
    import tempfile

    import onnxruntime as ort

    per: dict[str, float] = defaultdict(float)
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        session.run(None, {"x": x})
        start = time.perf_counter()
        for _ in range(runs):
            session.run(None, {"x": x})
        with open(session.end_profiling()) as fh:
            trace = json.load(fh)
    seen = 0
    for event in trace:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            per[event["args"].get("op_name", "?")] += float(event["dur"])
            seen += 1
    del start
    # the first run (warm-up) is in the trace too: scale to one run
    total_runs = runs + 1
    return {k: round(v / total_runs / 1e3, 3) for k, v in sorted(per.items(), key=lambda kv: -kv[1])}


def worker(args: argparse.Namespace, threads: int) -> list[dict[str, Any]]:
    """One process at ``threads`` threads: onnxruntime, burn with compiled kernels and burn on numpy
    alone (a second model whose chains met ``BURN_CPU_NATIVE=0`` when they first ran), per model and
    batch, taking turns."""
    import burn
    import burn_onnx
    import numpy as np
    import onnxruntime as ort

    cases = []
    for name in args.models.split(","):
        data, make = _model(name)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        for batch in (int(b) for b in args.batches.split(",")):
            x = make(batch)
            (reference,) = session.run(None, {"x": x})[:1]
            models = {"burn": burn_onnx.load(data, device="cpu")}
            if not args.no_numpy:  # its chains find no compiler when they first run: numpy alone
                models["burn_numpy"] = burn_onnx.load(data, device="cpu")
            for key, model in models.items():
                saved = os.environ.get("BURN_CPU_NATIVE")
                os.environ["BURN_CPU_NATIVE"] = "0" if key == "burn_numpy" else saved or "1"
                try:
                    # past compilation (a chain's runtime is taken at its 2nd call): steady-state inference
                    for _ in range(max(2, args.warmup)):
                        model(x)
                finally:
                    os.environ.pop("BURN_CPU_NATIVE")
                    if saved is not None:
                        os.environ["BURN_CPU_NATIVE"] = saved
            times: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for _ in range(args.runs):  # the sides take turns: a loaded machine drifts
                times["onnxruntime"].append(
                    _timing(lambda s=session, x=x: s.run(None, {"x": x}), args.min_time)
                )
                for key, model in models.items():
                    times[key].append(_timing(lambda m=model, x=x: m(x).numpy(), args.min_time))
            case: dict[str, Any] = {"model": name, "batch": batch, "threads": threads}
            for key, ts in times.items():
                case[f"{key}_ms"] = round(float(np.median([t[0] for t in ts])) * 1e3, 3)
                case[f"{key}_cpu_ms"] = round(float(np.median([t[1] for t in ts])) * 1e3, 3)
            for key, model in models.items():
                got = model(x).numpy().astype(np.float64)
                case[f"{key}_max_diff"] = float(np.abs(got - reference).max())
            case["reference_max"] = float(np.abs(reference).max())
            clock = "cpu_ms" if threads == 1 else "ms"  # one thread: CPU time, robust to a shared machine
            for key in models:
                case[f"{key}_vs_onnxruntime"] = round(
                    case[f"{key}_{clock}"] / case[f"onnxruntime_{clock}"], 3
                )
            if args.profile:
                xt = burn.tensor(x, device="cpu")
                case["profile_burn_ms"] = _burn_profile(models["burn"], xt, 3)
                case["profile_onnxruntime_ms"] = _ort_profile(data, x, threads, 3)
            print(json.dumps(case), file=sys.stderr, flush=True)
            cases.append(case)
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ALL_MODELS))
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--threads", default="1,all", help="comma list of thread counts ('all': every core)")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per timing")
    ap.add_argument("--runs", type=int, default=3, help="timings per case (medians reported)")
    ap.add_argument("--warmup", type=int, default=4, help="untimed forwards per burn model first")
    ap.add_argument("--no-numpy", action="store_true", help="leave out the model with compiled kernels off")
    ap.add_argument("--profile", action="store_true", help="time by op type, burn and onnxruntime")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args, args.worker)))
        return
    result: dict[str, Any] = {"cpus": os.cpu_count(), "cases": []}
    for t in args.threads.split(","):
        threads = (os.cpu_count() or 1) if t == "all" else int(t)
        env = dict(os.environ, **{v: str(threads) for v in _THREAD_VARS})
        cmd = [sys.executable, __file__, *sys.argv[1:], "--worker", str(threads)]
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
        result["cases"] += json.loads(done.stdout.strip().splitlines()[-1])
    sys.path.insert(0, HERE)
    from _common import emit_json

    emit_json(result, args.out)


if __name__ == "__main__":
    main()
