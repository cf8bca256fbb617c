"""The conformance suite's test modules, collected by ``pytest --pyargs burn.testing``."""
