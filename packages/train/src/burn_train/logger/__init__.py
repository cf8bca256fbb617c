"""burn_train.logger: CSV metric logs, the application log file, PNG plots."""

from ._app import AppLogger
from ._csv import CsvMetricLogger, read_epochs_csv
from ._plots import plots_available, save_plots

__all__ = ["AppLogger", "CsvMetricLogger", "plots_available", "read_epochs_csv", "save_plots"]
