"""Metric logs as CSV files under the artifact directory (numpy-free).

- ``<dir>/<split>/epoch-<n>/metrics.csv``: one row per batch: iteration, items, every metric's
  batch value (a new epoch file is written from scratch, so a resumed run replaces partial ones).
  Columns carry the unit: ``Loss,Accuracy (%),CPU Memory (GiB),Iteration Speed (iter/s)``.
- ``<dir>/<split>/epochs.csv``: one row per epoch and metric: ``epoch,metric,value,unit``.

Values are written in the unit they are labelled with: percent metrics (fractions in the store) as
percentages. ``read_epochs_csv(path, scales)`` turns them back into store values for a resume.
Files of older versions (``epoch,metric,value``, raw values) are still read, and appended to in their
own format.
"""

from __future__ import annotations

import csv
import os
from typing import IO, Any

from .._events import TrainingProgress


class CsvMetricLogger:
    """Writes per-batch and per-epoch metric values; used by the event processor."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        self._files: dict[str, tuple[IO[str], Any, int]] = {}  # split -> (file, writer, epoch)
        self.units: dict[str, tuple[str, float]] = {}  # metric name -> (unit, scale)

    def set_units(self, units: dict[str, tuple[str, float]]) -> None:
        """``{metric: (unit, scale)}`` (the hub calls this at the start of fit; see ``display_unit``)."""
        self.units.update(units)

    def _unit(self, name: str, entry: Any = None) -> tuple[str, float]:
        if name in self.units:
            return self.units[name]
        return (getattr(entry, "unit", "") or "", 1.0)

    def _column(self, name: str, entry: Any = None) -> str:
        unit = self._unit(name, entry)[0]
        return f"{name} ({unit})" if unit else name

    def _writer(self, split: str, epoch: int, columns: list[str]) -> Any:
        current = self._files.get(split)
        if current is not None and current[2] == epoch:
            return current[1]
        if current is not None:
            current[0].close()
        folder = os.path.join(self.directory, split, f"epoch-{epoch}")
        os.makedirs(folder, exist_ok=True)
        handle = open(os.path.join(folder, "metrics.csv"), "w", newline="", encoding="utf-8")
        writer = csv.DictWriter(handle, fieldnames=["iteration", "items", *columns], extrasaction="ignore")
        writer.writeheader()
        self._files[split] = (handle, writer, epoch)
        return writer

    def log_item(self, split: str, progress: TrainingProgress, entries: list[Any]) -> None:
        columns = [self._column(e.name, e) for e in entries]
        row: dict[str, int | str] = {
            "iteration": progress.iteration,
            "items": progress.progress.items_processed,
        }
        for column, e in zip(columns, entries):
            row[column] = _scaled(e.value, self._unit(e.name, e)[1])
        self._writer(split, progress.epoch, columns).writerow(row)

    def end_epoch(self, split: str, epoch: int, values: dict[str, float]) -> None:
        current = self._files.pop(split, None)
        if current is not None:
            current[0].close()
        folder = os.path.join(self.directory, split)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "epochs.csv")
        fresh = not os.path.exists(path)
        with_units = fresh or _header(path) == EPOCHS_HEADER  # keep an older file's format
        with open(path, "a", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if fresh:
                writer.writerow(EPOCHS_HEADER)
            for name, value in values.items():
                if with_units:
                    unit, scale = self._unit(name)
                    writer.writerow([epoch, name, _scaled(value, scale), unit])
                else:
                    writer.writerow([epoch, name, repr(float(value))])

    def close(self) -> None:
        for handle, _, _ in self._files.values():
            handle.close()
        self._files.clear()


EPOCHS_HEADER = ["epoch", "metric", "value", "unit"]


def _scaled(value: float, scale: float) -> str:
    """``value * scale`` as text: exact (repr) when unscaled; 15 digits when scaled, so 0.55 reads
    ``55.0``, not ``55.00000000000001``."""
    if scale == 1.0:
        return repr(float(value))
    return repr(float(f"{float(value) * scale:.15g}"))


def _header(path: str) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle), [])


def read_epochs_csv(
    path: str | os.PathLike[str], scales: dict[str, float] | None = None
) -> dict[str, dict[int, float]]:
    """``{metric: {epoch: value}}`` from an ``epochs.csv`` (the last row wins for repeated epochs); a row
    that is not one is a ``burn.RecordError`` naming the file and line.

    Values are returned as written (percent metrics in %), or, given ``scales`` (``{metric: scale}``,
    see ``display_unit``), divided back into the metric's own values (fractions) where the row has a
    unit column; rows of older files (no unit column) hold raw values already.
    """
    out: dict[str, dict[int, float]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            try:
                name, value, epoch = row["metric"], float(row["value"]), int(row["epoch"])
            except (KeyError, TypeError, ValueError):
                import burn

                raise burn.RecordError(
                    f"{os.fspath(path)}: line {reader.line_num} is not an epochs.csv row (expected the "
                    "columns epoch,metric,value with a whole epoch and a number)"
                ) from None
            if scales and row.get("unit") is not None:
                value /= scales.get(name, 1.0)
            out.setdefault(name, {})[epoch] = value
    return out


def truncate_epochs_csv(path: str, last_epoch: int) -> None:
    """Drop the rows of epochs after ``last_epoch`` from an ``epochs.csv`` (atomically): a run resumed
    from that epoch's checkpoint trains the later ones again and appends their rows anew."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        return
    kept = [rows[0]] + [r for r in rows[1:] if r and r[0].isdigit() and int(r[0]) <= last_epoch]
    if len(kept) == len(rows):
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(kept)
    os.replace(tmp, path)
