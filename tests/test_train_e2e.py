"""End to end across packages: burn.data digits -> burn.nn CNN on autodiff -> burn_train Learner."""

from __future__ import annotations

import csv
import os
import time

import pytest

pytest.importorskip("burn_train")
pytest.importorskip("burn_autodiff")


def test_digits_example_trains_and_writes_artifacts(tmp_path, capsys):
    from burn_train.examples.digits import main

    started = time.monotonic()
    accuracy = main(
        [
            "--epochs",
            "2",
            "--limit",
            "320",
            "--artifacts",
            str(tmp_path),
            "--renderer",
            "cli",
            "--batch-size",
            "32",
        ]
    )
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert elapsed < 20, f"the tiny fit took {elapsed:.1f} s"
    assert f"final valid accuracy: {100 * accuracy:.2f} %" in out
    assert accuracy > 0.5  # 2 short epochs on 320 digits: far above chance (0.1)
    with open(tmp_path / "valid" / "epochs.csv", newline="") as handle:
        rows = {(int(r["epoch"]), r["metric"]): float(r["value"]) for r in csv.DictReader(handle)}
    assert rows[(2, "Accuracy")] == pytest.approx(accuracy)
    assert rows[(2, "Loss")] < rows[(1, "Loss")] * 1.5
    assert sorted(n for n in os.listdir(tmp_path / "checkpoint") if n.startswith("state-"))
    assert (tmp_path / "summary.txt").exists() and (tmp_path / "experiment.log").exists()
    if (tmp_path / "plots").exists():
        assert "loss.png" in os.listdir(tmp_path / "plots")
