"""Exported WebGPU pages (``burn web export``) in headless Chromium, per model of issue 21: load time,
first run, median steady run, dispatches and submits per run; beside it ONNX Runtime Web on the same
.onnx file (its WebGPU and wasm providers) when ``--ort-web DIR`` names a folder holding
``node_modules/onnxruntime-web`` (``npm install onnxruntime-web`` there; nothing is downloaded here),
and the same exported schedule replayed natively through wgpu-py (``NativeSchedule``) on this
machine's adapter: on a GPU machine that is the real-GPU figure, since Chromium there offers pages
only SwiftShader.

    python benchmarks/bench_web.py [--models resnet,unet] [--reps 20] [--ort-web ~/.cache/burn/npm] [--json out.json]

Browser timings are SwiftShader (CPU) timings; compare them only within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "packages" / "backend-wgpu" / "tests"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_web_{name}", TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _explicit_dilations(data: bytes) -> bytes:
    """Conv/ConvTranspose with ``dilations`` spelled out: ORT Web's WebGPU Conv (1.30) fails with
    "dilations should be 2D" when the attribute is left to its default. Same model, same file for both."""
    import onnx
    from onnx import helper

    model = onnx.load_from_string(data)
    for node in model.graph.node:
        if node.op_type in ("Conv", "ConvTranspose") and not any(
            a.name == "dilations" for a in node.attribute
        ):
            node.attribute.append(helper.make_attribute("dilations", [1, 1]))
    return model.SerializeToString()


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
  for (let i = 0; i < reps; i++) { s = performance.now(); await model.run(given); times.push(performance.now() - s); }
  times.sort((a, b) => a - b);
  model.destroy();
  return { load_ms: loadMs, first_ms: first, steady_ms: times[times.length >> 1], counts: model.counts };
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
  for (let i = 0; i < reps; i++) { s = performance.now(); await session.run(given); times.push(performance.now() - s); }
  times.sort((a, b) => a - b);
  await session.release();
  return { load_ms: loadMs, first_ms: first, steady_ms: times[times.length >> 1] };
}"""


def bench_model(
    browser: Any, M: Any, name: str, reps: int, ort_dir: Path | None, work: Path
) -> dict[str, Any]:
    import burn_wgpu.web as web

    data = _explicit_dilations(M.model(name))
    feeds = M.feeds(name)
    folder = work / name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(data)
    t0 = time.perf_counter()
    exported = web.export_onnx(folder / "model.onnx", folder, {k: v.shape for k, v in feeds.items()})
    export_s = time.perf_counter() - t0
    js_feeds = {
        k: {"data": v.ravel().tolist(), "shape": list(v.shape), "dtype": str(v.dtype)}
        for k, v in feeds.items()
    }
    page, _ = browser.open(folder, "model.js")
    row: dict[str, Any] = {"model": name, "export_s": round(export_s, 2), "counts": exported.counts}
    row["page"] = page.evaluate(PAGE_JS, [js_feeds, reps])
    page.close()
    native = web.NativeSchedule(folder)
    native.run(feeds)
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        native.run(feeds)
        times.append((time.perf_counter() - s) * 1e3)
    row["native_schedule_steady_ms"] = statistics.median(times)
    row["native_adapter"] = native.adapter
    if ort_dir is not None:
        dist = ort_dir / "node_modules" / "onnxruntime-web" / "dist"
        shutil.copytree(dist, folder / "ort", dirs_exist_ok=True)
        for provider in ("webgpu", "wasm"):
            page, log = browser.open(folder, "model.js")
            try:
                row[f"ort_web_{provider}"] = page.evaluate(ORT_JS, [js_feeds, reps, provider])
            except Exception as exc:
                row[f"ort_web_{provider}"] = {"error": str(exc).splitlines()[0]}
            page.close()
        ort_gpu = row["ort_web_webgpu"].get("steady_ms")
        if ort_gpu:
            row["steady_ratio_vs_ort_webgpu"] = round(row["page"]["steady_ms"] / ort_gpu, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet,mobilenet,transformer,recurrent,unet")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--ort-web", type=Path, default=None, help="folder with node_modules/onnxruntime-web")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    browser_mod = _load("_browser")
    M = _load("_web_models")
    reason = browser_mod.unavailable()
    if reason:
        print(json.dumps({"error": reason}))
        return 2
    browser = browser_mod.Browser()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.models.split(","):
                rows.append(bench_model(browser, M, name.strip(), args.reps, args.ort_web, Path(tmp)))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        browser.close()
    doc = {
        "benchmark": "bench_web",
        "browser": "chromium-headless-shell, WebGPU on SwiftShader",
        "reps": args.reps,
        "models": rows,
    }
    text = json.dumps(doc, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
