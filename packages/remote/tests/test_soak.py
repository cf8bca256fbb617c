"""Soak: 4 clients at once, 10,000 ops each, random reads, every result checked against numpy."""

from __future__ import annotations

import threading

import burn
import numpy as np

OPS = 10_000
CLIENTS = 4


def _client(url, token, seed, failures):
    try:
        dev = burn.device(f"remote:{700 + seed}", url=url, token=token)
        rng = np.random.default_rng(seed)
        v0, w0 = rng.uniform(-3, 3, 16), rng.uniform(-3, 3, 16)
        v, w = (
            burn.tensor(v0, dtype=burn.float64, device=dev),
            burn.tensor(w0, dtype=burn.float64, device=dev),
        )
        a, b = v0.copy(), w0.copy()
        choices = rng.integers(0, 6, OPS)
        consts = rng.uniform(-2, 2, OPS)
        reads = 0
        for i, (k, c) in enumerate(zip(choices, consts)):
            if k == 0:
                v, a = v + float(c), a + c
            elif k == 1:
                v, a = v * 0.5, a * 0.5
            elif k == 2:
                v, a = v + w, a + b
            elif k == 3:
                w, b = v - w, a - b
            elif k == 4:
                v, a = v % 5.0, np.mod(a, 5.0)
            else:
                w, b = v.maximum(w), np.maximum(a, b)
            if rng.random() < 0.01:
                reads += 1
                got_v, got_w = burn.Transaction().register(v).register(w).execute()
                np.testing.assert_allclose(got_v, a, rtol=1e-12, atol=1e-12, err_msg=f"client {seed} op {i}")
                np.testing.assert_allclose(got_w, b, rtol=1e-12, atol=1e-12, err_msg=f"client {seed} op {i}")
        np.testing.assert_allclose(v.numpy(), a, rtol=1e-12, atol=1e-12)
        assert reads > 10
    except BaseException as exc:  # reported by the test
        failures.append((seed, exc))


def test_four_clients_ten_thousand_ops_each(server):
    failures: list = []
    threads = [
        threading.Thread(target=_client, args=(server.url, server.token, seed, failures))
        for seed in range(CLIENTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures
