"""Which checkpoints to keep: the last N, the best epoch by a metric, or the union of several.

A policy answers ``keep(epochs, store) -> set of epochs``; the checkpointer deletes the others.
"""

from __future__ import annotations

from typing import Any


class CheckpointPolicy:
    """Base class: keep every checkpoint."""

    def keep(self, epochs: list[int], store: Any) -> set[int]:
        return set(epochs)


class KeepLastN(CheckpointPolicy):
    """Keep the ``n`` most recent epochs."""

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"KeepLastN: n must be an int >= 1, got {n!r}")
        self.n = n

    def keep(self, epochs: list[int], store: Any) -> set[int]:
        return set(sorted(epochs)[-self.n :])

    def __repr__(self) -> str:
        return f"KeepLastN({self.n})"


class KeepBest(CheckpointPolicy):
    """Keep the epoch with the best epoch value of ``metric`` on ``split``.

    ``higher_is_better`` defaults to the metric's own direction (Loss: lower, Accuracy: higher).
    Before any value is known, nothing is kept on its account.
    """

    def __init__(
        self, metric: str = "Loss", split: str = "valid", higher_is_better: bool | None = None
    ) -> None:
        self.metric, self.split, self.higher_is_better = metric, split, higher_is_better

    def best_epoch(self, epochs: list[int], store: Any) -> int | None:
        values = {e: store.value(self.split, self.metric, e) for e in epochs}
        values = {e: v for e, v in values.items() if v is not None and v == v}
        if not values:
            return None
        higher = self.higher_is_better
        if higher is None:
            higher = store.higher_is_better.get(self.metric, False)
        # ties go to the earliest epoch: a later equal value is no improvement
        return min(values, key=lambda e: ((-values[e] if higher else values[e]), e))

    def keep(self, epochs: list[int], store: Any) -> set[int]:
        best = self.best_epoch(epochs, store)
        return set() if best is None else {best}

    def __repr__(self) -> str:
        return f"KeepBest({self.metric!r}, split={self.split!r})"


class ComposedPolicy(CheckpointPolicy):
    """Keep what any of ``policies`` keeps (Burn's default: last 2 plus the best valid loss)."""

    def __init__(self, *policies: CheckpointPolicy) -> None:
        if not policies:
            raise ValueError("ComposedPolicy: give at least one policy")
        self.policies = policies

    def keep(self, epochs: list[int], store: Any) -> set[int]:
        kept: set[int] = set()
        for policy in self.policies:
            kept |= policy.keep(epochs, store)
        return kept

    def __repr__(self) -> str:
        return f"ComposedPolicy{self.policies!r}"
