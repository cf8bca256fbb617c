"""Runs inside Pyodide (loaded by run.mjs): installs the wheels, then checks burn under wasm.

Nothing here may need numpy or a thread: Pyodide's numpy is not available offline and a thread
cannot start. Each phase returns JSON for run.mjs, which checks some values against the JavaScript
side. ``check`` raises at the first failure, with what was expected.
"""

import asyncio
import importlib
import importlib.util
import io
import json
import math
import os
import site
import sys
import time
import zipfile

CHECKS: list[str] = []
BATCH, TRAIN_ITEMS, VALID_ITEMS, EPOCHS = 8, 48, 24, 2


def check(condition: object, what: str) -> None:
    if not condition:
        raise AssertionError(f"check failed (Pyodide side): {what}")
    CHECKS.append(what)


def close(a: float, b: float, abs_tol: float, rel_tol: float = 0.0) -> bool:
    return math.isclose(a, b, abs_tol=abs_tol, rel_tol=rel_tol)


def to_json(value: object) -> str:
    """JSON with NaN as null (JSON has no NaN)."""

    def clean(v: object) -> object:
        if isinstance(v, float) and math.isnan(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(value))


def install_wheels(folder: str) -> str:
    """Unzip every wheel in ``folder`` into site-packages (what pip does for pure-Python wheels)."""
    target = site.getsitepackages()[0]
    names = sorted(f for f in os.listdir(folder) if f.endswith(".whl"))
    for name in names:
        with zipfile.ZipFile(os.path.join(folder, name)) as wheel:
            wheel.extractall(target)
    importlib.invalidate_caches()
    return json.dumps(names)


def busy(ms: float) -> None:
    """Stand-in for a training step's work (a busy loop: it holds the thread like real work does)."""
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


def mean_loss_metric():
    """A pure-Python metric (burn_train's metrics use numpy, which is absent here)."""
    from burn_train.metric import Metric

    class MeanLoss(Metric):
        name = "Loss"
        higher_is_better = False

        def _reset(self) -> None:
            self._sum, self._n = 0.0, 0

        def _update(self, item, metadata) -> float:
            self._sum += item["loss"] * item["n"]
            self._n += item["n"]
            return item["loss"]

        def _epoch(self) -> float:
            return self._sum / self._n if self._n else math.nan

    return MeanLoss()


