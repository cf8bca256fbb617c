"""The runtime around the kernels: buffer pool reuse, batched submits, the pipeline cache, one-map
transactions, zero-copy views, limits, dtype errors and adapter selection."""

from __future__ import annotations

import gc
import struct

import burn
import numpy as np
import pytest
from burn import DTypeError, ShapeError


def test_batching_one_submit_for_many_ops(backend, raw_dev):
    x = burn.ones((8, 8), device=raw_dev)
    backend.sync()
    before = dict(backend.ex.stats)
    y = x
    for _ in range(40):  # fewer than the batch size: nothing is submitted until the read
        y = y + 1.0
    assert backend.ex.stats["submits"] == before["submits"]
    out = y.numpy()
    after = backend.ex.stats
    assert after["dispatches"] - before["dispatches"] == 40
    assert after["submits"] - before["submits"] == 1
    assert after["maps"] - before["maps"] == 1
    np.testing.assert_array_equal(out, np.full((8, 8), 41.0, np.float32))


def test_batches_flush_at_batch_size(backend, raw_dev):
    x = burn.zeros((4,), device=raw_dev)
    backend.sync()
    before = backend.ex.stats["submits"]
    for _ in range(backend.ex.batch_size * 2):
        x = x + 1.0
    assert backend.ex.stats["submits"] - before == 2  # full batches go out without waiting for a read
    assert x.numpy().tolist() == [backend.ex.batch_size * 2.0] * 4


def test_bind_groups_reused_across_metadata_slots(backend):
    """The metadata slot is a dynamic offset: the same buffers at other slots share one bind group,
    and each dispatch still reads its own metadata."""
    from burn_wgpu._executor import Kernel

    src = """
@group(0) @binding(0) var<storage, read> info: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() { out[info[0]] = info[1]; }
"""
    kernel = Kernel("test_meta_slots", src, ("rw",))
    out = backend.pool.storage(64)
    ex = backend.ex
    ex.flush()
    ex.dispatch(kernel, [out.buffer], struct.pack("<2I", 0, 10), (1, 1, 1))
    cached = len(ex._bind_groups)
    for k in range(1, 6):
        ex.dispatch(kernel, [out.buffer], struct.pack("<2I", k, 10 + k), (1, 1, 1))
    assert len(ex._bind_groups) == cached  # five more slots, no new bind group
    data = ex.read([(out.buffer, 0, 24)])[0]
    assert list(struct.unpack("<6I", data)) == [10, 11, 12, 13, 14, 15]


def test_pipeline_cache_hits(backend, dev):
    a = burn.ones((5, 3), device=dev)
    _ = (a * 3.0).numpy()
    before = dict(backend.ex.stats)
    _ = (a * 4.0).numpy()  # same kernel source, other scalar: a cache hit
    assert backend.ex.stats["pipeline_misses"] == before["pipeline_misses"]
    assert backend.ex.stats["pipeline_hits"] > before["pipeline_hits"]


def test_buffer_pool_reuses_after_release(backend, dev):
    x = burn.ones((256,), device=dev)
    for _ in range(3):  # warm the pool: the loop below needs two buffers per step in flight
        _ = ((x + 1.0) * 2.0).numpy()
    gc.collect()
    backend.sync()
    allocated = backend.pool.stats["allocated"]
    reused = backend.pool.stats["reused"]
    for _ in range(20):
        _ = ((x + 1.0) * 2.0).numpy()
    assert backend.pool.stats["allocated"] == allocated  # steady state: no new buffers
    assert backend.pool.stats["reused"] >= reused + 20


def test_transaction_reads_with_one_map(backend, dev):
    ts = [burn.full((3, i + 1), float(i), device=dev) for i in range(5)]
    ts.append(burn.arange(6, device=dev).reshape(2, 3).T)  # a strided view is materialised first
    backend.sync()
    before = dict(backend.ex.stats)
    arrays = (
        burn.Transaction()
        .register(ts[0])
        .register(ts[1])
        .register(ts[2])
        .register(ts[3])
        .register(ts[4])
        .register(ts[5])
        .execute()
    )
    assert backend.ex.stats["maps"] - before["maps"] == 1
    assert backend.ex.stats["submits"] - before["submits"] == 1
    for i in range(5):
        np.testing.assert_array_equal(arrays[i], np.full((3, i + 1), float(i), np.float32))
    np.testing.assert_array_equal(arrays[5], np.arange(6).reshape(2, 3).T)


def test_views_share_storage(raw_dev):
    x = burn.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4), device=raw_dev)
    st = x.primitive.storage
    for view in (x.permute(2, 0, 1), x[:, 1:, ::2], x.reshape(6, 4), x[:1].expand(5, 3, 4)):
        assert view.primitive.storage is st
    np.testing.assert_array_equal(x[:, 1:, ::2].numpy(), np.arange(24).reshape(2, 3, 4)[:, 1:, ::2])


