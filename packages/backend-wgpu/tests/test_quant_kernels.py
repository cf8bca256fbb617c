"""The WGSL int8 matmul (``burn_wgpu._kernels.quant``): exact against a numpy int64 reference for odd
shapes, batches, broadcast batch dims, K not a multiple of 4, deep K, int8 extremes and strided views,
on the unpacked path and the ``dot4I8Packed`` path; the backend's ``quantized_matmul`` runs it."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn_wgpu._kernels import quant

SHAPES = {
    "tile": ((64, 64), (64, 64)),
    "odd": ((5, 37), (37, 9)),
    "k_not_4": ((3, 7), (7, 5)),
    "deep": ((70, 3000), (3000, 130)),
    "one": ((1, 1), (1, 1)),
    "batched": ((3, 33, 20), (3, 20, 70)),
    "broadcast_w": ((2, 3, 7, 33), (33, 9)),
    "broadcast_both": ((4, 1, 6, 33), (3, 33, 5)),
}


def _data(shape: tuple[int, ...], seed: int, extremes: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if extremes:
        return rng.choice(np.array([-128, 127, -128, 127, 0, -1], dtype=np.int32), shape)
    return rng.integers(-128, 128, shape).astype(np.int32)


def _reference(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.int64), w.astype(np.int64))


def _run(backend, raw_dev, a, w, packed):
    ta = burn.tensor(a, dtype=burn.int32, device=raw_dev).primitive
    tw = burn.tensor(w, dtype=burn.int32, device=raw_dev).primitive
    out = quant.quantized_matmul(backend, ta, tw, packed_dot=packed)
    assert out.dtype is burn.int32
    return backend.to_numpy(out)


def _packed_or_skip(backend) -> None:
    """The dot4I8Packed path runs where the adapter reports the language feature; where it does not,
    it still runs if the shader compiler accepts the builtin (naga does, lowering it for Vulkan)."""
    if quant.has_packed_dot():
        return
    try:
        backend.ctx.device.create_shader_module(code=quant.render(0, True).source)
    except Exception as exc:
        pytest.skip(f"this adapter's compiler rejects dot4I8Packed (feature not reported): {exc}")


@pytest.mark.parametrize("case", list(SHAPES))
@pytest.mark.parametrize("extremes", [False, True], ids=["random", "extremes"])
@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "dot4I8Packed"])
def test_int8_matmul_is_exact(backend, raw_dev, case, extremes, packed):
    if packed:
        _packed_or_skip(backend)
    sa, sw = SHAPES[case]
    a, w = _data(sa, 1, extremes), _data(sw, 2, extremes)
    got = _run(backend, raw_dev, a, w, packed)
    np.testing.assert_array_equal(got, _reference(a, w))


def test_strided_views_are_read_through_their_strides(backend, raw_dev):
    a, w = _data((40, 70), 3, False), _data((50, 70), 4, False)
    ta = burn.tensor(a, dtype=burn.int32, device=raw_dev)
    tw = burn.tensor(w, dtype=burn.int32, device=raw_dev)
    lhs, rhs = ta[3:31, 5:66], tw.transpose(0, 1)[5:66, 1:49]  # an offset view and a transposed one
    got = backend.to_numpy(quant.quantized_matmul(backend, lhs.primitive, rhs.primitive))
    np.testing.assert_array_equal(got, _reference(a[3:31, 5:66], w.T[5:66, 1:49]))


def test_backend_quantized_matmul_runs_the_kernel(backend, raw_dev):
    a, w = _data((9, 40), 5, False), _data((40, 11), 6, False)
    ta = burn.tensor(a, dtype=burn.int32, device=raw_dev)
    tw = burn.tensor(w, dtype=burn.int32, device=raw_dev)
    before = backend.ex.stats["dispatches"]
    out = raw_dev.backend.quantized_matmul(ta.primitive, tw.primitive)
    assert backend.ex.stats["dispatches"] == before + 1  # one dispatch: no float casts, no chunks
    kernel = quant.render(0, quant.has_packed_dot())
    assert kernel.source in backend.ex._pipelines
    np.testing.assert_array_equal(backend.to_numpy(out), _reference(a, w))


def test_packed_dot_follows_the_reported_language_feature(monkeypatch):
    import wgpu

    class _Gpu:
        def __init__(self, features: set[str]) -> None:
            self.wgsl_language_features = features

    monkeypatch.setattr(wgpu, "gpu", _Gpu({"packed_4x8_integer_dot_product"}))
    assert quant.has_packed_dot()
    monkeypatch.setattr(wgpu, "gpu", _Gpu({"readonly_and_readwrite_storage_textures"}))
    assert not quant.has_packed_dot()
    assert "dot4I8Packed" in quant.render(1, True).source
    assert "dot4I8Packed" not in quant.render(1, False).source


def test_kernel_stays_within_portable_limits():
    words = quant.TILE * quant.BK // 4
    assert 2 * words * 4 <= 16384  # two packed u32 tiles in workgroup memory
    src = quant.render(2, False).source
    assert "@workgroup_size(16, 16)" in src and src.count("@binding(") == 4


def test_too_deep_contraction_is_an_error(backend, raw_dev):
    k = quant.MAX_K + 1
    ta = burn.zeros((1, k), dtype=burn.int32, device=raw_dev)
    tw = burn.zeros((k, 1), dtype=burn.int32, device=raw_dev)
    with pytest.raises(ValueError, match="may overflow int32"):
        quant.quantized_matmul(backend, ta.primitive, tw.primitive)
