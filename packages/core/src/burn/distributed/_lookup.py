"""Which registered collectives serve a device: the question multi-process training asks the plugins."""

from __future__ import annotations

from typing import Any

from ..plugins import CollectiveSpec, registry


def device_collectives(device: Any) -> list[CollectiveSpec]:
    """The collectives plugins registered for the backend of ``device`` (a ``burn.Device``), in the order
    they registered; empty when none does (its tensors are then reduced as host copies, over MPI in
    burn-train). ``registry().collective(name)`` finds one by name.

    >>> from burn.distributed import device_collectives
    >>> device_collectives(burn.device("cpu"))
    []
    """
    kind = getattr(device, "kind", None)
    return [spec for spec in registry().collectives.values() if kind in spec.backends]
