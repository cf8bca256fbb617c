"""``DistributedOptions``: what ``LearnerBuilder.distributed(...)`` collected (numpy- and MPI-free)."""

from __future__ import annotations

from dataclasses import dataclass

from ._context import collective_names


@dataclass(frozen=True)
class DistributedOptions:
    """``enabled``: None trains data-parallel when an MPI launcher started more than one rank, True
    always (one rank included), False never. ``collective``: ``"auto"`` (the collective a backend plugin
    offers for the device where it can run, such as burn-cuda's NCCL on CUDA devices; MPI otherwise),
    ``"mpi"`` or a registered collective's name (``"nccl"``). ``timeout``: seconds a collective may wait
    (None: ``BURN_DDP_TIMEOUT``, default 600). ``bucket_bytes``: the gradient bucket size. ``overlap``:
    start reducing each bucket as soon as backward has its gradients (``train_step`` must then return
    the gradients ``backward()`` gave)."""

    enabled: bool | None = None
    collective: str = "auto"
    timeout: float | None = None
    bucket_bytes: int = 25 * 2**20
    overlap: bool = True

    def __post_init__(self) -> None:
        if self.enabled not in (None, True, False):
            raise TypeError(f"distributed: enabled must be None, True or False, got {self.enabled!r}")
        names = collective_names()
        if self.collective not in names:
            raise ValueError(
                f"distributed: collective must be one of {', '.join(names)}, got {self.collective!r}"
            )
        if self.timeout is not None and not (
            isinstance(self.timeout, (int, float)) and 0 < self.timeout < float("inf")
        ):
            raise ValueError(
                f"distributed: timeout must be a finite number of seconds > 0, got {self.timeout!r}"
            )
        if not isinstance(self.overlap, bool):
            raise TypeError(f"distributed: overlap must be True or False, got {self.overlap!r}")
        if (
            isinstance(self.bucket_bytes, bool)
            or not isinstance(self.bucket_bytes, int)
            or self.bucket_bytes < 1
        ):
            raise ValueError(f"distributed: bucket_bytes must be an int >= 1, got {self.bucket_bytes!r}")
