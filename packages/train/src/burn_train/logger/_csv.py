"""Metric logs as CSV files under the artifact directory (numpy-free).

- ``<dir>/<split>/epoch-<n>/metrics.csv``: one row per batch: iteration, items, every metric's
  batch value (a new epoch file is written from scratch, so a resumed run replaces partial ones).
- ``<dir>/<split>/epochs.csv``: one row per epoch and metric: ``epoch,metric,value``.
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

    def _writer(self, split: str, epoch: int, names: list[str]) -> Any:
        current = self._files.get(split)
        if current is not None and current[2] == epoch:
            return current[1]
        if current is not None:
            current[0].close()
        folder = os.path.join(self.directory, split, f"epoch-{epoch}")
        os.makedirs(folder, exist_ok=True)
        handle = open(os.path.join(folder, "metrics.csv"), "w", newline="", encoding="utf-8")
        writer = csv.DictWriter(handle, fieldnames=["iteration", "items", *names], extrasaction="ignore")
        writer.writeheader()
        self._files[split] = (handle, writer, epoch)
        return writer

    def log_item(self, split: str, progress: TrainingProgress, entries: list[Any]) -> None:
        names = [e.name for e in entries]
        row = {"iteration": progress.iteration, "items": progress.progress.items_processed}
        row.update({e.name: repr(float(e.value)) for e in entries})
        self._writer(split, progress.epoch, names).writerow(row)

    def end_epoch(self, split: str, epoch: int, values: dict[str, float]) -> None:
        current = self._files.pop(split, None)
        if current is not None:
            current[0].close()
        folder = os.path.join(self.directory, split)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "epochs.csv")
        fresh = not os.path.exists(path)
        with open(path, "a", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if fresh:
                writer.writerow(["epoch", "metric", "value"])
            for name, value in values.items():
                writer.writerow([epoch, name, repr(float(value))])

    def close(self) -> None:
        for handle, _, _ in self._files.values():
            handle.close()
        self._files.clear()


def read_epochs_csv(path: str | os.PathLike[str]) -> dict[str, dict[int, float]]:
    """``{metric: {epoch: value}}`` from an ``epochs.csv`` (the last row wins for repeated epochs)."""
    out: dict[str, dict[int, float]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            out.setdefault(row["metric"], {})[int(row["epoch"])] = float(row["value"])
    return out
