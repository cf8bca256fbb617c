"""The job this process belongs to: MPI ranks, the device of each rank, and the collective for a device.

``world()`` initialises MPI on first use and returns the one ``World`` of the process. Collectives are
selected by the device: a device whose backend a plugin offers a collective for (burn-cuda's NCCL for
``cuda``) uses it where it is available (``"auto"``); everything else (numpy, wgpu, or any device with
``collective="mpi"``) reduces host copies over MPI.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from burn.distributed import Collective, DistributedError, device_collectives
from burn.plugins import CollectiveSpec, registry

from ._env import launched_size
from ._mpi import MpiCollective


def collective_names() -> tuple[str, ...]:
    """The values of ``collective=``: ``auto``, ``mpi`` and each collective a plugin registered."""
    return ("auto", "mpi", *registry().collectives)


def _device_count(device: Any) -> int:
    """How many devices of ``device``'s backend this machine has (0 when it is unavailable)."""
    backend = registry().backend(device.kind)
    return len(backend.devices()) if backend.is_available()[0] else 0


class World:
    """The ranks of this job: ``rank``, ``size``, ``local_rank``/``local_size`` (ranks on this machine),
    ``mpi`` (the host collective) and the collective of each device (made once per device)."""

    def __init__(self, timeout: float | None = None) -> None:
        self.mpi = MpiCollective(timeout=timeout)
        self.rank, self.size = self.mpi.rank, self.mpi.size
        _check_launcher(self.size, self.mpi.MPI)
        self.local_rank, self.local_size = self.mpi.local()
        self._collectives: dict[tuple[Any, str], Collective] = {}

    def set_timeout(self, timeout: float) -> None:
        if not timeout > 0:
            raise ValueError(f"distributed: timeout must be > 0 seconds, got {timeout!r}")
        self.mpi.timeout = float(timeout)
        for c in self._collectives.values():
            c.timeout = float(timeout)

    def device_for(self, device: Any) -> Any:
        """This rank's device for ``device``: device 0 of a backend a collective serves one device per
        rank (``cuda``/``cuda:0``) becomes ``<kind>:<local rank>`` (modulo the devices visible) when
        several ranks share a machine; other devices are used as given."""
        if device is None or device.index != 0 or self.local_size < 2 or not device_collectives(device):
            return device
        count = _device_count(device)
        return dataclasses.replace(device, index=self.local_rank % max(count, 1))

    def collective_for(self, device: Any, kind: str = "auto") -> Collective:
        """The collective that reduces gradients living on ``device`` (``kind``: auto, mpi, or a
        collective a plugin registered, such as nccl)."""
        names = collective_names()
        if kind not in names:
            raise ValueError(f"distributed: collective must be one of {', '.join(names)}, got {kind!r}")
        served = device_collectives(device) if device is not None else []
        spec: CollectiveSpec | None
        if kind == "auto":
            spec = next((s for s in served if s.is_available()[0]), None)
        elif kind == "mpi":
            spec = None
        else:
            spec = registry().collective(kind)
            if spec not in served:
                raise DistributedError(
                    f"distributed: the {kind.upper()} collective needs a {' or '.join(spec.backends)} "
                    f"device, got {device}"
                )
        if spec is None:
            return self.mpi
        key = (device.index, spec.name)
        if key not in self._collectives:
            count = _device_count(device)
            if self.local_size > count:
                raise DistributedError(
                    f"distributed: {self.local_size} ranks on this machine but {count} {device.kind} "
                    f"device(s); {spec.name.upper()} needs a device of its own per rank (start fewer "
                    "ranks, or collective='mpi')"
                )
            self._collectives[key] = spec.factory(self.mpi, device)
        return self._collectives[key]


def _check_launcher(size: int, MPI: Any) -> None:
    """The launcher's job size (its environment) against the size MPI reports. They differ when the
    ``mpiexec`` that started the job belongs to another MPI than the library mpi4py loaded (MPICH's
    launcher, Open MPI's library): every process then starts as a job of its own, rank 0 of 1, and
    would train alone and write the outputs of rank 0 next to the others (seen on a GPU machine whose
    system mpi4py loaded Debian's Open MPI under the mpich wheel's mpiexec)."""
    launched = launched_size()
    if launched is None or launched == size:
        return
    library = MPI.Get_library_version().strip().splitlines()[0].strip()
    raise DistributedError(
        f"distributed: the launcher started {launched} ranks, but MPI sees a job of {size} ({library}): "
        "the mpiexec that started this job is not the one of the MPI library mpi4py loaded. Start it with "
        "that library's launcher (burn launch runs the mpich wheel's) or make mpi4py load the launcher's "
        "library (MPI4PY_LIBMPI, LD_LIBRARY_PATH)"
    )


_world: list[World] = []


def world(timeout: float | None = None) -> World:
    """The ``World`` of this process (MPI is initialised on the first call)."""
    if not _world:
        _world.append(World(timeout))
    elif timeout is not None:
        _world[0].set_timeout(timeout)
    return _world[0]
