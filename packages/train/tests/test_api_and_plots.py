"""The public names API.md promises, lazy imports, CSV reading and PNG plots."""

from __future__ import annotations

import subprocess
import sys

import burn_train
import burn_train.metric
import pytest
from burn_train.logger import CsvMetricLogger, plots_available, read_epochs_csv, save_plots
from burn_train.processor import EventStore

API_TRAIN = {"LearnerBuilder", "TrainOutput", "ClassificationOutput"}
API_METRIC = {
    "LossMetric", "AccuracyMetric", "TopKAccuracyMetric", "PrecisionMetric", "RecallMetric", "FBetaScoreMetric",
    "AurocMetric", "HammingScore", "LearningRateMetric", "IterationSpeedMetric", "CpuUse", "CpuMemory",
}  # fmt: skip


def test_api_md_names_are_exported():
    assert API_TRAIN <= set(burn_train.__all__)
    assert API_METRIC <= set(burn_train.metric.__all__)
    for name in burn_train.__all__:
        assert getattr(burn_train, name) is not None


def test_import_burn_train_is_lazy():
    code = "import sys, burn_train; print(sorted(m for m in ('numpy', 'rich', 'psutil', 'burn_train.learner') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_csv_logger_round_trip(tmp_path):
    from burn_train._events import Progress, TrainingProgress
    from burn_train.metric import MetricEntry

    logger = CsvMetricLogger(tmp_path)
    for i in range(3):
        tp = TrainingProgress(Progress(i + 1, 3), 1, 1, i + 1)
        logger.log_item("train", tp, [MetricEntry("Loss", 1.0 / (i + 1), 0.0, "")])
    logger.end_epoch("train", 1, {"Loss": 0.5})
    logger.end_epoch("train", 1, {"Loss": 0.25})  # a resumed run re-writing epoch 1: the last row wins
    logger.close()
    lines = (tmp_path / "train" / "epoch-1" / "metrics.csv").read_text().splitlines()
    assert lines[0] == "iteration,items,Loss" and lines[2] == "2,2,0.5"
    assert read_epochs_csv(tmp_path / "train" / "epochs.csv") == {"Loss": {1: 0.25}}


def test_csv_logs_carry_units_and_read_back_as_metric_values(tmp_path):
    from burn_train._events import Progress, TrainingProgress
    from burn_train.metric import AccuracyMetric, CpuMemory, LossMetric, MetricEntry
    from burn_train.metric._base import display_unit

    units = {m.name: display_unit(m) for m in (LossMetric(), AccuracyMetric(), CpuMemory())}
    assert units == {"Loss": ("", 1.0), "Accuracy": ("%", 100.0), "CPU Memory": ("GiB", 1.0)}
    logger = CsvMetricLogger(tmp_path)
    logger.set_units(units)
    tp = TrainingProgress(Progress(1, 1), 1, 1, 1)
    entries = [MetricEntry("Loss", 0.5, 0.5, ""), MetricEntry("Accuracy", 0.55, 0.55, ""), MetricEntry("CPU Memory", 1.5, 1.5, "", unit="GiB")]  # fmt: skip
    logger.log_item("train", tp, entries)
    logger.end_epoch("train", 1, {"Loss": 0.5, "Accuracy": 0.55, "CPU Memory": 1.5})
    logger.close()
    lines = (tmp_path / "train" / "epoch-1" / "metrics.csv").read_text().splitlines()
    assert lines == ["iteration,items,Loss,Accuracy (%),CPU Memory (GiB)", "1,1,0.5,55.0,1.5"]
    epochs = (tmp_path / "train" / "epochs.csv").read_text().splitlines()
    assert epochs == ["epoch,metric,value,unit", "1,Loss,0.5,", "1,Accuracy,55.0,%", "1,CPU Memory,1.5,GiB"]
    path = tmp_path / "train" / "epochs.csv"
    assert read_epochs_csv(path)["Accuracy"] == {1: 55.0}  # as written
    scales = {name: scale for name, (_, scale) in units.items()}
    assert read_epochs_csv(path, scales) == {"Loss": {1: 0.5}, "Accuracy": {1: 0.55}, "CPU Memory": {1: 1.5}}


def test_an_older_epochs_csv_keeps_its_format(tmp_path):
    (tmp_path / "valid").mkdir()
    path = tmp_path / "valid" / "epochs.csv"
    path.write_text("epoch,metric,value\n1,Accuracy,0.5\n")  # before units: raw fractions
    logger = CsvMetricLogger(tmp_path)
    logger.set_units({"Accuracy": ("%", 100.0)})
    logger.end_epoch("valid", 2, {"Accuracy": 0.75})
    assert path.read_text().splitlines() == ["epoch,metric,value", "1,Accuracy,0.5", "2,Accuracy,0.75"]
    assert read_epochs_csv(path, {"Accuracy": 100.0}) == {"Accuracy": {1: 0.5, 2: 0.75}}


def test_plots_label_the_unit(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    labels = []
    real_savefig = Figure.savefig

    def savefig(self, *args, **kwargs):
        ax = self.axes[0]
        labels.append(
            (ax.get_ylabel(), ax.get_xlabel(), max(max(line.get_ydata()) for line in ax.get_lines()))
        )
        return real_savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    store = EventStore()
    for epoch, (loss, acc) in enumerate([(1.0, 0.5), (0.5, 0.75)], start=1):
        store.record("valid", epoch, "Loss", loss)
        store.record("valid", epoch, "Accuracy", acc)
    save_plots(store, {}, str(tmp_path), units={"Accuracy": ("%", 100.0), "Loss": ("", 1.0)})
    assert labels == [("Loss", "epoch", 1.0), ("Accuracy (%)", "epoch", 75.0)]


def test_plots_are_png_files(tmp_path):
    pytest.importorskip("matplotlib")  # the optional `plots` extra (installed by requirements-dev.txt)
    store = EventStore()
    for epoch, (tr, va) in enumerate([(1.0, 1.2), (0.6, 0.9), (0.4, 0.8)], start=1):
        store.record("train", epoch, "Loss", tr)
        store.record("valid", epoch, "Loss", va)
    history = {"Loss": {"train": [(0.5, 1.1), (1.0, 0.9), (1.5, 0.7)]}}
    paths = save_plots(store, history, str(tmp_path / "plots"))
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["loss.png"]
    with open(paths[0], "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def test_plots_unavailable_is_a_reason(monkeypatch):
    from burn_train.logger import _plots

    monkeypatch.setattr(_plots, "find_spec", lambda name: None)
    assert plots_available() == (False, "matplotlib is not installed (pip install 'burn-train[plots]')")
