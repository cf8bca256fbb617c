"""conv2d of burn (numpy backend, through ``burn.nn.functional.conv2d``) against hand-written numpy.

The numpy peer is the best of three im2col + BLAS formulations written here, independently of burn,
timed in the same run on the same float32 data:

- ``gemm``: im2col into one (C*kh*kw, N*L) matrix, one big GEMM, then a transpose back to NCHW;
- ``batched``: im2col into (N, C*kh*kw, L), one GEMM per image (np.matmul), already NCHW;
- ``tensordot``: ``np.tensordot`` of the weight with a ``sliding_window_view`` (numpy does the copy).

Prints one JSON object: per shape, best-of-repeats seconds for burn and for each numpy formulation, and
``ratio = burn / best numpy`` (the goal is under 1.5). Results are checked equal before timing.

    python benchmarks/bench_conv2d.py [--repeat 5] [--quick]

On a shared machine, ``OPENBLAS_NUM_THREADS=1`` keeps BLAS threads from fighting other load, which
makes the ratio stable (it compares the same BLAS either way).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import timeit

import burn
import numpy as np
from burn.nn import functional as F
from numpy.lib.stride_tricks import sliding_window_view

# name, (N, C_in, H, W), (C_out, kh, kw), stride, padding
SHAPES = [
    ("3x3 N8 C32->64 32x32", (8, 32, 32, 32), (64, 3, 3), 1, 1),
    ("1x1 N8 C64->128 32x32", (8, 64, 32, 32), (128, 1, 1), 1, 0),
    ("3x3 stride2 N8 C64->128 32x32", (8, 64, 32, 32), (128, 3, 3), 2, 1),
    ("5x5 N4 C3->16 64x64", (4, 3, 64, 64), (16, 5, 5), 1, 2),
]


def _patches(x: np.ndarray, kh: int, kw: int, stride: int, padding: int) -> np.ndarray:
    """(N, C, H_out, W_out, kh, kw) view of the zero-padded input."""
    if padding:
        x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    return sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]


def np_gemm(x, w, stride, padding):
    n, c_out = x.shape[0], w.shape[0]
    p = _patches(x, w.shape[2], w.shape[3], stride, padding)
    ho, wo = p.shape[2:4]
    cols = p.transpose(1, 4, 5, 0, 2, 3).reshape(-1, n * ho * wo)  # (C*kh*kw, N*L)
    y = w.reshape(c_out, -1) @ cols
    return np.ascontiguousarray(y.reshape(c_out, n, ho, wo).transpose(1, 0, 2, 3))


def np_batched(x, w, stride, padding):
    n, c_out = x.shape[0], w.shape[0]
    p = _patches(x, w.shape[2], w.shape[3], stride, padding)
    ho, wo = p.shape[2:4]
    cols = p.transpose(0, 1, 4, 5, 2, 3).reshape(n, -1, ho * wo)  # (N, C*kh*kw, L)
    return np.matmul(w.reshape(c_out, -1), cols).reshape(n, c_out, ho, wo)


def np_tensordot(x, w, stride, padding):
    p = _patches(x, w.shape[2], w.shape[3], stride, padding)
    y = np.tensordot(p, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, H_out, W_out, C_out)
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2))


PEERS = {"gemm": np_gemm, "batched": np_batched, "tensordot": np_tensordot}


def _best(fn, repeat: int, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def _time_shape(name, x, w, bx, bw, stride, padding, repeat: int, number: int = 3) -> dict:
    """Best-of-repeats seconds per call; burn and the peers interleaved so background load hits all."""
    fns = {"burn": functools.partial(F.conv2d, bx, bw, stride=stride, padding=padding)}
    fns.update({key: functools.partial(peer, x, w, stride, padding) for key, peer in PEERS.items()})
    times: dict[str, float] = dict.fromkeys(fns, math.inf)
    for _ in range(repeat):
        for key, fn in fns.items():
            times[key] = min(times[key], _best(fn, 1, number))
    numpy_s = {k: times[k] for k in PEERS}
    best = min(numpy_s, key=numpy_s.get)
    return {
        "shape": name,
        "burn_s": times["burn"],
        "numpy_s": numpy_s,
        "best_numpy": best,
        "ratio": round(times["burn"] / numpy_s[best], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one shape, fewer repeats (smoke run)")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.repeat
    rng = np.random.default_rng(0)
    dev = burn.device("cpu")
    results = []
    for name, xs, (c_out, kh, kw), stride, padding in SHAPES[:1] if args.quick else SHAPES:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal((c_out, xs[1], kh, kw)).astype(np.float32)
        bx, bw = burn.from_numpy(x, device=dev), burn.from_numpy(w, device=dev)
        expected = np_gemm(x, w, stride, padding)
        got = F.conv2d(bx, bw, stride=stride, padding=padding).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
        for peer in PEERS.values():
            np.testing.assert_allclose(peer(x, w, stride, padding), expected, rtol=1e-4, atol=1e-3)
        results.append(_time_shape(name, x, w, bx, bw, stride, padding, repeat))
    report = {
        "benchmark": "conv2d float32, burn ndarray backend vs hand-written numpy im2col + BLAS",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "goal": "ratio < 1.5",
        "results": results,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
