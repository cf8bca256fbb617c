"""One client's session on the server: every frame it sends, validated then run, on its own tensors.

A frame goes through the stages of the session's modules, each with its own part of the state:

- ``_frames``: the frame is opened and its meta checked for its form (a frame that breaks the wire
  format closes the session); replies go back as frames;
- ``_validate``: each record is checked before it runs (kind, ids, shapes, dtypes, strings, memory);
- ``_execute`` and ``_signatures``: the records run on the server's backend, over the session's tensor
  table (``_table``); a signature is checked once, then replayed by its compact ops;
- ``_failure``: an op that fails poisons its outputs (ops reading them fail the same way without running,
  reading them raises the error) and the first error since the last read or sync is reported by the next
  read or sync (as a device backend reports an asynchronous error).

Here: the frames' dispatch, uploads (chunks assembled into a tensor), reads and syncs. Nothing here
touches another session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import burn
from burn.backend import Backend, Failed
from burn.ir import TensorRef

from ._errors import ProtocolError
from ._execute import Executor
from ._failure import Failures, error_frame
from ._frames import Chunk, Reply, data_frames, decode, ops_meta, read_meta, upload_meta
from ._protocol import DONE, OPS, READ, UPLOAD, frame
from ._signatures import Signatures
from ._table import TensorTable
from ._validate import OpError, Validator, parse_dtype


@dataclass
class Limits:
    """What one session may use: ``max_frame`` bytes per frame (the WebSocket's message limit),
    ``max_session_bytes`` of live tensors, ``max_sessions`` open at once."""

    max_frame: int = 64 << 20
    max_session_bytes: int = 4 << 30
    max_sessions: int = 32


@dataclass
class _Upload:
    ref: TensorRef | None  # None: refused, its remaining chunks are skipped
    np_dtype: Any
    buffer: Any
    received: int = 0
    total: int = 0
    prim: Any = None  # the tensor ``buffer`` is the bytes of (a host backend's array), or None


class Session:
    """The tensors of one client and the frames that act on them (run on the session's worker thread)."""

    def __init__(self, backend: Backend, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self.table = TensorTable(limits.max_session_bytes)
        self.failures = Failures(self.table)
        self.validator = Validator(backend, self.table)
        self.signatures = Signatures(backend, self.table, self.validator, self.failures)
        self.executor = Executor(backend, self.table, self.validator, self.failures, self.signatures)
        self.uploads: dict[int, _Upload] = {}

    @property
    def ops_run(self) -> int:
        """Ops run so far (for the server's log)."""
        return self.executor.ops_run

    def handle(self, message: Any) -> Reply:
        """Handle one frame of the client (any but its HELLO)."""
        try:
            kind, meta, raw = decode(message)
            if kind == OPS:
                self._ops(meta)
                return Reply()
            if kind == UPLOAD:
                self._upload(upload_meta(meta), raw)
                return Reply()
            if kind == READ:
                return self._read(read_meta(meta))
            return Reply([self._sync()])
        except ProtocolError as exc:
            return Reply([error_frame("protocol", exc)], str(exc)[:120])

    def close(self) -> None:
        """Free every tensor of the session (the client left)."""
        self.table.clear()
        self.uploads.clear()

    def _ops(self, meta: Any) -> None:
        records, drops, step = ops_meta(meta)
        self.executor.run_records(records)
        self.table.drop(drops)
        if step:  # the client's training step ended here: so does the stream of the device's fusion
            burn.fusion.mark_step(self.backend.device)

    # ------------------------------------------------------------------ uploads
    def _upload(self, chunk: Chunk, raw: memoryview) -> None:
        import numpy as np

        tid, dtype_name, np_dtype, shape, total, offset = chunk
        table = self.table
        up = self.uploads.get(tid)
        if up is None:
            if offset != 0:
                raise ProtocolError(f"UPLOAD frame: tensor {tid} starts at offset {offset}, expected 0")
            if not all(type(n) is int and n >= 0 for n in shape) or total != np_dtype.itemsize * math.prod(
                shape
            ):
                raise ProtocolError(f"UPLOAD frame: {total} bytes do not hold {np_dtype}{list(shape)}")
            try:
                (ref,) = self.validator.outputs(((tid, shape, dtype_name),))
            except OpError as exc:  # refused (memory limit, dtype, id in use): its chunks are skipped
                self._refuse(chunk, exc)
                up = self.uploads[tid] = _Upload(None, np_dtype, None, total=total)
            else:
                prim = self._host_tensor(ref, np_dtype)
                buffer = np.empty(total, np.uint8) if prim is None else prim.reshape(-1).view(np.uint8)
                up = self.uploads[tid] = _Upload(ref, np_dtype, buffer, total=total, prim=prim)
                table.live_bytes += total
        if offset != up.received or offset + len(raw) > up.total:
            raise ProtocolError(
                f"UPLOAD frame: chunk at {offset} of {len(raw)} bytes does not continue tensor {tid}"
            )
        if up.buffer is None:
            up.received += len(raw)
            if up.received == up.total:
                del self.uploads[tid]
            return
        up.buffer[offset : offset + len(raw)] = np.frombuffer(raw, np.uint8)
        up.received += len(raw)
        if up.received == len(up.buffer):
            del self.uploads[tid]
            table.live_bytes -= len(up.buffer)
            done = up.ref
            assert done is not None
            if up.prim is not None:  # the chunks went straight into the tensor
                try:
                    self.validator.outputs(((tid, done.shape, done.dtype.name),))  # the id may be taken since
                except OpError as exc:
                    self.failures.fail(exc)
                    return
                self.executor.adopt(tid, up.prim, table.meta(done.shape, done.dtype))
                return
            arr = up.buffer.view(up.np_dtype).reshape(done.shape)
            self.executor.run(("from_numpy", (arr, done.dtype), ((tid, done.shape, done.dtype.name),)))

    def _refuse(self, chunk: Chunk, exc: OpError) -> None:
        """An upload refused: the error is reported, and the tensor (where its id is free and its dtype
        known) holds it."""
        self.failures.fail(exc)
        if chunk.tid not in self.table.prims:
            try:
                m = self.table.meta(tuple(chunk.shape), parse_dtype(chunk.dtype_name))
            except Exception:
                return
            self.failures.poison(((chunk.tid, m),), exc, report=False)

    def _host_tensor(self, ref: TensorRef, np_dtype: Any) -> Any:
        """For a backend whose tensors are numpy arrays in host memory: a new tensor of ``ref``'s shape
        and dtype, for an upload's chunks to be written into (no staging buffer, no copy when the last
        chunk comes). None for any other backend (the chunks are staged, then ``from_numpy`` runs)."""
        import numpy as np

        if not self.backend.host_memory:
            return None
        try:  # what the backend makes for this dtype: a plain array of np_dtype, or something else
            probe = self.backend.full((), 0, ref.dtype)
        except Exception:
            return None
        if (
            type(probe) is not np.ndarray
            or probe.dtype != np_dtype
            or self.backend.dtype_of(probe) is not ref.dtype
        ):
            return None
        return np.empty(ref.shape, np_dtype)  # such an array, its pages untouched until the chunks come

    # ------------------------------------------------------------------ reads and syncs
    def _read(self, ids: tuple) -> Reply:
        import numpy as np

        failures = self.failures
        if failures.first_error is not None:
            return Reply([failures.report()])
        prims = []
        for tid in ids:
            prim = self.table.prims.get(tid) if type(tid) is int else None
            if prim is None:
                error = OpError(f"read: unknown tensor id {tid!r:.20} (not a tensor of this session)")
                return Reply([error_frame("op", error)])
            if isinstance(prim, Failed):
                return Reply([error_frame("op", prim.error)])
            prims.append(prim)
        backend = self.backend
        try:
            if backend.host_memory and all(type(p) is np.ndarray for p in prims):
                # host arrays go out as they are: the frames below copy them before any later op runs
                arrays = [np.asarray(p, order="C") for p in prims]
            else:
                arrays = [np.asarray(a, order="C") for a in backend.read_many(prims)]
        except Exception as exc:
            return Reply([error_frame("op", exc)])
        return Reply(stream=data_frames(arrays))

    def _sync(self) -> bytes:
        failures = self.failures
        try:
            self.backend.sync()
        except Exception as exc:
            failures.fail(exc)
        if failures.first_error is not None:
            return failures.report()
        return frame(DONE, None)
