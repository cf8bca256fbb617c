"""What the GPU benchmark scripts share: timing a call on an asynchronous device, fusion's costs outside
the steady steps, and printing (and optionally writing) the one JSON document a script reports.

The scripts run as ``python benchmarks/bench_x.py``, so this folder is first on ``sys.path`` and they
import this module as ``_common``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _warm_up(fn: Callable[[], Any], sync: Callable[[], None], warmup: int) -> None:
    """``warmup`` calls, then the kernels they met tuned to the end (``burn.autotune.wait``: tuning runs
    between steps otherwise, and the timed calls would run the picked kernels) and one more call, which
    switches to the winners and plans again what baked the picked ones in."""
    for _ in range(warmup):
        fn()
    from burn import autotune

    if warmup and autotune.wait():
        fn()
    sync()


def time_reps(fn: Callable[[], Any], sync: Callable[[], None], reps: int, warmup: int = 1) -> float:
    """Seconds per call of ``fn`` over ``reps`` calls after ``warmup`` ones (``sync`` waits for the
    device before the clock starts and stops)."""
    _warm_up(fn, sync, warmup)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t0) / reps


def time_for(fn: Callable[[], Any], sync: Callable[[], None], min_time: float, warmup: int = 2) -> float:
    """Seconds per call: warm up, then repeat until ``min_time`` has passed (device synced around)."""
    _warm_up(fn, sync, warmup)
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        if n >= 3 and n & (n - 1) == 0:  # check the clock at powers of two only: fewer syncs
            sync()
            if time.perf_counter() - start >= min_time:
                break
    sync()
    return (time.perf_counter() - start) / n


def warm_up_gpu(dev: Any, seconds: float) -> None:
    """Bring a GPU to its working clocks before the first figure: 2048^2 matmuls of random values on
    ``dev`` for ``seconds`` (an idle GPU's first bursts run at idle clocks and read as slow kernels)."""
    if seconds <= 0:
        return
    import burn

    # two random operands: the warm-up also tunes the 2048^2 key, and the tuner's figures on x @ x
    # (one buffer read as both operands) were not those of real products: on the H200 a tile timed
    # 26.4 TFLOP/s there ran 23.9 on two matrices, and it was chosen over one that runs 25.8
    x = burn.randn((2048, 2048), device=dev)
    y = burn.randn((2048, 2048), device=dev)
    time_for(lambda: x @ y, dev.backend.sync, seconds)


def emit_json(result: dict[str, Any], out: str | Path | None) -> None:
    """Print ``result`` as indented JSON; also write it to the file ``out`` when one is given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(text + "\n")


def fusion_costs(dev: Any) -> dict[str, Any]:
    """What fusion spent outside the steady steps: streams planned and the host seconds planning them
    (first launches, compiles and tuning included), programs captured as graphs and the seconds that
    took, re-plans after a tuned kernel switched; empty without fusion."""
    from burn.fusion import fusion_of

    b = fusion_of(dev)
    if b is None:
        return {}
    keys = ("plans", "graphs", "replans", "replays", "graph_launches")
    costs: dict[str, Any] = {k: b.stats[k] for k in keys if k in b.stats}
    costs.update({f"{k}_s": round(v, 3) for k, v in b.seconds.items()})
    return costs
