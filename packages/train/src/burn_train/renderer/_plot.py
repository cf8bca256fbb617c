"""A small line chart drawn with braille characters (2x4 dots per cell), pure Python.

``braille_chart(series, width, height)`` returns rows of ``(text, style)`` runs so the TUI can colour
each series; ``chart_text`` joins them for tests and plain output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Series = Mapping[str, Sequence[tuple[float, float]]]  # split name -> (x, y) points

# Bit of each dot in a braille cell, indexed [row][col] (Unicode braille patterns, U+2800 base).
_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
_BRAILLE = 0x2800


def _finite(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]


def _line(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """Pixels of a straight segment (Bresenham), both ends included."""
    pixels = []
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        pixels.append((x0, y0))
        if x0 == x1 and y0 == y1:
            return pixels
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def bounds(series: Series) -> tuple[float, float, float, float] | None:
    """(x_min, x_max, y_min, y_max) over every finite point, padded so a flat line is drawable."""
    pts = [p for points in series.values() for p in _finite(points)]
    if not pts:
        return None
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1.0
    if y1 == y0:
        pad = abs(y0) * 0.05 or 1.0
        y0, y1 = y0 - pad, y1 + pad
    return x0, x1, y0, y1


def braille_chart(series: Series, width: int, height: int) -> list[list[tuple[str, str]]]:
    """Rows (top first) of (text, series-name-or-"") runs drawing every series in a width x height box."""
    width, height = max(1, width), max(1, height)
    box = bounds(series)
    masks: dict[str, list[list[int]]] = {name: [[0] * width for _ in range(height)] for name in series}
    if box is not None:
        x_min, x_max, y_min, y_max = box
        px_w, px_h = 2 * width, 4 * height

        def to_px(x: float, y: float) -> tuple[int, int]:
            col = round((x - x_min) / (x_max - x_min) * (px_w - 1))
            row = round((y_max - y) / (y_max - y_min) * (px_h - 1))
            return min(max(col, 0), px_w - 1), min(max(row, 0), px_h - 1)

        for name, points in series.items():
            points = _finite(points)
            stride = len(points) // (4 * width)
            if stride > 1:  # more points than pixels: thin them, keeping the newest
                points = points[::-1][::stride][::-1]
            pixels = [to_px(x, y) for x, y in points]
            mask = masks[name]
            segments = zip(pixels, pixels[1:]) if len(pixels) > 1 else [(p, p) for p in pixels]
            for (c0, r0), (c1, r1) in segments:
                for c, r in _line(c0, r0, c1, r1):
                    mask[r // 4][c // 2] |= _DOT_BITS[r % 4][c % 2]
    rows = []
    for r in range(height):
        runs: list[tuple[str, str]] = []
        for c in range(width):
            owner, bits = "", 0
            for name, mask in masks.items():  # later series draw over earlier ones
                if mask[r][c]:
                    owner, bits = name, bits | mask[r][c]
            char = chr(_BRAILLE + bits) if bits else " "
            if runs and runs[-1][1] == owner:
                runs[-1] = (runs[-1][0] + char, owner)
            else:
                runs.append((char, owner))
        rows.append(runs)
    return rows


def chart_text(series: Series, width: int, height: int) -> str:
    """The chart as plain text (one line per row)."""
    return "\n".join("".join(text for text, _ in row) for row in braille_chart(series, width, height))


def recent(points: list[tuple[float, float]], count: int) -> list[tuple[float, float]]:
    return points[-count:]
