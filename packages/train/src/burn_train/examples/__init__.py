"""Runnable examples: ``python -m burn_train.examples.digits``."""

__all__ = ["digits"]
