"""The text summary labels metrics with their units and shows percent metrics in percent, as the
dashboard, CSVs and plots do; summary.json keeps the raw values."""

from __future__ import annotations

from burn_train.learner import LearnerSummary
from burn_train.processor import EventStore


def test_summary_table_has_units_and_json_keeps_raw_values():
    store = EventStore()
    store.record("valid", 1, "Accuracy", 0.5)
    store.record("valid", 2, "Accuracy", 0.75)
    store.record("train", 1, "CPU Memory", 0.5)
    store.record("train", 1, "Loss", 1.25)
    units = {"Accuracy": ("%", 100.0), "CPU Memory": ("GiB", 1.0), "Loss": ("", 1.0)}
    summary = LearnerSummary.from_store(store, 1.0, "completed", units=units)
    text = str(summary)
    assert "| Accuracy (%) |         50 |     1 |         75 |     2 |         75 |" in text
    assert "| CPU Memory (GiB) |        0.5 |" in text
    assert "| Loss             |       1.25 |" in text
    raw = {r["name"]: r for rows in summary.to_dict()["splits"].values() for r in rows}
    assert raw["Accuracy"]["maximum"] == 0.75 and raw["Accuracy"]["unit"] == "%"
    assert str(LearnerSummary.from_store(store, 1.0, "completed")).count("(%)") == 0  # no units given
