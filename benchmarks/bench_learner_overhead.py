"""The Learner's host overhead on the digits example: its wall time against a bare burn loop over the
same model, data, optimizer and schedule, and where the Learner's time goes; prints one JSON object.

``learner``: ``burn_train.examples.digits.main`` (metrics, CSV logs, checkpoints, summary, plots, no
dashboard), timed warm (a short run first pays imports and compiles). ``bare``: the same CNN, Adam,
cosine schedule and data loaders, with per step ``train_step``, ``optim.step`` and a read of the loss
(what the PyTorch peer of bench_digits does), and a validation pass per epoch counting correct
argmaxes. ``overhead_ratio`` is learner / bare (1.0 would be free); ``learner_no_plots`` is the same
Learner with ``metric_logs(plots=False)`` (the PNGs are a fixed cost at the end of fit, whatever the
device).

``profile``: one more Learner run under cProfile with the event processor inline (so every handler
runs on the profiled thread), split by what the time is spent on: data loading/batching, the train
step (forward + backward), the optimizer, the valid step, reading items to the host, metrics, the rest
of event processing (state, CSV rows, renderer), checkpoints (the final wait included), summary,
plots, metric start-up (collectors). It also counts device syncs and kernels per step
(``burn.profile``) and the Learner's batched item reads. Shares are of
the profiled fit (cProfile slows Python-heavy parts more than numpy kernels: read them as a guide).

    python benchmarks/bench_learner_overhead.py [--device cpu] [--epochs 3] [--repeats 3] [--out r.json]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import tempfile
import time
from typing import Any

from _common import emit_json

# (category, source file suffix, function name): cumulative time of these functions (calls from an
# entry of the same category left out), inner categories subtracted from outer ones where they nest.
_ENTRIES: list[tuple[str, str, str]] = [
    ("data", "burn/data/_dataloader.py", "__next__"),
    ("data", "burn/data/_prefetch.py", "__next__"),
    ("train_step", "learner/_strategy.py", "train_step"),
    ("train_step", "distributed/_strategy.py", "train_step"),
    ("optimizer", "learner/_learner.py", "_optimize"),
    ("optimizer", "learner/_learner.py", "_next_lr"),
    ("valid_step", "learner/_strategy.py", "valid_items"),
    ("item_sync", "burn_train/_output.py", "sync"),
    ("item_sync", "burn_train/_output.py", "detach"),
    ("item_sync", "burn_train/_output.py", "sync_many"),
    ("metrics", "metric/_base.py", "update"),
    ("metrics", "metric/_base.py", "epoch_value"),
    ("events", "learner/_learner.py", "_emit"),
    ("events", "processor/_processors.py", "submit"),
    ("events", "processor/_processors.py", "flush"),
    ("events", "learner/_reads.py", "add"),
    ("events", "learner/_reads.py", "flush"),
    ("checkpoint", "learner/_learner.py", "_checkpoint"),
    ("checkpoint", "learner/_learner.py", "_wait_checkpoint"),
    ("start", "processor/_hub.py", "_on_start"),  # metrics' prepare(): collectors start (NVML on GPUs)
    ("summary", "learner/_summary.py", "from_store"),
    ("summary", "learner/_summary.py", "save"),
    ("summary", "learner/_summary.py", "__str__"),
    ("plots", "learner/_learner.py", "_save_plots"),
]
# categories whose time is inside another's: subtracted from the outer one
_NESTED = {"events": ("item_sync", "metrics", "start")}


def _argv(device: str, epochs: int, batch: int, lr: float, tmp: str, limit: int = 0) -> list[str]:
    argv = ["--backend", device, "--epochs", str(epochs), "--batch-size", str(batch), "--lr", str(lr)]
    return argv + ["--limit", str(limit), "--renderer", "none", "--artifacts", tmp]


def _learner(
    device: str, epochs: int, batch: int, lr: float, limit: int = 0, plots: bool = True
) -> tuple[float, float]:
    """(seconds, final valid accuracy) of ``digits.main`` (``plots=False``: the same Learner with
    ``metric_logs(plots=False)``, built and fitted as ``main`` does)."""
    from burn_train.examples import digits

    with tempfile.TemporaryDirectory() as tmp:
        argv = _argv(device, epochs, batch, lr, tmp, limit)
        start = time.perf_counter()
        if plots:
            accuracy = digits.main(argv)
        else:
            learner, train, valid = digits.build(digits.parse_args(argv))
            learner.config.plots = False
            learner.fit(train, valid)
            series = learner.store.values["valid"].get("Accuracy", {})
            accuracy = series[max(series)] if series else math.nan
        return time.perf_counter() - start, float(accuracy)


def _bare(device: str, epochs: int, batch: int, lr: float, limit: int = 0) -> tuple[float, float, float]:
    """(seconds, final valid accuracy, seconds spent in the data loaders) of the bare loop."""
    import burn
    import numpy as np
    from burn_train.examples import digits

    start = time.perf_counter()
    args = digits.parse_args(_argv(device, epochs, batch, lr, "unused", limit))
    burn.seed(args.seed)
    adev = burn.device(device, autodiff=True)
    from burn.data import DataLoaderBuilder, PartialDataset
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher

    batcher = ImageClassificationBatcher(mean=0.3, std=0.4)
    train_ds: Any = DigitsDataset("train")
    valid_ds: Any = DigitsDataset("test")
    if limit:
        train_ds = PartialDataset(train_ds, 0, min(limit, len(train_ds)))
        valid_ds = PartialDataset(valid_ds, 0, min(limit, len(valid_ds)))
    train = DataLoaderBuilder(batcher).batch_size(batch).shuffle(args.seed).set_device(adev).build(train_ds)
    valid = DataLoaderBuilder(batcher).batch_size(128).set_device(adev.inner).build(valid_ds)
    steps = epochs * len(train)
    sched = burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(lr, steps, min_lr=lr / 20).init()
    model = digits.make_model_class()(adev)
    optim = burn.optim.AdamConfig().init()
    accuracy, data_seconds = math.nan, 0.0
    for epoch in range(epochs):
        train.set_epoch(epoch)
        it = iter(train)
        while True:
            t0 = time.perf_counter()
            b = next(it, None)
            data_seconds += time.perf_counter() - t0
            if b is None:
                break
            out = model.train_step(b)
            model = optim.step(sched.step(), model, out.grads)
            out.item.loss.item()  # the loss is read every step, as the PyTorch peer does
        vmodel = model.valid()
        correct = total = 0
        it = iter(valid)
        while True:
            t0 = time.perf_counter()
            b = next(it, None)
            data_seconds += time.perf_counter() - t0
            if b is None:
                break
            item = vmodel.valid_step(b)
            pred, targets = (
                burn.Transaction().register(item.output.argmax(1)).register(item.targets).execute()
            )
            correct += int((np.asarray(pred).reshape(-1) == np.asarray(targets).reshape(-1)).sum())
            total += int(np.asarray(targets).size)
        accuracy = correct / total
    return time.perf_counter() - start, accuracy, data_seconds


def _categories(stats: pstats.Stats, wall: float) -> dict[str, float]:
    """Seconds per category from a profile (cumulative times of the entry functions)."""

    def category_of(key: Any) -> str | None:
        filename, _, func = key
        path = filename.replace("\\", "/")
        return next((c for c, suffix, name in _ENTRIES if func == name and path.endswith(suffix)), None)

    raw: dict[str, float] = {}
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for key, (_, _, _, _, callers) in table.items():
        category = category_of(key)
        if category is None:
            continue
        # callers: {caller key: (calls, primitive calls, own time, cumulative time)} for this function
        outside = sum(v[3] for caller, v in callers.items() if category_of(caller) != category)
        raw[category] = raw.get(category, 0.0) + outside
    out = dict(raw)
    for outer, inner in _NESTED.items():
        if outer in out:
            out[outer] = max(0.0, out[outer] - sum(raw.get(c, 0.0) for c in inner))
    out["other"] = max(0.0, wall - sum(out.values()))
    return out


def _profile(device: str, epochs: int, batch: int, lr: float) -> dict[str, Any]:
    """A Learner run under cProfile with the inline processor: seconds and share per category, and
    the functions with the most own time."""
    from burn_train.examples import digits

    with tempfile.TemporaryDirectory() as tmp:
        args = digits.parse_args(_argv(device, epochs, batch, lr, tmp))
        learner, train, valid = digits.build(args)
        learner.config.processor = "inline"  # handlers on this thread, where cProfile sees them
        import burn

        prof = cProfile.Profile()
        start = time.perf_counter()
        with burn.profile(learner.config.devices[0]) as counts:
            prof.enable()
            learner.fit(train, valid)
            prof.disable()
        wall = time.perf_counter() - start
        steps = epochs * (len(train) + len(valid))
    stats = pstats.Stats(prof)
    seconds = _categories(stats, wall)
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    top = sorted(table.items(), key=lambda kv: kv[1][2], reverse=True)[:12]
    return {
        "profiled_seconds": round(wall, 3),
        # device activity per train or valid step (zero on the numpy backend, which counts nothing):
        # a device sync per step is what batched item reads remove
        "device_syncs_per_step": round(counts.syncs / steps, 3),
        "kernels_per_step": round(counts.kernels / steps, 1),
        "item_reads": getattr(getattr(learner, "_reads", None), "reads", None),  # None before batched reads
        "seconds": {k: round(v, 3) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])},
        "share": {k: round(v / wall, 3) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])},
        "top_own_time": [
            {"function": f"{_short(fn)}:{line}({name})", "seconds": round(v[2], 3), "calls": v[1]}
            for (fn, line, name), v in top
        ],
    }


def _short(filename: str) -> str:
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[-3:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or wgpu")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each; the fastest is kept")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile run")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args()
    dev, e, b, lr = args.device, args.epochs, args.batch_size, args.lr
    _learner(dev, 1, b, lr, 64)  # imports, compiles, matplotlib: not timed
    _bare(dev, 1, b, lr, 64)
    learner_runs, quiet_runs, bare_runs = [], [], []
    for _ in range(max(1, args.repeats)):  # interleaved, so a busy machine hurts all alike
        learner_runs.append(_learner(dev, e, b, lr))
        quiet_runs.append(_learner(dev, e, b, lr, plots=False))
        bare_runs.append(_bare(dev, e, b, lr))
    learner_s, learner_acc = min(learner_runs)
    quiet_s, _ = min(quiet_runs)
    bare_s, bare_acc, bare_data = min(bare_runs)
    result: dict[str, Any] = {
        "benchmark": "bench_learner_overhead",
        "device": dev,
        "epochs": e,
        "batch": b,
        "learner": {"seconds": round(learner_s, 3), "valid_accuracy": round(learner_acc, 4)},
        "learner_no_plots": {"seconds": round(quiet_s, 3)},
        "bare": {
            "seconds": round(bare_s, 3),
            "valid_accuracy": round(bare_acc, 4),
            "data_seconds": round(bare_data, 3),
        },
        "overhead_ratio": round(learner_s / bare_s, 3),
        "overhead_seconds": round(learner_s - bare_s, 3),
        "overhead_ratio_no_plots": round(quiet_s / bare_s, 3),
    }
    if not args.no_profile:
        result["profile"] = _profile(dev, e, b, lr)
    emit_json(result, args.out)


if __name__ == "__main__":
    main()
