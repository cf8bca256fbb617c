"""burn-cuda's fused attention (``_attention``'s kernels, and cuDNN's flash attention for 16-bit floats
where the ``cudnn`` extra is installed) against the numpy backend's composed default on the same inputs:
float32 out and lse to 1e-5, gradients to 1e-4 relative / 1e-5 absolute (summation order differs);
float16 / bfloat16 against the numpy backend's float32 result on the same rounded inputs to 2e-2 /
4e-2. Several query and key tiles (L = S = 300), every mask kind, strided views, head dims 1..128,
and SDPA under autodiff on the fused device. Skips where CUDA is unavailable."""

from __future__ import annotations

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn.testing import _attention_checks as A
from burn.testing._attention_checks import MASKS


@pytest.fixture(scope="module")
def raw(cuda):
    return burn.device("cuda:0", fusion=False)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _cpu():
    return burn.device("cpu").backend


def _no_cudnn(monkeypatch):
    """burn's own kernels only (cuDNN's SDPA declines every call)."""
    from burn_cuda import _cudnn_sdpa

    monkeypatch.setattr(_cudnn_sdpa, "forward", lambda *a, **k: None)
    monkeypatch.setattr(_cudnn_sdpa, "backward", lambda *a, **k: None)


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("lq,lk,e,ev", [(5, 7, 8, 6), (70, 9, 16, 4), (3, 67, 5, 12), (130, 129, 128, 128)])
def test_kernels_match_the_numpy_backend(raw, rng, kind, lq, lk, e, ev):
    arrays = A.inputs(rng, 2, 3, lq, lk, e, ev)
    mask = A.mask(kind, rng, 2, 3, lq, lk)
    got = A.run(raw.backend, arrays, mask, kind == "causal", 0.45)
    want = A.run(_cpu(), arrays, mask, kind == "causal", 0.45)
    A.compare(got, want, rtol=(1e-5, 2e-4), atol=(1e-5, 2e-5))
    if kind == "bool_broadcast":  # a row with no key: out 0, lse -inf, dq 0
        assert np.all(got[0][:, :, 2] == 0) and np.all(np.isneginf(got[1][:, :, 2]))
        assert np.all(got[2][:, :, 2] == 0)


@pytest.mark.parametrize("causal", [False, True])
def test_long_sequences(raw, rng, causal):
    """L = S = 300, E = 64: five query and key tiles, the last one partial."""
    arrays = A.inputs(rng, 2, 3, 300, 300, 64, 64)
    got = A.run(raw.backend, arrays, None, causal, 0.125)
    want = A.run(_cpu(), arrays, None, causal, 0.125)
    A.compare(got, want, rtol=(1e-5, 2e-4), atol=(1e-5, 2e-5))


@pytest.mark.parametrize("cudnn", [True, False], ids=["cudnn", "kernels"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["none", "causal", "float_heads"])
def test_16_bit_floats(raw, rng, monkeypatch, cudnn, dtype, kind):
    b = raw.backend
    bdt = getattr(burn, dtype)
    if bdt not in b.dtypes:
        pytest.skip(f"{dtype} not supported on this CuPy")
    if not cudnn:
        _no_cudnn(monkeypatch)
    rounded = np.float16 if dtype == "float16" else None
    arrays = A.inputs(rng, 2, 2, 150, 140, 64, 64)
    mask = A.mask(kind, rng, 2, 2, 150, 140)
    if rounded is None:  # bfloat16 rounding through burn's own cast (numpy has no bfloat16)
        cpu = _cpu()

        def rounded_fn(a):
            return cpu.to_numpy(cpu.cast(cpu.from_numpy(a, burn.bfloat16), burn.float32))
    else:

        def rounded_fn(a):
            return a.astype(np.float16).astype(np.float32)

    arrays = [rounded_fn(a) for a in arrays]
    mask = None if mask is None else rounded_fn(mask)
    got = A.run(b, arrays, mask, kind == "causal", 0.125, bdt)
    want = A.run(_cpu(), arrays, mask, kind == "causal", 0.125)
    tol = 2e-2 if dtype == "float16" else 4e-2
    A.compare(got, want, rtol=(tol, tol), atol=(tol, tol))


def test_cudnn_takes_16_bit_calls(raw, rng):
    """Where the extra is installed, float16 / bfloat16 calls without a mask build cuDNN SDPA plans."""
    from burn_cuda import _cudnn

    if _cudnn.frontend() is None:
        pytest.skip(_cudnn.cudnn_status())
    _cudnn._plans.clear()
    arrays = A.inputs(rng, 1, 2, 64, 64, 64, 64)
    A.run(raw.backend, arrays, None, True, 0.125, burn.float16)
    kinds = {key[1] for key, plan in _cudnn._plans.items() if plan is not None}
    assert {"sdpa_fwd", "sdpa_bwd"} <= kinds


def test_strided_views_need_no_copy(raw, rng):
    """q, k, v as (batch, seq, heads, dim) tensors transposed to (batch, heads, seq, dim) views."""
    b, cpu = raw.backend, _cpu()
    arrays = [
        rng.standard_normal(s).astype(np.float32) for s in ((2, 70, 3, 8), (2, 65, 3, 8), (2, 65, 3, 4))
    ]
    views = [b.permute(b.from_numpy(a, burn.float32), (0, 2, 1, 3)) for a in arrays]
    out, lse = b.attention(*views, None, True, 0.3)
    want, want_lse = cpu.attention(
        *(cpu.from_numpy(a.transpose(0, 2, 1, 3).copy(), burn.float32) for a in arrays), None, True, 0.3
    )
    np.testing.assert_allclose(b.to_numpy(out), cpu.to_numpy(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.to_numpy(lse), cpu.to_numpy(want_lse), rtol=1e-5, atol=1e-5)


def test_large_head_dims_run_the_default(raw, rng):
    """E > 128 falls back to the composed default (same results)."""
    from burn_cuda import _attention

    b = raw.backend
    arrays = A.inputs(rng, 1, 1, 4, 5, 160, 8)
    assert not _attention.supported(*(b.from_numpy(a, burn.float32) for a in arrays[:3]), None, False)
    A.compare(A.run(b, arrays, None, False, 0.1), A.run(_cpu(), arrays, None, False, 0.1))


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_training_on_the_fused_device(cuda, rng, causal):
    """F.scaled_dot_product_attention under autodiff on the default (fused) cuda device: the kernels run
    through fusion's calls, and the gradients equal the numpy backend's."""
    arrays = [rng.standard_normal((2, 4, 96, 32)).astype(np.float32) for _ in range(3)]

    def grads(device):
        dev = burn.device(device, autodiff=True)
        ts = [burn.tensor(a, device=dev).require_grad() for a in arrays]
        out = F.scaled_dot_product_attention(*ts, is_causal=causal)
        g = (out * out).sum().backward()
        return [out.numpy()] + [g.get(t).numpy() for t in ts]

    for got, want in zip(grads("cuda"), grads("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
