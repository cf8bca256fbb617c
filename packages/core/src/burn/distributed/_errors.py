"""Errors of multi-process training: every one names the rank and what it was waiting for.

>>> from burn.distributed import CollectiveTimeoutError, DistributedError
>>> issubclass(CollectiveTimeoutError, DistributedError)
True
"""

from __future__ import annotations

from .._errors import BurnError


class DistributedError(BurnError, RuntimeError):
    """Multi-process training cannot go on (MPI or NCCL missing, ranks that disagree, a bad argument)."""


class CollectiveTimeoutError(DistributedError):
    """A collective did not complete in time: another rank died, hung, or left the collective sequence."""
