"""Autotune events collected for a test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def autotune_events() -> Iterator[list[Any]]:
    """Every ``burn.autotune.AutotuneEvent`` published inside the block, in order (the subscription
    ends with the block)."""
    from burn import autotune

    seen: list[Any] = []
    unsubscribe = autotune.subscribe(seen.append)
    try:
        yield seen
    finally:
        unsubscribe()