def test_oversized_tensor_is_refused(backend, dev):
    limit = backend.pool.max_buffer  # over one binding runs (test_binding_windows.py); over a buffer: no
    with pytest.raises(ShapeError, match=r"max buffer size of \d+ bytes"):
        burn.zeros((limit // 4 + 1,), device=dev)


def test_64bit_dtypes_follow_the_adapter(backend, dev):
    """Native: int64/float64 where the adapter has shader-int64/shader-f64 (test_wide_dtypes.py runs
    their ops); the defaults stay float32/int32 either way."""
    features = set(backend.ctx.adapter.features)
    assert (burn.float64 in backend.dtypes) == ("shader-f64" in features and not backend.ctx.portable)
    assert (burn.int64 in backend.dtypes) == ("shader-int64" in features and not backend.ctx.portable)
    assert burn.tensor([1, 2], device=dev).dtype is burn.int32
    assert burn.tensor([1.0, 2.0], device=dev).dtype is burn.float32


def test_portable_mode_has_no_64bit_dtypes(monkeypatch, dev):
    from burn_wgpu import _device
    from burn_wgpu._backend import WgpuBackend

    monkeypatch.setattr(_device.OPTIONS, "portable", True)
    be = WgpuBackend(context=_device.create_context(0))
    assert not {burn.float64, burn.int64} & be.dtypes
    assert not {"shader-f64", "shader-int64"} & be.ctx.features
    with pytest.raises(DTypeError, match="float64 is not supported by backend 'wgpu'.*WebGPU has no 64-bit"):
        be.from_numpy(np.zeros(3), burn.float64)
    with pytest.raises(DTypeError, match="int64"):
        be.cast(be.from_numpy(np.ones(2, np.float32), burn.float32), burn.int64)


def test_configure_after_first_use_is_an_error(dev):
    import burn_wgpu

    _ = dev.backend
    with pytest.raises(RuntimeError, match="before the first"):
        burn_wgpu.configure(portable=True)


def test_portable_limits_run_the_kernels(monkeypatch, dev, rng):
    from burn_wgpu import _device
    from burn_wgpu._backend import WgpuBackend

    monkeypatch.setattr(_device.OPTIONS, "portable", True)
    ctx = _device.create_context(0)
    assert ctx.limits["max-storage-buffers-per-shader-stage"] <= 8
    assert ctx.limits["max-compute-workgroup-storage-size"] <= 16384
    assert ctx.limits["max-storage-buffer-binding-size"] <= 128 * 1024 * 1024
    be = WgpuBackend(context=ctx)
    a = rng.standard_normal((70, 40)).astype(np.float32)
    pa = be.from_numpy(a, burn.float32)
    np.testing.assert_allclose(
        be.to_numpy(be.matmul(pa, be.permute(pa, (1, 0)))), a @ a.T, rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(be.to_numpy(be.reduce("sum", pa, (1,), False)), a.sum(1), rtol=1e-4, atol=1e-4)
    v, i = be.sort(pa, 1, False)
    np.testing.assert_array_equal(be.to_numpy(i), np.argsort(a, 1, kind="stable"))


def test_adapter_selection(monkeypatch, dev):
    from burn_wgpu import _device

    monkeypatch.setattr(_device.OPTIONS, "adapter", "no-such-adapter-xyz")
    with pytest.raises(burn.DeviceError, match="matches no adapter"):
        _device.pick_adapter(0)
    monkeypatch.setattr(_device.OPTIONS, "adapter", None)
    with pytest.raises(burn.DeviceError, match="no such adapter"):
        _device.pick_adapter(99)
    name = _device.pick_adapter(0).info["device"]
    monkeypatch.setattr(_device.OPTIONS, "adapter", name[:6])
    assert _device.pick_adapter(0).info["device"] == name


def test_plugin_is_import_light():
    import subprocess
    import sys

    code = "import sys, burn_wgpu, burn_wgpu._plugin; print('wgpu' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_kernels_reuse_buffers_within_a_batch(backend, dev):
    x = burn.ones((3000,), device=dev)  # a size class no other test uses
    backend.sync()
    allocated = backend.pool.stats["allocated"]
    y = x
    for _ in range(30):  # one batch: each intermediate is released before the next op is recorded
        y = y * 1.5 + 1.0
    assert backend.pool.stats["allocated"] - allocated <= 3
    want = np.ones(3000, np.float32)
    for _ in range(30):
        want = want * np.float32(1.5) + np.float32(1.0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)


def test_auto_does_not_pick_a_software_adapter(dev):
    """``burn.device("auto")`` skips wgpu when every adapter is a software rasteriser (lavapipe here,
    slower than the numpy backend) and says why; ``burn.device("wgpu")`` still runs on it."""
    from burn_wgpu._device import list_adapters
    from burn_wgpu._plugin import _auto_available

    software = all(a.info.get("adapter_type") == "CPU" for a in list_adapters())
    ok, reason = _auto_available()
    assert ok is not software
    if software:
        assert "only software adapters" in reason
        cuda = any(i.name == "cuda" and i.available for i in burn.backends())
        assert str(burn.device("auto")).startswith("cuda" if cuda else "cpu")


def test_the_digits_example_on_wgpu_prints_no_warning_of_burns(dev, tmp_path):
    """The example's int targets are made in the backend's int (no int64 narrowing warning)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "examples" / "train_digits.py"
    cmd = [sys.executable, "-W", "error::UserWarning", str(script), "--backend", "wgpu", "--epochs", "1"]
    cmd += ["--limit", "64", "--renderer", "cli", "--no-plots", "--artifacts", str(tmp_path / "art")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Warning" not in proc.stderr
    assert "software" in proc.stdout.splitlines()[0] or "[start] training on wgpu:0" in proc.stdout
