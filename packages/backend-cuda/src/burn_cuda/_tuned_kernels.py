"""CUDA sources of the tuned pool and reduction families (``_tuned.POOL``, ``_tuned.REDUCE``),
compiled with ``cupy.RawKernel`` on first use and cached per (kind, op, dtypes, outputs or elements
per thread). The block size is a launch parameter, so one compiled kernel serves every block size.

float16 is read and written as its 16 bits (``unsigned short``) and converted with the PTX ``cvt``
instructions (round to nearest even), so no CUDA header is needed; it computes in float. bfloat16
never reaches these kernels: the backend runs pools and reductions of bfloat16 through float32
(``_bf16.FLOAT32_METHODS``).

* pools (NCHW, a 1-d pool as a 2-d one of height 1): each thread ``PX`` neighbouring outputs of one
  output row of one (image, channel) plane. max: values and int64 indices, the first maximum in
  row-major window order (the first NaN wins over every number), flattened over the spatial dims
  (``ih * W + iw``), padding taps skipped; avg: the sum of the taps inside the input over the
  window's cells inside the padded input (``count_include_pad``; the ceil-mode overhang never
  counts) or inside the input.
* reductions: ``out[b] = op(x[row, start:stop])`` for block ``b`` = (row, chunk), each thread
  ``EPT`` elements per step (coalesced: element ``j + u * blockDim``), then a warp-shuffle and
  shared-memory tree; with one chunk per row the result is final (the mean divided in), else the
  (rows, chunks) partials in the accumulator type take a second pass.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

_CVT = r"""
__device__ __forceinline__ float burn_h2f(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short burn_f2h(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
"""

# numpy dtype -> (storage C type, compute C type, load(p, i), store(v), lowest value, float?)
_TYPES: dict[np.dtype, tuple[str, str, str, str, str, bool]] = {
    np.dtype(np.float16): (
        "unsigned short",
        "float",
        "burn_h2f(p[i])",
        "burn_f2h(v)",
        "__int_as_float(0xff800000)",
        True,
    ),
    np.dtype(np.float32): ("float", "float", "p[i]", "v", "__int_as_float(0xff800000)", True),
    np.dtype(np.float64): (
        "double",
        "double",
        "p[i]",
        "v",
        "__longlong_as_double(0xfff0000000000000LL)",
        True,
    ),
    np.dtype(np.int32): ("int", "int", "p[i]", "v", "(-2147483647 - 1)", False),
    np.dtype(np.int64): ("long long", "long long", "p[i]", "v", "(-9223372036854775807LL - 1)", False),
}
POOL_DTYPES = {"max": frozenset(_TYPES), "avg": frozenset(t for t, v in _TYPES.items() if v[5])}
REDUCE_OPS = ("sum", "mean", "prod", "max", "min")
REDUCE_DTYPES = POOL_DTYPES["avg"]

_cache: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


def _io(dt: np.dtype, name: str) -> str:
    """C helpers ``<name>_load(p, i)`` and ``<name>_store(p, i, v)`` for dtype ``dt``."""
    c, acc, load, store, _, _ = _TYPES[dt]
    return (
        f"typedef {c} {name}_t;\n"
        f"__device__ __forceinline__ {acc} {name}_load(const {c}* p, long long i) {{ return ({acc})({load}); }}\n"
        f"__device__ __forceinline__ void {name}_store({c}* p, long long i, {acc} v) {{ p[i] = ({c})({store}); }}\n"
    )


def pool_source(op: str, dt: np.dtype, px: int) -> str:
    """The CUDA source of the ``op`` ("max" or "avg") pool kernel ``burn_pool`` for ``dt``."""
    if op not in POOL_DTYPES or dt not in POOL_DTYPES[op]:
        raise TypeError(f"cuda {op} pool kernel: dtype {dt} is not supported")
    if not 1 <= px <= 8:
        raise ValueError(f"cuda pool kernel: outputs per thread must be 1..8, got {px}")
    _, acc, _, _, lowest, is_float = _TYPES[dt]
    nan = "(v != v)" if is_float else "false"
    best_nan = "(b[p] != b[p])" if is_float else "false"
    head = _CVT + _io(dt, "x") + f"typedef {acc} ACC;\n#define PX {px}\n"
    params = (
        "long long total, int PB, int OH, int OW, int H, int W, int KH, int KW, int SH, int SW, int PH, "
        "int PW, int DH, int DW, int CIP"
    )
    outs = "x_t* y, long long* idx" if op == "max" else "x_t* y"
    lines = [
        f'extern "C" __global__ void burn_pool(const x_t* x, {outs}, {params}) {{',
        "    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
        "    if (e >= total) return;",
        "    int pb = (int)(e % PB);",
        "    long long r = e / PB;",
        "    int oh = (int)(r % OH);",
        "    long long plane = r / OH;",
        "    int ow0 = pb * PX;",
        "    int ihb = oh * SH - PH, iwb = ow0 * SW - PW;",
        "    const x_t* xp = x + plane * H * W;",
    ]
    if op == "max":
        lines += [
            "    ACC b[PX]; long long k[PX]; bool f[PX];",
            "    #pragma unroll",
            f"    for (int p = 0; p < PX; ++p) {{ b[p] = {lowest}; k[p] = (long long)ihb * W + iwb + p * SW; f[p] = false; }}",
        ]
    else:
        lines += ["    ACC s[PX];", "    #pragma unroll", "    for (int p = 0; p < PX; ++p) s[p] = (ACC)0;"]
    lines += [
        "    for (int i = 0; i < KH; ++i) {",
        "        int ih = ihb + i * DH;",
        "        if (ih < 0 || ih >= H) continue;",
        "        const x_t* row = xp + (long long)ih * W;",
        "        for (int j = 0; j < KW; ++j) {",
        "            int dj = j * DW;",
        "            #pragma unroll",
        "            for (int p = 0; p < PX; ++p) {",
        "                int c = iwb + p * SW + dj;",
        "                if (c < 0 || c >= W) continue;",
        "                ACC v = x_load(row, c);",
    ]
    if op == "max":
        lines.append(
            f"                if (!f[p] || (!{best_nan} && ({nan} || v > b[p]))) "
            "{ b[p] = v; k[p] = (long long)ih * W + c; f[p] = true; }"
        )
    else:
        lines.append("                s[p] += v;")
    lines += ["            }", "        }", "    }", "    long long ob = (plane * OH + oh) * OW + ow0;"]
    if op == "avg":
        lines += [
            "    int h1 = min(ihb + KH, H + PH);",
            "    int hc = CIP ? h1 - ihb : min(h1, H) - max(ihb, 0);",
        ]
    lines += ["    #pragma unroll", "    for (int p = 0; p < PX; ++p) {", "        if (ow0 + p >= OW) break;"]
    if op == "max":
        lines += ["        x_store(y, ob + p, b[p]);", "        idx[ob + p] = k[p];"]
    else:
        lines += [
            "        int w0 = iwb + p * SW;",
            "        int w1 = min(w0 + KW, W + PW);",
            "        int wc = CIP ? w1 - w0 : min(w1, W) - max(w0, 0);",
            "        x_store(y, ob + p, s[p] / (ACC)(hc * wc));",
        ]
    lines += ["    }", "}"]
    return head + "\n".join(lines) + "\n"


# op -> (init, combine(a, b)) in the accumulator type; max/min propagate NaN (NumPy)
_REDUCE = {
    "sum": ("(ACC)0", "a + b"),
    "mean": ("(ACC)0", "a + b"),
    "prod": ("(ACC)1", "a * b"),
    "max": ("-INF", "(a > b || a != a) ? a : b"),
    "min": ("INF", "(a < b || a != a) ? a : b"),
}


def reduce_source(op: str, in_dt: np.dtype, out_dt: np.dtype, ept: int) -> str:
    """The CUDA source of ``burn_reduce``: ``op`` over row chunks of ``in_dt`` into ``out_dt``
    (the accumulator type for partials), ``ept`` elements per thread and step."""
    if op not in _REDUCE:
        raise ValueError(f"cuda reduce kernel: op must be one of {', '.join(_REDUCE)}, got {op!r}")
    if in_dt not in REDUCE_DTYPES or out_dt not in REDUCE_DTYPES:
        raise TypeError(f"cuda reduce kernel: expected float dtypes, got {in_dt} -> {out_dt}")
    if not 1 <= ept <= 16:
        raise ValueError(f"cuda reduce kernel: elements per thread must be 1..16, got {ept}")
    acc = "double" if np.dtype(np.float64) in (in_dt, out_dt) else "float"
    inf = "__longlong_as_double(0x7ff0000000000000LL)" if acc == "double" else "__int_as_float(0x7f800000)"
    init, combine = _REDUCE[op]
    head = _CVT + _io(in_dt, "x") + _io(out_dt, "o")  # partials: out_dt's compute type is ACC
    head += f"typedef {acc} ACC;\n#define EPT {ept}\n#define INF ({inf})\n"
    head += f"__device__ __forceinline__ ACC combine(ACC a, ACC b) {{ return {combine}; }}\n"
    body = f"""extern "C" __global__ void burn_reduce(const x_t* x, o_t* out, long long n, long long chunk, int chunks,
        long long mean_n) {{
    long long blk = blockIdx.x;
    long long row = blk / chunks;
    long long start = (blk % chunks) * chunk;
    long long stop = start + chunk < n ? start + chunk : n;
    const x_t* xr = x + row * n;
    ACC acc = {init};
    const long long step = (long long)blockDim.x * EPT;
    for (long long j = start + threadIdx.x; j < stop; j += step) {{
        #pragma unroll
        for (int u = 0; u < EPT; ++u) {{
            long long jj = j + (long long)u * blockDim.x;
            if (jj < stop) acc = combine(acc, (ACC)x_load(xr, jj));
        }}
    }}
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc = combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
    __shared__ ACC sh[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sh[warp] = acc;
    __syncthreads();
    if (warp == 0) {{
        acc = lane < (int)(blockDim.x >> 5) ? sh[lane] : ({init});
        #pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc = combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
        if (lane == 0) {{
            if (mean_n > 0) acc = acc / (ACC)mean_n;
            o_store(out, blk, acc);
        }}
    }}
}}
"""
    return head + body


def _compiled(key: tuple[Any, ...], source: str, name: str, label: str | None = None) -> Any:
    """The kernel under ``key``, built once per process (CuPy compiles it at its first launch, or
    loads it from its on-disk kernel cache); the build is published as ``AutotuneEvent``s of kind
    "compile" (start and done) for the dashboard, named ``label`` (default: the key's parts)."""
    k = _cache.get(key)
    if k is None:
        import cupy
        from burn.autotune import AutotuneEvent, publish

        with _lock:
            k = _cache.get(key)
            if k is None:
                label = label or "_".join(str(part) for part in key)
                publish(AutotuneEvent(label, kind="compile", device="cuda"))
                k = _cache[key] = cupy.RawKernel(source, name)  # NVRTC runs at the first launch
                publish(AutotuneEvent(label, kind="compile", done=True, device="cuda"))
    return k


def pool_kernel(op: str, dt: np.dtype, px: int) -> Any:
    """The compiled pool kernel (``cupy.RawKernel``)."""
    dt = np.dtype(dt)
    return _compiled(("pool", op, dt, px), pool_source(op, dt, px), "burn_pool")


def reduce_kernel(op: str, in_dt: np.dtype, out_dt: np.dtype, ept: int) -> Any:
    """The compiled reduction kernel (``cupy.RawKernel``)."""
    in_dt, out_dt = np.dtype(in_dt), np.dtype(out_dt)
    return _compiled(("reduce", op, in_dt, out_dt, ept), reduce_source(op, in_dt, out_dt, ept), "burn_reduce")
