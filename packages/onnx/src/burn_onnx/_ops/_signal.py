"""Signal processing: DFT, STFT, the window generators and MelWeightMatrix.

DFT is two matmuls with cosine and sine matrices built on the host (exact zeros where the angle is a
multiple of a right angle), so it runs on every backend; it computes in float64 where the backend has it.
Windows and the mel filter bank depend only on scalar inputs: they are built on the host.
"""

from __future__ import annotations

import math
from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import op
from ._common import axis as norm_axis


def _angles(rows: int, cols: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2*pi*r*c/n for r < rows, c < cols, reduced modulo n first (exact at quarter
    turns: a symmetric signal's zero bins stay zero)."""
    turns = (np.arange(rows)[:, None] * np.arange(cols)[None, :]) % n
    angle = 2 * np.pi * turns / n
    cos, sin = np.cos(angle), np.sin(angle)
    cos[(4 * turns) % (2 * n) == n] = 0.0
    sin[(2 * turns) % n == 0] = 0.0
    return cos, sin


def _dft_last(
    ctx: Any, re: burn.Tensor, im: burn.Tensor | None, n: int, inverse: bool, onesided: bool
) -> tuple[burn.Tensor, burn.Tensor | None]:
    """The DFT of length ``n`` over the last dim of ``re + i im`` (zero-padded or truncated to ``n``):
    (real, imaginary); an inverse one-sided transform gives a real signal (imaginary None)."""
    length = re.shape[-1]
    work = burn.float64 if ctx.fit(burn.float64) is burn.float64 else re.dtype
    rows = length
    if inverse and onesided:  # Hermitian input: bins 1..n/2 stand for their mirror images too
        bins = min(length, n // 2 + 1)
        cos, sin = _angles(bins, n, n)
        weight = np.full((bins, 1), 2.0)
        weight[0] = 1.0
        if n % 2 == 0 and bins == n // 2 + 1:
            weight[-1] = 1.0
        cos, sin = cos * weight / n, sin * weight / n
        c, s = _matrix(cos, rows, re, work), _matrix(sin, rows, re, work)
        out = re.cast(work) @ c
        if im is not None:
            out = out - im.cast(work) @ s
        return out.cast(re.dtype), None
    cols = n // 2 + 1 if onesided else n
    cos, sin = _angles(min(length, n), cols, n)
    if inverse:
        cos, sin = cos / n, -sin / n
    c, s = _matrix(cos, rows, re, work), _matrix(sin, rows, re, work)
    r = re.cast(work)
    real, imag = r @ c, -(r @ s)
    if im is not None:
        i = im.cast(work)
        real, imag = real + i @ s, imag + i @ c
    return real.cast(re.dtype), imag.cast(re.dtype)


def _matrix(m: np.ndarray, rows: int, like: burn.Tensor, dtype: burn.DType) -> burn.Tensor:
    """``m`` (its rows the input positions used) as a (rows, cols) tensor; rows past it are zero
    (input truncated to the transform length)."""
    if m.shape[0] < rows:
        m = np.concatenate([m, np.zeros((rows - m.shape[0], m.shape[1]))])
    arr = m.astype(np.float64 if dtype is burn.float64 else np.float32)
    return burn.from_numpy(arr, device=like.device, dtype=dtype)


def _complex_parts(x: burn.Tensor) -> tuple[burn.Tensor, burn.Tensor | None]:
    """x (..., 1) or (..., 2): the real and imaginary parts without the last dim."""
    re = x.narrow(-1, 0, 1).squeeze(-1)
    im = x.narrow(-1, 1, 1).squeeze(-1) if x.shape[-1] == 2 else None
    return re, im


@op("DFT", since=17, host=(1, 2))
def dft(ctx: Any, node: Node, x: burn.Tensor, length: Any = None, axis_in: Any = None) -> burn.Tensor:
    """x (..., 1) real or (..., 2) complex; the transform runs along ``axis`` (opset 20: an input,
    default -2; before: an attribute, default 1); outputs (..., 2), or (..., 1) for an inverse
    one-sided transform."""
    inverse = bool(node.attrs.get("inverse", 0))
    onesided = bool(node.attrs.get("onesided", 0))
    if node.opset >= 20:
        a = int(ctx.scalar(axis_in, -2))
    else:
        a = int(node.attrs.get("axis", 1))
    a = norm_axis(a, x.ndim, node)
    if a == x.ndim - 1:
        raise ValueError("DFT: axis must not be the last dim (it holds the real and imaginary parts)")
    re, im = _complex_parts(x)
    if length is not None:
        n = int(ctx.scalar(length))
    else:
        n = 2 * (re.shape[a] - 1) if inverse and onesided else re.shape[a]
    last = re.ndim - 1
    if a != last:
        re = re.transpose(a, last)
        im = im.transpose(a, last) if im is not None else None
    real, imag = _dft_last(ctx, re, im, n, inverse, onesided)
    parts = [real] if imag is None else [real, imag]
    out = burn.stack(parts, -1)
    return out.transpose(a, last) if a != last else out


@op("STFT", since=17, host=(1, 3))
def stft(
    ctx: Any,
    node: Node,
    signal: burn.Tensor,
    frame_step: Any,
    window: burn.Tensor | None = None,
    frame_length: Any = None,
) -> burn.Tensor:
    """signal (B, L, 1 or 2) -> (B, frames, bins, 2): the DFT of each windowed frame."""
    step = int(ctx.scalar(frame_step))
    if frame_length is not None:
        size = int(ctx.scalar(frame_length))
    elif window is not None:
        size = window.shape[0]
    else:
        size = signal.shape[1]
    onesided = bool(node.attrs.get("onesided", 1))
    frames = 1 + (signal.shape[1] - size) // step
    if frames <= 0:
        raise ValueError(f"STFT: a signal of {signal.shape[1]} samples holds no frame of {size}")
    starts = np.arange(frames)[:, None] * step + np.arange(size)[None, :]
    index = burn.from_numpy(starts.reshape(-1), device=signal.device, dtype=signal.device.backend.default_int)
    b, _, parts = signal.shape
    framed = signal.select(1, index).reshape(b, frames, size, parts)
    if window is not None:
        framed = framed * window.cast(framed.dtype).reshape(1, 1, size, 1)
    re, im = _complex_parts(framed)
    real, imag = _dft_last(ctx, re, im, size, False, onesided)
    assert imag is not None
    return burn.stack([real, imag], -1)


# ------------------------------------------------------------------ windows and filter banks


def _window(name: str, size: int, periodic: bool) -> np.ndarray:
    n = np.arange(size, dtype=np.float64)
    span = size if periodic else size - 1
    phase = 2 * np.pi * n / span if span else np.zeros_like(n)
    if name == "HannWindow":
        return np.sin(phase / 2) ** 2
    if name == "HammingWindow":
        alpha = 25.0 / 46.0
        return alpha - (1 - alpha) * np.cos(phase)
    return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)


@op("HannWindow", "HammingWindow", "BlackmanWindow", since=17, host=(0,))
def window(ctx: Any, node: Node, size: Any) -> burn.Tensor:
    periodic = bool(node.attrs.get("periodic", 1))
    values = _window(node.op_type, int(ctx.scalar(size)), periodic)
    return ctx.tensor(values, ctx.dtype(int(node.attrs.get("output_datatype", 1))))


@op("MelWeightMatrix", since=17, host=(0, 1, 2, 3, 4))
def mel_weight_matrix(
    ctx: Any, node: Node, bins: Any, dft_length: Any, rate: Any, low: Any, high: Any
) -> burn.Tensor:
    """(dft_length // 2 + 1, num_mel_bins) triangular filters evenly spaced on the mel scale."""
    n_mel, n_dft, sample_rate = int(ctx.scalar(bins)), int(ctx.scalar(dft_length)), int(ctx.scalar(rate))

    def mel(hz: float) -> float:
        return 2595 * math.log1p(hz / 700) / math.log(10)

    lo, hi = mel(float(ctx.scalar(low))), mel(float(ctx.scalar(high)))
    points = np.arange(n_mel + 2) * ((hi - lo) / (n_mel + 2)) + lo
    hz = 700 * np.expm1(points / 2595 * np.log(10))
    edges = (((n_dft + 1) * hz) // sample_rate).astype(np.int64)
    out = np.zeros((n_dft // 2 + 1, n_mel))
    for i in range(n_mel):
        left, centre, right = edges[i], edges[i + 1], edges[i + 2]
        if centre == left:
            out[centre, i] = 1.0
        else:
            j = np.arange(left, centre + 1)
            out[j, i] = (j - left) / (centre - left)
        if right > centre:
            j = np.arange(centre, right)
            out[j, i] = (right - j) / (right - centre)
    return ctx.tensor(out, ctx.dtype(int(node.attrs.get("output_datatype", 1))))
