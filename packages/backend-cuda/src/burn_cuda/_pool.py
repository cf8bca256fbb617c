"""Max and average pooling on the GPU: direct kernels for 1-d and 2-d pools, the tuned pool family
(``burn.autotune``) that chooses their shape, and the strided-window paths (any rank; the family's
reference).

Candidates: "windows" (the reference: the padded strided window view with CuPy argmax / sums, any
rank) and the direct kernels ("b<block>p<outputs per thread>"). Arguments: (backend, op, x, kernel,
stride, padding, dilation, ceil_mode, count_include_pad) with 1-d pools lifted to 2-d (height 1); max
returns (values, int64 indices).

The direct kernel (``burn_pool``, NCHW): each thread ``PX`` neighbouring outputs of one output row of
one (image, channel) plane. max: values and int64 indices, the first maximum in row-major window
order (the first NaN wins over every number), flattened over the spatial dims (``ih * W + iw``),
padding taps skipped; avg: the sum of the taps inside the input over the window's cells inside the
padded input (``count_include_pad``; the ceil-mode overhang never counts) or inside the input.
Compiled on first use and cached per (op, dtype, outputs per thread); the block size is a launch
parameter, so one compiled kernel serves every block size.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from burn.autotune import Candidate, Family, bucket
from burn.backend import Backend, conv_transpose_out_sizes, pool_out_sizes

from ._rawkernels import CVT, FLOAT_DTYPES, TYPES, compiled, io
from ._tuning import Ints, close, tuner
from ._types import Prim

POOL_DTYPES = {"max": frozenset(TYPES), "avg": FLOAT_DTYPES}


def pool_source(op: str, dt: np.dtype, px: int) -> str:
    """The CUDA source of the ``op`` ("max" or "avg") pool kernel ``burn_pool`` for ``dt``."""
    if op not in POOL_DTYPES or dt not in POOL_DTYPES[op]:
        raise TypeError(f"cuda {op} pool kernel: dtype {dt} is not supported")
    if not 1 <= px <= 8:
        raise ValueError(f"cuda pool kernel: outputs per thread must be 1..8, got {px}")
    _, acc, _, _, lowest, is_float = TYPES[dt]
    nan = "(v != v)" if is_float else "false"
    best_nan = "(b[p] != b[p])" if is_float else "false"
    head = CVT + io(dt, "x") + f"typedef {acc} ACC;\n#define PX {px}\n"
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


def pool_kernel(op: str, dt: np.dtype, px: int) -> Any:
    """The compiled pool kernel (``cupy.RawKernel``)."""
    dt = np.dtype(dt)
    return compiled(("pool", op, dt, px), pool_source(op, dt, px), "burn_pool")


def windows(cp: ModuleType, x: Prim, out_sp: Ints, kernel: Ints, stride: Ints, dilation: Ints) -> Prim:
    """A strided view (N, C, *out_sp, *kernel) of x (N, C, *spatial): window ``o`` at offset ``k``
    (the pools' window paths; ``_conv``'s rows path gathers its receptive fields from it)."""
    x = cp.ascontiguousarray(x)
    nd = len(kernel)
    st = x.strides
    strides = st[:2] + tuple(st[2 + d] * stride[d] for d in range(nd))
    strides += tuple(st[2 + d] * dilation[d] for d in range(nd))
    return cp.lib.stride_tricks.as_strided(
        x, shape=x.shape[:2] + tuple(out_sp) + tuple(kernel), strides=strides
    )


def height_one(stride: Ints, padding: Ints, dilation: Ints) -> tuple[Ints, Ints, Ints]:
    """A 1-d window's stride, padding and dilation as a 2-d one's of height 1."""
    return (1, *stride), (0, *padding), (1, *dilation)


class CudaPoolOps(Backend):  # CudaBackend(CudaConvOps, CudaPoolOps, Backend): plain mixins
    xp: ModuleType  # cupy

    if TYPE_CHECKING:  # CudaBackend's

        def _on(self) -> ModuleType: ...

    def max_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        out = self._pool("max", x, kernel, stride, padding, dilation, ceil_mode, False)
        if isinstance(out, tuple):
            return out
        return self._max_pool_windows(x, kernel, stride, padding, dilation, ceil_mode)

    def adaptive_avg_pool(self, x: Prim, output_size: Ints) -> Prim:
        """Where every output size divides its input size (a global average pool, 14 -> 7), the windows
        are equal and disjoint: one mean over a reshaped view (no index tables to upload, so a CUDA
        graph captures it); else the backend contract's windowed sums."""
        spatial = x.shape[2:]
        if any(o <= 0 or s % o for s, o in zip(spatial, output_size)):
            return super().adaptive_avg_pool(x, output_size)
        cp = self._on()
        split: tuple[int, ...] = x.shape[:2]
        for s, o in zip(spatial, output_size):
            split += (o, s // o)
        axes = tuple(3 + 2 * d for d in range(len(spatial)))
        out = cp.mean(x.reshape(split), axis=axes, dtype=cp.float32 if x.dtype == cp.float16 else None)
        return out.astype(x.dtype, copy=False)

    def avg_pool(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        ones = (1,) * len(kernel)
        out = self._pool("avg", x, kernel, stride, padding, ones, ceil_mode, count_include_pad)
        if out is not None and not isinstance(out, tuple):
            return out
        return self._avg_pool_windows(x, kernel, stride, padding, count_include_pad, ceil_mode)

    # ---- the direct kernels of the tuned pool family (``POOL``) for 1-d and 2-d pools of the dtypes
    # they take; 3-d and other dtypes (and the family's reference) the window paths
    def _pool(
        self,
        op: str,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
    ) -> Prim | tuple[Prim, Prim] | None:
        if len(kernel) not in (1, 2) or x.dtype not in POOL_DTYPES[op] or x.ndim != 2 + len(kernel):
            return None
        if len(kernel) == 2:
            return pool2d(self, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad)
        n, c, length = x.shape
        lifted = height_one(stride, padding, dilation)
        y = pool2d(self, op, x.reshape(n, c, 1, length), (1, *kernel), *lifted, ceil_mode, count_include_pad)
        if isinstance(y, tuple):
            return y[0][:, :, 0], y[1][:, :, 0]
        return y[:, :, 0]

    def _pool_direct(
        self,
        op: str,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
        block: int = 256,
        px: int = 1,
    ) -> Prim | tuple[Prim, Prim]:
        """A 2-d pool of x (N, C, H, W) with the direct kernel (``pool_source``): ``block`` threads
        per block, ``px`` outputs per thread along the output row; max returns (values, int64
        indices)."""
        cp = self._on()
        x = cp.ascontiguousarray(x)
        n, c, h, w = x.shape
        oh, ow = pool_out_sizes((h, w), kernel, stride, padding, dilation, ceil_mode)
        y = cp.empty((n, c, oh, ow), dtype=x.dtype)
        idx = cp.empty((n, c, oh, ow), dtype=np.int64) if op == "max" else None
        pb = -(-ow // px)
        total = n * c * oh * pb
        if y.size:
            i32 = np.int32
            params = (
                np.int64(total),
                *(i32(v) for v in (pb, oh, ow, h, w, *kernel, *stride, *padding, *dilation)),
                i32(int(count_include_pad)),
            )
            outs = (y, idx) if idx is not None else (y,)
            pool_kernel(op, x.dtype, px)((-(-total // block),), (block,), (x, *outs, *params))
        return (y, idx) if idx is not None else y

    # ---- the window paths: any rank, any dtype
    def _padded_windows(
        self,
        x: Prim,
        kernel: Ints,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        ceil_mode: bool,
        fill: float | int,
    ) -> tuple[Prim, Ints, Ints]:
        """The window view of x padded by ``fill`` (``padding`` before, after: enough for the last
        window), the output sizes and the padding after each spatial dim."""
        cp = self.xp
        nd = len(kernel)
        spatial = x.shape[2:]
        out_sp = pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)
        # the extent the windows cover is the unpadded transposed conv's output size
        span = conv_transpose_out_sizes(out_sp, kernel, stride, (0,) * nd, (0,) * nd, dilation)
        right = tuple(max(p, e - s - p) for p, e, s in zip(padding, span, spatial))
        pads = ((0, 0), (0, 0)) + tuple((padding[d], right[d]) for d in range(nd))
        xp_ = cp.pad(x, pads, mode="constant", constant_values=fill) if any(map(any, pads)) else x
        return windows(cp, xp_, out_sp, kernel, stride, dilation), out_sp, right

    def _max_pool_windows(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[Prim, Prim]:
        """Max pool over a padded strided window view (CuPy argmax): any rank, any dtype."""
        cp = self._on()
        nd = len(kernel)
        dt = x.dtype
        fill = -np.inf if dt.kind == "f" else np.iinfo(dt).min
        win, out_sp, _ = self._padded_windows(x, kernel, stride, padding, dilation, ceil_mode, fill)
        flat = win.reshape(x.shape[:2] + out_sp + (-1,))
        local = cp.argmax(flat, axis=-1)  # first maximum in window order, as PyTorch
        values = cp.take_along_axis(flat, local[..., None], axis=-1)[..., 0]
        # local kernel offset -> position in the unpadded input, flattened over the spatial dims
        index = cp.zeros(local.shape, dtype=np.int64)
        rest = local.astype(np.int64)
        spatial = x.shape[2:]
        for d in reversed(range(nd)):
            k_d = rest % kernel[d]
            rest = rest // kernel[d]
            o_d = cp.arange(out_sp[d], dtype=np.int64).reshape((-1,) + (1,) * (nd - 1 - d))
            pos = o_d * stride[d] - padding[d] + k_d * dilation[d]
            index = index + pos * math.prod(spatial[d + 1 :])
        return values, index

    def _avg_pool_windows(
        self, x: Prim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> Prim:
        """Average pool over a padded strided window view (CuPy sums): any rank."""
        cp = self._on()
        nd = len(kernel)
        ones = (1,) * nd
        win, out_sp, right = self._padded_windows(x, kernel, stride, padding, ones, ceil_mode, 0)
        axes = tuple(range(2 + nd, 2 + 2 * nd))
        total = cp.sum(win, axis=axes, dtype=x.dtype)
        # divisor: cells of each window inside the input (or inside input + padding), as PyTorch counts
        spatial = x.shape[2:]
        if count_include_pad:  # padded coordinates [0, S + 2p) count; ceil-mode overhang does not
            inside = tuple(s + p + min(p, r) for s, p, r in zip(spatial, padding, right))
            pads = tuple((0, r - min(p, r)) for p, r in zip(padding, right))
        else:
            inside, pads = spatial, tuple(zip(padding, right))
        mask = cp.pad(cp.ones((1, 1) + tuple(inside), dtype=x.dtype), ((0, 0), (0, 0)) + pads)
        count = cp.sum(windows(cp, mask, out_sp, kernel, stride, ones), axis=axes, dtype=x.dtype)
        return total / count


_POOL_MIN_WORK = 1 << 22  # outputs x window taps below which a pool runs the default untuned
POOL_BLOCKS = (128, 256, 512)
POOL_PER_THREAD = (1, 2, 4)
_POOL_DEFAULT = "b256p1"


def _pool_windows(
    b: Any, op: str, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil: bool, cip: bool
) -> Any:
    if op == "max":
        return b._max_pool_windows(x, kernel, stride, padding, dilation, ceil)
    return b._avg_pool_windows(x, kernel, stride, padding, cip, ceil)


def _pool_candidate(block: int, px: int, fast: bool) -> Candidate:
    def run(b: Any, *args: Any) -> Any:
        return b._pool_direct(*args, block=block, px=px)

    return Candidate(f"b{block}p{px}", run, fast=fast)


def _pool_key(
    backend: Any,
    op: str,
    x: Any,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil: bool,
    cip: bool,
) -> str:
    n, c, h, w = x.shape
    flags = ("c" if ceil else "") + ("i" if cip and op == "avg" else "")
    return (
        f"{op} {x.dtype.name} nc{bucket(n * c)} h{bucket(h)} w{bucket(w)} k{kernel[0]}x{kernel[1]} "
        f"s{stride[0]}x{stride[1]} p{padding[0]}x{padding[1]} d{dilation[0]}x{dilation[1]}"
        + (f" {flags}" if flags else "")
    )


def _pool_close(out: Any, ref: Any) -> bool:
    """Max pools: values close and indices equal; average pools: ``_tuning.close``."""
    if isinstance(ref, tuple):
        if not isinstance(out, tuple) or len(out) != len(ref):
            return False
        return close(out[0], ref[0]) and bool(np.array_equal(np.asarray(out[1]), np.asarray(ref[1])))
    return close(out, ref)


POOL = Family(
    "pool",
    (
        Candidate("windows", _pool_windows),
        *(
            _pool_candidate(block, px, fast=(block, px) in ((256, 1), (128, 2), (256, 4)))
            for px in POOL_PER_THREAD
            for block in POOL_BLOCKS
        ),
    ),
    key=_pool_key,
    reference="windows",
    default=_POOL_DEFAULT,
    close=_pool_close,
)


def pool2d(
    backend: Any,
    op: str,
    x: Any,
    kernel: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Any:
    """A 2-d pool (x: N, C, H, W) through the tuned candidate; pools under ``_POOL_MIN_WORK``
    (outputs x taps) run the default direct kernel untuned."""
    args = (op, x, *map(tuple, (kernel, stride, padding, dilation)), ceil_mode, count_include_pad)
    oh, ow = pool_out_sizes(x.shape[2:], kernel, stride, padding, dilation, ceil_mode)
    if x.shape[0] * x.shape[1] * oh * ow * kernel[0] * kernel[1] >= _POOL_MIN_WORK:
        return tuner(backend).run(POOL, backend, *args)
    return POOL.by_name[_POOL_DEFAULT].fn(backend, *args)
