"""bfloat16 tensors on CUDA (CuPy >= 14 with ml_dtypes): the kernels' bfloat16 source (checked here
without a GPU), and on the GPU: matmul on tensor cores, element-wise (unfused and fused), reductions,
casts and a mixed-precision training step, each against float32 numpy on the same bfloat16 inputs.

Tolerances: bfloat16 keeps 8 significant bits (unit roundoff 2**-8 ~ 3.9e-3). Ops that compute in
float32 and round once are compared element-wise within one bfloat16 step (rtol 2**-7) of float32
numpy rounded the same way; K = 512 products with float32 accumulation within a relative Frobenius
error of 1e-2 of float64 numpy on the same inputs (the result's rounding alone is ~2e-3).
"""

from __future__ import annotations

import types

import burn
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(7)


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def _bf16(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(BF16)


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float32)


# ---------------------------------------------------------------- without a GPU: sources and probe
def test_kernel_sources_read_and_write_bfloat16_bits():
    from burn_cuda import _dtypes, _kernels

    _dtypes.add_bfloat16(BF16)
    ins, outs, body = _kernels.kernel_source("binary", "add", BF16)
    assert (ins, outs) == ("uint16 x, uint16 z", "uint16 y")
    assert body.startswith("typedef float C; const C a = burn_bf16_to_f(x);")
    assert body.endswith("y = burn_f_to_bf16(a + b);")
    _, outs, body = _kernels.kernel_source("binary", "lt", BF16)
    assert outs == "bool y" and body.endswith("y = (bool)(a < b);")
    # float32 kernels are unchanged by the bfloat16 helpers
    assert _kernels.kernel_source("unary", "exp", np.dtype("float32")) == (
        "float32 x",
        "float32 y",
        "typedef float C; const C a = (C)x; y = (float)(exp(a));",
    )


def test_fused_source_rounds_each_bfloat16_op_and_stores_bits():
    from burn.fusion._plan import FusedKernel, FusedOp
    from burn_cuda import _dtypes, _fusion

    _dtypes.add_bfloat16(BF16)
    bf, f32 = burn.bfloat16, burn.float32
    ops = (
        FusedOp("binary", "mul", bf, bf, (0, 2)),
        FusedOp("unary", "relu", bf, bf, (3,)),
        FusedOp("cast", "float32", bf, f32, (4,)),
    )
    plan = FusedKernel((8,), (bf, bf), (bf,), ops, (4, 5))
    ins, outs, body = _fusion.source(plan)
    assert ins == "uint16 l0, uint16 l1, float32 s0" and outs == "uint16 o0, float32 o1"
    assert "const float v2 = burn_bf16_round(s0);" in body  # the scalar as the unfused op sees it
    assert "v3 = (float)(burn_bf16_round(a * b));" in body  # rounded like the unfused op's store
    assert "o0 = burn_f_to_bf16(v4);" in body and "o1 = (float)v5;" in body
    dense = _fusion.dense_source(plan, "k")
    assert "burn_bf16_to_f(l0[i])" in dense and "o0[i] = burn_f_to_bf16(v4);" in dense
    assert "const unsigned short* __restrict__ l0" in dense and "const float s0" in dense


def test_old_cupy_is_a_clear_reason(monkeypatch):
    from burn_cuda import _bf16

    monkeypatch.setattr(_bf16, "_state", {})
    fake = types.SimpleNamespace(__version__="13.3.0")
    bf16, why = _bf16.probe(fake)
    assert bf16 is None and why == "bfloat16 needs CuPy >= 14 (CuPy 13.3.0 is installed) with ml_dtypes"


def test_bit_conversions_match_ml_dtypes_rounding():
    """The kernels' float -> bfloat16 rounding, written in numpy integer ops the way the CUDA C does it,
    agrees with ml_dtypes (round to nearest even, NaN stays NaN) on edge cases and random floats."""
    specials = np.array(
        [0.0, -0.0, 1.0, 1 + 2**-8, 1 + 3 * 2**-8, 3.4e38, np.inf, -np.inf, np.nan, 1e-40, -1e-40],
        np.float32,
    )
    x = np.concatenate([specials, RNG.standard_normal(10000).astype(np.float32) * 1e3])
    u = x.view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    bits = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    want = x.astype(BF16).view(np.uint16)
    np.testing.assert_array_equal(bits[~nan], want[~nan])
    assert np.isnan(bits[nan].view(BF16).astype(np.float32)).all()


# ---------------------------------------------------------------- on the GPU
@pytest.fixture(scope="module")
def bf_cuda(cuda):
    if burn.bfloat16 not in cuda.backend.dtypes:
        pytest.skip(f"no bfloat16 here: {cuda.backend.dtype_notes.get(burn.bfloat16)}")
    return cuda


