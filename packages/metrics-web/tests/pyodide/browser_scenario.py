"""Runs inside Pyodide inside headless Chromium (loaded by browser.mjs, next to ``node_scenario``, which
is scenario.py, the Node test's scenario, for its helpers): micropip installs the burn wheels from their
URLs, then the collectors found through entry points are read against the page's own APIs, which
browser.mjs exposes read from JavaScript as ``globalThis.burnJsSide``.

Nothing here needs numpy or a thread. ``check`` raises at the first failure, with what was expected.
"""

import asyncio
import importlib
import importlib.metadata
import importlib.util
import json
import math
import sys
import time

from node_scenario import (
    CHECKS,
    busy,
    check,
    check_pyodide_runtime,
    check_run,
    drive,
    mean_loss_metric,
    to_json,
)

PAGE_DISTS = ("burn-core", "burn-train", "burn-metrics-web", "pluggy")


async def install_from_urls(urls: list) -> str:
    """``micropip.install`` of the wheel URLs (deps=False: every dependency is among them, and no
    package index is asked), then what importlib.metadata reports for each."""
    import micropip

    check(importlib.util.find_spec("burn") is None, "burn is not installed before micropip runs")
    await micropip.install(list(urls), deps=False)
    importlib.invalidate_caches()
    out = []
    for url in urls:
        wheel = str(url).rsplit("/", 1)[-1]
        name, version = wheel.split("-")[:2]
        dist = importlib.metadata.distribution(name)
        installer = (dist.read_text("INSTALLER") or "").strip()
        check(dist.version == version, f"{name} {dist.version} installed from {wheel}")
        check(installer == "micropip", f"{name} was installed by micropip (INSTALLER: {installer!r})")
        out.append({"wheel": wheel, "dist": dist.metadata["Name"], "version": dist.version})
    return json.dumps(out)


def js_side() -> dict:
    """The page's APIs read from JavaScript (browser.mjs), as Python values."""
    import js

    side = js.burnJsSide
    memory = side.memory()
    return {
        "memory": None if memory is None else [float(v) for v in memory.to_py()],
        "now": float(side.now()),
        "wasm_heap": float(side.wasmHeap()),
        "cores": float(side.cores()),
    }


def between(value: float, a: float, b: float) -> bool:
    """``value`` within [a, b], up to float rounding (a collector's seconds times 1000 against
    milliseconds read directly can differ in the last bits)."""
    slack = 1e-6 * max(1.0, abs(a), abs(b))
    return min(a, b) - slack <= value <= max(a, b) + slack


