"""An executable check of burn-py's binding public API (the names users write): every documented snippet
and name, called as a user would.

One test module per section of that API (``test_devices_tensors.py`` ... ``test_training.py``), each with
one test (or one parametrized table) per item, in the section's order; the modules themselves are the
in-repository record of what is promised. Sections whose names live in optional distributions
(burn_train, the metric plugins, the GPU backends) check what the installed package offers; a GPU
backend that cannot run here must say why.

pytest runs with ``--import-mode=importlib``, which puts no test folder on ``sys.path``. So this conftest
registers the package name ``burn_api_md`` over this folder; the modules import their shared helpers
as ``from burn_api_md._helpers import ...``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

_HERE = Path(__file__).resolve().parent

if "burn_api_md" not in sys.modules:
    _package = types.ModuleType("burn_api_md", f"test helpers in {_HERE}")
    _package.__path__ = [str(_HERE)]
    sys.modules["burn_api_md"] = _package
