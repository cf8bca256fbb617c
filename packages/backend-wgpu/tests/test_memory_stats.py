"""``burn.memory_stats`` on wgpu: the buffer pool's bytes held by tensors and created, with peaks;
``empty_cache`` destroys the free buffers."""

from __future__ import annotations

import gc

import burn
import numpy as np


def test_wgpu_memory_stats_follow_the_buffer_pool(dev):
    burn.empty_cache(dev)
    burn.reset_peak_memory_stats(dev)
    before = burn.memory_stats(dev)
    assert before.source == "wgpu buffer pool"
    x = burn.tensor(np.ones((256, 1024), dtype=np.float32), device=dev)  # 1 MiB
    y = (x * 2.0).sum().item()
    assert y == 2.0 * 256 * 1024
    during = burn.memory_stats(dev)
    assert during.allocated - before.allocated >= 2**20
    assert during.reserved >= during.allocated and during.peak_allocated >= during.allocated
    del x
    gc.collect()
    after = burn.memory_stats(dev)
    assert after.allocated <= during.allocated - 2**20
    assert after.peak_allocated >= during.allocated
    burn.empty_cache(dev)
    emptied = burn.memory_stats(dev)
    assert emptied.reserved == emptied.allocated < during.reserved
    burn.reset_peak_memory_stats(dev)
    assert burn.memory_stats(dev).peak_allocated == emptied.allocated
    assert burn.memory_stats(burn.device("wgpu", autodiff=True, fusion=True)).source == "wgpu buffer pool"
