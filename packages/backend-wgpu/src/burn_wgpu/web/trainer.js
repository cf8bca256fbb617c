// trainer.js: a training step exported by burn-wgpu (`burn_wgpu.web.export_training`), run on WebGPU.
//
//   import { loadTrainer } from "./trainer.js";
//   const t = await loadTrainer({ device, baseUrl, onProgress, seed });  // all optional
//   const { loss } = await t.step({ x: { data, shape }, y: { data, shape } }, { lr: 1e-3 });  // { seed } too
//   await t.step(batch, { read: false });   // no read back: steps pipeline on the queue
//   const metrics = await t.evaluate(batch); // the forward only, on the current weights
//   const bytes = await t.saveRecord();      // safetensors: burn.record.from_bytes(model, bytes) in Python
//   await t.loadRecord(bytes);               // weights back (a record of the same module)
//   const state = await t.saveState();       // optimizer state and step count; t.loadState(state) resumes
//
// The spec below holds two recorded schedules: "step" (forward, backward and the optimizer update as
// one submission) and "evaluate" (the forward). Params and optimizer state live in persistent buffers
// that both schedules bind; a step ends by copying the new values over them in the same submission.
// The learning rate and Adam's bias corrections (1 - beta^t, t counted here) are fed each step, and
// a uint32 seed where the step draws random numbers (dropout): seed + t by default, or step()'s own.
// Batch norm's running statistics are persistent too: the step updates them, evaluate() reads them,
// saveRecord() saves them with the params. The export inlines common.js (the WebGPU helpers shared with
// model.js) in place of the import below, so trainer.js is one file.

import { bindOps, createPipelines, fetchWeights, numel, recordOps, requestDevice, toStorage } from "./common.js";

export { requestDevice };

const TRAINER = /*TRAINER*/null/*END*/;

export const spec = TRAINER;

