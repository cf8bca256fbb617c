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
// one staging buffer for the outputs. No imports, no requests outside this folder.

const SCHEDULE = /*SCHEDULE*/null/*END*/;

const STORAGE_ARRAY = { f32: Float32Array, i32: Int32Array, u32: Uint32Array };
// dtypes stored one value per 32-bit word: fed and read back as their own typed arrays
const NARROW_ARRAY = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array };

export const schedule = SCHEDULE;

function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function numel(shape) {
  return shape.reduce((n, d) => n * d, 1);
}

// feed data -> a fresh typed array in the storage type (the caller's array is never modified)
function toStorage(info, feed) {
  const n = numel(info.shape);
  const data = feed && feed.data !== undefined ? feed.data : feed;
  if (data === undefined || data === null || typeof data.length !== "number") {
    throw new TypeError(`run: input '${info.name}' must be { data, shape } with a typed array or array`);
  }
  if (feed.shape !== undefined && !sameShape(Array.from(feed.shape), info.shape)) {
    throw new RangeError(
      `run: input '${info.name}' expects shape [${info.shape}], got [${Array.from(feed.shape)}]`);
  }
  if (data.length !== n) {
    throw new RangeError(`run: input '${info.name}' expects ${n} values (shape [${info.shape}]), got ${data.length}`);
  }
  const out = new STORAGE_ARRAY[info.storage](n);
  if (info.dtype === "int64" && data instanceof BigInt64Array) {
    for (let i = 0; i < n; i++) {
      const v = data[i];
      if (v > 2147483647n || v < -2147483648n) {
        throw new RangeError(`run: input '${info.name}' value ${v} at ${i} does not fit int32 (int64 runs as int32)`);
      }
      out[i] = Number(v);
    }
  } else if (info.dtype === "bool") {
    for (let i = 0; i < n; i++) out[i] = data[i] ? 1 : 0;
  } else if (NARROW_ARRAY[info.dtype]) {
    out.set(NARROW_ARRAY[info.dtype].from(data, Number));  // wraps into the dtype, as a typed array does
  } else if (typeof data[0] === "bigint") {
    for (let i = 0; i < n; i++) out[i] = Number(data[i]);
  } else {
    out.set(data);
  }
  return out;
}

function fromStorage(info, bytes) {
  const n = numel(info.shape);
  const raw = new STORAGE_ARRAY[info.storage](bytes.buffer, bytes.byteOffset, n);
  if (info.dtype === "bool") return Uint8Array.from(raw, (v) => (v ? 1 : 0));
  if (NARROW_ARRAY[info.dtype]) return NARROW_ARRAY[info.dtype].from(raw);
  return raw.slice();
}

async function fetchWeights(url, total, onProgress) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`load: ${url}: HTTP ${response.status}`);
  const blob = new Uint8Array(total);
  let loaded = 0;
  if (response.body && response.body.getReader) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (loaded + value.length > total) throw new Error(`load: ${url} is larger than the ${total} bytes expected`);
      blob.set(value, loaded);
      loaded += value.length;
      if (onProgress) onProgress(loaded, total);
    }
  } else {
    const all = new Uint8Array(await response.arrayBuffer());
    blob.set(all.subarray(0, total));
    loaded = all.length;
    if (onProgress) onProgress(loaded, total);
  }
  if (loaded !== total) throw new Error(`load: ${url} has ${loaded} bytes, expected ${total}`);
  return blob;
}

export async function requestDevice() {
  if (typeof navigator === "undefined" || !navigator.gpu) {
    throw new Error("WebGPU is not available in this browser (navigator.gpu is missing; it needs a secure context: https or localhost)");
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("WebGPU is available but no adapter was found (no usable GPU or software adapter)");
  const device = await adapter.requestDevice();
  return { adapter, device };
}

export async function load(options = {}) {
  const S = SCHEDULE;
  const baseUrl = options.baseUrl !== undefined ? options.baseUrl : new URL(".", import.meta.url).href;
  let device = options.device;
  let adapter = null;
  if (!device) ({ adapter, device } = await requestDevice());
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

  const base = baseUrl.endsWith("/") ? baseUrl : baseUrl + "/";
  const blobPromise = fetchWeights(new URL(S.weights.file, base).href, S.weights.size, options.onProgress);

  device.pushErrorScope("validation");
  const layouts = new Map();
  const layoutFor = (bindings) => {
    const key = bindings.join(",");
    if (!layouts.has(key)) {
      const entries = ["read", ...bindings].map((a, i) => ({
        binding: i,
        visibility: GPUShaderStage.COMPUTE,
        buffer: { type: a === "rw" ? "storage" : "read-only-storage" },
      }));
      layouts.set(key, device.createBindGroupLayout({ entries }));
    }
    return layouts.get(key);
  };
  const pipelinePromises = S.kernels.map((k) => {
    const layout = layoutFor(k.bindings);
    const module = device.createShaderModule({ label: k.name, code: k.source });
    return device
      .createComputePipelineAsync({
        label: k.name,
        layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: "main" },
      })
      .then((pipeline) => ({ pipeline, layout }));
  });
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

  const [pipelines, blob] = await Promise.all([Promise.all(pipelinePromises), blobPromise]);
  device.queue.writeBuffer(meta, 0, blob, 0, S.weights.meta);
  const reloads = [];
  for (const c of S.constants) {
    device.queue.writeBuffer(buffers[c.buffer], 0, blob, c.offset, c.size);
    if (c.reload) reloads.push([buffers[c.buffer], blob.slice(c.offset, c.offset + c.size)]);
  }
  const ops = S.ops.map((op) => {
    if (op[0] === 0) {
      const [, k, off, size, bufs, gx, gy, gz] = op;
      const { pipeline, layout } = pipelines[k];
      const entries = [{ binding: 0, resource: { buffer: meta, offset: off, size } }];
      bufs.forEach((b, i) => entries.push({ binding: i + 1, resource: { buffer: buffers[b] } }));
      return [0, pipeline, device.createBindGroup({ layout, entries }), gx, gy, gz];
    }
    const [, src, so, dst, d, size] = op;
    return [1, buffers[src], so, buffers[dst], d, size];
  });
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
      return [buffers[info.buffer], toStorage(info, feeds[info.name])];
    });
    for (const [buf, arr] of uploads) if (arr.byteLength) device.queue.writeBuffer(buf, 0, arr);
    for (const [buf, data] of reloads) device.queue.writeBuffer(buf, 0, data);
    const encoder = device.createCommandEncoder();
    let pass = null;
    for (const op of ops) {
      if (op[0] === 0) {
        if (!pass) pass = encoder.beginComputePass();
        pass.setPipeline(op[1]);
        pass.setBindGroup(0, op[2]);
        pass.dispatchWorkgroups(op[3], op[4], op[5]);
      } else {
        if (pass) {
          pass.end();
          pass = null;
        }
        encoder.copyBufferToBuffer(op[1], op[2], op[3], op[4], op[5]);
      }
    }
    if (pass) pass.end();
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
