"""The client's connection: one WebSocket (websockets' sync client, which reads on its own thread), an
outgoing buffer of op records, and request/reply for reads, syncs and uploads.

Ops are buffered and sent in batches without waiting for anything; only reads and syncs wait for the
server (a ``Transaction`` is one READ for all its tensors). The connection is usable from several
threads (a training loop and its metrics thread): ops are queued without a lock (atomic list operations,
see ``enqueue_encoded``); sends, reads, syncs and signature numbers take a lock. Keep-alive pings detect
a dead or hung server within ``timeout`` seconds; after that, every use raises ``RemoteError``.
"""

from __future__ import annotations

import atexit
import inspect
import itertools
import ssl
import threading
import weakref
from typing import Any

import burn
from websockets.protocol import State

from ._errors import ProtocolError, RemoteError, RemoteUnavailableError
from ._protocol import (
    CHUNK,
    DATA,
    DONE,
    ERROR,
    HELLO,
    OPS,
    PROTOCOL_VERSION,
    READ,
    SERVER_FRAMES,
    SYNC,
    UPLOAD,
    WELCOME,
    encode_arg,
    frame,
    numpy_dtype,
    raw_bytes,
    unframe,
    wire_dtype,
)
from ._version import __version__

_OPEN = State.OPEN
BATCH = 512  # op records per OPS frame when nothing forces an earlier send
INLINE_BYTES = 1 << 20  # ... or when the host arrays inlined in the pending records reach this size
_OPEN_CONNECTIONS: weakref.WeakSet[Connection] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """End every session cleanly at exit (the server frees its tensors at once)."""
    for conn in list(_OPEN_CONNECTIONS):
        conn.close()


