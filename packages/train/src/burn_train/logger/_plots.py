"""PNG plots of every numeric metric at the end of training (matplotlib, optional)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from typing import Any


def plots_available() -> tuple[bool, str]:
    if find_spec("matplotlib") is None:
        return False, "matplotlib is not installed (pip install 'burn-train[plots]')"
    return True, ""


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "metric"


def save_plots(
    store: Any,
    history: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]],
    directory: str,
    units: dict[str, tuple[str, float]] | None = None,
) -> list[str]:
    """One PNG per metric: batch values (thin lines) and epoch values (markers) of train and valid.

    ``store`` is the processor's EventStore; ``history`` maps metric -> split -> (x, value) points;
    ``units`` maps metric -> ``(unit, scale)`` (see ``metric.display_unit``): values are plotted times
    ``scale`` and the y axis reads ``Accuracy (%)``. Returns the paths written.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure  # a Figure without pyplot: no global state, thread-safe

    os.makedirs(directory, exist_ok=True)
    names = list(dict.fromkeys([*history, *store.metric_names("train"), *store.metric_names("valid")]))
    written = []
    colours = {"train": "tab:blue", "valid": "tab:orange"}
    # one figure for every metric: its axes, ticks and grid are made once and only the lines, the
    # limits and the labels change (making them again per metric cost about a third of the time)
    fig = Figure(figsize=(7, 4), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xlabel("epoch")
    ax.grid(alpha=0.3)
    for name in names:
        for line in list(ax.get_lines()):
            line.remove()
        unit, scale = (units or {}).get(name, ("", 1.0))
        drawn = False
        for split, colour in colours.items():
            points = history.get(name, {}).get(split, [])
            if points:
                ax.plot([p[0] for p in points], [p[1] * scale for p in points], color=colour, alpha=0.35,
                        lw=0.8, label=f"{split} (batch)")  # fmt: skip
                drawn = True
            epochs = store.values.get(split, {}).get(name, {})
            if epochs:
                xs = sorted(epochs)
                ax.plot(xs, [epochs[e] * scale for e in xs], "o-", color=colour, label=f"{split} (epoch)")
                drawn = True
        if not drawn:
            continue
        label = f"{name} ({unit})" if unit else name
        ax.relim()
        ax.autoscale_view()
        ax.set_title(name)
        ax.set_ylabel(label)
        ax.legend(loc="best", fontsize="small")  # replaces the previous metric's legend
        path = os.path.join(directory, f"{_slug(name)}.png")
        # zlib level 1: a fifth of the encoding time of the default (6) for files ~25% larger
        fig.savefig(path, pil_kwargs={"compress_level": 1})
        written.append(path)
    return written
