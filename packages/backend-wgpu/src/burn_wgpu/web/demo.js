// demo.js: the main thread of the training demo (`burn web train-demo`). The training runs in
// worker.js; this code only draws (a canvas chart of loss and validation accuracy, redrawn in an
// animation frame when something changed), shows the figures and the browser metrics, and sends
// pause / resume / save to the worker. State for scripts and tests: window.burnDemo.
//
// Browser metrics use burn-metrics-web's names: "Page Time" (s) and "Step Time" (ms) from
// performance.now() (the worker times each step), "JS Heap Used" / "JS Heap Total" / "JS Heap Limit"
// (MB, performance.memory: Chromium only) and "CPU Cores" (navigator.hardwareConcurrency).

const $ = (id) => document.getElementById(id);
const MB = 1e6;
const state = {
  status: "loading", adapter: "", step: 0, epoch: 0, paused: false, done: false, error: null,
  losses: [], valid: [], accuracy: null, lastStep: null, metrics: {}, saves: [], settings: null,
};
window.burnDemo = state;

const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
let dirty = true;

function browserMetrics() {
  const m = { "Page Time": performance.now() / 1000 };
  if (state.lastStep) m["Step Time"] = state.lastStep.stepTime;
  const mem = performance.memory;
  if (mem) {
    m["JS Heap Used"] = mem.usedJSHeapSize / MB;
    m["JS Heap Total"] = mem.totalJSHeapSize / MB;
    m["JS Heap Limit"] = mem.jsHeapSizeLimit / MB;
  }
  if (navigator.hardwareConcurrency) m["CPU Cores"] = navigator.hardwareConcurrency;
  return m;
}

const UNITS = { "Page Time": "s", "Step Time": "ms", "JS Heap Used": "MB", "JS Heap Total": "MB", "JS Heap Limit": "MB", "CPU Cores": "" };

function showFigures() {
  const s = state.lastStep;
  $("status").textContent = state.error ? `error: ${state.error}` : state.status;
  $("adapter").textContent = state.adapter || "-";
  $("progress").textContent = state.settings
    ? `epoch ${state.epoch} / ${state.settings.epochs}, step ${state.step} / ${state.settings.epochs * state.settings.steps_per_epoch}` : "-";
  $("loss").textContent = s ? s.loss.toFixed(4) : "-";
  $("accuracy").textContent = state.accuracy === null ? "-" : `${(100 * state.accuracy).toFixed(1)} %`;
  $("steptime").textContent = s ? `${s.stepTime.toFixed(1)} ms` : "-";
  $("items").textContent = s ? s.itemsPerSecond.toFixed(0) : "-";
  state.metrics = browserMetrics();
  $("metrics").innerHTML = Object.entries(state.metrics)
    .map(([k, v]) => `<tr><th>${k}</th><td>${Number.isInteger(v) ? v : v.toFixed(2)} ${UNITS[k]}</td></tr>`).join("");
  $("pause").textContent = state.paused ? "Resume" : "Pause";
  $("pause").disabled = state.status === "loading" || state.done || !!state.error;
  $("download").disabled = state.status === "loading" || !!state.error;
}

// the chart: loss per step (left axis, log-free: 0..max) and validation accuracy (right axis, 0..1)
function drawChart() {
  const canvas = $("chart");
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * ratio)) { canvas.width = Math.round(w * ratio); canvas.height = Math.round(h * ratio); }
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const pad = { l: 48, r: 48, t: 12, b: 28 };
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  const total = state.settings ? state.settings.epochs * state.settings.steps_per_epoch : 1;
  const maxLoss = Math.max(1e-6, ...state.losses.map((p) => p[1]));
  const x = (step) => pad.l + (pw * step) / total;
  const yLoss = (v) => pad.t + ph * (1 - v / maxLoss);
  const yAcc = (v) => pad.t + ph * (1 - v);
  g.strokeStyle = "#999";
  g.lineWidth = 1;
  g.strokeRect(pad.l, pad.t, pw, ph);
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#555";
  for (let i = 0; i <= 4; i++) {
    const f = i / 4;
    g.textAlign = "right";
    g.fillText((maxLoss * f).toFixed(2), pad.l - 4, yLoss(maxLoss * f) + 4);
    g.textAlign = "left";
    g.fillText(`${(100 * f).toFixed(0)}%`, pad.l + pw + 4, yAcc(f) + 4);
  }
  g.textAlign = "center";
  g.fillText("step", pad.l + pw / 2, h - 6);
  const line = (points, color, yOf, dots) => {
    if (!points.length) return;
    g.strokeStyle = color;
    g.fillStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    points.forEach(([s, v], i) => (i ? g.lineTo(x(s), yOf(v)) : g.moveTo(x(s), yOf(v))));
    g.stroke();
    if (dots) for (const [s, v] of points) g.fillRect(x(s) - 2, yOf(v) - 2, 4, 4);
  };
  line(state.losses, "#d9480f", yLoss, false);
  line(state.valid.map((v) => [v.step, v.accuracy]), "#1864ab", yAcc, true);
}

function frame() {
  if (dirty) {
    dirty = false;
    showFigures();
    drawChart();
  }
  requestAnimationFrame(frame);
}

function download(bytes, name) {
  const url = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const HANDLERS = {
  ready(m) { state.status = "training"; state.adapter = m.adapter; state.settings = m.settings; state.readyAt = m.pageTime; },
  step(m) { state.step = m.step; state.epoch = m.epoch; state.lastStep = m; state.losses.push([m.step, m.loss]); },
  valid(m) { state.valid.push(m); state.accuracy = m.accuracy; },
  paused(m) { state.paused = true; state.status = `paused at step ${m.step}`; },
  resumed() { state.paused = false; state.status = "training"; },
  done(m) { state.done = true; state.status = `done: ${m.step} steps`; },
  record(m) {
    state.saves.push({ id: m.id, step: m.step, accuracy: m.accuracy, bytes: m.bytes.length });
    download(m.bytes, state.settings.weights_file);
  },
  error(m) { state.error = m.message; state.status = "error"; },
};

worker.onmessage = (event) => {
  HANDLERS[event.data.type](event.data);
  dirty = true;
};
worker.onerror = (event) => {
  state.error = event.message || "the worker failed";
  dirty = true;
};

$("pause").addEventListener("click", () => {
  const pausing = !state.paused;
  worker.postMessage({ type: pausing ? "pause" : "resume" });
  if (!pausing) state.paused = false;
  dirty = true;
});
$("download").addEventListener("click", () => worker.postMessage({ type: "save", id: state.saves.length + 1 }));
setInterval(() => { dirty = true; }, 500);  // the browser metrics move on their own
requestAnimationFrame(frame);
