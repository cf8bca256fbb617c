// Runs burn-core, burn-train and burn-metrics-web inside Pyodide under Node, offline.
//
//   BURN_PYODIDE_DIR=<node_modules/pyodide> node run.mjs <wheel>...
//
// The npm `pyodide` package holds the interpreter and the standard library but no package wheels
// (micropip included), so wheels are installed the way pip lays them out: unzipped into
// site-packages, their *.dist-info (with entry_points.txt) included, which is all importlib.metadata
// needs to find burn's plugins. scenario.py then runs two phases: Node as it is (sources Node lacks
// must fail soft), and Node with browser APIs injected (performance.memory, navigator, a WebGPU
// adapter behind a real Promise, a DOM document), each checked here against the JavaScript side.
// The last line printed is `BURN_PYODIDE_RESULT <json>`; the exit status is 0 only if every check held.
import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pyodideDir = process.env.BURN_PYODIDE_DIR || join(here, "node_modules", "pyodide");
const wheels = process.argv.slice(2);
let jsChecks = 0;

function check(condition, what) {
  if (!condition) throw new Error(`check failed (JavaScript side): ${what}`);
  jsChecks += 1;
}

function injectBrowserApis() {
  Object.defineProperty(performance, "memory", {
    configurable: true,
    value: { usedJSHeapSize: 12_345_678, totalJSHeapSize: 23_456_789, jsHeapSizeLimit: 4_294_705_152 },
  });
  const adapter = {
    info: { vendor: "burn-test", architecture: "fake-arch", device: "fake-device", description: "injected", isFallbackAdapter: false },
    features: new Set(["timestamp-query", "shader-f16", "float32-filterable"]),
    limits: { maxBufferSize: 2 ** 28, maxStorageBufferBindingSize: 2 ** 27, maxComputeInvocationsPerWorkgroup: 256 },
  };
  globalThis.burnGpuMode = "adapter"; // scenario.py switches it to "null" and "reject"
  const gpu = {
    requestAdapter() {
      const mode = globalThis.burnGpuMode;
      return new Promise((resolve, reject) =>
        setTimeout(() => (mode === "reject" ? reject(new Error("adapter blocked")) : resolve(mode === "null" ? null : adapter)), 5),
      );
    },
  };
  try {
    Object.defineProperty(globalThis, "navigator", { configurable: true, value: { hardwareConcurrency: 7, gpu } });
  } catch {
    // a runtime whose navigator cannot be replaced: override its fields instead
    Object.defineProperty(globalThis.navigator, "hardwareConcurrency", { configurable: true, value: 7 });
    Object.defineProperty(globalThis.navigator, "gpu", { configurable: true, value: gpu });
  }
  check(navigator.hardwareConcurrency === 7 && navigator.gpu === gpu, "navigator injected");
  const body = {
    children: [],
    appendChild(element) {
      this.children.push(element);
      return element;
    },
  };
  globalThis.document = {
    body,
    getElementById: (id) => body.children.find((e) => e.id === id) ?? null,
    createElement: (tag) => ({ tagName: tag.toUpperCase(), id: "", innerHTML: "" }),
  };
  return body;
}

async function main() {
  if (wheels.length === 0) throw new Error("usage: node run.mjs <wheel>...");
  const nativeNavigator = globalThis.navigator; // Node >= 21 has one; Node 20 does not
  const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
  const started = Date.now();
  const pyodide = await loadPyodide({ indexURL: pyodideDir + "/" });
  const loadMs = Date.now() - started;

  pyodide.FS.mkdirTree("/wheels");
  for (const wheel of wheels) pyodide.FS.writeFile(`/wheels/${basename(wheel)}`, readFileSync(wheel));
  pyodide.runPython(readFileSync(join(here, "scenario.py"), "utf8"));
  const installed = JSON.parse(pyodide.runPython("install_wheels('/wheels')"));

  // phase 1: Node as it is
  const plain = JSON.parse(await pyodide.runPythonAsync("await phase_plain()"));
  const heapNow = pyodide._module.HEAP8.length / 1e6;
  const nowMs = performance.now();
  check(plain.page_time > 0 && plain.page_time * 1000 <= nowMs, `Page Time ${plain.page_time} s <= performance.now() ${nowMs} ms`);
  check(plain.wasm_heap.length > 0, "wasm heap samples were collected");
  for (const mb of plain.wasm_heap) check(mb > 1 && mb <= heapNow, `wasm heap sample ${mb} MB within (1, ${heapNow}] MB`);
  if (nativeNavigator?.hardwareConcurrency) {
    check(plain.cpu_cores === nativeNavigator.hardwareConcurrency, `CPU Cores ${plain.cpu_cores} == navigator.hardwareConcurrency`);
  } else {
    check(plain.cpu_cores === null, "without navigator (Node 20) CPU Cores is not reported");
    check(/navigator/.test(plain.available["web-cpu-cores"][1]), "the reason names navigator");
  }

  // phase 2: browser APIs injected
  const body = injectBrowserApis();
  const browser = JSON.parse(await pyodide.runPythonAsync("await phase_browser()"));
  const element = body.children.find((e) => e.id === "burn-dashboard");
  check(element !== undefined && element.tagName === "DIV", "the renderer created <div id=burn-dashboard> under <body>");
  const html = element.innerHTML;
  check(html.startsWith('<div class="burn-dashboard" data-mode="done">'), "the last frame shows the finished run");
  for (const part of ['<table class="burn-progress">', '<progress max="48" value="48">', 'data-metric="Loss"', 'data-metric="JS Heap Used"', '<tr data-epoch="2" data-split="valid">', "<li>escaped &lt;b&gt; status</li>"]) {
    check(html.includes(part), `the dashboard HTML contains ${part}`);
  }
  check(!html.includes("<b>"), "status text is escaped");

  const result = {
    ok: true,
    node: process.version,
    load_ms: loadMs,
    js_checks: jsChecks,
    installed,
    plain,
    browser,
  };
  console.log("BURN_PYODIDE_RESULT " + JSON.stringify(result));
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error && error.stack ? error.stack : String(error));
    console.log("BURN_PYODIDE_RESULT " + JSON.stringify({ ok: false, error: String(error && error.message ? error.message : error) }));
    process.exit(1);
  },
);
