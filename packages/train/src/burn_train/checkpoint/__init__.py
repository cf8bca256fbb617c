"""burn_train.checkpoint: atomic per-epoch checkpoints with keep-last-N / keep-best policies."""

from ._atomic import atomic_write, remove_stale_temps
from ._file import FileCheckpointer, default_policy
from ._policy import CheckpointPolicy, ComposedPolicy, KeepBest, KeepLastN
from ._record_io import record_from_bytes, record_to_bytes

__all__ = [
    "CheckpointPolicy",
    "ComposedPolicy",
    "FileCheckpointer",
    "KeepBest",
    "KeepLastN",
    "atomic_write",
    "default_policy",
    "record_from_bytes",
    "record_to_bytes",
    "remove_stale_temps",
]
