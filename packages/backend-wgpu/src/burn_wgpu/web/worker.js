// worker.js: the training loop of the demo page (`burn web train-demo`), in a module Worker so the
// page's main thread only draws. It loads trainer.js (the exported step), digits.bin (the data) and
// demo.json (the settings), then trains epoch after epoch: a shuffled batch per step (learning rate
// cosine-annealed from lr to min_lr, fed each step), a validation pass on the test split every
// `valid_every` steps and at each epoch's end. Messages in: pause, resume, save. Messages out: ready,
// step, valid, paused, resumed, record, done, error.

import { loadTrainer } from "./trainer.js";

let paused = false;
let finished = false;
let wake = null;
const saves = [];

onmessage = (event) => {
  const m = event.data || {};
  if (m.type === "pause") paused = true;
  else if (m.type === "resume") paused = false;
  else if (m.type === "save") saves.push(m.id);
  if (wake) { wake(); wake = null; }
};

function post(type, data = {}, transfer = []) {
  postMessage({ type, ...data }, transfer);
}

// a small seeded generator (mulberry32) for the shuffles: the same seed, the same batches
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function parseDigits(buffer) {
  const bytes = new Uint8Array(buffer);
  const magic = String.fromCharCode(...bytes.subarray(0, 4));
  if (magic !== "BDIG") throw new Error(`digits.bin: not a digits file (magic ${JSON.stringify(magic)})`);
  const [train, valid, h, w] = new Uint32Array(buffer.slice(4, 20));
  const px = h * w;
  let at = 20;
  const take = (n) => { const part = bytes.subarray(at, at + n); at += n; return part; };
  const out = { px, train: { images: take(train * px), labels: take(train), n: train } };
  out.valid = { images: take(valid * px), labels: take(valid), n: valid };
  if (at !== bytes.length) throw new Error(`digits.bin: ${bytes.length} bytes, expected ${at}`);
  return out;
}

// items order[from..from+n) as the trainer's batch: images (n, 1, 8, 8) normalised, labels (n)
function batchOf(split, order, from, n, S, px, shapes) {
  const images = new Float32Array(n * px);
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const item = order ? order[from + i] : from + i;
    for (let p = 0; p < px; p++) images[i * px + p] = (split.images[item * px + p] / 16 - S.mean) / S.std;
    labels[i] = split.labels[item];
  }
  return { images: { data: images, shape: shapes.images }, labels: { data: labels, shape: shapes.labels } };
}

function adapterName(adapter) {
  const info = adapter && adapter.info;
  if (!info) return "unknown adapter";
  const parts = [info.vendor, info.architecture, info.device, info.description].filter((s) => s);
  return parts.length ? parts.join(" / ") : "unknown adapter";
}

async function main() {
  const [S, digits] = await Promise.all([
    fetch("./demo.json").then((r) => r.json()),
    fetch("./digits.bin").then((r) => r.arrayBuffer()).then(parseDigits),
  ]);
  const t = await loadTrainer({ seed: S.seed });
  const shapes = Object.fromEntries(t.inputs.map((i) => [i.name, i.shape]));
  const B = S.batch_size;
  const total = S.epochs * S.steps_per_epoch;
  post("ready", { adapter: adapterName(t.adapter), settings: S, counts: t.counts, pageTime: performance.now() / 1000 });

  let step = 0;
  let epoch = 0;
  async function validate() {
    let loss = 0;
    let accuracy = 0;
    for (let b = 0; b < S.valid_batches; b++) {
      const out = await t.evaluate(batchOf(digits.valid, null, b * B, B, S, digits.px, shapes));
      loss += out.loss / S.valid_batches;
      accuracy += out.accuracy / S.valid_batches;
    }
    return { loss, accuracy, items: S.valid_batches * B };
  }
  // between steps: answer "save" (weights and their validation accuracy), wait while paused or done
  async function service() {
    for (;;) {
      while (saves.length) {
        const id = saves.shift();
        const bytes = await t.saveRecord();
        const v = await validate();
        post("record", { id, step, accuracy: v.accuracy, bytes }, [bytes.buffer]);
      }
      if (!paused && !finished) return;
      await new Promise((resolve) => { wake = resolve; });
    }
  }
  const lrAt = (s) => S.min_lr + (S.lr - S.min_lr) * (1 + Math.cos(Math.PI * s / total)) / 2;

  for (epoch = 1; epoch <= S.epochs; epoch++) {
    const order = Array.from({ length: digits.train.n }, (_, i) => i);
    const rand = generator(S.seed * 1000003 + epoch);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (let k = 0; k < S.steps_per_epoch; k++) {
      if (paused) {
        post("paused", { step });
        await service();
        post("resumed", { step });
      } else await service();
      const batch = batchOf(digits.train, order, k * B, B, S, digits.px, shapes);
      const lr = lrAt(step);
      const start = performance.now();
      const out = await t.step(batch, { lr });
      const ms = performance.now() - start;
      step += 1;
      post("step", { step, epoch, lr, loss: out.loss, accuracy: out.accuracy, stepTime: ms,
                     itemsPerSecond: B / (ms / 1000), pageTime: performance.now() / 1000 });
      if (step % S.valid_every === 0 || k === S.steps_per_epoch - 1) {
        post("valid", { step, epoch, ...(await validate()), pageTime: performance.now() / 1000 });
      }
    }
  }
  finished = true;
  post("done", { step });
  await service();
}

main().catch((err) => post("error", { message: String((err && err.message) || err) }));
