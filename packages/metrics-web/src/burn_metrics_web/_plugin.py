"""Entry point of burn_metrics_web (group ``burn``); import-light. Filled in by its package's work."""

from burn.plugins import hookimpl  # noqa: F401
