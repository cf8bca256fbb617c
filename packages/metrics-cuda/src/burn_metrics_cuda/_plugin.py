"""Entry point of burn_metrics_cuda (group ``burn``); import-light. Filled in by its package's work."""

from burn.plugins import hookimpl  # noqa: F401
