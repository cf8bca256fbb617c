// burn-core, burn-train and burn-metrics-web inside Pyodide inside headless Chromium (see
// ../test_pyodide_browser.py, which serves this folder, the npm pyodide package as ./pyodide/ and the
// wheels as ./wheels/ on 127.0.0.1, then calls start()).
//
// Pyodide loads from ./pyodide/, micropip from its wheel URL, micropip installs the burn wheels from
// their URLs (deps=False: no index is asked), and browser_scenario.py (with scenario.py's helpers)
// reads the collectors found through entry points against the page's real Performance API, navigator
// and WebGPU adapter. This side reads the same APIs directly, for the comparison. The outcome lands
// in window.burnResult: { ok, ... } or { ok: false, error }.

let jsChecks = 0;

function check(condition, what) {
  if (!condition) throw new Error(`check failed (JavaScript side): ${what}`);
  jsChecks += 1;
}

async function text(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return response.text();
}

// The WebGPU adapter as the page sees it, read here without Python.
async function adapterHere() {
  if (!navigator.gpu) return { present: false };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { present: false };
  const info = adapter.info || {};
  return {
    present: true,
    fallback: typeof info.isFallbackAdapter === "boolean" ? info.isFallbackAdapter : adapter.isFallbackAdapter,
    features: adapter.features.size,
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
    info: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description },
  };
}

async function run({ wheels, micropip }) {
  const base = new URL("./", import.meta.url);
  const started = performance.now();
  const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", base).href);
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", base).href });
  const loadMs = performance.now() - started;
  await pyodide.loadPackage(new URL(`wheels/${micropip}`, base).href);

  // what browser_scenario.py compares its collectors with: the APIs read from JavaScript
  globalThis.burnJsSide = {
    memory: () => {
      const m = performance.memory;
      return m ? [m.usedJSHeapSize, m.totalJSHeapSize, m.jsHeapSizeLimit] : null;
    },
    now: () => performance.now(),
    wasmHeap: () => pyodide._module.HEAP8.length,
    cores: () => navigator.hardwareConcurrency,
  };
  const urls = wheels.map((name) => new URL(`wheels/${name}`, base).href);
  // scenario.py (the Node test's, for its helpers) and browser_scenario.py as importable modules
  pyodide.FS.mkdirTree("/burn-test");
  pyodide.FS.writeFile("/burn-test/node_scenario.py", await text(new URL("scenario.py", base)));
  pyodide.FS.writeFile("/burn-test/browser_scenario.py", await text(new URL("browser_scenario.py", base)));
  pyodide.runPython("import sys; sys.path.insert(0, '/burn-test')");
  const scenario = pyodide.pyimport("browser_scenario");
  const installStarted = performance.now();
  const installed = JSON.parse(await scenario.install_from_urls(pyodide.toPy(urls)));
  const installMs = performance.now() - installStarted;
  const adapter = await adapterHere();
  const chromium = JSON.parse(await scenario.phase_chromium());

  // the renderer drew into the real DOM
  const element = document.getElementById("burn-dashboard");
  check(element !== null && element.tagName === "DIV", "the renderer created <div id=burn-dashboard>");
  check(element.parentElement === document.body, "under <body>");
  const html = element.innerHTML;
  check(html.startsWith('<div class="burn-dashboard" data-mode="done">'), "the last frame shows the finished run");
  for (const part of ['data-metric="JS Heap Used"', 'data-metric="CPU Cores"', '<tr data-epoch="2" data-split="valid">']) {
    check(html.includes(part), `the dashboard HTML contains ${part}`);
  }
  check(element.querySelector("table.burn-progress") !== null, "the dashboard parses as a table in the DOM");
  const heapNow = pyodide._module.HEAP8.length / 1e6;
  for (const mb of chromium.wasm_heap_samples) check(mb > 1 && mb <= heapNow, `wasm heap ${mb} MB in (1, ${heapNow}]`);
  check(chromium.cores === navigator.hardwareConcurrency, "CPU Cores == navigator.hardwareConcurrency");

  return {
    ok: true,
    user_agent: navigator.userAgent,
    load_ms: loadMs,
    install_ms: installMs,
    js_checks: jsChecks,
    installed,
    adapter,
    chromium,
  };
}

export function start(config) {
  window.burnResult = undefined;
  run(config).then(
    (result) => {
      window.burnResult = result;
    },
    (error) => {
      window.burnResult = { ok: false, error: String(error && error.stack ? error.stack : error) };
    },
  );
}
