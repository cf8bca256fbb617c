"""burn.profile counts what a block made the device do: on wgpu (lavapipe in CI) dispatches, submits and
host reads; on the numpy backend nothing; through the autodiff decorator, its inner device's counts."""

from __future__ import annotations

import burn
import numpy as np
import pytest


def test_numpy_backend_counts_nothing():
    with burn.profile("cpu") as p:
        assert (burn.ones(3) + 1).sum().item() == 6.0
    assert p.as_dict() == {"kernels": 0, "submits": 0, "syncs": 0, "fused": 0}


def _wgpu():
    info = {b.name: b for b in burn.backends()}.get("wgpu")
    if info is None or not info.available:
        pytest.skip(f"wgpu unavailable: {info.reason if info else 'not installed'}")
    return burn.device("wgpu")


def test_wgpu_counts_dispatches_submits_and_reads():
    dev = burn.device(_wgpu(), fusion=False)
    x = burn.tensor(np.arange(8, dtype=np.float32), device=dev)
    x.numpy()  # uploads settled outside the block
    with burn.profile(dev) as p:
        y = ((x * 2 + 1).exp() - 3).relu()
        assert p.syncs == 0  # nothing read yet: the dispatches wait in one batch
        y.numpy()
    assert p.kernels == 5  # mul, add, exp, sub, relu: one dispatch each without fusion
    assert p.submits == 1 and p.syncs == 1 and p.fused == 0


def test_fusion_runs_a_chain_as_one_counted_kernel():
    dev = _wgpu()  # fusion is on by default on wgpu
    x = burn.tensor(np.arange(8, dtype=np.float32), device=dev)
    x.numpy()
    with burn.profile(dev) as p:
        y = ((x * 2 + 1).exp() - 3).relu()
        assert p.kernels == 0  # deferred: nothing launched before the value is needed
        out = y.numpy()
    assert p.kernels == 1 and p.fused == 1 and p.submits == 1 and p.syncs == 1
    np.testing.assert_allclose(out, np.maximum(np.exp(np.arange(8) * 2 + 1) - 3, 0), rtol=1e-5)


def test_autodiff_device_reports_its_inner_counts():
    dev = _wgpu()
    ad = burn.device("wgpu", autodiff=True)
    x = burn.tensor([1.0, 2.0], device=ad).require_grad()
    with burn.profile(ad) as outer, burn.profile(dev) as inner:
        y = (x * x).sum()
        y.backward()
        y.item()  # runs the recorded stream (fusion defers it; the seed's ones may be a kept constant)
    assert outer.as_dict() == inner.as_dict() and outer.kernels > 0


def test_default_device_and_names():
    with burn.profile() as p:
        burn.zeros(2).tolist()
    assert str(p.device) == "cpu" and p.kernels == 0
