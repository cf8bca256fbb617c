"""Training in a browser page (issue 37): burn's exported trainer (``burn_wgpu.web.export_training``)
against TensorFlow.js 4.22 (``@tensorflow/tfjs`` + ``@tensorflow/tfjs-backend-webgpu``), both on
WebGPU in one headless Chromium run, on a digits-sized MLP (64-128-10) and the digits example's CNN,
with Adam (same lr, betas and epsilon), the same batch size and the same batches of the offline digits.

    python benchmarks/bench_web_train.py [--models mlp,cnn] [--steps 30] [--batch-size 32] [--lr 1e-3] \
        [--read both|on|off] [--engines burn,tfjs] [--tfjs ~/.cache/burn/tfjs] [--json out.json]
    python benchmarks/bench_web_train.py --npm-install      # once: npm install the two packages into --tfjs
    python benchmarks/bench_web_train.py --native [--models ...] [--steps 30] [--json out.json]  # no browser

``--native`` (no browser, no npm: the GPU machine) replays each exported trainer natively through wgpu-py
(``burn_wgpu.web.NativeTrainer``) beside burn-wgpu's own training step (same model, weights, batches and
Adam, fusion on) and PyTorch CUDA eager where there is one (``_web_train_native.py`` says how it times).

TF.js comes from ``--tfjs DIR`` (default ``$BURN_TFJS_DIR`` or ``~/.cache/burn/tfjs``), a folder holding
``node_modules/@tensorflow/tfjs`` and ``node_modules/@tensorflow/tfjs-backend-webgpu`` (``--npm-install``
runs ``npm install`` there; nothing is downloaded otherwise, and nothing lands in the repository): their
UMD bundles are copied into the served temporary folder. ``--engines burn`` needs no npm at all.

Per model and engine: load time, first-step time and their sum, the cold start to compare (burn's
trainer compiles its pipelines while loading, TF.js its shaders during the first step), then
alternately one step of each engine (both see the same CPU load): the median and min step time with
the loss read
every step (``read``), and the time per step of blocks of ``--block`` steps that read only the last
step's loss (``pipelined``: ``step(batch, { read: false })`` for burn, ``optimizer.minimize(f, false)``
for TF.js). Per step, GPU work is counted in the page for both engines by wrapping WebGPU itself:
compute passes (``GPUCommandEncoder.beginComputePass``), ``dispatchWorkgroups`` calls and queue
submits. Ratios are burn / TF.js (below 1: burn is faster). The two engines start from different
random weights (each framework's own initialisers: same architecture and parameter count), so only
the timings compare; the losses are printed to show that both train. Browser timings are SwiftShader
(CPU) timings: compare them only within one run. TF.js falls back to its webgl, then cpu backend where
its webgpu backend cannot start (``tfjs_backend`` says which ran); ``--tfjs-backend`` forces one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit_json
from _web_browser import BROWSER, count_js, start_browser

TFJS_VERSION = "4.22.0"
TFJS_PACKAGES = ("@tensorflow/tfjs", "@tensorflow/tfjs-backend-webgpu")
TFJS_BUNDLES = {  # the UMD bundles the page loads (they set window.tf and register the webgpu backend)
    "tf.min.js": "@tensorflow/tfjs/dist/tf.min.js",
    "tf-backend-webgpu.min.js": "@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js",
}
ENGINES = ("burn", "tfjs")
MODELS = ("mlp", "cnn")
CLASSES = 10


def default_tfjs_dir() -> Path:
    return Path(os.environ.get("BURN_TFJS_DIR", Path.home() / ".cache" / "burn" / "tfjs"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: mlp, cnn")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated: burn, tfjs")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per engine with the loss read")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps after the first")
    parser.add_argument("--block", type=int, default=10, help="steps per pipelined block (last one read)")
    parser.add_argument("--blocks", type=int, default=3, help="pipelined blocks per engine")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate (both engines)")
    parser.add_argument(
        "--read",
        choices=("both", "on", "off"),
        default="both",
        help="time steps that read the loss (on), pipelined blocks without reads (off), or both",
    )
    parser.add_argument("--tfjs", type=Path, default=None, help="folder with node_modules/@tensorflow/...")
    parser.add_argument(
        "--tfjs-backend",
        choices=("auto", "webgpu", "webgl", "cpu"),
        default="auto",
        help="TF.js backend (auto: webgpu, else webgl, else cpu)",
    )
    parser.add_argument(
        "--npm-install", action="store_true", help=f"npm install TF.js {TFJS_VERSION} and exit"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--native",
        action="store_true",
        help="no browser: the exported step replayed natively (wgpu-py) vs burn-wgpu and PyTorch CUDA",
    )
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for what, given, known in (("model", args.models, MODELS), ("engine", args.engines, ENGINES)):
        bad = [g for g in given if g not in known]
        if bad or not given:
            parser.error(f"unknown {what} {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}")
    for name in ("steps", "block", "blocks", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0 or args.lr <= 0:
        parser.error("--warmup must be >= 0 and --lr > 0")
    if args.tfjs is None:
        args.tfjs = default_tfjs_dir()
    return args


def npm_install(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    cmd = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder)]
    return subprocess.call(cmd + [f"{p}@{TFJS_VERSION}" for p in TFJS_PACKAGES])


def missing_tfjs(folder: Path) -> str | None:
    """Why TF.js cannot be loaded from ``folder`` (None when its bundles are there)."""
    missing = [rel for rel in TFJS_BUNDLES.values() if not (folder / "node_modules" / rel).is_file()]
    if missing:
        return (
            f"TF.js not found under {folder}/node_modules ({missing[0]}): run "
            f"`python benchmarks/bench_web_train.py --npm-install` (or --engines burn)"
        )
    return None


def digits_batches(batch_size: int, count: int = 8) -> list[dict[str, Any]]:
    """``count`` batches of the offline digits (train split), normalised as the digits example does:
    ``x`` (N, 1, 8, 8) float32, ``y`` (N,) int32."""
    import numpy as np
    from burn.data.vision import DigitsDataset

    data = DigitsDataset("train")
    out = []
    for b in range(count):
        items = [data[(b * batch_size + i) % len(data)] for i in range(batch_size)]
        x = (np.stack([it.image for it in items])[:, None] - 0.3) / 0.4
        out.append({"x": x.astype(np.float32), "y": np.array([it.label for it in items], np.int32)})
    return out


def burn_model(name: str) -> tuple[Any, Any]:
    """(module, step_fn) of the benchmark's model: the MLP on flattened images, or the digits CNN."""
    import burn
    from burn import nn
    from burn.nn import functional as F

    burn.seed(0)
    if name == "mlp":
        mlp = nn.Sequential(nn.LinearConfig(64, 128).init(), nn.Relu(), nn.LinearConfig(128, CLASSES).init())
        return mlp, lambda m, x, y: F.cross_entropy(m(x.flatten(1)), y)
    from burn_train.examples.digits import make_model_class

    return make_model_class()(burn.device("cpu")), lambda m, x, y: F.cross_entropy(m(x), y)


