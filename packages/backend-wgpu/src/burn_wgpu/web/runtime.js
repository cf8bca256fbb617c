// model.js: a model exported by burn-wgpu (`burn web export`), run on WebGPU with burn-wgpu's WGSL kernels.
//
//   import { load } from "./model.js";
//   const model = await load({ device, baseUrl, onProgress });  // all optional
//   model.inputs; model.outputs;          // [{ name, shape, dtype }]
//   const out = await model.run({ input: { data: Float32Array, shape: [1, 3, 224, 224] } });
//   model.destroy();
//
// The schedule below lists every buffer, WGSL kernel and dispatch of one forward pass, recorded from
// burn-wgpu in WebGPU's default limits. Buffers, pipelines and bind groups are made once in load();
// run() writes the inputs, records all dispatches into one command encoder, submits once and maps
// one staging buffer for the outputs. No imports (the export inlines common.js, the helpers it shares
// with trainer.js, in place of the import below), no requests outside this folder.

import {
  NARROW_ARRAY, STORAGE_ARRAY, bindOps, createPipelines, fetchWeights, numel, recordOps, requestDevice, toStorage,
} from "./common.js";

export { requestDevice };

const SCHEDULE = /*SCHEDULE*/null/*END*/;

export const schedule = SCHEDULE;

function fromStorage(info, bytes) {
  const n = numel(info.shape);
  const raw = new STORAGE_ARRAY[info.storage](bytes.buffer, bytes.byteOffset, n);
  if (info.dtype === "bool") return Uint8Array.from(raw, (v) => (v ? 1 : 0));
  if (NARROW_ARRAY[info.dtype]) return NARROW_ARRAY[info.dtype].from(raw);
  return raw.slice();
}

export async function load(options = {}) {
  const S = SCHEDULE;
  const baseUrl = options.baseUrl !== undefined ? options.baseUrl : new URL(".", import.meta.url).href;
  let device = options.device;
  let adapter = null;
  if (!device) ({ adapter, device } = await requestDevice());
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

  const base = baseUrl.endsWith("/") ? baseUrl : baseUrl + "/";
  const blobPromise = fetchWeights("load", new URL(S.weights.file, base).href, S.weights.size, options.onProgress);

  device.pushErrorScope("validation");
  const pipelinePromise = createPipelines(device, S.kernels);
  const buffers = S.buffers.map((b, i) => device.createBuffer({ label: `${b.kind}${i}`, size: b.size, usage }));
  const meta = device.createBuffer({ label: "meta", size: S.weights.meta, usage });
  let outBytes = 0;
  const outSlots = S.outputs.map((o) => {
    const at = outBytes;
    outBytes += Math.ceil(o.size / 8) * 8;
    return at;
  });
  const staging = device.createBuffer({
    label: "outputs",
    size: Math.max(outBytes, 8),
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });

  const [pipelines, blob] = await Promise.all([pipelinePromise, blobPromise]);
  device.queue.writeBuffer(meta, 0, blob, 0, S.weights.meta);
  const reloads = [];
  for (const c of S.constants) {
    device.queue.writeBuffer(buffers[c.buffer], 0, blob, c.offset, c.size);
    if (c.reload) reloads.push([buffers[c.buffer], blob.slice(c.offset, c.offset + c.size)]);
  }
  const ops = bindOps(device, S.ops, pipelines, buffers, meta);
  const loadError = await device.popErrorScope();
  if (loadError) throw new Error(`load: WebGPU validation error: ${loadError.message}`);

  let queue = Promise.resolve();
  let destroyed = false;
  const describe = (list) => list.map((t) => ({ name: t.name, shape: t.shape.slice(), dtype: t.dtype }));

  async function runOnce(feeds) {
    if (destroyed) throw new Error("run: the model was destroyed");
    if (!feeds || typeof feeds !== "object") throw new TypeError("run: expected { inputName: { data, shape } }");
    const known = new Set(S.inputs.map((i) => i.name));
    for (const key of Object.keys(feeds)) {
      if (!known.has(key)) throw new RangeError(`run: unknown input '${key}' (inputs: ${[...known].join(", ")})`);
    }
    const uploads = S.inputs.map((info) => {
      if (!(info.name in feeds)) throw new RangeError(`run: missing input '${info.name}'`);
      return [buffers[info.buffer], toStorage("run", info, feeds[info.name])];
    });
    for (const [buf, arr] of uploads) if (arr.byteLength) device.queue.writeBuffer(buf, 0, arr);
    for (const [buf, data] of reloads) device.queue.writeBuffer(buf, 0, data);
    const encoder = device.createCommandEncoder();
    recordOps(encoder, ops);
    S.outputs.forEach((o, i) => {
      if (o.size) encoder.copyBufferToBuffer(buffers[o.buffer], o.offset, staging, outSlots[i], Math.ceil(o.size / 4) * 4);
    });
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8Array(staging.getMappedRange().slice(0));
    staging.unmap();
    const out = {};
    S.outputs.forEach((o, i) => {
      out[o.name] = { data: fromStorage(o, bytes.subarray(outSlots[i], outSlots[i] + Math.max(o.size, 4))), shape: o.shape.slice(), dtype: o.dtype };
    });
    return out;
  }

  return {
    name: S.name,
    inputs: describe(S.inputs),
    outputs: describe(S.outputs),
    counts: Object.assign({}, S.counts),
    adapter,
    device,
    run(feeds) {
      // runs one at a time: they share the output staging buffer
      const result = queue.then(() => runOnce(feeds));
      queue = result.catch(() => {});
      return result;
    },
    destroy() {
      destroyed = true;
      for (const b of buffers) b.destroy();
      meta.destroy();
      staging.destroy();
    },
  };
}
