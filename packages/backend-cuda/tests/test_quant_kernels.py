"""int8 x int8 -> int32 matmul on CUDA (``burn_cuda._quant``): the cuBLAS int8 GEMM and the ``__dp4a``
kernel, each exact against a numpy int64 reference (odd shapes, batches, broadcast batch dims, K not a
multiple of 4, int8 extremes, deep K), and the quantized layers on the GPU against the numpy backend.
Every test skips cleanly where CuPy or a GPU is missing."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.quantization import QuantScheme, quantize_module, quantized_conv2d, quantized_linear

pytestmark = pytest.mark.gpu

# (a shape, w shape): cuBLAS-eligible (K, N multiples of 4) and not
SHAPES = {
    "square": ((64, 256), (256, 128)),
    "odd_m": ((37, 64), (64, 32)),
    "odd_k": ((16, 37), (37, 8)),
    "odd_n": ((16, 64), (64, 9)),
    "all_odd": ((5, 131), (131, 7)),
    "vector": ((1, 4096), (4096, 1)),
    "deep": ((8, 20000), (20000, 12)),
    "batched": ((3, 33, 64), (3, 64, 20)),
    "broadcast_w": ((2, 3, 17, 40), (40, 24)),
    "broadcast_both": ((4, 1, 6, 36), (3, 36, 5)),
    "tall": ((1000, 8), (8, 1000)),
}


def _reference(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.int64), w.astype(np.int64))


def _data(shape: tuple[int, ...], seed: int, extremes: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if extremes:
        return rng.choice(np.array([-128, 127, -128, 127, 0, -1], dtype=np.int8), shape)
    return rng.integers(-128, 128, shape).astype(np.int8)


def _run(cuda, a: np.ndarray, w: np.ndarray, path: str | None) -> np.ndarray:
    from burn_cuda import _quant

    b = cuda.backend
    b = getattr(b, "inner", b)  # the CudaBackend under any decorator
    cp = b._on()
    out = _quant.quantized_matmul(cp, cp.asarray(a), cp.asarray(w), path)
    assert out.dtype == np.int64 and out.shape == np.broadcast_shapes(a.shape[:-2], w.shape[:-2]) + (
        a.shape[-2],
        w.shape[-1],
    )
    return out.get()


@pytest.mark.parametrize("case", list(SHAPES))
@pytest.mark.parametrize("extremes", [False, True], ids=["random", "extremes"])
def test_dp4a_kernel_is_exact(cuda, case, extremes):
    sa, sw = SHAPES[case]
    a, w = _data(sa, 1, extremes), _data(sw, 2, extremes)
    np.testing.assert_array_equal(_run(cuda, a, w, "dp4a"), _reference(a, w))


@pytest.mark.parametrize("case", [c for c, (sa, sw) in SHAPES.items() if sa[-1] % 4 == 0 and sw[-1] % 4 == 0])
@pytest.mark.parametrize("extremes", [False, True], ids=["random", "extremes"])
def test_cublas_int8_gemm_is_exact(cuda, case, extremes):
    """Exact where cuBLAS takes the shape. The H200's cuBLAS refuses some shapes that fit the
    documented rules (M = 37, K = 8: NOT_SUPPORTED in both layouts): those must fall back to the dp4a
    kernel on the automatic path, exactly, without turning cuBLAS off for the shapes it takes."""
    from burn_cuda import _quant
    from cupy_backends.cuda.libs.cublas import CUBLASError

    sa, sw = SHAPES[case]
    a, w = _data(sa, 3, extremes), _data(sw, 4, extremes)
    b = getattr(cuda.backend, "inner", cuda.backend)
    try:
        got = _run(cuda, a, w, "cublas")
    except CUBLASError as exc:
        assert "NOT_SUPPORTED" in str(exc) and case in ("odd_m", "tall"), (case, exc)
        got = _run(cuda, a, w, None)
        np.testing.assert_array_equal(got, _reference(a, w))
        sq_a, sq_w = _data((64, 256), 5, extremes), _data((256, 128), 6, extremes)
        np.testing.assert_array_equal(_run(cuda, sq_a, sq_w, None), _reference(sq_a, sq_w))
        assert _quant.last_layout(b._on()) in ("nn", "tn")  # cuBLAS still serves the shapes it takes
        return
    np.testing.assert_array_equal(got, _reference(a, w))
    # the int8 tensor-core path really ran (a layout cuBLAS accepted is remembered)
    assert _quant.last_layout(b._on()) in ("nn", "tn")


def test_cublas_refuses_unaligned_shapes_clearly(cuda):
    a, w = _data((4, 37), 5), _data((37, 8), 6)
    with pytest.raises(ValueError, match="K and N multiples of 4, got K=37"):
        _run(cuda, a, w, "cublas")


@pytest.mark.parametrize("case", list(SHAPES))
def test_backend_quantized_matmul_picks_an_exact_path(cuda, case):
    sa, sw = SHAPES[case]
    a, w = _data(sa, 7), _data(sw, 8)
    ta, tw = burn.tensor(a, dtype=burn.int8, device=cuda), burn.tensor(w, dtype=burn.int8, device=cuda)
    got = burn.backend.from_primitive(cuda.backend.quantized_matmul(ta.primitive, tw.primitive), cuda.backend)
    assert got.dtype is burn.int64
    np.testing.assert_array_equal(got.numpy(), _reference(a, w))


def test_transposed_and_sliced_operands(cuda):
    a, w = _data((40, 64), 9), _data((48, 64), 10)
    ta, tw = burn.tensor(a, dtype=burn.int8, device=cuda), burn.tensor(w, dtype=burn.int8, device=cuda)
    got = cuda.backend.quantized_matmul(ta[:, 3:59].primitive, tw.transpose(0, 1)[3:59].primitive)
    ref = _reference(a[:, 3:59], w.T[3:59])
    np.testing.assert_array_equal(burn.backend.from_primitive(got, cuda.backend).numpy(), ref)


def test_contraction_too_deep_for_int32_is_an_error(cuda):
    from burn_cuda import _quant

    b = getattr(cuda.backend, "inner", cuda.backend)
    cp = b._on()
    with pytest.raises(ValueError, match="may overflow int32"):
        _quant.quantized_matmul(
            cp, cp.zeros((1, _quant.MAX_K + 1), cp.int8), cp.zeros((_quant.MAX_K + 1, 1), cp.int8)
        )


@pytest.mark.parametrize("mode", ["symmetric", "affine"])
def test_quantize_dequantize_and_layers_match_numpy_backend(cuda, cpu, mode):
    """quantize/dequantize give the numpy backend's int values; the int8 linear and conv2d agree with
    the numpy backend's (the same integer products, so to float32 rounding)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    w = rng.standard_normal((512, 256)).astype(np.float32)
    scheme = QuantScheme(mode=mode, granularity="per_channel", axis=1)
    qg, qc = (
        burn.tensor(w, device=cuda).quantize_dynamic(scheme),
        burn.tensor(w, device=cpu).quantize_dynamic(scheme),
    )
    np.testing.assert_array_equal(qg.int_repr().numpy(), qc.int_repr().numpy())
    np.testing.assert_allclose(qg.dequantize().numpy(), qc.dequantize().numpy(), rtol=1e-6)
    yg = quantized_linear(burn.tensor(x, device=cuda), qg).numpy()
    yc = quantized_linear(burn.tensor(x, device=cpu), qc).numpy()
    np.testing.assert_allclose(yg, yc, rtol=1e-5, atol=1e-5 * np.abs(yc).max())
    xi = rng.standard_normal((2, 6, 15, 13)).astype(np.float32)
    wc = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    cs = QuantScheme(mode=mode, granularity="per_channel", axis=0)
    cg = burn.tensor(wc, device=cuda).quantize_dynamic(cs)
    cc = burn.tensor(wc, device=cpu).quantize_dynamic(cs)
    zg = quantized_conv2d(burn.tensor(xi, device=cuda), cg, None, 2, 1, 1, 2).numpy()
    zc = quantized_conv2d(burn.tensor(xi, device=cpu), cc, None, 2, 1, 1, 2).numpy()
    np.testing.assert_allclose(zg, zc, rtol=1e-5, atol=1e-5 * np.abs(zc).max())


class _Net(burn.nn.Module):
    def __init__(self, device) -> None:
        self.conv = burn.nn.Conv2dConfig((1, 8), 3, padding=1).init(device)
        self.fc = burn.nn.LinearConfig(8 * 8 * 8, 10).init(device)

    def forward(self, x):
        return self.fc(burn.nn.functional.relu(self.conv(x)).flatten(1))


def test_quantized_model_on_gpu(cuda, cpu):
    burn.seed(0)
    q = quantize_module(_Net(cpu), QuantScheme(granularity="per_channel"))
    x = np.random.default_rng(12).standard_normal((4, 1, 8, 8)).astype(np.float32)
    yc = q(burn.tensor(x, device=cpu)).numpy()
    yg = q.to(cuda)(burn.tensor(x, device=cuda)).numpy()
    np.testing.assert_allclose(yg, yc, rtol=1e-5, atol=1e-5 * np.abs(yc).max())
