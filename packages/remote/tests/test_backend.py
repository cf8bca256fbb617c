"""The remote device against the numpy backend: ops, dtypes, reads in one round trip, pipelining, large
transfers in chunks, and ``burn.device("remote", ...)``'s keyword options."""

from __future__ import annotations

import burn
import burn_remote
import numpy as np
import pytest


def test_ops_match_numpy_backend(remote):
    cpu = burn.device("cpu")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4), dtype=np.float32), rng.standard_normal((4, 5), dtype=np.float32)
    idx = np.array([[0, 2, 1, 3], [3, 3, 0, 1], [1, 0, 2, 2]])

    def program(dev):
        x, y = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
        i = burn.tensor(idx, device=dev)
        out = [
            (x @ y).relu().sum(1),
            burn.nn.functional.softmax(x, 1),
            x.gather(1, i),
            burn.cat([x, x * 2], 0).permute(1, 0).reshape(2, -1),
            (x > 0).int().cumsum(1),
            x.sort(1, descending=True)[1],
            burn.where(x > 0, x, 0.5).max(1),
            x[1:, ::2],
            burn.nn.functional.conv2d(x.reshape(1, 1, 3, 4), y[:2, :2].reshape(1, 1, 2, 2)),
        ]
        return [o.numpy() for o in out]

    for got, want in zip(program(remote), program(cpu)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_dtypes_follow_the_server(remote):
    backend = burn_remote.remote_backend(remote)
    assert backend.dtypes == burn.device("cpu").backend.dtypes
    for dtype, value in ((burn.int32, [1, -2]), (burn.bool, [True, False]), (burn.float64, [0.5, 1e300])):
        t = burn.tensor(value, dtype=dtype, device=remote)
        assert t.dtype is dtype and t.tolist() == value


def test_ops_are_pipelined_and_a_transaction_is_one_round_trip(remote):
    backend = burn_remote.remote_backend(remote)
    x = burn.ones((4,), device=remote)
    before = backend.counters()
    ys = []
    for _ in range(500):
        x = x + 1.0
        ys.append(x * 2)
    mid = backend.counters()
    assert mid["syncs"] == before["syncs"], "ops must not wait for the server"
    assert mid["submits"] - before["submits"] < 20, "ops must travel in batches"
    tx = burn.Transaction()
    for y in ys[-3:]:
        tx.register(y)
    got = tx.execute()
    assert backend.counters()["syncs"] == mid["syncs"] + 1
    np.testing.assert_array_equal(got[-1], np.full(4, 1002.0, np.float32))


def test_large_tensor_round_trip_in_chunks(remote):
    arr = np.random.default_rng(1).standard_normal((3, 1000, 1500)).astype(np.float32)  # 18 MB > chunk
    t = burn.from_numpy(arr, device=remote)
    np.testing.assert_array_equal(t.numpy(), arr)
    np.testing.assert_allclose((t * 2).sum((1, 2)).numpy(), (arr * 2).sum((1, 2)), rtol=1e-4)
    empty = burn.zeros((0, 3), device=remote)
    assert empty.numpy().shape == (0, 3)
    assert burn.tensor(7.5, device=remote).item() == 7.5


def test_bfloat16_crosses_the_wire_in_chunks_and_as_op_arguments(remote):
    """bfloat16 (ml_dtypes on both sides) travels under its own wire name: its numpy ``str`` ('<V2')
    would lose the dtype."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    big = np.random.default_rng(2).standard_normal((1200, 1000)).astype(ml_dtypes.bfloat16)  # 2.4 MB
    t = burn.from_numpy(big, device=remote)
    assert t.dtype == burn.bfloat16
    back = t.numpy()
    assert back.dtype == big.dtype
    np.testing.assert_array_equal(back.view(np.uint16), big.view(np.uint16))  # the same bits
    small = burn.tensor(np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16), device=remote)
    assert (small * 2).float().tolist() == [3.0, -4.0]


def test_random_numbers_follow_burn_seed(remote):
    burn.seed(3)
    a = burn.randn((5,), device=remote).numpy()
    burn.seed(3)
    b = burn.randn((5,), device=burn.device("cpu")).numpy()
    np.testing.assert_array_equal(a, b)


def test_threads_share_a_device(remote):
    import threading

    x = burn.arange(0, 10, device=remote).float()
    errors = []

    def reader():
        try:
            for _ in range(50):
                assert (x * 2).sum().item() == 90.0
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors


def test_device_keywords(server, monkeypatch):
    with pytest.raises(
        ValueError, match=r"unknown keyword 'urll'; backend 'remote' takes url, token, timeout"
    ):
        burn.device("remote", urll=server.url)
    with pytest.raises(ValueError, match=r"url: expected 'ws://host:port'"):
        _ = burn.device("remote:7", url="http://127.0.0.1:1").backend
    with pytest.raises(ValueError, match=r"timeout: expected a positive number"):
        _ = burn.device("remote:7", url=server.url, timeout=0).backend
    monkeypatch.delenv("BURN_REMOTE_URL", raising=False)
    with pytest.raises(
        burn.BackendUnavailableError, match=r"'remote' is unavailable: no server given: pass url="
    ):
        _ = burn.device("remote:8").backend
    # the URL and token from the environment; autodiff on top keeps the backend options
    monkeypatch.setenv("BURN_REMOTE_URL", server.url)
    monkeypatch.setenv("BURN_REMOTE_TOKEN", server.token)
    dev = burn.device("remote:9", autodiff=True)
    assert dev.inner.backend_options == () and str(dev) == "remote:9+autodiff"
    assert burn.tensor([1.0, 2.0], device=dev).sum().item() == 3.0
    explicit = burn.device("remote:9", url=server.url, token=server.token)
    assert explicit.backend_options == (("token", server.token), ("url", server.url))
    assert server.token not in repr(explicit) and server.token not in str(
        burn.device(explicit, autodiff=True)
    )
    assert burn.device(explicit, autodiff=True).inner == explicit


def test_cpu_rejects_backend_keywords():
    with pytest.raises(ValueError, match=r"unknown keyword 'url'; the registered decorators take"):
        burn.device("cpu", url="ws://127.0.0.1:1")


def test_burn_info_lists_the_plugin():
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "burn", "info", "--json"], capture_output=True, text=True, timeout=120
    )
    info = json.loads(out.stdout)
    assert "remote" in json.dumps(info["backends"]) and "burn-remote" in out.stdout
