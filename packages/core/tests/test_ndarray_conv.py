"""The numpy backend's conv forward against a direct sum over kernel taps (a formulation independent of
its im2col + GEMM), on every path it takes: 1x1 at unit stride on one image (no window copy); window
views, one image per GEMM (the bias as a row of the GEMM) or several (the batched layout and its
transposed copy, bias fused into it); chunks cut by the workspace budget; non-contiguous inputs; the
workspace reused across calls and shapes; groups, dilation, 1-d and 3-d, float64. Then ``conv_fused``'s
2-d runs (rows with stride phases, column shifts, channels-last) with every epilogue (bias, residual,
ReLU, max pool), workspace chunks, the weights' cache, non-contiguous inputs and fresh results.

Tolerances: float32 1e-4 relative to the output scale (sums of up to a few hundred products in a
different order than the reference's), float64 1e-10.
"""

from __future__ import annotations

import itertools
import math

import burn
import numpy as np
import pytest
from burn import _native
from burn._ndarray import _backend, _conv_plans, _conv_runs, _module, _threads, _workspace

B = _backend.NdArrayBackend()
rng = np.random.default_rng(17)


def ref_conv(x, w, bias, stride, padding, dilation, groups):
    """Sum over kernel offsets of (C_out/g, C_in/g) @ the input samples that offset sees."""
    n, c = x.shape[:2]
    c_out, c_in_g, *kernel = w.shape
    nd = len(kernel)
    pad = ((0, 0), (0, 0)) + tuple((p, p) for p in padding)
    xp = np.pad(x.astype(np.float64), pad)
    out = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(x.shape[2:], padding, dilation, kernel, stride)
    ]
    y = np.zeros((n, c_out, *out))
    c_out_g = c_out // groups
    for g in range(groups):
        xs = xp[:, g * c_in_g : (g + 1) * c_in_g]
        ws = w[g * c_out_g : (g + 1) * c_out_g].astype(np.float64)
        for offset in itertools.product(*(range(k) for k in kernel)):
            index = (slice(None), slice(None)) + tuple(
                slice(o * d, o * d + (m - 1) * st + 1, st)
                for o, d, m, st in zip(offset, dilation, out, stride)
            )
            tap = ws[(slice(None), slice(None)) + offset]  # (C_out/g, C_in/g)
            y[:, g * c_out_g : (g + 1) * c_out_g] += np.einsum("oc,nc...->no...", tap, xs[index])
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * nd)
    return y


