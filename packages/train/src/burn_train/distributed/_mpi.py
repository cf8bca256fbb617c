"""``MpiCollective``: collectives over host (numpy) buffers through mpi4py, non-blocking and bounded.

mpi4py and the MPI library load when the first collective is made (``import burn_train`` never loads
them). Once a job has more than one rank, an uncaught exception on any rank (a timeout included) ends
the whole job through ``MPI_Abort`` after its traceback is printed, so no rank is left waiting in a
collective or in ``MPI_Finalize``.
"""

from __future__ import annotations

import atexit
import pickle
import sys
from typing import Any

from burn.distributed import Collective, DistributedError, Work, check_op, check_root

from ._env import timeout_from_env

_state = {"guarded": False, "failed": False}
ABORT_STATUS = 70  # exit status of an aborted job (EX_SOFTWARE): another rank failed or timed out


def import_mpi() -> Any:
    """``mpi4py.MPI`` (initialising MPI), or a ``DistributedError`` that says what to install."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise DistributedError(
            f"MPI is not available ({exc}): pip install 'burn-core[mpi]' (mpi4py and the mpich wheel)"
        ) from None
    except Exception as exc:  # mpi4py without a loadable MPI library
        raise DistributedError(f"MPI failed to load: {type(exc).__name__}: {exc}") from None
    return MPI


def mark_failed() -> None:
    """A collective timed out: its requests cannot be cancelled, so this process must abort, not finalize."""
    _state["failed"] = True


def install_abort_guard(comm: Any) -> None:
    """Make an uncaught exception (and an exit after a timed-out collective) abort the whole job."""
    if _state["guarded"] or comm.Get_size() < 2:
        return
    _state["guarded"] = True
    previous = sys.excepthook

    def abort_job(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            previous(kind, value, tb)
            rank = comm.Get_rank()
            sys.stderr.write(f"burn: rank {rank} failed ({kind.__name__}); aborting the MPI job\n")
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            comm.Abort(ABORT_STATUS)

    def abort_if_failed() -> None:
        if _state["failed"]:
            sys.stderr.flush()
            comm.Abort(ABORT_STATUS)

    sys.excepthook = abort_job
    atexit.register(abort_if_failed)


def _contiguous(buf: Any, what: str) -> Any:
    import numpy as np

    if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or not buf.flags.writeable:
        raise TypeError(
            f"MpiCollective.{what}: buf must be a writeable C-contiguous numpy array, got "
            f"{type(buf).__name__}"
            + (
                f" (contiguous={buf.flags.c_contiguous}, writeable={buf.flags.writeable})"
                if hasattr(buf, "flags")
                else ""
            )
        )
    return buf


class MpiCollective(Collective):
    """Collectives among the ranks of an MPI communicator (default: a duplicate of ``COMM_WORLD``).

    >>> from burn_train.distributed import MpiCollective   # doctest: +SKIP
    >>> c = MpiCollective(timeout=30.0)                     # doctest: +SKIP
    >>> c.all_reduce(np.ones(4, np.float32), op="mean")     # doctest: +SKIP
    """

    name = "mpi"

    def __init__(self, comm: Any = None, timeout: float | None = None) -> None:
        MPI = import_mpi()
        self.MPI = MPI
        self.comm = (comm if comm is not None else MPI.COMM_WORLD).Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        if timeout is None:
            timeout = timeout_from_env()
        if not timeout > 0:
            raise ValueError(f"MpiCollective: timeout must be > 0 seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self._ops = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
        self._count = 0  # collectives started, for messages
        install_abort_guard(self.comm)

    @property
    def host(self) -> MpiCollective:
        return self

    def local(self) -> tuple[int, int]:
        """``(local rank, local size)``: this process among the ranks sharing its machine."""
        node = self.comm.Split_type(self.MPI.COMM_TYPE_SHARED, key=self.rank)
        try:
            return node.Get_rank(), node.Get_size()
        finally:
            node.Free()

    def _work(self, request: Any, result: Any, what: str, finish: Any = None) -> Work:
        self._count += 1
        label = f"rank {self.rank}/{self.size}: MPI {what} (collective #{self._count})"
        return Work(request.Test, result, self.timeout, label, mark_failed, finish)

    def all_reduce_async(self, buf: Any, op: str = "sum") -> Work:
        check_op(op)
        buf = _contiguous(buf, "all_reduce")
        if buf.dtype.kind == "f" and buf.dtype.itemsize < 4:
            raise TypeError(
                f"MpiCollective.all_reduce: MPI has no {buf.dtype} reduction; reduce a float32 copy instead"
            )
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, buf, op=self._ops[op])
        finish = None
        if op == "mean":
            import numpy as np

            def finish() -> Any:
                np.divide(buf, self.size, out=buf, casting="unsafe")
                return buf

        return self._work(request, buf, f"all_reduce({op}) of {buf.size} {buf.dtype}", finish)

    def broadcast_async(self, buf: Any, root: int = 0) -> Work:
        self._check_root(root)
        buf = _contiguous(buf, "broadcast")
        request = self.comm.Ibcast(buf, root=root)
        return self._work(request, buf, f"broadcast of {buf.size} {buf.dtype} from rank {root}")

    def all_gather(self, buf: Any) -> Any:
        import numpy as np

        buf = np.ascontiguousarray(buf)
        out = np.empty((self.size, *buf.shape), dtype=buf.dtype)
        request = self.comm.Iallgather(buf, out)
        return self._work(request, out, f"all_gather of {buf.size} {buf.dtype}").wait()

    def barrier(self) -> None:
        self._work(self.comm.Ibarrier(), None, "barrier").wait()

    def _check_root(self, root: int) -> None:
        check_root(root, self.size)

    def mark_failed(self) -> None:
        """A collective among these ranks timed out (a device collective's, too): abort at exit."""
        mark_failed()

    # ---------------------------------------------------------------- objects
    def broadcast_object(self, obj: Any, root: int = 0) -> Any:
        import numpy as np

        self._check_root(root)
        data = np.frombuffer(pickle.dumps(obj, protocol=5), dtype=np.uint8) if self.rank == root else None
        size = np.array([0 if data is None else data.size], dtype=np.int64)
        self.broadcast(size, root)
        buf = data.copy() if data is not None else np.empty(int(size[0]), dtype=np.uint8)
        self.broadcast(buf, root)
        return obj if self.rank == root else pickle.loads(buf.tobytes())

    def gather_object(self, obj: Any, root: int = 0) -> list[Any] | None:
        return self.gather_object_flag(obj, False, root)[0]

    def gather_object_flag(self, obj: Any, flag: bool, root: int = 0) -> tuple[list[Any] | None, bool]:
        """``gather_object`` plus whether any rank passed ``flag`` True (agreed by every rank)."""
        import numpy as np

        self._check_root(root)
        data = np.frombuffer(pickle.dumps(obj, protocol=5), dtype=np.uint8)
        heads = self.all_gather(np.array([data.size, int(bool(flag))], dtype=np.int64))
        sizes, flags = heads[:, 0], heads[:, 1]
        recv = None
        if self.rank == root:
            displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            out = np.empty(int(sizes.sum()), dtype=np.uint8)
            recv = [out, sizes.tolist(), displs.tolist(), self.MPI.BYTE]
        request = self.comm.Igatherv(data, recv, root=root)
        self._work(request, None, f"gather of {data.size} bytes to rank {root}").wait()
        if recv is None:
            return None, bool(flags.any())
        edges = np.concatenate([[0], np.cumsum(sizes)])
        objs = [pickle.loads(out[a:b].tobytes()) for a, b in zip(edges[:-1], edges[1:])]
        return objs, bool(flags.any())

    def close(self) -> None:
        if self.comm is not None and not self.MPI.Is_finalized():
            self.comm.Free()
        self.comm = None
