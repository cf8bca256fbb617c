"""``NcclCollective``: collectives over CuPy device buffers through NCCL (``cupy.cuda.nccl``), offered to
multi-process training (burn-train) as the ``nccl`` collective of ``cuda`` devices (``_plugin``).

The NCCL unique id is made on rank 0 and broadcast over the host collective (MPI: so MPI launches and
rendezvous); the
tensors then move GPU to GPU. Operations are queued on the burn-cuda device's own stream, so they are
ordered after the kernels that produced the gradients and before the ones that read the result,
without a host synchronisation in between. ``Work.wait()`` polls a CUDA event recorded after the
operation within the timeout; on a timeout the communicator is aborted (``ncclCommAbort``), which
frees the kernels stuck waiting for a dead peer, and ``CollectiveTimeoutError`` is raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from burn.distributed import Collective, DeviceCollective, DistributedError, Work, check_op, check_root

from ._interop import as_cupy, from_dlpack
from ._interop import stream as device_stream

if TYPE_CHECKING:
    from burn import Tensor


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


class NcclCollective(DeviceCollective):
    """NCCL among the ranks of ``mpi`` (the host collective, one GPU per rank): ``device_index`` is this
    rank's GPU and ``stream`` the ``cupy.cuda.Stream`` the operations are queued on (default: that
    device's burn-cuda stream).

    >>> from burn_cuda import NcclCollective  # doctest: +SKIP
    >>> from burn_train.distributed import world  # doctest: +SKIP
    >>> NcclCollective(world().mpi, 0).all_reduce(cupy.ones(4, cupy.float32))  # doctest: +SKIP
    """

    name = "nccl"

    def __init__(self, mpi: Collective, device_index: int, stream: Any = None) -> None:
        ok, reason = nccl_available()
        if not ok:
            raise DistributedError(f"NCCL is not available: {reason}")
        import cupy
        from cupy.cuda import nccl

        self.cupy, self.nccl, self.mpi = cupy, nccl, mpi
        self.rank, self.size, self.timeout = mpi.rank, mpi.size, mpi.timeout
        self.device = cupy.cuda.Device(device_index)
        if stream is None:
            stream = device_stream(f"cuda:{device_index}")
        self.stream = stream
        uid = nccl.get_unique_id() if mpi.rank == 0 else None
        uid = mpi.broadcast_object(uid, 0)
        with self.device:
            self.comm = nccl.NcclCommunicator(mpi.size, uid, mpi.rank)
        self._ops = {"sum": nccl.NCCL_SUM, "mean": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}
        self._count = 0

    @property
    def host(self) -> Collective:
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
        self.mpi.mark_failed()
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
        check_root(root, self.size)
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

    def pack(self, flat: Tensor, scale: float) -> Any:
        src = as_cupy(flat)
        with self.stream:  # burn's own stream: ordered with the kernels around it
            buf = src.copy()  # ours to reduce in place; burn's tensors stay immutable
            if scale != 1.0:
                buf *= scale
        return buf

    def unpack(
        self, buf: Any, scale: float, parts: Sequence[tuple[int, int, tuple[int, ...]]], device: Any
    ) -> list[Tensor]:
        with self.stream:
            buf *= scale
        return [
            from_dlpack(buf[offset : offset + size].reshape(shape), device) for offset, size, shape in parts
        ]

    def close(self) -> None:
        comm, self.comm = self.comm, None
        if comm is not None:
            comm.destroy()
