"""DLPack zero-copy with PyTorch and CuPy, the memory pool, the device stream, device errors."""

from __future__ import annotations

import burn
import burn_cuda
import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_dlpack_round_trip_with_torch(cuda):
    torch = pytest.importorskip("torch")
    src = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    t = burn_cuda.from_dlpack(src, cuda)
    assert t.shape == (3, 4) and t.dtype == burn.float32 and t.device == cuda
    src.add_(100)  # torch writes after the import: the burn tensor aliases the same memory
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4) + 100)
    y = t * 2  # burn work on its own stream, then handed back to torch without a copy
    back = torch.from_dlpack(burn_cuda.as_cupy(y))
    assert back.data_ptr() == burn_cuda.as_cupy(y).data.ptr
    np.testing.assert_array_equal(back.cpu().numpy(), (np.arange(12).reshape(3, 4) + 100) * 2)
    capsule_back = torch.from_dlpack(burn_cuda.to_dlpack(y))
    np.testing.assert_array_equal(capsule_back.cpu().numpy(), back.cpu().numpy())


def test_dlpack_with_cupy_and_int_dtypes(cuda):
    import cupy

    a = cupy.arange(10, dtype=cupy.int32)
    t = burn_cuda.from_dlpack(a, cuda)
    assert t.dtype == burn.int32
    assert burn_cuda.as_cupy(t).data.ptr == a.data.ptr
    out = cupy.from_dlpack(burn_cuda.as_cupy(t + 1))
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(1, 11))


def test_dlpack_from_host_copies(cuda):
    host = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = burn_cuda.from_dlpack(host, cuda)
    assert t.dtype == burn.float64 and t.device == cuda
    np.testing.assert_array_equal(t.numpy(), host)


def test_dlpack_imports_bfloat16_and_rejects_unsupported_dtypes(cuda):
    torch = pytest.importorskip("torch")
    src = torch.arange(4, dtype=torch.float32, device="cuda").div(3).to(torch.bfloat16)
    t = burn_cuda.from_dlpack(src, cuda)
    assert t.dtype == burn.bfloat16
    np.testing.assert_array_equal(t.float().numpy(), src.float().cpu().numpy())  # the same bits
    with pytest.raises(TypeError, match="not supported"):
        burn_cuda.from_dlpack(torch.ones(3, dtype=torch.complex64, device="cuda"), cuda)


def test_memory_pool_stats_and_cache(cuda):
    before = burn_cuda.memory_stats(cuda)
    assert set(before) >= {"used", "pooled", "cached", "free_blocks", "limit", "device_free", "device_total"}
    big = burn.zeros(64, 1024, 1024, device=cuda)  # 256 MiB
    during = burn_cuda.memory_stats(cuda)
    assert during["used"] >= before["used"] + 256 * 2**20
    del big
    burn_cuda.empty_cache(cuda)
    after = burn_cuda.memory_stats(cuda)
    assert after["used"] < during["used"] and after["cached"] <= during["pooled"] - after["used"]


def test_work_runs_on_a_non_default_stream(cuda):
    s = burn_cuda.stream(cuda)
    assert s.ptr != 0  # not the legacy default stream
    x = burn.ones(1024, 1024, device=cuda)
    y = (x @ x).sum()
    burn_cuda.synchronize(cuda)
    assert y.item() == 1024.0**3


def test_synchronize_runs_the_recorded_ops_first(cuda):
    """``synchronize`` waits for the work recorded by the fusion decorator too: the ops queued before
    it have run when it returns (it used to wait on the stream alone, so a timing loop's products all
    ran in one flush later, holding every result at once)."""
    fused = cuda.backend
    if not hasattr(fused, "stats"):
        pytest.skip("the cuda device has no fusion decorator here")
    x = burn.ones(256, 256, device=cuda)
    burn_cuda.synchronize(cuda)
    before = fused.stats["flushes"]
    y = x @ x + 1.0
    burn_cuda.synchronize(cuda)
    assert fused.stats["flushes"] == before + 1
    np.testing.assert_allclose(y.numpy(), np.full((256, 256), 257.0, np.float32))


def test_bad_device_index_is_a_clear_error(cuda):
    n = burn_cuda.device_count()
    with pytest.raises(burn.DeviceError, match=rf"cuda:{n + 7}"):
        burn.zeros(2, device=f"cuda:{n + 7}")


def test_backend_listed_available(cuda):
    info = {b.name: b for b in burn.backends()}["cuda"]
    assert info.available and info.reason == "" and "cuda:0" in info.devices
    assert burn.device("auto").kind == "cuda"  # the highest priority available backend


def test_burn_memory_stats_peaks_and_graph_pools(cuda):
    """``burn.memory_stats`` on cuda: the pool's bytes with exact peaks (the allocator hook sees a
    temporary freed before the call), and a captured CUDA graph's private pool counted in."""
    burn.empty_cache(cuda)
    burn.reset_peak_memory_stats(cuda)
    before = burn.memory_stats(cuda)
    assert before.source == "cupy memory pool + CUDA graph pools"
    x = burn.ones(16, 1024, 1024, device=cuda)  # 64 MiB
    y = ((x * 2.0) + 1.0).sum()  # temporaries of 64 MiB each, freed before the next line
    assert y.item() == 3.0 * 16 * 2**20
    now = burn.memory_stats(cuda)
    assert now.allocated - before.allocated >= 64 * 2**20
    assert now.peak_allocated - before.allocated >= 128 * 2**20  # x and a temporary at once
    del x
    burn.empty_cache(cuda)
    emptied = burn.memory_stats(cuda)
    assert emptied.reserved < now.reserved and emptied.peak_allocated == now.peak_allocated
    burn.reset_peak_memory_stats(cuda)
    assert burn.memory_stats(cuda).peak_allocated == burn.memory_stats(cuda).allocated
    fused = burn.device("cuda", autodiff=True, fusion=True)
    model, opt = burn.nn.Linear(256, 256, device=fused), burn.optim.SgdConfig().init()
    x = burn.ones(8, 256, device=fused)
    for _ in range(6):  # plan, replay, then a captured graph
        model = opt.step(0.01, model, model(x).tanh().sum().backward())
    stats = burn.memory_stats(fused)
    assert stats.extra["graphs"] >= 1 and stats.extra["graph_pools"] > 0
    assert stats.reserved >= stats.extra["graph_pools"]
