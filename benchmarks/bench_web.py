"""Exported WebGPU pages (``burn web export``) in headless Chromium, per model of issue 21: load time,
first run, median steady run, dispatches and submits per run; beside it ONNX Runtime Web on the same
.onnx file (its WebGPU and wasm providers) when ``--ort-web DIR`` names a folder holding
``node_modules/onnxruntime-web`` (``npm install onnxruntime-web`` there; nothing is downloaded here),
and the same exported schedule replayed natively through wgpu-py (``NativeSchedule``) on this
machine's adapter: on a GPU machine that is the real-GPU figure, since Chromium there offers pages
only SwiftShader.

    python benchmarks/bench_web.py [--models resnet,unet] [--reps 20] [--ort-web ~/.cache/burn/npm] \
        [--fusion both|on|off] [--json out.json]
    python benchmarks/bench_web.py --native-only [--json out.json]     # no browser (the GPU machine)

``--native-only`` exports each model and replays its schedule natively only (no browser), beside
onnxruntime on the same machine (its CUDA provider where the installed build has one, else CPU): the
real-GPU figure of the exported schedules.

``--fusion both`` (default) exports each model twice, recorded through burn's fusion decorator (the
default export, ``page``) and op by op (``counts_unfused``), to show what fusion saves: the two then
run in one page, alternately (``alternated``), so that both see the same CPU load. Dispatches and
submits per run are counted in the page itself (``GPUComputePassEncoder.dispatchWorkgroups`` and
``GPUQueue.submit`` wrapped before anything runs, the same counters for ORT Web's WebGPU provider), next
to the schedule's own counts. Browser timings are SwiftShader (CPU) timings; compare them only within
one run (``min_ms`` beside the median ``steady_ms`` where other work shares the CPU).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit_json
from _web_browser import BROWSER, count_js, load_test_helper, start_browser


def _explicit_dilations(data: bytes) -> bytes:
    """Conv/ConvTranspose with ``dilations`` and ``strides`` spelled out: ORT Web's WebGPU Conv (1.30)
    fails with "dilations should be 2D" / "strides should be 2D" when an attribute is left to its
    default. Same model, same file for both."""
    import onnx
    from onnx import helper

    model = onnx.load_from_string(data)
    for node in model.graph.node:
        if node.op_type in ("Conv", "ConvTranspose"):
            have = {a.name for a in node.attribute}
            for name in ("dilations", "strides"):
                if name not in have:
                    node.attribute.append(helper.make_attribute(name, [1, 1]))
    return model.SerializeToString()


# Counts GPU work of whatever runs in the page: compute dispatches and queue submits (per steady run).
COUNT_JS = count_js(
    "burnCounts",
    (("GPUComputePassEncoder", "dispatchWorkgroups", "dispatches"), ("GPUQueue", "submit", "submits")),
)

PAGE_JS = """async ([feeds, reps]) => {
  const t0 = performance.now();
  const { load } = await import("./model.js");
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  const model = await load({ device });
  const loadMs = performance.now() - t0;
  const given = {};
  for (const [name, f] of Object.entries(feeds)) {
    const info = model.inputs.find((i) => i.name === name);
    given[name] = { data: info.dtype === "float32" ? Float32Array.from(f.data) : Int32Array.from(f.data), shape: f.shape };
  }
  let s = performance.now();
  await model.run(given);
  const first = performance.now() - s;
  const times = [];
  const before = { ...window.burnCounts };
  for (let i = 0; i < reps; i++) { s = performance.now(); await model.run(given); times.push(performance.now() - s); }
  times.sort((a, b) => a - b);
  const per_run = { dispatches: (window.burnCounts.dispatches - before.dispatches) / reps,
                    submits: (window.burnCounts.submits - before.submits) / reps };
  model.destroy();
  return { load_ms: loadMs, first_ms: first, steady_ms: times[times.length >> 1], min_ms: times[0], per_run };
}"""

# The fused and the unfused page of one model in one page, run alternately (the steady runs of both
# see the same CPU load): {fused: {...}, unfused: {...}} with the same fields as PAGE_JS.
PAIR_JS = """async ([feeds, reps, urls]) => {
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  const models = {}, given = {}, out = {};
  for (const [key, url] of Object.entries(urls)) {
    const t0 = performance.now();
    const { load } = await import(url);
    models[key] = await load({ device });
    out[key] = { load_ms: performance.now() - t0, times: [], dispatches: 0, submits: 0 };
    given[key] = {};
    for (const [name, f] of Object.entries(feeds)) {
      const info = models[key].inputs.find((i) => i.name === name);
      given[key][name] = { data: info.dtype === "float32" ? Float32Array.from(f.data) : Int32Array.from(f.data), shape: f.shape };
    }
    const s = performance.now();
    await models[key].run(given[key]);
    out[key].first_ms = performance.now() - s;
  }
  for (let i = 0; i < reps; i++) {
    for (const key of Object.keys(models)) {
      const before = { ...window.burnCounts };
      const s = performance.now();
      await models[key].run(given[key]);
      out[key].times.push(performance.now() - s);
      out[key].dispatches += window.burnCounts.dispatches - before.dispatches;
      out[key].submits += window.burnCounts.submits - before.submits;
    }
  }
  const result = {};
  for (const [key, o] of Object.entries(out)) {
    o.times.sort((a, b) => a - b);
    models[key].destroy();
    result[key] = { load_ms: o.load_ms, first_ms: o.first_ms, steady_ms: o.times[o.times.length >> 1], min_ms: o.times[0],
                    per_run: { dispatches: o.dispatches / reps, submits: o.submits / reps } };
  }
  return result;
}"""

ORT_JS = """async ([feeds, reps, provider]) => {
  const ort = await import("./ort/ort.all.min.mjs");
  ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
  ort.env.wasm.numThreads = 1;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create("./model.onnx", { executionProviders: [provider] });
  const loadMs = performance.now() - t0;
  const given = {};
  for (const [name, f] of Object.entries(feeds)) {
    given[name] = f.dtype === "int64"
      ? new ort.Tensor("int64", BigInt64Array.from(f.data.map((v) => BigInt(v))), f.shape)
      : new ort.Tensor("float32", Float32Array.from(f.data), f.shape);
  }
  let s = performance.now();
  await session.run(given);
  const first = performance.now() - s;
  const times = [];
  const before = { ...window.burnCounts };
  for (let i = 0; i < reps; i++) { s = performance.now(); await session.run(given); times.push(performance.now() - s); }
  times.sort((a, b) => a - b);
  const per_run = { dispatches: (window.burnCounts.dispatches - before.dispatches) / reps,
                    submits: (window.burnCounts.submits - before.submits) / reps };
  await session.release();
  return { load_ms: loadMs, first_ms: first, steady_ms: times[times.length >> 1], min_ms: times[0], per_run };
}"""


def _page(browser: Any, folder: Path, js_feeds: Any, reps: int) -> dict[str, Any]:
    page, _ = browser.open(folder, "model.js")
    page.evaluate(COUNT_JS)
    result = page.evaluate(PAGE_JS, [js_feeds, reps])
    page.close()
    return result


def _steady_ms(run: Any, reps: int) -> float:
    """Median milliseconds of ``reps`` calls of ``run`` after one warm-up call (each call returns its
    outputs on the host, so it is synchronous)."""
    run()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        run()
        times.append((time.perf_counter() - s) * 1e3)
    return statistics.median(times)


def native_only(M: Any, names: list[str], reps: int, out: Path | None) -> int:
    """Each model's exported schedule replayed natively (wgpu-py on this machine's adapter) against
    onnxruntime on the same machine, steady medians of ``reps`` runs."""
    import burn_onnx
    import burn_wgpu.web as web
    import onnxruntime as ort

    providers = [
        p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in (n.strip() for n in names):
            data = _explicit_dilations(M.model(name))
            feeds = M.feeds(name)
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "model.onnx").write_bytes(data)
            exported = burn_onnx.export_web(
                folder / "model.onnx", folder, {k: v.shape for k, v in feeds.items()}
            )
            native = web.NativeSchedule(folder)
            row: dict[str, Any] = {"model": name, "dispatches": exported.counts.get("dispatches")}
            row["native_schedule_steady_ms"] = round(
                _steady_ms(functools.partial(native.run, feeds), reps), 3
            )
            row["native_adapter"] = native.adapter
            session = ort.InferenceSession(data, providers=providers[:1])
            row["onnxruntime_provider"] = providers[0]
            row["onnxruntime_steady_ms"] = round(
                _steady_ms(functools.partial(session.run, None, feeds), reps), 3
            )
            row["ratio_native_over_onnxruntime"] = round(
                row["native_schedule_steady_ms"] / row["onnxruntime_steady_ms"], 3
            )
            rows.append(row)
    doc = {"benchmark": "bench_web", "mode": "native-only", "reps": reps, "models": rows}
    emit_json(doc, out)
    return 0


def bench_model(
    browser: Any, M: Any, name: str, reps: int, ort_dir: Path | None, work: Path, fusion: str = "both"
) -> dict[str, Any]:
    import burn_onnx
    import burn_wgpu.web as web

    data = _explicit_dilations(M.model(name))
    feeds = M.feeds(name)
    folder = work / name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(data)
    shapes = {k: v.shape for k, v in feeds.items()}
    js_feeds = {
        k: {"data": v.ravel().tolist(), "shape": list(v.shape), "dtype": str(v.dtype)}
        for k, v in feeds.items()
    }
    row: dict[str, Any] = {"model": name}
    if fusion == "both":
        unfused = work / f"{name}-unfused"
        t0 = time.perf_counter()
        exported = burn_onnx.export_web(folder / "model.onnx", unfused, shapes, fusion=False)
        row["export_unfused_s"] = round(time.perf_counter() - t0, 2)
        row["counts_unfused"] = exported.counts
    t0 = time.perf_counter()
    exported = burn_onnx.export_web(folder / "model.onnx", folder, shapes, fusion=fusion != "off")
    row["export_s"] = round(time.perf_counter() - t0, 2)
    row["fusion"] = fusion != "off"
    row["counts"] = exported.counts
    row["page"] = _page(browser, folder, js_feeds, reps)  # a fresh page: load, first and steady run
    if fusion == "both":
        page, _ = browser.open(work, f"{name}/model.js")
        page.evaluate(COUNT_JS)
        urls = {"fused": f"/{name}/model.js", "unfused": f"/{name}-unfused/model.js"}
        pair = page.evaluate(PAIR_JS, [js_feeds, reps, urls])
        page.close()
        # steady runs of both, alternated in one page (the second load there is warm: not reported)
        row["alternated"] = {
            key: {k: pair[key][k] for k in ("steady_ms", "min_ms", "per_run")} for key in pair
        }
    native = web.NativeSchedule(folder)
    row["native_schedule_steady_ms"] = _steady_ms(lambda: native.run(feeds), reps)
    row["native_adapter"] = native.adapter
    if ort_dir is not None:
        dist = ort_dir / "node_modules" / "onnxruntime-web" / "dist"
        shutil.copytree(dist, folder / "ort", dirs_exist_ok=True)
        for provider in ("webgpu", "wasm"):
            page, log = browser.open(folder, "model.js")
            page.evaluate(COUNT_JS)
            try:
                row[f"ort_web_{provider}"] = page.evaluate(ORT_JS, [js_feeds, reps, provider])
            except Exception as exc:
                row[f"ort_web_{provider}"] = {"error": str(exc).splitlines()[0]}
            page.close()
        ort_gpu = row["ort_web_webgpu"].get("steady_ms")
        if ort_gpu:
            row["steady_ratio_vs_ort_webgpu"] = round(row["page"]["steady_ms"] / ort_gpu, 3)
            if "alternated" in row:
                for key in ("fused", "unfused"):
                    row[f"alternated_{key}_ratio_vs_ort_webgpu"] = round(
                        row["alternated"][key]["steady_ms"] / ort_gpu, 3
                    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet,mobilenet,transformer,recurrent,unet")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--ort-web", type=Path, default=None, help="folder with node_modules/onnxruntime-web")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--fusion",
        choices=("both", "on", "off"),
        default="both",
        help="export through fusion (on), op by op (off), or both (the unfused page as page_unfused)",
    )
    parser.add_argument("--native-only", action="store_true", help="no browser: native replay + onnxruntime")
    args = parser.parse_args(argv)
    M = load_test_helper("_web_models", "bench_web")
    if args.native_only:
        return native_only(M, args.models.split(","), args.reps, args.json)
    browser = start_browser("bench_web")
    if browser is None:
        return 2
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.models.split(","):
                rows.append(
                    bench_model(browser, M, name.strip(), args.reps, args.ort_web, Path(tmp), args.fusion)
                )
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        browser.close()
    doc = {
        "benchmark": "bench_web",
        "browser": BROWSER,
        "reps": args.reps,
        "models": rows,
    }
    emit_json(doc, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
