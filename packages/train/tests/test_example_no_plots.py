"""The digits example's --no-plots: the same training, no PNG files (the CSV logs keep every value)."""

from __future__ import annotations

import os

import pytest
from burn_train.examples import digits


def test_no_plots_skips_the_pngs_only(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    common = ["--epochs", "1", "--limit", "64", "--renderer", "none", "--batch-size", "16"]
    with_plots = digits.main([*common, "--artifacts", str(tmp_path / "a")])
    without = digits.main([*common, "--artifacts", str(tmp_path / "b"), "--no-plots"])
    assert without == with_plots  # same seed, same training
    assert os.listdir(tmp_path / "a" / "plots")
    assert not os.path.exists(tmp_path / "b" / "plots")
    assert os.path.exists(tmp_path / "b" / "train" / "epochs.csv")
    assert digits.parse_args(["--no-plots"]).no_plots is True and digits.parse_args([]).no_plots is False
