// common.js: the WebGPU helpers runtime.js (model.js, `burn web export`) and trainer.js
// (`export_training`) share. Both import it; the export inlines it in place of that import, so each
// written page module stays one file (model.js, trainer.js) with no imports.

export const STORAGE_ARRAY = { f32: Float32Array, i32: Int32Array, u32: Uint32Array };
// dtypes stored one value per 32-bit word: fed and read back as their own typed arrays
export const NARROW_ARRAY = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array };

export function numel(shape) {
  return shape.reduce((n, d) => n * d, 1);
}

export function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

// feed data -> a fresh typed array in the storage type (the caller's array is never modified).
// Errors read `${what}: ${label} 'name' ...${note}`; `bare` accepts a plain array or typed array as
// the feed itself (no { data, shape }).
export function toStorage(what, info, feed, { label = "input", note = "", bare = true } = {}) {
  const n = numel(info.shape);
  const data = feed && feed.data !== undefined ? feed.data : bare ? feed : undefined;
  const name = `${what}: ${label} '${info.name}'`;
  if (data === undefined || data === null || typeof data.length !== "number") {
    throw new TypeError(`${name} must be { data, shape } with a typed array or array`);
  }
  if (feed.shape !== undefined && !sameShape(Array.from(feed.shape), info.shape)) {
    throw new RangeError(`${name} expects shape [${info.shape}]${note}, got [${Array.from(feed.shape)}]`);
  }
  if (data.length !== n) {
    throw new RangeError(`${name} expects ${n} values (shape [${info.shape}]), got ${data.length}`);
  }
  const out = new STORAGE_ARRAY[info.storage](n);
  if (info.dtype === "int64" && data instanceof BigInt64Array) {
    for (let i = 0; i < n; i++) {
      const v = data[i];
      if (v > 2147483647n || v < -2147483648n) {
        throw new RangeError(`${name} value ${v} at ${i} does not fit int32 (int64 runs as int32)`);
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

// weights.bin, streamed (onProgress(loaded, total) as it arrives) and checked against its size
export async function fetchWeights(what, url, total, onProgress) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${what}: ${url}: HTTP ${response.status}`);
  const blob = new Uint8Array(total);
  let loaded = 0;
  if (response.body && response.body.getReader) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (loaded + value.length > total) throw new Error(`${what}: ${url} is larger than the ${total} bytes expected`);
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
  if (loaded !== total) throw new Error(`${what}: ${url} has ${loaded} bytes, expected ${total}`);
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

// one compute pipeline per recorded kernel (binding 0: its meta slice, then its buffers), with
// layouts shared between kernels binding the same way: a promise of [{ pipeline, layout }]
export function createPipelines(device, kernels, label = "") {
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
  return Promise.all(kernels.map((k) => {
    const layout = layoutFor(k.bindings);
    const module = device.createShaderModule({ label: label + k.name, code: k.source });
    return device
      .createComputePipelineAsync({
        label: label + k.name,
        layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: "main" },
      })
      .then((pipeline) => ({ pipeline, layout }));
  }));
}

// the schedule's ops with their bind groups made once: [0, pipeline, bindGroup, x, y, z] for a
// dispatch, [1, src, srcOffset, dst, dstOffset, size] for a copy
export function bindOps(device, ops, pipelines, buffers, meta) {
  return ops.map((op) => {
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
}

// every op into `encoder`: consecutive dispatches share one compute pass, copies end it
export function recordOps(encoder, ops) {
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
}
