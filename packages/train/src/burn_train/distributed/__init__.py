"""burn_train.distributed: data-parallel training over processes (MPI ranks; on GPUs, the collective
their backend offers, such as burn-cuda's NCCL).

Launch one process per device with ``mpirun -n 4 python train.py`` or ``burn launch -n 4 train.py``;
``Learner.fit`` then trains data-parallel by itself (``LearnerBuilder.distributed(...)`` tunes it).
The collective interface and its errors live in ``burn.distributed`` (re-exported here); backend
plugins offer device collectives through ``burn_register_collectives``. Names load lazily, and mpi4py
and the device libraries load only when the first collective is made.

>>> from burn_train.distributed import shard_bounds
>>> shard_bounds(32, rank=1, size=3)      # rank 1's part of a global batch of 32 items
(11, 22)
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from burn.distributed import Collective, CollectiveTimeoutError, DistributedError, Work  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers (re-exported by __all__)
    from ._buckets import Bucket, GradientReducer, Slot, plan_buckets  # noqa: F401
    from ._context import World, world  # noqa: F401
    from ._env import launched_size  # noqa: F401
    from ._info import collectives_info  # noqa: F401
    from ._mpi import MpiCollective  # noqa: F401
    from ._options import DistributedOptions  # noqa: F401
    from ._sampler import ShardedLoader, shard_bounds  # noqa: F401
    from ._strategy import DistributedDataParallel  # noqa: F401

# public name -> private module that defines it
_LAZY = {
    "Bucket": "_buckets",
    "GradientReducer": "_buckets",
    "Slot": "_buckets",
    "plan_buckets": "_buckets",
    "World": "_context",
    "world": "_context",
    "launched_size": "_env",
    "collectives_info": "_info",
    "MpiCollective": "_mpi",
    "DistributedOptions": "_options",
    "ShardedLoader": "_sampler",
    "shard_bounds": "_sampler",
    "DistributedDataParallel": "_strategy",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'burn_train.distributed' has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = sorted([*_LAZY, "Collective", "CollectiveTimeoutError", "DistributedError", "Work"])