async def phase_chromium() -> str:
    """The collectors of burn-metrics-web, found through entry points, on Chromium's real APIs."""
    check_pyodide_runtime()

    import burn.plugins
    from burn_metrics_web import SOURCES, WebMetric
    from burn_train.renderer import make_renderer

    check("numpy" not in sys.modules, "import burn, burn_train and burn_metrics_web loaded no numpy")
    reg = burn.plugins.registry()
    check(reg.broken == [], f"no plugin is broken: {reg.broken}")
    dists = {p.name: p.dist for p in reg.plugins}
    check(dists.get("metrics-web") == "burn-metrics-web", f"entry point metrics-web: {dists}")
    for name in SOURCES:
        info = reg.provider("collector", name)
        check(info is not None and info.dist == "burn-metrics-web", f"collector {name} from the entry point")
    available = {name: spec.is_available() for name, spec in reg.collectors.items()}
    for name in SOURCES:  # Chromium has every API the sources read, WebGPU included
        check(available[name] == (True, ""), f"{name} is available in Chromium: {available[name]}")
    check(
        not available["cpu-use"][0] and "psutil" in available["cpu-use"][1],
        f"cpu-use: {available['cpu-use']}",
    )

    # every collector built through the registry (as burn_train's Learner does)
    built = {name: reg.collector(name).factory() for name in SOURCES}
    check(all(c.unsupported == {} for c in built.values()), "no collector reports a missing source")

    # performance.memory (Chromium only): the collector's sample lies between two direct reads
    before = js_side()
    heap = built["web-js-heap"].collect()
    after = js_side()
    check(before["memory"] is not None, "performance.memory exists in Chromium")
    for key, i in (("JS Heap Used", 0), ("JS Heap Total", 1), ("JS Heap Limit", 2)):
        lo, hi = before["memory"][i] / 1e6, after["memory"][i] / 1e6
        check(between(heap[key], lo, hi), f"{key} {heap[key]} MB between the direct reads {lo}, {hi}")
    check(
        0 < heap["JS Heap Used"] <= heap["JS Heap Total"] <= heap["JS Heap Limit"],
        f"used <= total <= limit: {heap}",
    )

    # performance.now(): Page Time (s) between two direct reads (ms); Step Time measures busy work
    timing = built["web-timing"]
    timing.restart()
    busy(5.0)
    before = js_side()
    sample = timing.collect()
    after = js_side()
    check(
        between(sample["Page Time"] * 1000, before["now"], after["now"]),
        f"Page Time {sample['Page Time']} s between performance.now() {before['now']} and {after['now']} ms",
    )
    # Chromium coarsens performance.now() (100 us without cross-origin isolation): 0.2 ms of slack
    check(sample["Step Time"] >= 5.0 - 0.2, f"Step Time {sample['Step Time']} ms covers 5 ms of work")

    wasm = built["web-wasm-heap"].collect()["Wasm Heap"]
    check(wasm == js_side()["wasm_heap"] / 1e6, f"Wasm Heap {wasm} MB == pyodide._module.HEAP8.length / 1e6")
    cores = built["web-cpu-cores"].collect()["CPU Cores"]
    check(cores == js_side()["cores"] and cores >= 1, f"CPU Cores {cores} == navigator.hardwareConcurrency")

    # WebGPU: the Promise settles on the page's event loop; NaN until then, never a wait
    gpu_collector = built["web-gpu"]
    deadline = time.monotonic() + 20.0
    gpu = gpu_collector.collect()
    while math.isnan(gpu["WebGPU Adapter"]) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        gpu = gpu_collector.collect()
    check(gpu["WebGPU Adapter"] == 1.0, f"a WebGPU adapter was found: {gpu} {gpu_collector.unsupported}")
    info = gpu_collector.info

    # burn_train's processor and the "web" renderer drawing into the real DOM
    renderer = make_renderer("web", interval=0.0)
    run = drive(
        [
            mean_loss_metric(),
            WebMetric("step_time"),
            WebMetric("js_heap_used", interval=0),
            WebMetric("wasm_heap", interval=0),
            WebMetric("cpu_cores"),
        ],
        [mean_loss_metric(), WebMetric("step_time")],
        renderer,
    )
    check(renderer.mode == "html" and renderer.element is not None, f"HTML mode ({renderer.reason})")
    check(renderer.frames >= 10, f"frames drawn: {renderer.frames}")
    steps = check_run(run)
    store = run["hub"].store
    used = [store.value("train", "JS Heap Used", e) for e in (1, 2)]
    limit = js_side()["memory"][2] / 1e6
    check(all(0 < u < limit for u in used), f"JS Heap Used per epoch {used} MB below the limit")
    wasm_samples = [store.value("train", "Wasm Heap", e) for e in (1, 2)]
    check(store.value("train", "CPU Cores", 2) == cores, "CPU Cores through the processor")
    for collector in built.values():
        collector.close()
    return to_json(
        {
            "checks": len(CHECKS),
            "available": available,
            "heap": heap,
            "gpu": gpu,
            "gpu_info": info,
            "cores": cores,
            "wasm_heap_samples": wasm_samples,
            "step_times": steps,
            "frames": renderer.frames,
        }
    )
