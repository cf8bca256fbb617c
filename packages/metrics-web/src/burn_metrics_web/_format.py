"""What the web renderer draws, as pure functions of a dashboard snapshot: HTML and console lines.

``snap`` is a ``burn_train.renderer.Snapshot`` (``DashboardState.snapshot()``); ``fmt(name, value)``
formats a metric value the way the metric shows it (percent, units). Every piece of text that goes
into HTML is escaped: metric names and status lines come from user code.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from burn_train.renderer import Snapshot, fmt_duration  # the web renderer needs burn-train anyway

SPLIT_ORDER = ("train", "valid")
Fmt = Callable[[str, float], str]


def bar(fraction: float, width: int = 20) -> str:
    """A text progress bar: ``bar(0.5, 10) == '#####-----'`` (fraction clamped to [0, 1])."""
    filled = int(min(1.0, max(0.0, fraction)) * width + 0.5)  # half up: 12.5% of 20 is 3 cells
    return "#" * filled + "-" * (width - filled)


def _active_splits(snap: Snapshot) -> list[str]:
    return [s for s in SPLIT_ORDER if snap.splits[s].progress.items_total > 0]


def progress_line(snap: Snapshot, split: str, width: int = 20) -> str:
    """``[train] 1/3 [##########----------]  50.0% 320/640 it 10 | Loss 0.35 (epoch 0.4) | eta 0:01``."""
    view = snap.splits[split]
    p = view.progress
    parts = [
        f"[{split}] {view.epoch}/{snap.epoch_total} [{bar(p.fraction, width)}] {100 * p.fraction:5.1f}% "
        f"{p.items_processed}/{p.items_total} it {view.iteration}"
    ]
    parts += [f"{entry.name} {entry.formatted}" for entry in view.entries.values()]
    parts.append(f"eta {fmt_duration(view.eta_seconds(snap.now))}")
    return " | ".join(parts)


def epoch_line(split: str, epoch: int, epoch_total: int, values: dict[str, float], fmt: Fmt) -> str:
    """``[valid] epoch 2/3 done | Loss 0.31 | Accuracy 91.20 %``."""
    parts = [f"[{split}] epoch {epoch}/{epoch_total} done"]
    parts += [f"{name} {fmt(name, value)}" for name, value in values.items()]
    return " | ".join(parts)


def _metric_names(snap: Snapshot) -> list[str]:
    names = list(snap.numeric)
    for split in SPLIT_ORDER:
        names += [n for n in snap.splits[split].entries if n not in names]
    return names


def _progress_table(snap: Snapshot) -> str:
    rows = []
    for split in _active_splits(snap):
        view = snap.splits[split]
        p = view.progress
        rows.append(
            f'<tr data-split="{split}"><td>{split}</td><td>{view.epoch}/{snap.epoch_total}</td>'
            f'<td><progress max="{p.items_total}" value="{p.items_processed}"></progress></td>'
            f"<td>{100 * p.fraction:.1f}%</td><td>{p.items_processed}/{p.items_total}</td>"
            f"<td>{view.iteration}</td><td>{fmt_duration(view.eta_seconds(snap.now))}</td></tr>"
        )
    head = "<tr><th>split</th><th>epoch</th><th>progress</th><th></th><th>items</th><th>iteration</th><th>ETA</th></tr>"
    return f'<table class="burn-progress">{head}{"".join(rows)}</table>'


def _metrics_table(snap: Snapshot) -> str:
    splits = _active_splits(snap)
    names = _metric_names(snap)
    if not names:
        return ""
    head = "<tr><th>metric</th>" + "".join(f"<th>{s}</th>" for s in splits) + "</tr>"
    rows = []
    for name in names:
        cells = []
        for split in splits:
            entry = snap.splits[split].entries.get(name)
            cells.append(f"<td>{escape(entry.formatted) if entry is not None else ''}</td>")
        rows.append(f'<tr data-metric="{escape(name)}"><td>{escape(name)}</td>{"".join(cells)}</tr>')
    return f'<table class="burn-metrics">{head}{"".join(rows)}</table>'


def _epochs_table(snap: Snapshot, fmt: Fmt) -> str:
    table: dict[tuple[int, str], dict[str, float]] = {}
    for name, per_split in snap.epochs.items():
        for split, points in per_split.items():
            for epoch, value in points:
                table.setdefault((epoch, split), {})[name] = value
    if not table:
        return ""
    names = list(snap.epochs)
    head = "<tr><th>epoch</th><th>split</th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    order = {s: i for i, s in enumerate(SPLIT_ORDER)}
    rows = []
    for epoch, split in sorted(table, key=lambda k: (k[0], order.get(k[1], 99), k[1])):
        values = table[(epoch, split)]
        cells = "".join(f"<td>{escape(fmt(n, values[n])) if n in values else ''}</td>" for n in names)
        rows.append(
            f'<tr data-epoch="{epoch}" data-split="{escape(split)}"><td>{epoch}</td><td>{escape(split)}</td>{cells}</tr>'
        )
    return f'<table class="burn-epochs">{head}{"".join(rows)}</table>'


def _status_list(snap: Snapshot) -> str:
    lines = [event.describe() for event in snap.autotune_active] + list(snap.status)
    if not lines:
        return ""
    return '<ul class="burn-status">' + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>"


def render_html(snap: Snapshot, fmt: Fmt) -> str:
    """The whole dashboard as one HTML fragment (progress, live metrics, epoch values, status)."""
    head = (
        f'<p class="burn-head">{escape(str(snap.mode))} &middot; epoch {snap.epoch}/{snap.epoch_total}'
        f" &middot; elapsed {fmt_duration(snap.elapsed)}</p>"
    )
    body = _progress_table(snap) + _metrics_table(snap) + _epochs_table(snap, fmt) + _status_list(snap)
    return f'<div class="burn-dashboard" data-mode="{escape(str(snap.mode))}">{head}{body}</div>'
