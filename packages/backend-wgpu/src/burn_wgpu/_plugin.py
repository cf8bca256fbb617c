"""Entry point of burn_wgpu (group ``burn``); import-light. Filled in by its package's work."""

from burn.plugins import hookimpl  # noqa: F401