CASES = {
    "2d": ((96, 512), (512, 80), lambda a, b: a @ b),
    "batched": ((3, 64, 512), (3, 512, 48), lambda a, b: a @ b),
    "broadcast": ((2, 3, 64, 512), (512, 48), lambda a, b: a @ b),
    "lhs_transposed": ((512, 96), (512, 80), lambda a, b: a.transpose(0, 1) @ b),
    "batch_needs_copy": ((3, 64, 1024), (3, 512, 40), lambda a, b: a[:, :, ::2] @ b),
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_matmul_on_tensor_cores_against_float64(case, bf_cuda):
    sa, sb, fn = CASES[case]
    a, b = _bf16(*sa), _bf16(*sb)
    got = fn(burn.from_numpy(a, device=bf_cuda), burn.from_numpy(b, device=bf_cuda))
    ref = fn(burn.from_numpy(a.astype(np.float64)), burn.from_numpy(b.astype(np.float64))).numpy()
    assert got.dtype is burn.bfloat16 and got.shape == ref.shape
    assert got.numpy().dtype == BF16
    assert _rel_err(_f32(got.numpy()), ref) < 1e-2


@pytest.mark.gpu
def test_round_trip_casts_and_creation(bf_cuda):
    a = _bf16(5, 7)
    x = burn.from_numpy(a, device=bf_cuda)
    np.testing.assert_array_equal(x.numpy().view(np.uint16), a.view(np.uint16))
    for dt in (burn.float16, burn.float32, burn.float64, burn.int32, burn.int64, burn.bool):
        np.testing.assert_array_equal(x.cast(dt).numpy(), x.cast(dt).to("cpu").numpy())
        ref = burn.from_numpy(a).cast(dt).numpy()
        np.testing.assert_array_equal(x.cast(dt).numpy(), ref)
        back = x.cast(dt).cast(burn.bfloat16).numpy()
        np.testing.assert_array_equal(back, burn.from_numpy(a).cast(dt).cast(burn.bfloat16).numpy())
    f = burn.full((3,), 1 + 2**-8 + 2**-12, dtype=burn.bfloat16, device=bf_cuda)
    assert f.tolist() == [1 + 2**-7] * 3
    assert burn.arange(0, 5, 1, dtype=burn.bfloat16, device=bf_cuda).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.gpu
@pytest.mark.parametrize("fusion", [False, True], ids=["unfused", "fused"])
def test_elementwise_chain_matches_float32_rounded_per_op(fusion, bf_cuda):
    dev = burn.device("cuda:0", fusion=fusion)
    a, b = _bf16(64, 33), _bf16(64, 33)
    x, y = burn.from_numpy(a, device=dev), burn.from_numpy(b, device=dev)
    out = ((x * y + 0.5).relu() - y.exp() * 0.25).sigmoid()
    mask = x > y
    assert out.dtype is burn.bfloat16 and mask.dtype is burn.bool
    # the numpy backend's bfloat16: float32 per op, rounded per op
    cx, cy = burn.from_numpy(a), burn.from_numpy(b)
    ref = ((cx * cy + 0.5).relu() - cy.exp() * 0.25).sigmoid().numpy()
    np.testing.assert_allclose(_f32(out.numpy()), _f32(ref), rtol=2**-7, atol=1e-6)
    np.testing.assert_array_equal(mask.numpy(), (cx > cy).numpy())
    w = burn.where(mask, x, 0.0).numpy()
    np.testing.assert_array_equal(w.view(np.uint16), np.where(a > b, a, BF16.type(0)).view(np.uint16))


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmax", "cumsum", "softmax", "var", "sort"])
def test_reductions_in_float32_rounded_once(op, bf_cuda):
    a = _bf16(16, 1000)
    x = burn.from_numpy(a, device=bf_cuda)
    c = burn.from_numpy(a)  # numpy backend, bfloat16: float32 then one rounding
    fn = {
        "sum": lambda t: t.sum(1),
        "mean": lambda t: t.mean(1),
        "max": lambda t: t.max(1),
        "argmax": lambda t: t.argmax(1),
        "cumsum": lambda t: t.cumsum(1),
        "softmax": lambda t: burn.nn.functional.softmax(t, 1),
        "var": lambda t: t.var(1),
        "sort": lambda t: t.sort(1),
    }[op]
    got, ref = fn(x), fn(c)
    assert got.dtype is ref.dtype
    if got.dtype is burn.bfloat16:
        np.testing.assert_allclose(_f32(got.numpy()), _f32(ref.numpy()), rtol=2**-7, atol=1e-5)
    else:
        np.testing.assert_array_equal(got.numpy(), ref.numpy())


@pytest.mark.gpu
def test_autocast_training_step_matches_the_cpu(bf_cuda):
    """One step of a conv + relu + linear model under autocast("bfloat16") on CUDA: float32 gradients
    of the float32 weights, within 1e-2 (relative norm) of the same bfloat16 step on the numpy
    backend, and within 6e-2 of the float32 step (PyTorch's CPU bfloat16 autocast on these same
    weights and data: 3.0e-2 for the conv weight, 4.1e-2 for its bias: relu masks flip)."""
    from burn import nn
    from burn.nn import functional as F

    xs = np.random.default_rng(3).standard_normal((6, 1, 8, 8)).astype(np.float32)

    def grads(dev, half):
        burn.seed(0)  # the same weights on both devices: drawn on the host, then moved
        conv = nn.Conv2dConfig((1, 4), 3, padding=1).init(burn.device("cpu", autodiff=True)).to(dev)
        fc = nn.LinearConfig(4 * 8 * 8, 5).init(burn.device("cpu", autodiff=True)).to(dev)
        x = burn.from_numpy(xs, device=dev)
        y = burn.tensor([0, 1, 2, 3, 4, 0], device=dev)
        with burn.amp.autocast("bfloat16", enabled=half):
            loss = F.cross_entropy(fc(conv(x).relu().reshape((6, -1))), y)
        g = loss.backward()
        return float(loss), [p.val().grad(g) for p in (conv.weight, conv.bias, fc.weight)]

    cpu = burn.device("cpu", autodiff=True)
    loss32, g32 = grads(cpu, False)
    loss_cpu, g_cpu = grads(cpu, True)
    loss_gpu, g_gpu = grads(burn.device("cuda:0", autodiff=True), True)
    assert abs(loss_gpu - loss32) < 1e-2 * abs(loss32)
    for got, same, ref in zip(g_gpu, g_cpu, g32):
        assert got.dtype is burn.float32
        assert _rel_err(got.numpy(), same.numpy()) < 1e-2
        assert _rel_err(got.numpy(), ref.numpy()) < 6e-2
