"""One kernel for many device-to-device copies (``_multicopy``, the CUDA graphs' input refills): every
byte of every pair arrives, for sizes across the chunk size, odd byte counts and sources or
destinations that are not 16-byte aligned; nothing outside the destinations is written."""

from __future__ import annotations

import burn
import numpy as np


def test_many_copies_in_one_launch(cuda):
    from burn_cuda._multicopy import CHUNK, MultiCopy

    backend = burn.device("cuda:0", fusion=False).backend  # the plain backend (the fused one has no xp)
    cp = backend.xp
    backend._on()
    rng = np.random.default_rng(0)
    sizes = [1, 3, 15, 16, 17, 1000, CHUNK - 1, CHUNK, CHUNK + 5, 3 * CHUNK + 7, 0]
    pairs, canaries = [], []
    for k, n in enumerate(sizes):
        src = cp.asarray(rng.integers(0, 256, n + 1, dtype=np.uint8))[k % 2 :][:n]  # odd ones misaligned
        room = cp.zeros(n + 2, dtype=np.uint8)
        dst = room[1 : n + 1] if k % 3 == 0 else room[:n]
        pairs.append((dst, src))
        canaries.append((room, dst, src))
    copy = MultiCopy(cp, pairs)
    copy.launch()
    backend.sync()
    assert copy.nbytes == sum(sizes)
    for room, dst, src in canaries:
        np.testing.assert_array_equal(cp.asnumpy(dst), cp.asnumpy(src))
        assert int(cp.asnumpy(room).sum()) == int(cp.asnumpy(src).astype(np.int64).sum())  # nothing else
