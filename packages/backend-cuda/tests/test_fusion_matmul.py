"""Matmul epilogues on burn-cuda (``_epilogue``): a float32 matmul whose product only element-wise ops
read runs them in its store. Every candidate of the tuned family (cuBLAS then the element-wise kernel,
and each tile of the generated GEMM) is checked against numpy and the unfused kernels, for odd and
tile-sized shapes, transposed operands read in place, broadcast inputs, several outputs and a product
a tensor keeps; one launch replaces three; training with epilogues equals training without fusion;
the tuner picks, caches and checks the candidates; other precisions keep cuBLAS."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.nn import functional as F
from burn.testing._training import small_training

pytestmark = pytest.mark.gpu

CANDIDATES = ["cublas", "t16x16k16r1x1", "t32x32k16r2x2", "t64x64k8r4x4", "t128x64k8r8x4", "t128x128k8r8x8"]


@pytest.fixture
def forced(cuda, monkeypatch):
    """``forced(name)``: epilogues run candidate ``name`` untuned; returns the list of plans run. Each
    test plans its streams anew (a replayed one would run again when captured as a graph)."""
    from burn_cuda import _epilogue

    fb = burn.device("cuda:0").backend
    for name in ("_programs", "_lengths"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    runs: list = []

    def force(name):
        def run(b, plan, a, w, rest, scalars, donors=()):
            runs.append(plan)
            if name == "cublas":
                return list(_epilogue.run_cublas(b, plan, a, w, rest, scalars, donors))
            return list(_epilogue.run_tiled(b, name, plan, a, w, rest, scalars, donors))

        monkeypatch.setattr(_epilogue, "run", run)
        return runs

    return force


def _pair(fn, arrays):
    """(fused result, unfused result, fused profile, unfused profile) on cuda:0."""
    out = []
    for d in (burn.device("cuda:0"), burn.device("cuda:0", fusion=False)):
        tensors = [burn.tensor(a, device=d) for a in arrays]
        with burn.profile(d) as p:
            out.append(fn(*tensors).numpy())
        out.append(p)
    return out[0], out[2], out[1], out[3]


SHAPES = {"odd": (5, 7, 3), "mlp": (64, 784, 256), "ragged": (131, 129, 65), "tall": (300, 16, 520)}


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_linear_relu_in_the_matmul_store_equals_numpy(forced, name, shape, layout):
    runs = forced(name)
    m, k, n = SHAPES[shape]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k) if layout[0] == "n" else (k, m)).astype(np.float32)
    w = (rng.standard_normal((k, n) if layout[1] == "n" else (n, k)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)

    def fn(x, w, b):  # a transposed operand is a view, read in place by its strides
        x = x if layout[0] == "n" else x.transpose()
        w = w if layout[1] == "n" else w.transpose()
        return F.relu(x @ w + b)

    fused, plain, p_on, p_off = _pair(fn, (x, w, bias))
    xm = x if layout[0] == "n" else x.T
    wm = w if layout[1] == "n" else w.T
    want = np.maximum(xm.astype(np.float64) @ wm + bias, 0)
    np.testing.assert_allclose(fused, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fused, plain, rtol=1e-4, atol=1e-4)
    assert len(runs) == 1 and runs[0].matmul and p_on.fused == 1
    # burn-cuda counts every op issued, the read too: unfused, the matmul, the add and the relu; the
    # generated GEMM is one launch (no product or sum through memory), cuBLAS's path two
    assert p_on.kernels == p_off.kernels - (1 if name == "cublas" else 2)


@pytest.mark.parametrize("name", CANDIDATES)
def test_an_epilogue_writes_several_outputs_and_keeps_a_held_product(forced, name):
    forced(name)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((70, 50)).astype(np.float32)
    w = rng.standard_normal((50, 90)).astype(np.float32)
    col = rng.standard_normal((70, 1)).astype(np.float32)
    held = {}

    def fn(x, w, c):
        prod = x @ w
        held["prod"] = prod  # a tensor holds the product: it is written too
        pre = prod * 0.5 + c  # a column broadcast and a scalar
        held["pre"] = pre
        return F.gelu(pre) + (pre > 0).float()

    fused, plain, p_on, p_off = _pair(fn, (x, w, col))
    np.testing.assert_allclose(fused, plain, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(held["prod"].numpy(), x @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(held["pre"].numpy(), (x @ w) * 0.5 + col, rtol=1e-4, atol=1e-3)
    # the generated GEMM writes the product, the pre-activation and the result in its one launch;
    # with the read: 2 ops (cuBLAS's path: 3)
    assert p_on.kernels == (3 if name == "cublas" else 2) < p_off.kernels


def test_training_with_epilogues_equals_training_without_fusion(forced):
    runs = forced("t32x32k16r2x2")

    plain, _ = small_training(burn.device("cuda:0", fusion=False, autodiff=True), layer_norm=False)
    got, _ = small_training(burn.device("cuda:0", autodiff=True), layer_norm=False)
    np.testing.assert_allclose(got, plain, rtol=1e-4, atol=1e-5)
    assert plain[-1] < plain[0]
    assert runs, "no matmul epilogue ran"


def test_the_tuner_picks_a_checked_candidate_and_caches_it(cuda, monkeypatch, tmp_path):
    from burn_cuda import _epilogue

    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    backend = burn.device("cuda:0", fusion=False).backend
    monkeypatch.setattr(backend, "_autotuner", None, raising=False)  # a tuner on the new cache dir
    from burn_cuda._tuning import tuner

    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    b = rng.standard_normal(200).astype(np.float32)
    d = burn.device("cuda:0")
    got = F.relu(burn.tensor(x, device=d) @ burn.tensor(w, device=d) + burn.tensor(b, device=d)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-4)
    entries = tuner(backend).cache.entries()
    tuned = {k: v for k, v in entries.items() if k.startswith(_epilogue.EPILOGUE.name + "|")}
    assert len(tuned) == 1
    (entry,) = tuned.values()
    assert entry["best"] in _epilogue.EPILOGUE.by_name and not entry["dropped"]
    assert set(entry["seconds"]) == set(CANDIDATES)


def test_other_precisions_keep_the_cublas_product(forced):
    import burn_cuda

    runs = forced("t32x32k16r2x2")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    w = rng.standard_normal((96, 32)).astype(np.float32)
    d = burn.device("cuda:0")
    with burn_cuda.matmul_precision("tf32"):
        got = F.relu(burn.tensor(x, device=d) @ burn.tensor(w, device=d)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w, 0), rtol=1e-2, atol=1e-2)
    assert not runs


def test_generated_source_reads_each_operand_by_its_strides():
    """The renderer (no GPU needed): the product is the accumulator, inputs are read at their offsets
    and outputs stored at the element's place."""
    from burn.fusion import FusedKernel, FusedOp
    from burn_cuda._epilogue import TILES, gemm_source

    f32 = burn.float32
    ops = (FusedOp("binary", "add", f32, f32, (0, 1)), FusedOp("unary", "relu", f32, f32, (2,)))
    plan = FusedKernel((4, 5), (f32, f32), (), ops, (3,), matmul=True)
    src = gemm_source(plan, "k", TILES["t32x32k16r2x2"], True, False)
    assert "const float v0 = (float)p;" in src
    assert "l1[off1]" in src and "o0[at] = " in src
    assert "const long long off1 = row * st1_0 + col * st1_1;" in src
    assert "As[kk][r] = (gr < M && gk < K) ? A[gr * sam + gk * sak] : 0.0f;" in src