// buffers, pipelines and bind groups of one schedule; param/state inputs bind the persistent buffers
async function instantiate(device, S, blob, persistent) {
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const shared = new Map();
  for (const info of S.inputs) if (persistent.has(info.name)) shared.set(info.buffer, persistent.get(info.name));
  const own = [];
  const buffers = S.buffers.map((b, i) => {
    if (shared.has(i)) return shared.get(i);
    const buf = device.createBuffer({ label: `${S.name}:${b.kind}${i}`, size: b.size, usage });
    own.push(buf);
    return buf;
  });
  const meta = device.createBuffer({ label: "meta", size: S.weights.meta, usage });
  own.push(meta);
  device.queue.writeBuffer(meta, 0, blob, S.base, S.weights.meta);
  const reloads = [];
  for (const c of S.constants) {
    device.queue.writeBuffer(buffers[c.buffer], 0, blob, S.base + c.offset, c.size);
    if (c.reload) reloads.push([buffers[c.buffer], blob.slice(S.base + c.offset, S.base + c.offset + c.size)]);
  }
  const pipelines = await createPipelines(device, S.kernels);
  const ops = bindOps(device, S.ops, pipelines, buffers, meta);
  const metrics = S.outputs.filter((o) => o.role === "metric");
  const staging = device.createBuffer({
    label: `${S.name}:metrics`, size: Math.max(8, metrics.length * 8), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  own.push(staging);
  return { S, buffers, ops, reloads, metrics, staging, own };
}

function encode(device, run, feeds, scalars, read) {
  for (const info of run.S.inputs) {
    if (info.role === "batch") device.queue.writeBuffer(run.buffers[info.buffer], 0, feeds[info.name]);
    else if (info.role === "hyper") {
      const value = scalars[info.name];
      device.queue.writeBuffer(run.buffers[info.buffer], 0, info.storage === "u32" ? Uint32Array.of(value >>> 0) : Float32Array.of(value));
    }
  }
  for (const [buf, data] of run.reloads) device.queue.writeBuffer(buf, 0, data);
  const encoder = device.createCommandEncoder();
  recordOps(encoder, run.ops);
  return encoder;
}

async function readMetrics(device, run, encoder, read) {
  if (read) run.metrics.forEach((o, i) => encoder.copyBufferToBuffer(run.buffers[o.buffer], o.offset, run.staging, i * 8, 4));
  device.queue.submit([encoder.finish()]);
  if (!read) return null;
  await run.staging.mapAsync(GPUMapMode.READ);
  const values = new Float32Array(run.staging.getMappedRange().slice(0));
  run.staging.unmap();
  const out = {};
  run.metrics.forEach((o, i) => { out[o.name] = o.storage === "f32" ? values[i * 2] : new Int32Array(values.buffer)[i * 2]; });
  return out;
}

// "param:fc.weight" -> "fc.weight"; "running:bn.running_mean" -> "bn.running_mean";
// "state:fc.weight:moment_1" -> "fc.weight.moment_1"
function tensorName(p) {
  const [, ...rest] = p.name.split(":");
  return rest.join(".");
}

// safetensors bytes of the persistent buffers `entries`, with `metadata` (string values)
async function saveTensors(device, persistent, entries, metadata) {
  const sizes = entries.map((p) => numel(p.shape) * 4);
  const total = sizes.reduce((a, b) => a + b, 0);
  const staging = device.createBuffer({ size: Math.max(total, 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  const header = { __metadata__: metadata };
  let at = 0;
  entries.forEach((p, i) => {
    if (sizes[i]) encoder.copyBufferToBuffer(persistent.get(p.name), 0, staging, at, sizes[i]);
    header[tensorName(p)] = { dtype: "F32", shape: p.shape, data_offsets: [at, at + sizes[i]] };
    at += sizes[i];
  });
  device.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const data = new Uint8Array(staging.getMappedRange().slice(0, total));
  staging.unmap();
  staging.destroy();
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (new TextEncoder().encode(json).length % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  out.set(data, 8 + head.length);
  return out;
}

// safetensors bytes into the persistent buffers `entries`, every name, dtype and shape checked first;
// `checkMeta(metadata)` may refuse the file before anything is written
async function loadTensors(device, persistent, entries, bytes, what, checkMeta = () => {}) {
  const data = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (data.length < 8) throw new RangeError(`${what}: ${data.length} bytes is too short for a safetensors file`);
  const n = Number(new DataView(data.buffer, data.byteOffset, 8).getBigUint64(0, true));
  if (8 + n > data.length) throw new RangeError(`${what}: the safetensors header runs past the end of the data`);
  const header = JSON.parse(new TextDecoder().decode(data.subarray(8, 8 + n)));
  const problems = [];
  const writes = [];
  for (const p of entries) {
    const t = header[tensorName(p)];
    if (!t) { problems.push(`missing: ${tensorName(p)}`); continue; }
    const [a, b] = t.data_offsets;
    if (t.dtype !== "F32") problems.push(`${tensorName(p)}: dtype ${t.dtype}, expected F32`);
    else if (t.shape.length !== p.shape.length || t.shape.some((d, i) => d !== p.shape[i])) {
      problems.push(`${tensorName(p)}: shape [${t.shape}], expected [${p.shape}]`);
    } else if (b - a !== numel(p.shape) * 4 || 8 + n + b > data.length) problems.push(`${tensorName(p)}: bad data offsets`);
    else writes.push([persistent.get(p.name), data.slice(8 + n + a, 8 + n + b)]);
  }
  const known = new Set(entries.map(tensorName));
  for (const key of Object.keys(header)) if (key !== "__metadata__" && !known.has(key)) problems.push(`unexpected: ${key}`);
  if (problems.length) throw new RangeError(`${what}: the file does not match this trainer (${problems.length} problem(s)): ${problems.join("; ")}`);
  checkMeta(header.__metadata__ || {});
  for (const [buf, bytesOf] of writes) if (bytesOf.length) device.queue.writeBuffer(buf, 0, bytesOf);
}

export async function loadTrainer(options = {}) {
  const T = TRAINER;
  const baseUrl = options.baseUrl !== undefined ? options.baseUrl : new URL(".", import.meta.url).href;
  let device = options.device;
  let adapter = null;
  if (!device) ({ adapter, device } = await requestDevice());
  const base = baseUrl.endsWith("/") ? baseUrl : baseUrl + "/";
  const blob = await fetchWeights("loadTrainer", new URL(T.weights.file, base).href, T.weights.size, options.onProgress);

  device.pushErrorScope("validation");
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const persistent = new Map();
  for (const p of T.persistent) {
    const buf = device.createBuffer({ label: p.name, size: p.size, usage });  // zeros: fresh optimizer state
    if (p.role !== "state") device.queue.writeBuffer(buf, 0, blob, p.offset, p.bytes);
    persistent.set(p.name, buf);
  }
  const [train, evaluate] = await Promise.all([
    instantiate(device, T.step, blob, persistent),
    instantiate(device, T.evaluate, blob, persistent),
  ]);
  const loadError = await device.popErrorScope();
  if (loadError) throw new Error(`loadTrainer: WebGPU validation error: ${loadError.message}`);

  const batchInfo = T.step.inputs.filter((i) => i.role === "batch");
  const opt = T.optimizer;
  let stepCount = 0;
  // the seed of step t is seedBase + t unless step() is given one (the draws of dropout, where the step has it)
  const seedBase = options.seed === undefined ? 0 : options.seed;
  if (!Number.isInteger(seedBase) || seedBase < 0) throw new RangeError(`loadTrainer: seed must be an integer >= 0, got ${options.seed}`);
  const recorded = T.persistent.filter((p) => p.role === "param" || p.role === "running");
  let queue = Promise.resolve();
  let destroyed = false;
  const serial = (fn) => {
    const result = queue.then(fn);
    queue = result.catch(() => {});
    return result;
  };
  const feedsOf = (what, batch) => {
    if (destroyed) throw new Error(`${what}: the trainer was destroyed`);
    if (!batch || typeof batch !== "object") throw new TypeError(`${what}: expected { ${batchInfo.map((i) => i.name).join(", ")} }`);
    for (const key of Object.keys(batch)) {
      if (!batchInfo.some((i) => i.name === key)) {
        throw new RangeError(`${what}: unknown batch input '${key}' (inputs: ${batchInfo.map((i) => i.name).join(", ")})`);
      }
    }
    const feeds = {};
    for (const info of batchInfo) {
      if (!(info.name in batch)) throw new RangeError(`${what}: missing batch input '${info.name}'`);
      feeds[info.name] = toStorage(what, info, batch[info.name], { label: "batch input", note: " (fixed at export)", bare: false });
    }
    return feeds;
  };

  return {
    name: T.name,
    adapter,
    device,
    metrics: T.metrics.slice(),
    inputs: batchInfo.map((i) => ({ name: i.name, shape: i.shape.slice(), dtype: i.dtype })),
    counts: { step: Object.assign({}, T.step.counts), evaluate: Object.assign({}, T.evaluate.counts) },
    get stepCount() { return stepCount; },
    async step(batch, options = {}) {
      // checked before anything is queued: a bad batch rejects and leaves the weights as they were
      const feeds = feedsOf("step", batch);
      const lr = options.lr === undefined ? opt.lr : options.lr;
      if (typeof lr !== "number" || !Number.isFinite(lr) || lr < 0) throw new RangeError(`step: lr must be a finite number >= 0, got ${lr}`);
      const read = options.read !== false;
      if (options.seed !== undefined && (!Number.isInteger(options.seed) || options.seed < 0)) {
        throw new RangeError(`step: seed must be an integer >= 0, got ${options.seed}`);
      }
      return serial(async () => {
        stepCount += 1;
        const seed = options.seed === undefined ? seedBase + stepCount : options.seed;
        const scalars = { lr, seed, bias1: 1 - Math.pow(opt.beta1, stepCount), bias2: 1 - Math.pow(opt.beta2, stepCount) };
        const encoder = encode(device, train, feeds, scalars, read);
        for (const o of train.S.outputs) {
          if (o.role !== "metric" && !o.same) encoder.copyBufferToBuffer(train.buffers[o.buffer], o.offset, persistent.get(o.name), 0, o.size);
        }
        return readMetrics(device, train, encoder, read);
      });
    },
    async evaluate(batch) {
      const feeds = feedsOf("evaluate", batch);
      return serial(() => readMetrics(device, evaluate, encode(device, evaluate, feeds, {}, true), true));
    },
    saveRecord() {
      // the current params and running statistics as a burn record (safetensors, in the module's order)
      return serial(() => saveTensors(device, persistent, recorded, T.record.metadata));
    },
    loadRecord(bytes) {
      // params from a burn record of the same module (saveRecord's output, or burn.record.to_bytes)
      return serial(() => loadTensors(device, persistent, recorded, bytes, "loadRecord"));
    },
    saveState() {
      // the optimizer state (one tensor per param and key, named "<param>.<key>") and the step count
      const meta = { format: "burn-web-optimizer-state", optimizer: opt.name, step: String(stepCount) };
      return serial(() => saveTensors(device, persistent, T.persistent.filter((p) => p.role === "state"), meta));
    },
    loadState(bytes) {
      let step = 0;
      const check = (meta) => {
        if (meta.optimizer !== opt.name) throw new RangeError(`loadState: the state is for optimizer ${meta.optimizer}, this trainer runs ${opt.name}`);
        step = Number(meta.step);
        if (!Number.isInteger(step) || step < 0) throw new RangeError(`loadState: bad step count ${meta.step}`);
      };
      const states = T.persistent.filter((p) => p.role === "state");
      return serial(async () => {
        await loadTensors(device, persistent, states, bytes, "loadState", check);
        stepCount = step;
      });
    },
    destroy() {
      destroyed = true;
      for (const run of [train, evaluate]) for (const b of run.own) b.destroy();
      for (const b of persistent.values()) b.destroy();
    },
  };
}