def export_burn(name: str, batch: dict[str, Any], lr: float, folder: Path) -> dict[str, Any]:
    import burn
    import burn_wgpu.web

    model, step = burn_model(name)
    t0 = time.perf_counter()
    out = burn_wgpu.web.export_training(model, step, burn.optim.AdamConfig().init(), batch, folder, lr=lr)
    params = sum(int(p.numel()) for _, p in model.named_params())
    return {"export_s": round(time.perf_counter() - t0, 2), "params": params, "schedule_counts": out.counts}


# Counts GPU work of whatever runs in the page, both engines alike (each engine's step is measured
# by the difference of these counters around it).
COUNT_JS = count_js(
    "gpuCounts",
    (
        ("GPUCommandEncoder", "beginComputePass", "passes"),
        ("GPUComputePassEncoder", "dispatchWorkgroups", "dispatches"),
        ("GPUComputePassEncoder", "dispatchWorkgroupsIndirect", "dispatches"),
        ("GPUQueue", "submit", "submits"),
    ),
)

# One model, the chosen engines, alternated step by step. cfg: model, engines, batches ({x, y} lists),
# xShape (burn, NCHW), tfShape (TF.js, NHWC or flat), lr, eps, steps, warmup, block, blocks, read,
# tfBackend. Returns {engine: {...}} plus tfjs_backend.
BENCH_JS = """async (cfg) => {
  const count = () => ({ ...window.gpuCounts });
  const diff = (a, b, n) => Object.fromEntries(Object.keys(a).map((k) => [k, (b[k] - a[k]) / n]));
  const median = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1]; };
  const batches = cfg.batches.map((b) => ({ x: Float32Array.from(b.x), y: Int32Array.from(b.y) }));
  const engines = {};
  let tfBackend = null;
  if (cfg.engines.includes("burn")) {
    const t0 = performance.now();
    const device = await (await navigator.gpu.requestAdapter()).requestDevice();
    const { loadTrainer } = await import(`./${cfg.model}/trainer.js`);
    const t = await loadTrainer({ device });
    engines.burn = {
      loadMs: performance.now() - t0,
      step: async (b, read) => {
        const out = await t.step({ x: { data: b.x, shape: cfg.xShape }, y: { data: b.y, shape: [b.y.length] } },
                                 { lr: cfg.lr, read });
        return out ? out.loss : null;
      },
      params: null,
      destroy: () => t.destroy(),
    };
  }
  if (cfg.engines.includes("tfjs")) {
    const t0 = performance.now();
    const order = cfg.tfBackend === "auto" ? ["webgpu", "webgl", "cpu"] : [cfg.tfBackend];
    for (const name of order) {
      try { if (await tf.setBackend(name)) { tfBackend = name; break; } } catch (e) { /* next one */ }
    }
    if (!tfBackend) throw new Error(`TF.js: none of the backends ${order} started`);
    await tf.ready();
    const L = tf.layers;
    const layers = cfg.model === "mlp"
      ? [L.dense({ inputShape: [64], units: 128, activation: "relu" }), L.dense({ units: 10 })]
      : [L.conv2d({ inputShape: [8, 8, 1], filters: 16, kernelSize: 3, padding: "same", activation: "relu" }),
         L.maxPooling2d({ poolSize: 2, strides: 2 }),
         L.conv2d({ filters: 32, kernelSize: 3, padding: "same", activation: "relu" }),
         L.maxPooling2d({ poolSize: 2, strides: 2 }), L.flatten(), L.dense({ units: 10 })];
    const model = tf.sequential({ layers });
    const vars = model.trainableWeights.map((w) => w.val);
    const opt = tf.train.adam(cfg.lr, 0.9, 0.999, cfg.eps);
    engines.tfjs = {
      loadMs: performance.now() - t0,
      step: async (b, read) => {
        const cost = tf.tidy(() => {
          const x = tf.tensor(b.x, cfg.tfShape);
          const y = tf.oneHot(tf.tensor1d(b.y, "int32"), 10);
          return opt.minimize(() => tf.losses.softmaxCrossEntropy(y, model.apply(x, { training: true })), read, vars);
        });
        if (!cost) return null;
        const v = (await cost.data())[0];
        cost.dispose();
        return v;
      },
      params: model.countParams(),
      tensors: () => tf.memory().numTensors,
      destroy: () => { opt.dispose(); model.dispose(); },
    };
  }
  const names = Object.keys(engines);
  const out = {};
  let k = 0;
  for (const n of names) {
    const e = engines[n], c0 = count(), s = performance.now();
    const loss = await e.step(batches[k % batches.length], true);
    const first = performance.now() - s;
    out[n] = { load_ms: e.loadMs, first_step_ms: first, load_plus_first_step_ms: e.loadMs + first,
               first_step_counts: diff(c0, count(), 1), losses: [loss], times: [], counts: [] };
    if (e.tensors) out[n].tensors = e.tensors();
    if (e.params !== null) out[n].params = e.params;
  }
  for (let i = 0; i < cfg.warmup; i++) { k++; for (const n of names) await engines[n].step(batches[k % batches.length], true); }
  if (cfg.read !== "off") {
    for (let i = 0; i < cfg.steps; i++) {
      k++;
      for (const n of (i % 2 ? names.slice().reverse() : names)) {
        const c0 = count(), s = performance.now();
        out[n].losses.push(await engines[n].step(batches[k % batches.length], true));
        out[n].times.push(performance.now() - s);
        out[n].counts.push(diff(c0, count(), 1));
      }
    }
    for (const n of names) {
      const o = out[n];
      o.read = { median_ms: median(o.times), min_ms: Math.min(...o.times), per_step: o.counts[o.counts.length - 1] };
    }
  }
  if (cfg.read !== "on") {
    const blocks = Object.fromEntries(names.map((n) => [n, { ms: [], counts: null }]));
    for (let b = 0; b < cfg.blocks; b++) {
      for (const n of (b % 2 ? names.slice().reverse() : names)) {
        const c0 = count(), s = performance.now();
        let loss = null;
        for (let i = 0; i < cfg.block; i++) {
          k++;
          loss = await engines[n].step(batches[k % batches.length], i === cfg.block - 1);
        }
        blocks[n].ms.push((performance.now() - s) / cfg.block);
        blocks[n].counts = diff(c0, count(), cfg.block);
        out[n].losses.push(loss);
      }
    }
    for (const n of names) {
      out[n].pipelined = { ms_per_step: median(blocks[n].ms), min_ms_per_step: Math.min(...blocks[n].ms),
                           block: cfg.block, blocks: cfg.blocks, per_step: blocks[n].counts };
    }
  }
  for (const n of names) {
    // tensors alive after the timed steps minus after the first (Adam's slots exist by then): 0, no leak
    if (engines[n].tensors) out[n].tensor_growth = engines[n].tensors() - out[n].tensors;
    delete out[n].tensors;
    engines[n].destroy();
    const o = out[n];
    o.loss_first = o.losses[0];
    o.loss_last = o.losses[o.losses.length - 1];
    delete o.losses; delete o.times; delete o.counts;
  }
  return { engines: out, tfjs_backend: tfBackend };
}"""


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return value


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def bench_model(browser: Any, name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    batches = digits_batches(args.batch_size)
    row: dict[str, Any] = {"model": name, "batch_size": args.batch_size}
    if "burn" in args.engines:
        row["burn_export"] = export_burn(name, batches[0], args.lr, work / name)
    x_shape = [args.batch_size, 1, 8, 8]
    cfg = {
        "model": name,
        "engines": args.engines,
        "batches": [{"x": b["x"].ravel().tolist(), "y": b["y"].tolist()} for b in batches],
        "xShape": x_shape,
        "tfShape": [args.batch_size, 64] if name == "mlp" else [args.batch_size, 8, 8, 1],
        "lr": args.lr,
        "eps": 1e-5,  # burn.optim.AdamConfig's default epsilon (TF.js's would be 1e-7)
        "steps": args.steps,
        "warmup": args.warmup,
        "block": args.block,
        "blocks": args.blocks,
        "read": args.read,
        "tfBackend": args.tfjs_backend,
    }
    page, log = browser.open(work, "bench.html")
    try:
        page.evaluate(COUNT_JS)
        if "tfjs" in args.engines:
            for bundle in TFJS_BUNDLES:
                page.add_script_tag(url=f"/tfjs/{bundle}")
        result = page.evaluate(BENCH_JS, cfg)
    finally:
        page.close()
    if log["errors"]:
        row["page_errors"] = log["errors"][:5]
    if result["tfjs_backend"]:
        row["tfjs_backend"] = result["tfjs_backend"]
    if "burn" in result["engines"]:
        result["engines"]["burn"]["params"] = row["burn_export"]["params"]
    row.update({engine: _round(fig) for engine, fig in result["engines"].items()})
    if "burn" in row and "tfjs" in row:
        burn_fig, tf_fig = row["burn"], row["tfjs"]
        ratios = {
            key: _ratio(burn_fig[f"{key}_ms"], tf_fig[f"{key}_ms"])
            for key in ("first_step", "load_plus_first_step")
        }
        if "read" in burn_fig:
            ratios["read_median"] = _ratio(burn_fig["read"]["median_ms"], tf_fig["read"]["median_ms"])
        if "pipelined" in burn_fig:
            ratios["pipelined"] = _ratio(
                burn_fig["pipelined"]["ms_per_step"], tf_fig["pipelined"]["ms_per_step"]
            )
        row["ratio_burn_over_tfjs"] = ratios
    return row


def native(args: argparse.Namespace) -> int:
    """``--native``: each model's exported step replayed natively beside burn-wgpu's own (no browser)."""
    spec = importlib.util.spec_from_file_location(
        "bench_web_train_native", Path(__file__).resolve().parent / "_web_train_native.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            rows.append(mod.bench_native_model(sys.modules[__name__], name, args, Path(tmp)))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    doc = {
        "benchmark": "bench_web_train",
        "mode": "native",
        "optimizer": {"name": "adam", "lr": args.lr, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-5},
        "engines": ["native", "burn_wgpu", "torch_cuda"],
        "steps": args.steps,
        "models": rows,
    }
    emit_json(doc, args.json)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.npm_install:
        return npm_install(args.tfjs)
    if args.native:
        return native(args)
    if "tfjs" in args.engines:
        reason = missing_tfjs(args.tfjs)
        if reason:
            print(json.dumps({"error": reason}))
            return 2
    browser = start_browser("bench_web_train")
    if browser is None:
        return 2
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "bench.html").write_text("<!doctype html><title>bench_web_train</title>\n")
            if "tfjs" in args.engines:
                (work / "tfjs").mkdir()
                for bundle, rel in TFJS_BUNDLES.items():
                    shutil.copy(args.tfjs / "node_modules" / rel, work / "tfjs" / bundle)
            for name in args.models:
                rows.append(bench_model(browser, name, args, work))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        browser.close()
    doc = {
        "benchmark": "bench_web_train",
        "browser": BROWSER,
        "optimizer": {"name": "adam", "lr": args.lr, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-5},
        "engines": args.engines,
        "tfjs_version": TFJS_VERSION if "tfjs" in args.engines else None,
        "same_initial_weights": False,
        "steps": args.steps,
        "read": args.read,
        "models": rows,
    }
    emit_json(doc, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
