"""LearnerSummary: per split, each metric's best/worst epoch values, and the best epoch overall."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MetricSummary:
    """One metric on one split: min and max epoch values and the epochs they happened in."""

    name: str
    minimum: float
    min_epoch: int
    maximum: float
    max_epoch: int
    last: float
    higher_is_better: bool
    unit: str = ""  # what the text table shows the values in ("%": fractions times 100)
    scale: float = 1.0


@dataclass
class LearnerSummary:
    """What ``Learner.fit`` reports at the end (``str(summary)`` is a text table).

    ``epochs`` counts every epoch in the history, resumed ones included; ``duration_s`` is the time of
    this run only. A resumed run (``resumed_from``: the checkpoint epoch it continued from) says so.
    ``completed``: the last epoch that ran to its end (None: every epoch in the history did); an epoch
    cut short by an interrupt is not counted, and the best epoch is chosen among completed ones.
    ``checkpointed``: the epochs with a checkpoint when fit ended; ``detail``: why it stopped early, as
    the run printed it (``"stopped from the dashboard"``); ``device``: what it trained on;
    ``startup``: what starting cost (``first_step_s`` until the first training step returned; ``tune_s``
    tuning kernels; ``compile_s`` waiting for kernel compiles, from the start of fit to its end; on fused
    devices ``plan_s`` planning streams, first launches and compiles included,
    and ``capture_s`` capturing graphs).
    """

    epochs: int
    duration_s: float
    reason: str
    splits: dict[str, list[MetricSummary]] = field(default_factory=dict)
    best_metric: str | None = None
    best_split: str | None = None
    best_epoch: int | None = None
    best_value: float | None = None
    resumed_from: int | None = None
    completed: int | None = None
    checkpointed: list[int] = field(default_factory=list)
    detail: str = ""
    device: str = ""
    startup: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_store(
        cls,
        store: Any,
        duration_s: float,
        reason: str,
        best: tuple[str, str] | None = None,
        resumed_from: int | None = None,
        units: dict[str, tuple[str, float]] | None = None,
        completed: int | None = None,
    ) -> LearnerSummary:
        """The summary of ``store``'s epoch values; ``units`` maps a metric to the ``(unit, scale)`` the
        text table shows it in (``metric.display_unit``); ``to_dict`` keeps the raw values."""
        splits: dict[str, list[MetricSummary]] = {}
        epochs = 0
        for split, metrics in store.values.items():
            rows = []
            for name, series in metrics.items():
                if completed is not None:  # an epoch an interrupt cut short is no epoch of the run
                    series = {e: v for e, v in series.items() if e <= completed}
                finite = {e: v for e, v in series.items() if not math.isnan(v)}
                epochs = max([epochs, *series])
                if not finite:
                    continue
                lo = min(finite, key=lambda e: (finite[e], e))
                hi = max(finite, key=lambda e: (finite[e], -e))
                last = series[max(series)]
                higher = store.higher_is_better.get(name, False)
                unit, scale = (units or {}).get(name, ("", 1.0))
                rows.append(MetricSummary(name, finite[lo], lo, finite[hi], hi, last, higher, unit, scale))
            if rows:
                splits[split] = rows
        if completed is not None:
            epochs = min(epochs, completed)
        summary = cls(epochs, duration_s, reason, splits, resumed_from=resumed_from, completed=completed)
        if best is not None:
            name, split = best
            for row in splits.get(split, []):
                if row.name == name:
                    summary.best_metric, summary.best_split = name, split
                    summary.best_epoch = row.max_epoch if row.higher_is_better else row.min_epoch
                    summary.best_value = row.maximum if row.higher_is_better else row.minimum
        return summary

    @property
    def why(self) -> str:
        """The reason with its detail: ``interrupted: stopped from the dashboard``."""
        if not self.detail or self.detail == self.reason:
            return self.reason
        return self.detail if self.detail.startswith(self.reason) else f"{self.reason}: {self.detail}"

    def resume_hint(self) -> str:
        """``completed: epochs 1-5; checkpoints kept: epochs 1, 4, 5; resume from the checkpoint of epoch
        5`` for a run that stopped early with a checkpoint, else ''. The kept epochs are listed as they
        are (the policy prunes), not as a range that reads as if every epoch were saved."""
        if self.reason == "completed" or not self.checkpointed:
            return ""
        last = max(self.checkpointed)
        done = f"epochs 1-{self.epochs}" if self.epochs > 1 else f"epoch {self.epochs}"
        kept = ", ".join(str(e) for e in sorted(self.checkpointed))
        kept = f"epochs {kept}" if len(self.checkpointed) > 1 else f"epoch {kept}"
        return f"completed: {done}; checkpoints kept: {kept}; resume from the checkpoint of epoch {last}"

    def headline(self) -> str:
        """``Training summary: 8 epoch(s) in 12.3 s (completed)``; for a resumed run the duration is
        that of the epochs this run trained, and the line says so."""
        on = f" on {self.device}" if self.device else ""
        if self.resumed_from is None:
            return f"Training summary: {self.epochs} epoch(s){on} in {self.duration_s:.1f} s ({self.why})"
        first = self.resumed_from + 1
        ran = f"epochs {first}-{self.epochs}" if self.epochs > first else f"epoch {first}"
        if self.epochs < first:
            ran = "no complete epoch"
        return (
            f"Training summary: {self.epochs} epoch(s){on} ({self.why}); resumed from the checkpoint of "
            f"epoch {self.resumed_from}: this run trained {ran} in {self.duration_s:.1f} s"
        )

    def startup_line(self) -> str:
        """``Start-up: first step after 4.1 s (tuning 1.2 s, compiles 0.9 s, planning and compiling 2.3 s,
        graph capture 0.6 s)``, or '' when nothing was measured. Compiles: the seconds training waited for
        kernel compiles (part of planning's seconds on a fused device)."""
        s = self.startup
        if "first_step_s" not in s:
            return ""
        parts = [f"tuning {s.get('tune_s', 0.0):.1f} s"]
        if "compile_s" in s:
            parts.append(f"compiles {s['compile_s']:.1f} s")
        if "plan_s" in s:
            parts.append(f"planning and compiling {s['plan_s']:.1f} s")
        if "capture_s" in s:
            parts.append(f"graph capture {s['capture_s']:.1f} s")
        return f"Start-up: first step after {s['first_step_s']:.1f} s ({', '.join(parts)})"

    def __str__(self) -> str:
        lines = [self.headline()]
        if self.startup_line():
            lines.append(self.startup_line())
        if self.resume_hint():
            lines.append(self.resume_hint())
        for split, rows in self.splits.items():
            names = [f"{r.name} ({r.unit})" if r.unit else r.name for r in rows]
            width = max(len("Metric"), *(len(n) for n in names))
            lines.append("")
            lines.append(f"| Split: {split}")
            lines.append(
                f"| {'Metric':<{width}} | {'Min.':>10} | Epoch | {'Max.':>10} | Epoch | {'Last':>10} |"
            )
            lines.append(f"|{'-' * (width + 2)}|{'-' * 12}|-------|{'-' * 12}|-------|{'-' * 12}|")
            for r, label in zip(rows, names):
                lo, hi, last = r.minimum * r.scale, r.maximum * r.scale, r.last * r.scale
                lines.append(
                    f"| {label:<{width}} | {lo:>10.5g} | {r.min_epoch:>5} | {hi:>10.5g} | "
                    f"{r.max_epoch:>5} | {last:>10.5g} |"
                )
        if self.best_epoch is not None:
            lines.append("")
            lines.append(
                f"Best epoch: {self.best_epoch} ({self.best_split} {self.best_metric} = {self.best_value:.5g})"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "epochs": self.epochs,
            "duration_s": self.duration_s,
            "reason": self.reason,
            "detail": self.detail,
            "device": self.device,
            "completed_epochs": self.epochs,
            "checkpointed_epochs": list(self.checkpointed),
            "resumed_from": self.resumed_from,
            "best": {
                "metric": self.best_metric,
                "split": self.best_split,
                "epoch": self.best_epoch,
                "value": self.best_value,
            },
            "splits": {s: [r.__dict__ for r in rows] for s, rows in self.splits.items()},
            "startup": dict(self.startup),
        }

    def save(self, directory: str) -> list[str]:
        """Write ``summary.txt`` and ``summary.json`` into ``directory``; returns the paths."""
        os.makedirs(directory, exist_ok=True)
        txt, js = os.path.join(directory, "summary.txt"), os.path.join(directory, "summary.json")
        with open(txt, "w", encoding="utf-8") as handle:
            handle.write(str(self) + "\n")
        with open(js, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2, allow_nan=True)
        return [txt, js]
