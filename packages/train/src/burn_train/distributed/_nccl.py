"""``NcclCollective``: collectives over CuPy device buffers through NCCL (``cupy.cuda.nccl``).

The NCCL unique id is made on rank 0 and broadcast over MPI (so MPI launches and rendezvous); the
tensors then move GPU to GPU. Operations are queued on the burn-cuda device's own stream, so they are
ordered after the kernels that produced the gradients and before the ones that read the result,
without a host synchronisation in between. ``Work.wait()`` polls a CUDA event recorded after the
operation within the timeout; on a timeout the communicator is aborted (``ncclCommAbort``), which
frees the kernels stuck waiting for a dead peer, and ``CollectiveTimeoutError`` is raised.
"""

from __future__ import annotations

from typing import Any

from ._collective import Collective, Work, check_op
from ._errors import DistributedError
from ._mpi import MpiCollective, mark_failed


def nccl_available() -> tuple[bool, str]:
    """``(True, "NCCL x.y.z")`` when CuPy with NCCL and a GPU are here, else ``(False, why)``."""
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install 'burn-core[cuda]')"
    except Exception as exc:
        return False, f"CuPy failed to load: {type(exc).__name__}: {exc}"
    try:
        from cupy.cuda import nccl
    except Exception as exc:
        return False, f"CuPy has no NCCL ({type(exc).__name__}: {exc}); install the nvidia-nccl wheel"
    if not getattr(nccl, "available", True):
        return False, "CuPy was built without NCCL"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"no CUDA device: {type(exc).__name__}: {exc}"
    if count < 1:
        return False, "no CUDA device"
    version = nccl.get_version()
    major, minor, patch = version // 10000, version // 100 % 100, version % 100
    return True, f"NCCL {major}.{minor}.{patch}, {count} GPU(s)"


def _nccl_dtype(nccl: Any, dtype: Any) -> int:
    table = {
        "float16": nccl.NCCL_FLOAT16,
        "float32": nccl.NCCL_FLOAT32,
        "float64": nccl.NCCL_FLOAT64,
        "int8": nccl.NCCL_INT8,
        "uint8": nccl.NCCL_UINT8,
        "int32": nccl.NCCL_INT32,
        "int64": nccl.NCCL_INT64,
    }
    name = str(dtype)
    if name not in table:
        raise TypeError(f"NcclCollective: dtype {name} has no NCCL type (expected one of {', '.join(table)})")
    return int(table[name])


class NcclCollective(Collective):
    """NCCL among the ranks of ``mpi`` (one GPU per rank): ``device_index`` is this rank's GPU and
    ``stream`` the ``cupy.cuda.Stream`` the operations are queued on (default: that device's burn-cuda
    stream)."""

    name = "nccl"

    def __init__(self, mpi: MpiCollective, device_index: int, stream: Any = None) -> None:
        ok, reason = nccl_available()
        if not ok:
            raise DistributedError(f"NCCL is not available: {reason}")
        import cupy
        from cupy.cuda import nccl

        self.cupy, self.nccl, self.mpi = cupy, nccl, mpi
        self.rank, self.size, self.timeout = mpi.rank, mpi.size, mpi.timeout
        self.device = cupy.cuda.Device(device_index)
        if stream is None:
            import burn_cuda

            stream = burn_cuda.stream(f"cuda:{device_index}")
        self.stream = stream
        uid = nccl.get_unique_id() if mpi.rank == 0 else None
        uid = mpi.broadcast_object(uid, 0)
        with self.device:
            self.comm = nccl.NcclCommunicator(mpi.size, uid, mpi.rank)
        self._ops = {"sum": nccl.NCCL_SUM, "mean": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}
        self._count = 0

    @property
    def host(self) -> MpiCollective:
        return self.mpi

    def _check(self, buf: Any, what: str) -> Any:
        if not isinstance(buf, self.cupy.ndarray) or not buf.flags.c_contiguous:
            raise TypeError(
                f"NcclCollective.{what}: buf must be a C-contiguous cupy.ndarray, got {type(buf).__name__}"
            )
        if buf.device.id != self.device.id:
            raise ValueError(
                f"NcclCollective.{what}: buf lives on cuda:{buf.device.id}, this rank's GPU is cuda:{self.device.id}"
            )
        return buf

    def _abort(self) -> None:
        mark_failed()
        try:
            self.comm.abort()
        except Exception:  # the timeout is reported whatever abort says
            pass

    def _work(self, result: Any, what: str, finish: Any = None) -> Work:
        self._count += 1
        with self.device:
            event = self.cupy.cuda.Event(block=False, disable_timing=True)
            event.record(self.stream)
        label = f"rank {self.rank}/{self.size}: NCCL {what} (collective #{self._count})"
        return Work(lambda: bool(event.done), result, self.timeout, label, self._abort, finish)

    def all_reduce_async(self, buf: Any, op: str = "sum") -> Work:
        check_op(op)
        buf = self._check(buf, "all_reduce")
        kind = _nccl_dtype(self.nccl, buf.dtype)
        with self.device:
            self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, kind, self._ops[op], self.stream.ptr)
            if op == "mean":
                with self.stream:
                    buf /= self.size
        return self._work(buf, f"all_reduce({op}) of {buf.size} {buf.dtype}")

    def broadcast_async(self, buf: Any, root: int = 0) -> Work:
        self.mpi._check_root(root)
        buf = self._check(buf, "broadcast")
        with self.device:
            self.comm.bcast(buf.data.ptr, buf.size, _nccl_dtype(self.nccl, buf.dtype), root, self.stream.ptr)
        return self._work(buf, f"broadcast of {buf.size} {buf.dtype} from rank {root}")

    def all_gather(self, buf: Any) -> Any:
        buf = self._check(self.cupy.ascontiguousarray(buf), "all_gather")
        with self.device:
            out = self.cupy.empty((self.size, *buf.shape), dtype=buf.dtype)
            kind = _nccl_dtype(self.nccl, buf.dtype)
            self.comm.allGather(buf.data.ptr, out.data.ptr, buf.size, kind, self.stream.ptr)
        return self._work(out, f"all_gather of {buf.size} {buf.dtype}").wait()

    def barrier(self) -> None:
        with self.device:
            token = self.cupy.zeros(1, dtype=self.cupy.float32)
        self.all_reduce(token)

    def close(self) -> None:
        comm, self.comm = self.comm, None
        if comm is not None:
            comm.destroy()
