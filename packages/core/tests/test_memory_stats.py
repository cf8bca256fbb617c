"""``burn.memory_stats`` / ``reset_peak_memory_stats`` / ``empty_cache`` on the numpy backend (the
process's resident memory) and through the autodiff and fusion decorators."""

from __future__ import annotations

import burn
import numpy as np
import pytest


@pytest.mark.parametrize("options", [{}, {"autodiff": True}, {"autodiff": True, "fusion": True}])
def test_cpu_memory_stats_follow_a_large_tensor(options):
    dev = burn.device("cpu", **options)
    burn.empty_cache(dev)
    before = burn.memory_stats(dev)
    assert before.source == "process resident memory"
    assert before.peak_allocated >= before.allocated > 0 and before.reserved == before.allocated
    burn.reset_peak_memory_stats(dev)
    x = burn.tensor(np.ones((64, 1024, 1024), dtype=np.float32), device=dev)  # 256 MiB, touched
    during = burn.memory_stats(dev)
    assert during.allocated - before.allocated > 200 * 2**20
    assert during.peak_allocated >= during.allocated
    del x
    after = burn.memory_stats(dev)
    assert after.peak_allocated >= during.allocated  # the peak since the reset keeps the tensor
    burn.reset_peak_memory_stats(dev)
    assert burn.memory_stats(dev).peak_allocated < during.allocated
    assert set(after.as_dict()) == {
        "allocated",
        "reserved",
        "peak_allocated",
        "peak_reserved",
        "source",
        "extra",
    }
    assert after["peak_allocated"] == after.peak_allocated and dict(after)["allocated"] == after.allocated
    with pytest.raises(KeyError):
        after["peak"]


def test_a_backend_without_figures_is_named(monkeypatch):
    backend = type(burn.device("cpu").backend)
    monkeypatch.setattr(backend, "memory_stats", lambda self: None)
    with pytest.raises(NotImplementedError, match="NdArrayBackend backend reports no memory figures"):
        burn.memory_stats(burn.device("cpu", autodiff=True))


def test_peak_tracker_counts_current_and_peak():
    t = burn.backend.PeakTracker()
    t.grow(10)
    t.grow(5)
    t.shrink(12)
    assert (t.current, t.peak) == (3, 15)
    t.reset()
    assert t.peak == 3


def test_empty_cache_drops_fusion_programs_and_constants():
    """A fused device's kept programs and constants are a cache: ``burn.empty_cache`` drops them, and the
    same computation is planned again and still right."""
    dev = burn.device("cpu", autodiff=True, fusion=True)
    fb = dev.backend.inner
    x = burn.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev)
    want = ((np.arange(12, dtype=np.float32).reshape(3, 4) * 2.0 + 1.0) ** 2).sum()
    for _ in range(3):
        assert ((x * 2.0 + 1.0) ** 2).sum().item() == want
    assert fb._programs
    burn.empty_cache(dev)
    assert not fb._programs and not fb._constants
    assert ((x * 2.0 + 1.0) ** 2).sum().item() == want
