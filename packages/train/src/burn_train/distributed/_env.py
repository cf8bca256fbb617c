"""Was this process started by an MPI launcher? Read from the environment only (nothing is imported).

Launchers set the job's size before the program starts: MPICH's hydra (``mpiexec``/``mpirun``, also
what ``burn launch`` runs) sets ``PMI_SIZE``/``PMI_RANK``, Open MPI sets ``OMPI_COMM_WORLD_SIZE``, and
Slurm's ``srun`` with PMIx sets ``PMIX_RANK`` besides ``SLURM_NTASKS``. ``BURN_DISTRIBUTED=0`` turns the
automatic data-parallel strategy off (each rank then trains alone).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TIMEOUT_ENV = "BURN_DDP_TIMEOUT"
DEFAULT_TIMEOUT = 600.0  # seconds a collective may wait for the other ranks (NCCL's own default)

_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def _positive_int(text: str | None) -> int | None:
    try:
        value = int(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def launched_size(environ: Mapping[str, str] | None = None) -> int | None:
    """The number of ranks an MPI launcher started this job with, or None when no launcher started it."""
    env = os.environ if environ is None else environ
    for name in _SIZE_VARS:
        size = _positive_int(env.get(name))
        if size is not None:
            return size
    if "PMIX_RANK" in env:
        return _positive_int(env.get("SLURM_NTASKS"))
    return None


def auto_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when the Learner should train data-parallel over MPI ranks without being asked: launched
    with more than one rank and ``BURN_DISTRIBUTED`` is not ``0``/``off``/``false``/``no``."""
    env = os.environ if environ is None else environ
    if env.get("BURN_DISTRIBUTED", "").strip().lower() in {"0", "off", "false", "no"}:
        return False
    size = launched_size(env)
    return size is not None and size > 1


def timeout_from_env(environ: Mapping[str, str] | None = None) -> float:
    """Seconds a collective waits (``BURN_DDP_TIMEOUT``, default 600); a bad value is a clear error."""
    env = os.environ if environ is None else environ
    text = env.get(TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{TIMEOUT_ENV}: expected a finite number of seconds > 0, got {text!r}")
    return value