@pytest.mark.parametrize("name", CANDIDATES)
def test_an_epilogue_writes_into_a_dead_input_of_its_shape(cuda, name):
    """``run_tiled`` / ``run_cublas`` with a donor: the output is the donated array, the values are
    numpy's (the donor, read at each element before it is written, is the mask of a ReLU backward)."""
    from burn.fusion import FusedKernel, FusedOp
    from burn_cuda import _epilogue

    backend = burn.device("cuda:0", fusion=False).backend
    f32 = burn.float32
    rng = np.random.default_rng(8)
    g = rng.standard_normal((70, 40)).astype(np.float32)
    w = rng.standard_normal((40, 90)).astype(np.float32)
    mask = (rng.random((70, 90)) > 0.5).astype(np.float32)
    ops = (FusedOp("binary", "mul", f32, f32, (0, 1)),)  # product * mask
    plan = FusedKernel((70, 90), (f32, f32), (), ops, (2,), matmul=True)
    a, b, m = (backend.from_numpy(v, f32) for v in (g, w, mask))
    if name == "cublas":
        (out,) = _epilogue.run_cublas(backend, plan, a, b, [m], [], (0,))
    else:
        (out,) = _epilogue.run_tiled(backend, name, plan, a, b, [m], [], (0,))
    if name != "cublas":  # cuBLAS's path writes into the dead product instead, the first donor
        assert out is m
    np.testing.assert_allclose(backend.to_numpy(out), (g @ w) * mask, rtol=1e-4, atol=1e-4)