def drive(train_metrics: list, valid_metrics: list, renderer) -> dict:
    """Feed a synthetic two-epoch event stream to burn_train's processor; return what it recorded."""
    from burn.autotune import AutotuneEvent, publish
    from burn_train._events import (
        EndEpochEvent,
        EndEvent,
        ItemEvent,
        Progress,
        StartEvent,
        StatusEvent,
        TrainingProgress,
    )
    from burn_train.processor import MetricsHub, MetricSlot, make_processor

    hub = MetricsHub(
        {"train": [MetricSlot(m) for m in train_metrics], "valid": [MetricSlot(m) for m in valid_metrics]},
        renderer=renderer,
    )
    processor = make_processor(hub)  # "auto": must pick inline here
    check(processor.mode == "inline", f"the processor runs inline without threads (got {processor.mode})")
    processor.start()
    processor.submit(StartEvent(EPOCHS, 1, {"train": TRAIN_ITEMS, "valid": VALID_ITEMS}))
    submitted, losses, step_seen = 1, {}, {}
    iteration = 0
    for epoch in range(1, EPOCHS + 1):
        for split, total in (("train", TRAIN_ITEMS), ("valid", VALID_ITEMS)):
            previous = None
            for b in range(total // BATCH):
                busy(2.0 + b)  # steps of different lengths, so the timing has something to measure
                loss = 1.0 / (epoch + b + (0.5 if split == "valid" else 0.0))
                losses.setdefault((split, epoch), []).append((loss, BATCH))
                iteration += split == "train"
                tp = TrainingProgress(Progress((b + 1) * BATCH, total), epoch, EPOCHS, iteration)
                if split == "train" and b == 1:
                    publish(AutotuneEvent("matmul", step=1, total=4, key="f32"))
                    submitted += 1
                before = time.perf_counter()
                processor.submit(ItemEvent(split, {"loss": loss, "n": BATCH}, tp, lr=0.1))
                after = time.perf_counter()
                submitted += 1
                # inline: the event was handled before submit returned, nothing queued
                check(processor.handled == submitted, f"event {submitted} handled inline on submit")
                entry = hub.state.splits[split].entries.get("Step Time")
                if entry is not None:
                    # the sample was taken inside this submit and the previous one: bounds in seconds
                    bounds = None if previous is None else (before - previous[1], after - previous[0])
                    step_seen.setdefault((split, epoch), []).append((entry.value, bounds))
                previous = (before, after)
            processor.submit(EndEpochEvent(split, epoch))
            submitted += 1
    publish(AutotuneEvent("matmul", step=4, total=4, done=True, key="f32", best="tiled"))
    processor.submit(StatusEvent("escaped <b> status"))
    processor.submit(EndEvent())
    submitted += 3
    processor.flush()
    processor.close()
    check(processor.handled == submitted, f"all {submitted} events handled")
    return {"hub": hub, "losses": losses, "step_seen": step_seen}


def check_run(run: dict) -> dict:
    """Checks common to both phases: exact epoch losses, step timing against Python's clock."""
    store = run["hub"].store
    for (split, epoch), pairs in run["losses"].items():
        reference = sum(loss * n for loss, n in pairs) / sum(n for _, n in pairs)
        got = store.value(split, "Loss", epoch)
        check(close(got, reference, 1e-12), f"{split} epoch {epoch} Loss {got} == weighted mean {reference}")
    out = {}
    for (split, epoch), seen in run["step_seen"].items():
        first, rest = seen[0], seen[1:]
        check(
            first[1] is None and math.isnan(first[0]),
            f"{split} epoch {epoch}: the first step only starts the clock",
        )
        for value, (low, high) in rest:
            # performance.now() was read inside two consecutive submits, which Python's clock brackets
            # (0.2 ms of slack for the two clocks' resolution)
            check(
                1000 * low - 0.2 <= value <= 1000 * high + 0.2,
                f"{split} Step Time {value:.3f} ms in [{1000 * low:.3f}, {1000 * high:.3f}]",
            )
        values = [v for v, _ in rest]
        check(all(v > 0 for v in values), f"{split} epoch {epoch} step times are positive")
        epoch_value = store.value(split, "Step Time", epoch)
        check(
            close(epoch_value, sum(values) / len(values), 1e-9, 1e-9),
            f"{split} epoch {epoch} Step Time is the mean of its samples",
        )
        out[f"{split}-{epoch}"] = values
    return out


def check_pyodide_runtime() -> None:
    """What every phase starts from: Pyodide (emscripten), without numpy, where no thread starts."""
    import threading

    check(sys.platform == "emscripten", "sys.platform is emscripten")
    check(importlib.util.find_spec("numpy") is None, "numpy is not installed")
    try:
        threading.Thread(target=lambda: None).start()
        started = True
    except RuntimeError:
        started = False
    check(not started, "a thread cannot start here")


async def phase_plain() -> str:
    """Node as it is: no navigator (Node 20), no performance.memory, no WebGPU, no DOM."""
    check_pyodide_runtime()

    import burn
    import burn.plugins
    import js
    from burn_metrics_web import SOURCES, WebCollector, WebMetric
    from burn_train._sync import threads_available
    from burn_train.metric import CollectorMetric
    from burn_train.renderer import make_renderer

    check("numpy" not in sys.modules, "import burn, burn_train and burn_metrics_web loaded no numpy")
    check(not threads_available(), "burn_train sees no threads")
    reg = burn.plugins.registry()
    check(reg.broken == [], f"no plugin is broken: {reg.broken}")
    dists = {p.name: p.dist for p in reg.plugins}
    check(
        dists.get("metrics-web") == "burn-metrics-web",
        f"entry point metrics-web from burn-metrics-web: {dists}",
    )
    check(
        dists.get("metrics-basic") == "burn-train" and dists.get("ndarray") == "burn-core",
        f"the other entry points: {dists}",
    )
    for name in SOURCES:
        info = reg.provider("collector", name)
        check(
            info is not None and info.dist == "burn-metrics-web",
            f"collector {name} came from the entry point",
        )
    check(
        reg.provider("renderer", "web").dist == "burn-metrics-web", "renderer 'web' came from the entry point"
    )
    ndarray = next(b for b in burn.backends() if b.name == "ndarray")
    check(
        not ndarray.available and "numpy" in ndarray.reason,
        f"ndarray backend unavailable, reason: {ndarray.reason}",
    )

    available = {name: spec.is_available() for name, spec in reg.collectors.items()}
    has_navigator = hasattr(js, "navigator")
    check(available["web-timing"] == (True, ""), f"web-timing available: {available['web-timing']}")
    check(available["web-wasm-heap"] == (True, ""), f"web-wasm-heap available: {available['web-wasm-heap']}")
    check(
        not available["web-js-heap"][0] and "performance.memory" in available["web-js-heap"][1],
        f"web-js-heap: {available['web-js-heap']}",
    )
    check(
        not available["web-gpu"][0] and "navigator" in available["web-gpu"][1],
        f"web-gpu: {available['web-gpu']}",
    )
    check(available["web-cpu-cores"][0] == has_navigator, f"web-cpu-cores: {available['web-cpu-cores']}")
    check(
        not available["cpu-use"][0] and "psutil" in available["cpu-use"][1],
        f"cpu-use: {available['cpu-use']}",
    )

    everything = WebCollector()  # the sources Node has
    expected = {"web-timing", "web-wasm-heap"} | ({"web-cpu-cores"} if has_navigator else set())
    check(
        set(everything.unsupported) == set(SOURCES) - expected,
        f"WebCollector() skipped {everything.unsupported}",
    )
    sample = everything.collect()
    check(
        set(sample) == {k for n in expected for k in SOURCES[n].keys}, f"WebCollector() keys {sorted(sample)}"
    )
    soft = WebCollector(["web-js-heap", "web-timing"])
    sample = soft.collect()
    check(all(math.isnan(sample[k]) for k in SOURCES["web-js-heap"].keys), "a missing source reports NaN")
    check("performance.memory" in soft.unsupported["web-js-heap"], f"and says why: {soft.unsupported}")
    check(sample["Step Time"] >= 0 and sample["Page Time"] > 0, "the other source still reports")
    timing = WebCollector(["web-timing"])
    t0 = time.perf_counter()
    clock = [timing.collect()["Page Time"]]
    t0b = time.perf_counter()
    for _ in range(3):
        busy(2.0)
        t1 = time.perf_counter()
        clock.append(timing.collect()["Page Time"])
    t1b = time.perf_counter()
    check(clock[0] < clock[1] < clock[2] < clock[3], f"performance.now() increases: {clock}")
    # Python's clock brackets both reads (0.2 ms of slack for the two clocks' resolution)
    advanced = clock[3] - clock[0]
    check(
        t1 - t0b - 2e-4 <= advanced <= t1b - t0 + 2e-4,
        f"Page Time advanced {advanced} s in [{t1 - t0b}, {t1b - t0}]",
    )
    out = io.StringIO()
    renderer = make_renderer("web", stream=out, interval=0.0)
    check(type(renderer).__name__ == "WebRenderer" and renderer.mode == "console", "no DOM: console renderer")
    train = [mean_loss_metric(), WebMetric("step_time"), WebMetric("wasm_heap", interval=0)]
    if has_navigator:
        train.append(CollectorMetric("web-cpu-cores", interval=0))
    run = drive(train, [mean_loss_metric(), WebMetric("step_time")], renderer)
    steps = check_run(run)
    lines = out.getvalue().splitlines()
    for needle in (
        "[start] 2 epoch(s)",
        "[train] 1/2 [",
        "[train] epoch 1/2 done | Loss",
        "[valid] epoch 2/2 done",
        "[autotune] autotuning matmul [f32] 1/4",
        "done (best: tiled)",
        "[status] escaped <b> status",
        "[end]",
    ):
        check(any(needle in line for line in lines), f"console line with {needle!r}")
    store = run["hub"].store
    heap = [store.value("train", "Wasm Heap", e) for e in (1, 2)]
    cores = store.value("train", "CPU Cores", 1) if has_navigator else None
    return to_json(
        {
            "checks": len(CHECKS),
            "available": available,
            "wasm_heap": heap,
            "cpu_cores": cores,
            "step_times": steps,
            "console": lines,
            "page_time": clock[-1],
        }
    )


async def phase_browser() -> str:
    """run.mjs injected performance.memory, navigator (7 cores, a WebGPU adapter) and a document."""
    import burn.plugins
    import js
    from burn_metrics_web import SOURCES, WebCollector, WebMetric
    from burn_train.renderer import make_renderer

    reg = burn.plugins.registry()
    available = {name: reg.collectors[name].is_available() for name in SOURCES}
    check(
        all(ok for ok, _ in available.values()), f"every source is available once the APIs exist: {available}"
    )

    collector = WebCollector()
    first = collector.collect()
    check(
        first["JS Heap Used"] == 12.345678 and first["JS Heap Total"] == 23.456789, f"JS heap in MB: {first}"
    )
    check(first["JS Heap Limit"] == 4294.705152, "JS heap limit in MB")
    check(first["CPU Cores"] == 7.0, "navigator.hardwareConcurrency")
    check(math.isnan(first["WebGPU Adapter"]), "the WebGPU adapter is pending: NaN, never a wait")
    await asyncio.sleep(0.05)  # let the Promise settle on the JavaScript event loop
    gpu = collector.collect()
    want = {
        "WebGPU Adapter": 1.0,
        "WebGPU Fallback": 0.0,
        "WebGPU Features": 3.0,
        "WebGPU Max Buffer": 2**28 / 1e6,
        "WebGPU Max Storage Binding": 2**27 / 1e6,
        "WebGPU Max Workgroup Invocations": 256.0,
    }
    check({k: gpu[k] for k in want} == want, f"WebGPU adapter values {gpu}")
    check(
        collector.info
        == {
            "vendor": "burn-test",
            "architecture": "fake-arch",
            "device": "fake-device",
            "description": "injected",
        },
        f"adapter info {collector.info}",
    )

    js.burnGpuMode = "null"
    none = WebCollector(["web-gpu"])
    await asyncio.sleep(0.05)
    sample = none.collect()
    check(
        sample["WebGPU Adapter"] == 0.0 and math.isnan(sample["WebGPU Max Buffer"]), f"no adapter: {sample}"
    )
    js.burnGpuMode = "reject"
    rejected = WebCollector(["web-gpu", "web-cpu-cores"])
    await asyncio.sleep(0.05)
    sample = rejected.collect()
    check(all(math.isnan(sample[k]) for k in SOURCES["web-gpu"].keys), "a rejected adapter request reads NaN")
    check(
        "adapter blocked" in rejected.unsupported["web-gpu"] and sample["CPU Cores"] == 7.0,
        f"soft: {rejected.unsupported}",
    )
    js.burnGpuMode = "adapter"

    renderer = make_renderer("web", interval=0.0)
    check(renderer.element is None, "the renderer looks for its element only when training starts")
    run = drive(
        [
            mean_loss_metric(),
            WebMetric("step_time"),
            WebMetric("js_heap_used", interval=0),
            WebMetric("cpu_cores"),
        ],
        [mean_loss_metric(), WebMetric("step_time")],
        renderer,
    )
    check(renderer.mode == "html" and renderer.element is not None, f"HTML mode ({renderer.reason})")
    check(renderer.frames >= 10, f"frames drawn: {renderer.frames}")
    steps = check_run(run)
    store = run["hub"].store
    check(store.value("train", "JS Heap Used", 1) == 12.345678, "JS Heap Used through the processor")
    check(store.value("train", "CPU Cores", 2) == 7.0, "CPU Cores through the processor")
    return to_json(
        {
            "checks": len(CHECKS),
            "gpu": gpu,
            "info": collector.info,
            "step_times": steps,
            "frames": renderer.frames,
        }
    )
