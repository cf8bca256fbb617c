"""Reduce kernels on burn-cuda (``_fusion.reduce_source``): an element-wise chain feeding a float
sum/mean/max/min over trailing dims runs inside one RawKernel; results equal the unfused kernels and
numpy within float tolerance (the summation order differs), fewer kernels launch (``burn.profile``),
NaN propagates through max/min, strided and broadcast inputs are read by their strides, and a chain
with half-precision values falls back to its element-wise kernel and the backend's reduction."""

from __future__ import annotations

import burn
import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def devs(cuda, monkeypatch):
    """(fused device, unfused device); ``CudaFusion._reduce`` counts its calls in ``REDUCES``."""
    from burn_cuda._fusion import CudaFusion

    real = CudaFusion._reduce

    def counted(self, plan, inputs, scalars):
        REDUCES.append(plan.reduce)
        return real(self, plan, inputs, scalars)

    monkeypatch.setattr(CudaFusion, "_reduce", counted)
    REDUCES.clear()
    return burn.device("cuda:0"), burn.device("cuda:0", fusion=False)


REDUCES: list = []


def _both(devs, fn, *arrays):
    """(fused result, unfused result, fused profile, unfused profile): the ops and the read profiled,
    the uploads before."""
    out = []
    for d in devs:
        tensors = [burn.tensor(a, device=d) for a in arrays]
        with burn.profile(d) as p:
            out.append(fn(*tensors).numpy())
        out.append(p)
    fused, p_on, plain, p_off = out
    return fused, plain, p_on, p_off


def _reduce(op, x, dims, keepdim):
    return getattr(x, op)(dims, keepdim=keepdim) if dims is not None else getattr(x, op)()


SHAPES = {"odd": (5, 7), "one_row": (1, 3), "long_rows": (300, 1000), "3d": (2, 3, 65)}


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dims", ["last", "all"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_reductions_equal_the_unfused_ones_and_numpy(devs, op, shape, dims, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(SHAPES[shape]).astype(dtype)
    row = rng.standard_normal(SHAPES[shape][-1:]).astype(dtype)
    keep = dims == "last"
    axis = -1 if dims == "last" else None

    def fn(t, r):  # a broadcast input, scalars, a comparison cast back to the float dtype
        chain = ((t - r) * 0.5).exp() + (t > 0).cast(t.dtype)
        return _reduce(op, chain, axis, keep)

    fused, plain, p_on, p_off = _both(devs, fn, x, row)
    want = getattr(np, op)(np.exp((x - row) * 0.5) + (x > 0), axis=axis, keepdims=keep)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fused, plain, rtol=tol, atol=tol)
    np.testing.assert_allclose(fused, want, rtol=tol, atol=tol)
    assert fused.dtype == dtype and fused.shape == want.shape
    if dims == "last" or x.size <= 16384:  # a few long rows go to CuPy's multi-block reductions
        assert len(REDUCES) == 1 and REDUCES[0].op == op
        assert p_on.kernels < p_off.kernels and p_on.fused == 1
    else:
        assert not REDUCES


def test_a_strided_input_and_nan_propagate_like_the_unfused_reduction(devs):
    x = np.random.default_rng(4).standard_normal((6, 300)).astype(np.float32)
    x[2, 18] = np.nan  # an even column: the view keeps it
    x[4, 7] = np.nan  # an odd column: the view drops it

    for op in ("max", "min"):

        def fn(t, op=op):  # a strided view of every other column, NaN in row 2 only
            return getattr(t.permute(1, 0)[::2].permute(1, 0) * 2.0, op)(-1)

        fused, plain, p_on, p_off = _both(devs, fn, x)
        np.testing.assert_array_equal(fused, plain)
        assert np.isnan(fused[2]) and not np.isnan(fused[4])
        assert p_on.kernels < p_off.kernels and REDUCES[-1].op == op


def test_layer_norm_statistics_in_two_reduce_kernels(devs):
    """LayerNorm's mean and variance: the variance's chain reads the mean through a broadcast."""
    x = np.random.default_rng(5).standard_normal((64, 96)).astype(np.float32)

    def fn(t):
        m = t.mean(-1, keepdim=True)
        return ((t - m).square().mean(-1, keepdim=True) + 1e-5).sqrt()

    fused, plain, _p_on, _p_off = _both(devs, fn, x)
    assert [r.op for r in REDUCES] == ["mean", "mean"]
    want = np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-6)


def test_a_half_precision_chain_falls_back_to_the_element_wise_kernel_and_reduction(devs):
    x = np.random.default_rng(6).standard_normal((8, 40)).astype(np.float16)

    def fn(t):
        return (t * 2.0).cast(burn.float32).exp().sum(-1)

    fused, plain, _p_on, _p_off = _both(devs, fn, x)
    assert [r.op for r in REDUCES] == ["sum"]  # planned as a reduce kernel, run as the fallback
    want = np.exp((x * np.float16(2.0)).astype(np.float32)).sum(-1)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)