class Connection:
    """One session with a server (see the module docstring)."""

    def __init__(self, url: str, token: str | None, timeout: float, tls_ca: str | None = None) -> None:
        from websockets.sync.client import ClientConnection, connect

        class _Connection(ClientConnection):
            recv_bufsize = 1 << 20  # tensor data arrives in multi-MiB frames: fewer, larger reads

        self.url = url
        self.timeout = timeout
        ctx = None
        if url.startswith("wss://"):
            ctx = ssl.create_default_context(cafile=tls_ca)
        keepalive = max(timeout / 2, 0.5)
        extra: dict[str, Any] = {}
        if "legacy" in inspect.signature(connect).parameters:  # websockets >= 17: a plain connection
            extra["legacy"] = True
        try:
            self._ws = connect(
                url,
                ssl=ctx,
                compression=None,
                proxy=None,
                open_timeout=timeout,
                ping_interval=keepalive,
                ping_timeout=keepalive,
                close_timeout=min(timeout, 2.0),
                max_size=CHUNK + (16 << 20),  # a DATA frame: CHUNK bytes and the pieces' metadata
                user_agent_header=f"burn-remote/{__version__}",
                create_connection=_Connection,
                **extra,
            )
        except Exception as exc:
            raise RemoteUnavailableError(
                f"remote device: cannot connect to {url}: {type(exc).__name__}: {exc}"
            ) from None
        self._protocol = self._ws.protocol
        # the protocol's state for the per-op check: its field where it has one (a property costs a call)
        proto = self._protocol
        self._state: Any = proto if getattr(proto, "_state", None) is proto.state else _StateView(proto)
        # Not re-entrant (a plain Lock costs a third of an RLock per op): nothing done under it takes it
        # again; __del__ (drop) appends to _drops without it.
        self._lock = threading.Lock()
        self._ops: list[Any] = []
        self._inline = 0  # bytes of host arrays in _ops (they bound a frame's size with BATCH)
        self._drops: list[int] = []
        self.next_id = itertools.count().__next__
        # this session's signatures: key -> (number, (shape, dtype) of a one-output op or None, outputs)
        # (an entry is published only after its signature record is queued: a thread that finds it
        # queues its op after the definition)
        self.sigs: dict[tuple, tuple[int, Any, tuple]] = {}
        self.n_sigs = 0
        self.counts = {"kernels": 0, "submits": 0, "syncs": 0}
        self.closed_reason: str | None = None
        try:
            self._ws.send(frame(HELLO, {"token": token, "client": __version__, "protocol": PROTOCOL_VERSION}))
            reply = self._recv(timeout)
            if reply[0] != WELCOME:
                raise ProtocolError(f"expected WELCOME, got frame type {reply[0]}")
        except BaseException:
            self.close()
            raise
        self.info: dict[str, Any] = dict(reply[1])
        max_frame = self.info.get("max_frame")
        # upload chunks fit the server's frame limit (with room for the frame's metadata)
        self.chunk = CHUNK if type(max_frame) is not int else max(1 << 16, min(CHUNK, max_frame - (1 << 16)))
        _OPEN_CONNECTIONS.add(self)

    # ------------------------------------------------------------------ state
    @property
    def alive(self) -> bool:
        from websockets.protocol import State

        return self.closed_reason is None and self._ws.protocol.state is State.OPEN

    def _lost(self, exc: BaseException | None = None) -> RemoteError:
        if self.closed_reason is None:
            detail = ""
            rcvd = getattr(self._ws.protocol, "close_rcvd", None)
            if rcvd is not None:
                detail = f" (code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''})"
            elif exc is not None:
                detail = f" ({type(exc).__name__}: {exc})" if str(exc) else f" ({type(exc).__name__})"
            self.closed_reason = f"the connection to {self.url} was lost{detail}"
        return RemoteError(
            f"remote device: {self.closed_reason}; its tensors are gone: reconnect with "
            "burn_remote.reconnect(device) (tensors made before then stay unusable)"
        )

    def check(self) -> None:
        if not self.alive:
            raise self._lost()

    def close(self) -> None:
        self.closed_reason = self.closed_reason or "the device was closed"
        try:
            self._ws.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ sending
    def enqueue(self, kind: str, args: tuple, outs: list[Any]) -> None:
        """Buffer one op record (sent with the next batch)."""
        record = (kind, tuple(encode_arg(a) for a in args), outs)
        ndarray = _ndarray_type()
        inline = sum(a.nbytes for a in args if type(a) is ndarray)
        with self._lock:
            self.check()
            self._ops.append(record)
            self._inline += inline
            if len(self._ops) >= BATCH or self._inline >= INLINE_BYTES:
                self._flush()

    def enqueue_encoded(self, records: list[tuple]) -> None:
        """Queue records already in wire form (signatures, compact ops). No lock: ``list.extend`` is
        atomic, and ``_flush`` takes what is queued without replacing the list, so nothing is lost to a
        concurrent flush (the hot paths in ``_backend`` queue a compact op the same way)."""
        if self.closed_reason is not None or self._state._state is not _OPEN:
            raise self._lost()
        ops = self._ops
        ops += records
        if len(ops) >= BATCH:
            self.flush_batch()

    def flush_batch(self) -> None:
        """Send the queued records (a full batch); errors raise."""
        with self._lock:
            self._flush()

    def drop(self, tid: int) -> None:
        """Free tensor ``tid`` on the server (with the next batch). Called from ``__del__``: no lock."""
        self._drops.append(tid)

    def _flush(self, step: bool = False) -> None:
        """Send what is queued in one OPS frame (``step``: with the step mark, even when nothing is)."""
        if not self._ops and not self._drops and not step:
            return
        # Drops first: a tensor dropped by now was last used by an op queued before it died, so that op
        # is among those taken next and runs before the server frees the tensor. Other threads may queue
        # ops and drops meanwhile (no lock on those paths): what they add stays for the next frame.
        drops = self._drops[:]
        del self._drops[: len(drops)]
        queued = self._ops
        n = len(queued)
        ops = queued[:n]
        del queued[:n]
        self._inline = 0
        self._send(frame(OPS, (ops, drops, True) if step else (ops, drops)))
        self.counts["kernels"] += len(ops)

    def _send(self, data: bytes | list[bytes]) -> None:
        try:
            self._ws.send(data)
        except Exception as exc:
            raise self._lost(exc) from None
        self.counts["submits"] += 1

    def flush(self) -> None:
        with self._lock:
            if self.alive:
                self._flush()

    def mark_step(self) -> None:
        """Send what is queued with the step mark: the server's device ends a step there
        (``burn.fusion.mark_step``), so its fusion replays one stream per training step."""
        with self._lock:
            if self.alive:
                self._flush(step=True)

    def upload(self, tid: int, shape: tuple[int, ...], dtype: burn.DType, array: Any) -> None:
        """Send a large host array in frames of ``self.chunk`` bytes as tensor ``tid``."""
        data = raw_bytes(array)
        total = len(data)
        chunk = self.chunk
        with self._lock:
            self.check()
            self._flush()
            offset = 0
            while True:
                n = min(chunk, total - offset)
                meta = (tid, dtype.name, wire_dtype(array.dtype), list(shape), total, offset)
                self._send(frame(UPLOAD, meta, data[offset : offset + n]))
                offset += n
                if offset >= total:
                    break

    # ------------------------------------------------------------------ requests
    def _recv(self, timeout: float | None) -> tuple[int, Any, memoryview]:
        try:
            message = self._ws.recv(timeout=timeout)
        except TimeoutError:
            raise self._lost(TimeoutError(f"no reply within {timeout:g} s")) from None
        except Exception as exc:
            self._raise_error_if_sent()
            raise self._lost(exc) from None
        kind, meta, raw = unframe(message, SERVER_FRAMES)
        if kind == ERROR:
            raise _error(meta)
        return kind, meta, raw

    def _raise_error_if_sent(self) -> None:
        """After the server closed the connection: raise the ERROR frame it sent first, if any."""
        rcvd = getattr(self._ws.protocol, "close_rcvd", None)
        if rcvd is not None and rcvd.code in (1008, 1013):  # authentication failed / server busy
            reason = "authentication failed: wrong or missing token" if rcvd.code == 1008 else rcvd.reason
            self.closed_reason = f"the server refused the session: {reason}"
            raise RemoteError(f"remote device {self.url}: {reason}")

    def read(self, ids: list[int]) -> list[Any]:
        """The tensors ``ids`` as numpy arrays, in one round trip."""
        import numpy as np

        with self._lock:
            self.check()
            self._flush()
            self._send(frame(READ, (ids,)))
            self.counts["syncs"] += 1
            buffers: dict[int, Any] = {}
            meta_of: dict[int, tuple] = {}
            while True:
                kind, meta, raw = self._recv(None)  # keep-alive pings bound the wait on a dead server
                if kind != DATA:
                    raise ProtocolError(f"expected DATA, got frame type {kind}")
                last, pieces = meta
                pos = 0
                for index, np_dtype, shape, total, offset, n in pieces:
                    buf = buffers.get(index)
                    if buf is None:
                        buf = buffers[index] = np.empty(total, np.uint8)
                        meta_of[index] = (np_dtype, tuple(shape))
                    buf[offset : offset + n] = np.frombuffer(raw[pos : pos + n], np.uint8)
                    pos += n
                if last:
                    break
        out = []
        for i in range(len(ids)):
            np_dtype, shape = meta_of[i]
            out.append(buffers[i].view(numpy_dtype(np_dtype)).reshape(shape))
        return out

    def sync(self) -> None:
        with self._lock:
            self.check()
            self._flush()
            self._send(frame(SYNC, None))
            self.counts["syncs"] += 1
            kind, _, _ = self._recv(None)
            if kind != DONE:
                raise ProtocolError(f"expected DONE, got frame type {kind}")


class _StateView:
    """``protocol.state`` under the name ``_state`` (for a websockets without that field)."""

    __slots__ = ("protocol",)

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol

    @property
    def _state(self) -> Any:
        return self.protocol.state


def _ndarray_type() -> Any:
    import numpy as np

    return np.ndarray


def _error(meta: Any) -> Exception:
    """The exception an ERROR frame stands for: burn's own error types keep their type."""
    if not isinstance(meta, dict):
        return ProtocolError(f"malformed ERROR frame {meta!r:.80}")
    kind, name, message = meta.get("kind"), str(meta.get("type")), str(meta.get("message"))
    if kind == "auth":
        return RemoteUnavailableError(
            f"remote device: {message} (the server's token: set BURN_REMOTE_TOKEN or pass token=)"
        )
    cls = getattr(burn, name, None)
    if isinstance(cls, type) and issubclass(cls, burn.BurnError):
        return cls(message)
    builtin = {"ValueError": ValueError, "TypeError": TypeError, "IndexError": IndexError}.get(name)
    if builtin is not None and kind == "op":
        return builtin(message)
    return RemoteError(f"remote device: the server reported {name}: {message}")
