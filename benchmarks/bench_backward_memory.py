"""What one backward costs on the numpy backend: the backend calls the autodiff engine makes, the bytes
they allocate, and the peak memory of a forward + backward of the model zoo's GPT and ResNet-18 at a
small batch (``_model_zoo.py``; GPT at full width, seq 256; ResNet-18 at 224x224).

Each model runs in its own subprocess, so the process's peak resident memory (``burn.memory_stats`` on
the numpy backend) belongs to that model alone. One untimed step comes first (it warms conv plans and
sets the resident peak); the second runs under ``tracemalloc``, which numpy reports its buffers to, so
``traced_peak`` is the exact peak of live array bytes during forward + backward above what the model
and batch hold. ``graph_bytes`` is what the graph keeps at the end of the forward; ``backward_calls`` and
``backward_alloc_bytes`` count the inner backend's calls during ``backward()`` (views not counted as
allocations), with a breakdown per op.

    python benchmarks/bench_backward_memory.py [--model gpt resnet18] [--batch 2] [--tiny] [--json out]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc
from collections import Counter
from typing import Any

# ops the Autodiff engine may call on the inner backend during backward (the rules' vocabulary)
_COUNTED = (
    "full unary activation binary where clamp mask_fill leaky_relu cast softmax log_softmax reduce var "
    "cumsum cumprod matmul reshape permute expand slice slice_assign cat stack flip repeat pad tril triu "
    "gather scatter_add select select_add embedding conv conv_transpose conv_weight_grad avg_pool "
    "adaptive_avg_pool interpolate max_pool adaptive_max_pool attention from_numpy"
).split()


def _count_calls(B: Any, calls: Counter[str], allocs: Counter[str]) -> list[str]:
    """Wrap ``B``'s counted methods on the instance; returns the names wrapped (to remove afterwards)."""
    wrapped = []
    for name in _COUNTED:
        fn = getattr(B, name, None)
        if fn is None:
            continue

        def counting(*args: Any, _fn: Any = fn, _name: str = name, **kw: Any) -> Any:
            out = _fn(*args, **kw)
            calls[_name] += 1
            for o in out if isinstance(out, tuple) else (out,):
                if getattr(o, "base", 0) is None:  # a fresh numpy buffer, not a view
                    allocs[_name] += o.nbytes
            return out

        setattr(B, name, counting)
        wrapped.append(name)
    return wrapped


def measure(name: str, batch: int, tiny: bool) -> dict[str, Any]:
    import _model_zoo as zoo
    import burn
    from burn.nn import functional as F

    size = (zoo.TINY if tiny else zoo.SIZES)[name]
    size = type(size)(**{**size.__dict__, "batch": batch})
    dev = burn.device("cpu", autodiff=True)
    burn.seed(0)
    model = zoo.burn_model(name, size, dev)
    xs, ys = zoo.batch(name, size)
    x, y = burn.tensor(xs, device=dev), burn.tensor(ys, device=dev)
    rss_model = burn.memory_stats(dev).allocated

    def forward() -> Any:
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    forward().backward()  # warm-up: conv plans, first-touch of buffers
    gc.collect()
    rss_peak = burn.memory_stats(dev).peak_allocated
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    loss = forward()
    forward_peak = tracemalloc.get_traced_memory()[1] - base
    graph_bytes = loss.backend.graph_bytes(loss.primitive)
    calls: Counter[str] = Counter()
    allocs: Counter[str] = Counter()
    inner = dev.backend.inner
    wrapped = _count_calls(inner, calls, allocs)
    try:
        loss.backward()
    finally:
        for n in wrapped:
            delattr(inner, n)
    step_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {
        "model": name,
        "size": size.__dict__,
        "rss_step_peak_above_model": rss_peak - rss_model,
        "traced_forward_peak": forward_peak,
        "traced_step_peak": step_peak,
        "graph_bytes": graph_bytes,
        "backward_calls": sum(calls.values()),
        "backward_alloc_bytes": sum(allocs.values()),
        "backward_calls_by_op": dict(calls.most_common()),
        "backward_alloc_bytes_by_op": dict(allocs.most_common()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", nargs="+", default=["gpt", "resnet18"])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="the zoo's tiny sizes (a smoke run)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.batch, args.tiny)))
        return
    results = []
    for name in args.model:
        cmd = [sys.executable, __file__, "--child", name, "--batch", str(args.batch)]
        out = subprocess.run(cmd + (["--tiny"] if args.tiny else []), capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"{name} failed:\n{out.stderr}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    doc = json.dumps(results, indent=1)
    print(doc)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(doc + "\n")


if __name__ == "__main__":
    main()
