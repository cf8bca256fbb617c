"""burn-cuda's tuned kernel families (``burn.autotune``): the device's tuner and the conv2d family.

conv (1-d and 2-d, float): ``columns`` gathers each image's columns (C*K, H_out*W_out) with a
generated kernel and multiplies W into them as one batched GEMM whose result is already NCHW (best for
large planes); ``rows`` gathers a strided window view into one (N*L, C*K) matrix and runs one large
GEMM, then transposes to NCHW (best when the planes are small and the batch and channels large).
``rows`` is the reference (the older, general path), ``columns`` the default when tuning is off. Small
convolutions are not tuned: they run ``columns`` for planes of 1024 outputs or more, else ``rows``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from burn.autotune import Autotuner, Candidate, Family, bucket, tuner_for
from burn.backend import pool_out_size

_TUNE_MIN_FLOPS = 1 << 24  # below this a conv is not tuned: tuning would cost more than it saves


def event_timer(backend: Any, warmup: int = 1, reps: int = 5) -> Callable[[Callable[[], Any]], float]:
    """Seconds per call of ``fn``: the median of ``reps`` runs timed by CUDA events on the backend's
    stream, after ``warmup`` runs."""
    import cupy

    def timer(fn: Callable[[], Any]) -> float:
        backend._on()
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(backend.stream)
            fn()
            end.record(backend.stream)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
        return statistics.median(times)

    return timer


def tuner(backend: Any) -> Autotuner:
    """The backend's tuner: its cache is keyed by the GPU, the driver and CUDA runtime, and versions
    (built once per backend: reading the device's properties takes about a millisecond)."""
    made = getattr(backend, "_autotuner", None)
    if made is not None:
        return made
    import cupy

    from ._version import __version__

    props = cupy.cuda.runtime.getDeviceProperties(backend.index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    parts = (
        name,
        f"driver {cupy.cuda.runtime.driverGetVersion()} runtime {cupy.cuda.runtime.runtimeGetVersion()}",
        f"burn-cuda {__version__} cupy {cupy.__version__}",
    )
    return tuner_for(backend, parts, event_timer(backend))


Ints = tuple[int, ...]


def _conv_key(
    backend: Any, x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int
) -> str:
    n, c, *sp = x.shape
    co, _, *k = weight.shape
    spatial = "x".join(str(bucket(s)) for s in sp)
    kernel = "x".join(map(str, k))
    return (
        f"{x.dtype.name} n{bucket(n)} c{bucket(c)} {spatial} co{bucket(co)} k{kernel} s{stride} p{padding} "
        f"d{dilation} g{groups}"
    )


def _close(out: Any, ref: Any) -> bool:
    """Equal up to summation order: within 1e-3 of the result's largest magnitude (1e-2 for float16)."""
    import numpy as np

    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return False
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    tol = 1e-2 if np.asarray(out).dtype == np.float16 else 1e-3
    return bool(np.allclose(out, ref, rtol=tol, atol=tol * max(scale, 1.0), equal_nan=True))


CONV = Family(
    "conv2d",
    (
        Candidate("columns", lambda b, *a: b._conv_columns(*a), applies=lambda b, *a: b._columns_fit(*a)),
        Candidate("rows", lambda b, *a: b._conv_rows(*a)),
    ),
    key=_conv_key,
    reference="rows",
    default="columns",
    close=_close,
)


def should_tune(x: Any, weight: Any, out_len: int) -> bool:
    """Whether a conv is large enough to tune: ``out_len`` output positions per image and channel."""
    k = 1
    for s in weight.shape[1:]:
        k *= s  # C_in/G * kernel: the products per output
    return 2 * x.shape[0] * weight.shape[0] * out_len * k >= _TUNE_MIN_FLOPS


# ---------------------------------------------------------------------- pooling
# candidates: "windows" (the reference: the padded strided window view with CuPy argmax / sums, any
# rank) and the direct kernels of ``_tuned_kernels`` ("b<block>p<outputs per thread>"). Arguments:
# (backend, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad) with 1-d pools
# lifted to 2-d (height 1); max returns (values, int64 indices).
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
    """Max pools: values close and indices equal; average pools: ``_close``."""
    import numpy as np

    if isinstance(ref, tuple):
        if not isinstance(out, tuple) or len(out) != len(ref):
            return False
        return _close(out[0], ref[0]) and bool(np.array_equal(np.asarray(out[1]), np.asarray(ref[1])))
    return _close(out, ref)


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
    args = (
        op,
        x,
        tuple(kernel),
        tuple(stride),
        tuple(padding),
        tuple(dilation),
        ceil_mode,
        count_include_pad,
    )
    h, w = x.shape[2:]
    oh = pool_out_size(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = pool_out_size(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    if x.shape[0] * x.shape[1] * oh * ow * kernel[0] * kernel[1] >= _POOL_MIN_WORK:
        return tuner(backend).run(POOL, backend, *args)
    return POOL.by_name[_POOL_DEFAULT].fn(backend, *args)


# ---------------------------------------------------------------------- reductions
# sum / mean / prod / max / min over the trailing dims of a dense float tensor (the last dim, or all
# dims): "cupy" (the reference: CuPy's reduction, float16 accumulated in float32) and the tree kernels
# of ``_tuned_kernels`` ("tree<block>x<elements per thread>"); rows too few to fill the GPU split into
# chunks whose partials (in the accumulator type) take a second pass. Small reductions are not tuned
# and keep CuPy's path (``should_tune_reduce``).
_REDUCE_MIN_ELEMENTS = 1 << 22
_REDUCE_MIN_ROW = 4096
REDUCE_BLOCKS = (128, 256, 512)
REDUCE_PER_THREAD = (1, 4, 8)
_REDUCE_DEFAULT = "tree256x4"


def _reduce_cupy(backend: Any, op: str, x: Any, rows: int, n: int) -> Any:
    import numpy as np

    cp = backend._on()
    x2 = x.reshape(rows, n)
    if op in ("sum", "prod", "mean"):
        fn = {"sum": cp.sum, "prod": cp.prod, "mean": cp.mean}[op]
        if x.dtype == np.float16:  # accumulate in float32, round once
            return fn(x2, axis=1, dtype=np.float32).astype(np.float16)
        return fn(x2, axis=1, dtype=x.dtype)
    return (cp.max if op == "max" else cp.min)(x2, axis=1)


def _target_blocks(backend: Any) -> int:
    """Blocks that fill the GPU (4 per multiprocessor), read once per backend."""
    blocks = getattr(backend, "_reduce_target_blocks", None)
    if blocks is None:
        import cupy

        sms = cupy.cuda.runtime.getDeviceProperties(backend.index)["multiProcessorCount"]
        blocks = backend._reduce_target_blocks = 4 * int(sms)
    return int(blocks)


def reduce_rows(backend: Any, op: str, x: Any, rows: int, n: int, block: int = 256, ept: int = 4) -> Any:
    """``op`` over each of ``rows`` dense rows of ``n`` elements of x (float16/32/64) with the tree
    kernel: one block per row, or per row chunk (then a second pass over the partials) when there are
    too few rows to fill the GPU."""
    import numpy as np

    from ._tuned_kernels import reduce_kernel

    cp = backend._on()
    x = cp.ascontiguousarray(x)
    step = block * ept
    chunks = 1
    target = _target_blocks(backend)
    if rows < target and n > 4 * step:
        chunks = min(-(-n // (4 * step)), -(-target // max(rows, 1)))
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    mean_n = np.int64(n if op == "mean" else 0)
    if chunks == 1:
        out = cp.empty((rows,), dtype=x.dtype)
        kern = reduce_kernel(op, x.dtype, x.dtype, ept)
        kern((rows,), (block,), (x, out, np.int64(n), np.int64(chunk), np.int32(1), mean_n))
        return out
    acc = np.dtype(np.float64 if x.dtype == np.float64 else np.float32)
    part = cp.empty((rows, chunks), dtype=acc)
    first = "sum" if op == "mean" else op  # the mean divides once, in the second pass
    reduce_kernel(first, x.dtype, acc, ept)(
        (rows * chunks,), (block,), (x, part, np.int64(n), np.int64(chunk), np.int32(chunks), np.int64(0))
    )
    out = cp.empty((rows,), dtype=x.dtype)
    second = "sum" if op == "mean" else op
    reduce_kernel(second, acc, x.dtype, 1)(
        (rows,), (block,), (part, out, np.int64(chunks), np.int64(chunks), np.int32(1), mean_n)
    )
    return out


def _tree(block: int, ept: int, fast: bool) -> Candidate:
    def run(backend: Any, op: str, x: Any, rows: int, n: int) -> Any:
        return reduce_rows(backend, op, x, rows, n, block, ept)

    return Candidate(f"tree{block}x{ept}", run, fast=fast)


def _reduce_key(backend: Any, op: str, x: Any, rows: int, n: int) -> str:
    return f"{op} {x.dtype.name} r{bucket(rows)} n{bucket(n)}"


REDUCE = Family(
    "reduce",
    (
        Candidate("cupy", _reduce_cupy),
        *(
            _tree(block, ept, fast=(block, ept) in ((256, 4), (512, 8), (128, 4)))
            for block in REDUCE_BLOCKS
            for ept in REDUCE_PER_THREAD
        ),
    ),
    key=_reduce_key,
    reference="cupy",
    default=_REDUCE_DEFAULT,
    close=_close,
)


def should_tune_reduce(rows: int, n: int) -> bool:
    """Long rows of a large tensor, where the tree's shape matters; smaller ones keep CuPy's path."""
    return n >= _REDUCE_MIN_ROW and rows * n >= _REDUCE_MIN_ELEMENTS


def reduce_trailing(backend: Any, op: str, x: Any, dims: tuple[int, ...], keepdim: bool) -> Any | None:
    """``op`` over ``dims`` through the tuned family where it applies: a float16/32/64 tensor, dims
    the trailing ones (the last, or all), C-contiguous, large enough (``should_tune_reduce``); else
    None (the caller runs CuPy's reduction)."""
    from ._tuned_kernels import REDUCE_DTYPES, REDUCE_OPS

    nd = x.ndim
    if op not in REDUCE_OPS or x.dtype not in REDUCE_DTYPES or not dims or not x.flags.c_contiguous:
        return None
    if tuple(sorted(d % nd for d in dims)) != tuple(range(nd - len(dims), nd)):
        return None
    keep = x.shape[: nd - len(dims)]
    rows = 1
    for s in keep:
        rows *= s
    n = x.size // rows if rows else 0
    if n == 0 or not should_tune_reduce(rows, n):
        return None
    y = tuner(backend).run(REDUCE, backend, op, x, rows, n)
    return y.reshape(keep + (1,) * len(dims) if keepdim else keep)
