"""Per-op framework overhead of burn (numpy backend) against raw numpy.

Times ``a + b``, ``a @ b`` and ``a.sum()`` on a small and a large input (add/sum: 16 and 1M elements;
matmul: 4x4 and 1000x1000) and prints one JSON object: per case the best-of-repeats time per call in
microseconds for burn and numpy, and ``ratio = burn / numpy`` (the goal is under 2 for small inputs).

    python benchmarks/bench_tensor_overhead.py [--repeat 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import timeit

import burn
import numpy as np


def _per_call_us(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _cases() -> list[tuple[str, tuple[int, ...], tuple[int, ...], str]]:
    return [
        ("add", (16,), (16,), "small"),
        ("add", (1_000_000,), (1_000_000,), "large"),
        ("matmul", (4, 4), (4, 4), "small"),
        ("matmul", (1000, 1000), (1000, 1000), "large"),
        ("sum", (16,), (16,), "small"),
        ("sum", (1_000_000,), (1_000_000,), "large"),
    ]


_NP_FN = {"add": lambda a, b: a + b, "matmul": lambda a, b: a @ b, "sum": lambda a, b: a.sum()}
_BURN_FN = _NP_FN  # the same Python expression on burn tensors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dev = burn.device("cpu")
    results = []
    for op, sa, sb, size in _cases():
        na = rng.standard_normal(sa).astype(np.float32)
        nb = rng.standard_normal(sb).astype(np.float32)
        ta, tb = burn.from_numpy(na, device=dev), burn.from_numpy(nb, device=dev)
        fn_np, fn_burn = _NP_FN[op], _BURN_FN[op]
        np.testing.assert_allclose(fn_burn(ta, tb).numpy(), fn_np(na, nb), rtol=1e-3, atol=1e-3)
        number = (20_000 if size == "small" else (3 if op == "matmul" else 50)) // (10 if args.quick else 1)
        number = max(number, 1)
        t_np = _per_call_us(lambda f=fn_np, x=na, y=nb: f(x, y), number, args.repeat)
        t_burn = _per_call_us(lambda f=fn_burn, x=ta, y=tb: f(x, y), number, args.repeat)
        results.append(
            {
                "op": op,
                "shape": [list(sa), list(sb)] if op == "matmul" else list(sa),
                "size": size,
                "burn_us": round(t_burn, 3),
                "numpy_us": round(t_np, 3),
                "ratio": round(t_burn / t_np, 3),
            }
        )
    out = {
        "benchmark": "tensor_overhead",
        "backend": "ndarray",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "burn": burn.__version__,
        "goal": "small-op ratio < 2",
        "results": results,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