CASES = [
    # (x shape, weight shape, stride, padding, dilation, groups)
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 4, 6, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((2, 8, 5, 5), (8, 1, 3, 3), (1, 1), (2, 2), (2, 2), 8),  # depthwise, dilated
    ((1, 6, 4, 4), (5, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1, one image: a plain matmul
    ((1, 6, 4, 4), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),  # grouped 1x1, one image
    ((5, 6, 4, 4), (5, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1, small images: batched windows
    ((4, 6, 8, 8), (5, 6, 1, 1), (2, 2), (0, 0), (1, 1), 1),  # strided 1x1: windows
    ((1, 3, 40, 40), (8, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # one image per GEMM
    ((1, 3, 40, 40), (8, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1),  # one image, strided
    ((3, 2, 36, 36), (4, 2, 5, 5), (1, 1), (2, 2), (1, 1), 1),  # 1296 columns: one image per GEMM
    ((2, 3, 11), (4, 3, 3), (2,), (1,), (1,), 1),  # 1-d
    ((2, 4, 5, 4, 6), (6, 2, 3, 1, 2), (1, 1, 2), (1, 0, 1), (1, 1, 1), 2),  # 3-d
]


@pytest.mark.parametrize("path", ["dispatch", "im2col"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-w{'x'.join(map(str, c[1]))}"
)
def test_conv_matches_tap_sum(monkeypatch, case, bias, path):
    """Each case as the backend dispatches it (2-d runs below) and through im2col alone."""
    if path == "im2col":
        monkeypatch.setattr(_module, "_rows_run", lambda *args: None)
    xs, ws, stride, padding, dilation, groups = case
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    want = ref_conv(x, w, b, stride, padding, dilation, groups)
    got = B.conv(x, w, b, stride, padding, dilation, groups)
    assert got.dtype == np.float32 and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("stride", [(1, 1), (2, 1)])
@pytest.mark.parametrize("min_columns, budget", [(1, 1 << 22), (1 << 20, 1 << 22), (1 << 20, 4000)])
def test_conv_batch_chunking(monkeypatch, min_columns, budget, stride):
    """One image per GEMM, all 7 images in one GEMM, and chunks cut by the workspace budget agree."""
    monkeypatch.setattr(_module, "_GEMM_MIN_COLUMNS", min_columns)
    monkeypatch.setattr(_module, "_COLS_BUDGET", budget)
    x = rng.standard_normal((7, 4, 6, 6))
    w = rng.standard_normal((6, 2, 3, 3))
    b = rng.standard_normal(6)
    want = ref_conv(x, w, b, stride, (1, 1), (1, 1), 2)
    got = B.conv(x, w, b, stride, (1, 1), (1, 1), 2)
    plan = _conv_plans._conv_plan(x.shape, w.shape, stride, (1, 1), (1, 1), 2, min_columns, budget)
    per = plan.per
    assert got.dtype == np.float64
    assert per == 1 if min_columns == 1 else per == 7 if budget > 4000 else 1 < per < 7
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", [(0, 0), (1, 2)])
def test_conv_of_a_non_contiguous_input(padding):
    """A transposed view: unpadded it takes the strided windows path, padded the copy is contiguous."""
    x = rng.standard_normal((3, 5, 7, 4)).astype(np.float32).transpose(0, 1, 3, 2)
    w = rng.standard_normal((4, 5, 3, 3)).astype(np.float32)
    want = ref_conv(x, w, None, (1, 1), padding, (1, 1), 1)
    got = B.conv(x, w, None, (1, 1), padding, (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_conv_workspace_reuse_does_not_leak_between_calls():
    """A result never aliases the reused workspace: later convs (other shapes, padding) leave it as is."""
    x1 = rng.standard_normal((2, 3, 10, 10)).astype(np.float32)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y1 = B.conv(x1, w1, None, (1, 1), (1, 1), (1, 1), 1)
    keep = y1.copy()
    for shape in [(3, 5, 12, 12), (1, 3, 10, 10), (4, 3, 7, 7)]:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((4, shape[1], 3, 3)).astype(np.float32)
        B.conv(x, w, None, (1, 1), (2, 2), (1, 1), 1)
    np.testing.assert_array_equal(y1, keep)
    x = rng.standard_normal((1, 3, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(
        B.conv(x, w1, None, (1, 1), (1, 1), (1, 1), 1),
        ref_conv(x, w1, None, (1, 1), (1, 1), (1, 1), 1),
        rtol=1e-4,
        atol=1e-4 * math.sqrt(27),
    )


# ------------------------------------------------------------------ conv_fused: the 2-d runs and epilogue
# Each case names the run ``_rows_run`` must pick for it (checked, so every formulation is exercised):
# "rows" (taps copied as rows of ho * wq, phases for strides), "shifts" (kw column shifts, kh GEMMs),
# "hwc" (channels-last windows, small planes), "im2col" (no run: the windows path above).
FUSED_CASES = [
    # (x shape, weight shape, stride, padding, dilation, run)
    ((2, 3, 20, 22), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), "rows"),  # C * kw < 48
    ((2, 16, 18, 17), (6, 16, 3, 3), (1, 1), (1, 1), (1, 1), "shifts"),
    ((2, 16, 18, 17), (6, 16, 3, 3), (1, 1), (2, 1), (2, 1), "shifts"),  # dilated, asymmetric pads
    ((1, 24, 20, 15), (4, 24, 2, 2), (1, 1), (0, 0), (1, 1), "shifts"),  # unpadded, even kernel
    ((2, 4, 40, 41), (5, 4, 3, 3), (2, 2), (1, 1), (1, 1), "rows"),  # 4 phases
    ((2, 4, 30, 33), (5, 4, 3, 2), (2, 3), (1, 2), (2, 1), "rows"),  # strided and dilated
    ((3, 8, 20, 20), (6, 8, 1, 1), (2, 2), (0, 0), (1, 1), "rows"),  # 1x1 strided: GEMM into y
    ((2, 8, 9, 11), (6, 8, 3, 3), (1, 1), (1, 1), (1, 1), "hwc"),
    ((2, 8, 12, 13), (6, 8, 3, 2), (2, 1), (1, 0), (1, 2), "hwc"),
    ((2, 4, 30, 30), (5, 4, 5, 5), (1, 1), (2, 2), (1, 1), "im2col"),  # junk columns: 34 / 30
]


def _run_kind(x, w, stride, padding, dilation, pool=None, bias=True):
    run = _conv_runs._rows_run(np, x, w.shape, stride, padding, dilation, pool, bias)
    if run is None:
        return "im2col"
    if isinstance(run, _conv_runs._HwcRun):
        return "hwc"
    return "shifts" if run.shifts else "rows"


def _max_pool_ref(y, pool):
    n, c, h, w = y.shape
    ho, wo = h // pool[0], w // pool[1]
    return y[:, :, : ho * pool[0], : wo * pool[1]].reshape(n, c, ho, pool[0], wo, pool[1]).max(axis=(3, 5))


def _fused_case(case, dtype, bias=True):
    xs, ws, stride, padding, dilation, kind = case
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if bias else None
    assert _run_kind(x, w, stride, padding, dilation, bias=bias) == kind
    return x, w, b, stride, padding, dilation


def _close(got, want, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert got.dtype == dtype and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("epilogue", ["none", "relu", "residual", "residual-relu"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("case", FUSED_CASES, ids=lambda c: f"{c[5]}-" + "x".join(map(str, c[0])))
def test_conv_fused_matches_tap_sum(case, bias, epilogue, dtype):
    """conv_fused = relu(conv + bias + residual) as asked, on every run; conv itself goes the same way."""
    x, w, b, stride, padding, dilation = _fused_case(case, dtype, bias)
    want = ref_conv(x, w, b, stride, padding, dilation, 1)
    _close(B.conv(x, w, b, stride, padding, dilation, 1), want, dtype)
    residual = rng.standard_normal(want.shape).astype(dtype) if "residual" in epilogue else None
    if residual is not None:
        want = want + residual
    relu = "relu" in epilogue
    if relu:
        want = np.maximum(want, 0)
    got = B.conv_fused(x, w, b, stride, padding, dilation, 1, residual=residual, relu=relu, weight_cache={})
    _close(got, want, dtype)


@pytest.mark.parametrize("pool", [(2, 2), (3, 2)])
@pytest.mark.parametrize("case", FUSED_CASES, ids=lambda c: f"{c[5]}-" + "x".join(map(str, c[0])))
def test_conv_fused_max_pool(case, pool):
    """conv + bias, ReLU, then a max pool of kernel = stride (floor mode) read from the GEMM's result
    (the rows run; im2col pools its output)."""
    x, w, b, stride, padding, dilation = _fused_case(case, np.float32)
    want = _max_pool_ref(np.maximum(ref_conv(x, w, b, stride, padding, dilation, 1), 0), pool)
    got = B.conv_fused(x, w, b, stride, padding, dilation, 1, relu=True, pool=pool)
    _close(got, want, np.float32)
    if case[5] != "im2col":
        assert _run_kind(x, w, stride, padding, dilation, pool=pool) in ("rows", "shifts")


@pytest.mark.parametrize("split", ["one-per-chunk", "two-then-one"])
@pytest.mark.parametrize("kind", ["rows", "shifts", "hwc"])
def test_conv_fused_chunks(monkeypatch, kind, split):
    """One image per GEMM chunk, and chunks of two with a last one of one, agree with the tap sum."""
    case = next(c for c in FUSED_CASES if c[5] == kind)
    x = rng.standard_normal((3,) + case[0][1:])
    w = rng.standard_normal(case[1])
    b = rng.standard_normal(case[1][0])
    want = [[1, 1, 1]] if split == "one-per-chunk" else [[2, 1]]
    for chunk in sorted({int(1.1**k) for k in range(200)}):  # a workspace size that cuts as wanted
        monkeypatch.setattr(_conv_runs, "_ROWS_CHUNK", chunk)
        run = _conv_runs._rows_run(np, x, w.shape, *case[2:5], None, True)
        if [size for _, size in run.chunks] in want:
            break
    else:
        pytest.fail(f"no workspace size gives chunks {want}")
    assert _run_kind(x, w, *case[2:5]) == kind
    got = B.conv_fused(x, w, b, *case[2:5], 1, relu=True)
    _close(got, np.maximum(ref_conv(x, w, b, *case[2:5], 1), 0), np.float64)


@pytest.mark.parametrize("kind", ["rows", "shifts", "hwc"])
def test_conv_fused_weight_cache_follows_the_weights(kind):
    """The re-laid-out weights are kept for the very same weight and bias arrays only."""
    case = next(c for c in FUSED_CASES if c[5] == kind)
    x, w, b, stride, padding, dilation = _fused_case(case, np.float32)
    cache: dict = {}
    for weight, bias in [(w, b), (w, b), (w * 2, b), (w, b + 1), (w, None)]:
        got = B.conv_fused(x, weight, bias, stride, padding, dilation, 1, weight_cache=cache)
        _close(got, ref_conv(x, weight, bias, stride, padding, dilation, 1), np.float32)


@pytest.mark.parametrize("kind", ["rows", "shifts", "hwc"])
def test_conv_fused_non_contiguous_input_and_fresh_results(kind):
    """A transposed input view; a result is never a view of the kept buffers: the next call on the
    same signature leaves it as it was."""
    case = next(c for c in FUSED_CASES if c[5] == kind)
    xs = case[0]
    x = rng.standard_normal((xs[0], xs[1], xs[3], xs[2])).astype(np.float32).transpose(0, 1, 3, 2)
    w = rng.standard_normal(case[1]).astype(np.float32)
    assert _run_kind(x, w, *case[2:5], bias=False) == kind
    y1 = B.conv_fused(x, w, None, *case[2:5], 1, relu=True)
    keep = y1.copy()
    _close(y1, np.maximum(ref_conv(x, w, None, *case[2:5], 1), 0), np.float32)
    B.conv_fused(rng.standard_normal(xs).astype(np.float32), w, None, *case[2:5], 1, relu=True)
    np.testing.assert_array_equal(y1, keep)


def test_conv_fused_empty_batch_and_bad_arguments():
    x = np.zeros((0, 16, 18, 17), np.float32)
    w = rng.standard_normal((6, 16, 3, 3)).astype(np.float32)
    assert B.conv_fused(x, w, None, (1, 1), (1, 1), (1, 1), 1, relu=True).shape == (0, 6, 18, 17)
    x = rng.standard_normal((1, 16, 18, 17)).astype(np.float32)
    with pytest.raises(ValueError, match="pool"):
        B.conv_fused(
            x, w, None, (1, 1), (1, 1), (1, 1), 1, residual=np.zeros((1, 6, 18, 17), np.float32), pool=(2, 2)
        )


# ------------------------------------------------------------------ the epilogues' ReLU
# ``_relu_into`` compares against a kept zero array instead of the scalar 0 (numpy's fast loop): it must
# give the very bits of np.maximum(x, 0) for every special value (NaN of either sign, -0.0, infinities,
# subnormals), dtype, layout and size (small ones and ones past the zeros' cap take the scalar), and
# the kept zeros must stay zero.

_SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 2.5, -3.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("layout", ["fresh", "in-place", "cropped"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 8, 32, 40)])  # below / above the zeros' threshold
def test_relu_into_matches_maximum_bitwise(dtype, layout, shape):
    size = math.prod(shape[:-1]) * (shape[-1] + 3)
    values = np.resize(np.array(_SPECIAL, dtype), size)
    values[len(_SPECIAL) :] = rng.standard_normal(size - len(_SPECIAL)).astype(dtype)
    wide = values.reshape(shape[:-1] + (shape[-1] + 3,))
    src = wide[..., : shape[-1]] if layout == "cropped" else np.ascontiguousarray(wide[..., : shape[-1]])
    want = np.maximum(src, 0)
    dst = src if layout == "in-place" else np.empty(shape, dtype)
    _conv_runs._relu_into(np, src, dst)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    np.testing.assert_array_equal(dst.view(bits), want.view(bits))
    assert np.isnan(dst.reshape(-1)[2:4]).all()  # NaN propagates, as np.maximum's
    zeros = getattr(_workspace._scratch_local, "zeros", None)
    assert zeros is None or not zeros.any()


def test_relu_into_past_the_zeros_cap(monkeypatch):
    """An output larger than ``_ZEROS_MAX_BYTES`` compares against the scalar (no zeros that large kept)."""
    monkeypatch.setattr(_conv_runs, "_ZEROS_MAX_BYTES", 1 << 12)
    monkeypatch.setattr(_workspace._scratch_local, "zeros", np.zeros(1 << 12, np.uint8), raising=False)
    kept = _workspace._scratch_local.zeros
    x = rng.standard_normal((4, 8, 16, 16)).astype(np.float32)
    y = np.empty_like(x)
    _conv_runs._relu_into(np, x, y)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert _workspace._scratch_local.zeros is kept  # not replaced by a larger one


# ------------------------------------------------------------------ conv_fused across threads
# With more than one BLAS thread a batch is split into slices run at once (``_conv_split``), each on its
# own thread; forced on here with the work threshold at one multiply-add and a fake BLAS count, they
# must give the one-thread result (the same GEMMs per image: 1e-6 relative) and the tap-sum reference.
# One image stays on the plain path (its GEMMs on BLAS's threads, 4 at most).


@pytest.fixture
def threads(monkeypatch):
    """Set the BLAS thread count the conv sees (the parallel paths taken whatever the work)."""
    monkeypatch.setattr(_threads, "_PARALLEL_MIN_MACS", 1)
    count = [1]
    local = _threads._parallel.local
    monkeypatch.setattr(
        _threads._parallel, "threads", lambda: 1 if getattr(local, "inside", False) else count[0]
    )

    regions = []
    real_map = _threads._parallel.map
    monkeypatch.setattr(
        _threads._parallel, "map", lambda tasks: (regions.append(len(tasks)), real_map(tasks))
    )

    def set_threads(n):
        count[0] = n
        return regions

    return set_threads


def _fused_call(x, w, b, case, residual, relu, pool, cache):
    return B.conv_fused(x, w, b, *case[2:5], 1, residual=residual, relu=relu, pool=pool, weight_cache=cache)


@pytest.mark.parametrize("batch", [1, 2, 5])  # 1: the plain path, 5: uneven slices
@pytest.mark.parametrize("epilogue", ["none", "relu", "residual-relu", "pool-relu"])
@pytest.mark.parametrize("case", FUSED_CASES[:-1], ids=lambda c: f"{c[5]}-" + "x".join(map(str, c[0])))
def test_conv_fused_threads_match_one_thread(threads, case, epilogue, batch):
    xs, ws = case[0], case[1]
    x = rng.standard_normal((batch,) + xs[1:]).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    pool = (2, 2) if "pool" in epilogue else None
    want = ref_conv(x, w, b, *case[2:5], 1)
    residual = rng.standard_normal(want.shape).astype(np.float32) if "residual" in epilogue else None
    if residual is not None:
        want = want + residual
    if "relu" in epilogue:
        want = np.maximum(want, 0)
    if pool is not None:
        want = _max_pool_ref(want, pool)
    threads(1)
    one = _fused_call(x, w, b, case, residual, "relu" in epilogue, pool, {})
    cache: dict = {}
    for count in (2, 3, 7):  # 7: more threads than bands or images
        regions = threads(count)
        got = _fused_call(x, w, b, case, residual, "relu" in epilogue, pool, cache)
        if batch == 1:
            assert not regions
        else:  # the parallel path ran, on no more threads than it may use
            assert regions and regions[-1] == min(count, batch)
        _close(got, want, np.float32)
        np.testing.assert_allclose(got, one, rtol=1e-6, atol=1e-6 * np.abs(one).max())


def test_conv_fused_threads_share_the_weight_cache_and_keep_workspaces_apart(threads):
    """Slices on several threads at once, one weight cache between them; each thread's runs and
    buffers are its own, and a later one-thread call on the same signature is unaffected."""
    threads(4)
    case = FUSED_CASES[1]  # shifts
    x = rng.standard_normal((8,) + case[0][1:]).astype(np.float32)
    w = rng.standard_normal(case[1]).astype(np.float32)
    b = rng.standard_normal(case[1][0]).astype(np.float32)
    cache: dict = {}
    ys = [_fused_call(x, w, b, case, None, True, None, cache) for _ in range(3)]
    want = np.maximum(ref_conv(x, w, b, *case[2:5], 1), 0)
    for y in ys:
        _close(y, want, np.float32)
    assert cache["rows"][0] is w and cache["rows"][1] is b
    threads(1)
    _close(_fused_call(x[:3], w, b, case, None, True, None, cache), want[:3], np.float32)


def test_parallel_map_restores_blas_and_raises_the_first_error(monkeypatch):
    """BLAS is held at one thread while a region runs and set back after, also when a task fails;
    a task sees one thread (no nested regions)."""

    class FakeBlas:
        def __init__(self):
            self.count = 3

        def get_num_threads(self):
            return self.count

        def set_num_threads(self, n):
            self.count = n

    par = _threads._Parallel()
    lib = FakeBlas()
    par.blas = [lib]
    assert par.threads() == 3
    seen = []

    def task(i):
        seen.append((i, lib.count, par.threads()))
        if i == 1:
            raise RuntimeError("task 1 failed")

    with pytest.raises(RuntimeError, match="task 1 failed"):
        par.map([lambda i=i: task(i) for i in range(3)])
    assert sorted(seen) == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]
    assert lib.count == 3 and par.open == 0 and par.threads() == 3
    par.map([lambda: None, lambda: None])
    assert lib.count == 3
    par.map([lambda: seen.append(lib.count)])  # one task: on this thread, BLAS still at one thread
    assert seen[-1] == 1 and lib.count == 3


def test_a_batch_splits_into_eight_slices_at_most():
    slices = _threads._batch_slices(32, 1 << 30, 16)
    assert len(slices) == _threads._PARALLEL_MAX_SLICES == 8
    assert slices[0] == (0, 4) and slices[-1] == (28, 32)
    assert len(_threads._batch_slices(3, 1 << 30, 16)) == 3


def test_one_image_holds_blas_at_four_threads_and_restores_it(monkeypatch):
    """A one-image conv on a 16-thread BLAS runs with BLAS at 4 threads, set back after (also the
    held region's bookkeeping when regions nest)."""

    class FakeBlas:
        def __init__(self):
            self.count = 16
            self.calls = []

        def get_num_threads(self):
            return self.count

        def set_num_threads(self, n):
            self.calls.append(n)
            self.count = n

    par = _threads._Parallel()
    lib = FakeBlas()
    par.blas = [lib]
    monkeypatch.setattr(_threads, "_parallel", par)
    case = FUSED_CASES[1]
    x = rng.standard_normal((1,) + case[0][1:]).astype(np.float32)
    w = rng.standard_normal(case[1]).astype(np.float32)
    b = rng.standard_normal(case[1][0]).astype(np.float32)
    for small, held in ((0, _threads._ONE_IMAGE_BLAS_THREADS), (1 << 40, 1)):  # a small GEMM: one thread
        monkeypatch.setattr(_threads, "_SMALL_GEMM_MACS", small)
        lib.calls.clear()
        got = _fused_call(x, w, b, case, None, True, None, {})
        _close(got, np.maximum(ref_conv(x, w, b, *case[2:5], 1), 0), np.float32)
        assert lib.calls == [held, 16] and par.open == 0
    # a 1x1 conv's stacked GEMM (one per image) below the size: BLAS at one thread, set back after
    lib.calls.clear()
    w1 = rng.standard_normal((5, x.shape[1], 1, 1)).astype(np.float32)
    got = burn.device("cpu").backend.conv_fused(x, w1, None, (1, 1), (0, 0), (1, 1), 1)
    _close(got, ref_conv(x, w1, None, (1, 1), (0, 0), (1, 1), 1), np.float32)
    if _native.toolchain().available:  # the compiled epilogue's path (im2col's otherwise)
        assert lib.calls == [1, 16] and par.open == 0
    with par.held(4), par.held(1):  # the first region sets the count, the last out restores it
        assert lib.count == 4
    assert lib.count == 16


def test_parallel_without_threadpoolctl_is_one_thread(monkeypatch):
    """No threadpoolctl (or no BLAS it can drive): one thread, the conv's plain path."""
    import builtins

    real_import = builtins.__import__

    def no_threadpoolctl(name, *args, **kwargs):
        if name == "threadpoolctl":
            raise ImportError("no threadpoolctl")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_threadpoolctl)
    par = _threads._Parallel()
    assert par.threads() == 1 and par.blas == []


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="os.fork: POSIX only")
def test_conv_split_after_fork(threads):
    """A forked child gets a fresh pool (the parent's threads are not in it) and still splits."""
    import os

    threads(2)
    case = FUSED_CASES[0]
    x = rng.standard_normal((4,) + case[0][1:]).astype(np.float32)
    w = rng.standard_normal(case[1]).astype(np.float32)
    want = ref_conv(x, w, None, *case[2:5], 1)
    _close(B.conv_fused(x, w, None, *case[2:5], 1), want, np.float32)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only when the split conv is right
        code = 1
        try:
            assert _threads._parallel.workers == 0  # a fresh pool
            _threads._parallel.threads = lambda: 2  # the child's own instance: split it
            got = B.conv_fused(x, w, None, *case[2:5], 1)
            code = 0 if np.allclose(got, want, rtol=1e-4, atol=1e-3) else 2
        finally:
            os._exit(code)
    import time

    deadline = time.monotonic() + 60  # the parent's dead pool would hang the child: kill it then
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the conv hung in the forked child")
    assert os.waitstatus_to_exitcode(done[1]) == 0
