"""burn's conformance suite, shipped with burn-core: every op of a backend against the numpy backend.

A backend installed so that its ``burn`` entry point registers it runs the suite on itself with one
command, from the installed package (the plugin registers with pytest through a ``pytest11`` entry point)::

    pytest --pyargs burn.testing --burn-backend mybackend

Without ``--burn-backend`` (or ``BURN_CONFORMANCE_BACKEND``) it runs on every available backend and on
``core-only``, a backend with only the required core (``CoreOnlyBackend``), so every default of
``burn.backend.Backend`` is checked too. Add ``-q``, ``-x`` or ``-k "matmul or conv"`` as usual. The
fixtures (``burn_device``, ``burn_reference_device``, ...) are open to your own tests: see
``burn.testing._plugin``. The op table is ``SPECS``, one ``OpSpec`` row per op.

Importing this package loads neither numpy nor any backend; the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..plugins import lazy_attributes

if TYPE_CHECKING:
    from ._core_only import CoreOnlyBackend
    from ._specs import SPECS, OpSpec

__all__ = ["SPECS", "CoreOnlyBackend", "OpSpec"]

_LAZY = {"CoreOnlyBackend": "._core_only", "OpSpec": "._specs", "SPECS": "._specs"}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())
