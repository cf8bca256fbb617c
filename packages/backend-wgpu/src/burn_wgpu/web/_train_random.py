"""Random draws of an exported training step (dropout) from a per-step seed fed at run time.

A captured graph cannot hold a host random stream: ``random_bernoulli`` recorded as is would replay the
same draws every step. While the step is traced, ``seeded_draws`` replaces the capture backend's random
ops (``DRAWS``: one row per op) by a counter-based generator written in plain uint32 tensor ops: element
``i`` of the ``k``-th draw of a step is ``hash(hash(i ^ key) + key)`` with ``key = hash(seed + salt(k))``,
``hash`` being a 32-bit integer mixer (xor-shift-multiply; shifts written as divisions by powers of two,
multiplications wrapping modulo 2^32 as WGSL's and numpy's uint32 do). Every op is exact integer
arithmetic, so the page, wgpu natively and burn's numpy backend draw the same bits for the same seed; a
Bernoulli(p) keep-mask compares the top 24 bits with ``round(p * 2^24)``. The masks are not those of
burn's own (host numpy) dropout: they are a real Bernoulli(p) draw, different every step, the same for
the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import burn

Tensor = Any
_M32 = 0xFFFFFFFF
_MUL1, _MUL2 = 0x7FEB352D, 0x846CA68B  # a 32-bit mixer's constants (low-bias xor-shift-multiply)
_GOLDEN = 0x9E3779B9
_BITS = 24  # bits of each draw compared or scaled (a float32 mantissa holds them exactly)


def hash_u32(x: Tensor) -> Tensor:
    """The 32-bit mixer on a uint32 tensor (``x >> k`` as ``x // 2**k``, exact on uint32)."""
    x = x ^ (x // 65536)
    x = x * _MUL1
    x = x ^ (x // 32768)
    x = x * _MUL2
    return x ^ (x // 65536)


def _hash_int(v: int) -> int:
    """``hash_u32`` on one Python int (host side: the per-draw salts)."""
    v &= _M32
    v ^= v >> 16
    v = (v * _MUL1) & _M32
    v ^= v >> 15
    v = (v * _MUL2) & _M32
    return v ^ (v >> 16)


def random_bits(seed: Tensor, shape: tuple[int, ...], stream: int) -> Tensor:
    """``shape`` uint32 values from a (1,) uint32 ``seed``; ``stream`` tells apart the draws of one
    step (the k-th random op traced)."""
    n = 1
    for s in shape:
        n *= int(s)
    key = hash_u32(seed + _hash_int(stream * _GOLDEN + 1))
    idx = burn.arange(0, n, dtype=burn.uint32, device=seed.device)
    return hash_u32(hash_u32(idx ^ key) + key).reshape(tuple(shape))


def bernoulli_mask(seed: Tensor, shape: tuple[int, ...], p: float, dtype: Any, stream: int) -> Tensor:
    """True (1) with probability ``p`` (to 2^-24), as ``dtype``."""
    threshold = min(round(p * (1 << _BITS)), 1 << _BITS)
    keep = (random_bits(seed, shape, stream) // (1 << (32 - _BITS))) < threshold
    return keep.cast(dtype)


def uniform(seed: Tensor, shape: tuple[int, ...], low: float, high: float, dtype: Any, stream: int) -> Tensor:
    """Uniform in [low, high) on a 2^-24 grid, as ``dtype``."""
    top = (random_bits(seed, shape, stream) // (1 << (32 - _BITS))).cast(burn.float32)
    return (top * (2.0**-_BITS) * (high - low) + low).cast(dtype)


# backend method -> the seeded draw replacing it: (seed, stream, the method's own arguments) -> tensor
DRAWS: dict[str, Callable[..., Tensor]] = {
    "random_bernoulli": lambda seed, k, shape, p, dtype: bernoulli_mask(seed, shape, p, dtype, k),
    "random_uniform": lambda seed, k, shape, low, high, dtype: uniform(seed, shape, low, high, dtype, k),
}


@contextmanager
def seeded_draws(seed: Tensor) -> Iterator[list[str]]:
    """While active, the running capture's random ops in ``DRAWS`` draw from ``seed`` (a (1,) uint32
    tensor on the capture device); yields the list of ops drawn, in order."""
    backend = burn.ir.capture_device().backend
    drawn: list[str] = []

    def replacement(method: str) -> Callable[..., Any]:
        def draw(*args: Any) -> Any:
            drawn.append(method)
            return DRAWS[method](seed, len(drawn), *args).primitive

        return draw

    for method in DRAWS:
        setattr(backend, method, replacement(method))
    try:
        yield drawn
    finally:
        for method in DRAWS:
            delattr(backend, method)
