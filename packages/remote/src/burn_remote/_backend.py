"""``RemoteBackend``: a burn backend whose tensors live on a server's device.

It is ``burn.ir``'s capture backend pointed at a wire: each op derives its output shapes and dtypes on
the client with the capture backend's rules (so nothing waits for the server) and its ``OpRecord`` is
sent to the server, which replays it on its own backend. Primitives are ``RemoteTensor`` handles (an id,
a shape, a dtype); dropping one frees the server's tensor. Host data goes up with the op stream (small
arrays inline, large ones in chunks); reads come back in one round trip per read or ``Transaction``.
Random numbers are drawn on the client from ``burn.seed``'s generator, so a seed gives the numbers it
gives on every local backend.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import burn
from burn.backend import NUMPY_DTYPES, Backend, DType
from burn.ir import CaptureBackend, Graph, Sym, TensorRef

from ._client import _OPEN, BATCH, Connection
from ._errors import RemoteError
from ._plugin import URL_ENV
from ._protocol import INLINE, MAX_SIGNATURE_SIZE, MAX_SIGNATURES, VAR_FLOAT_METHODS, signature_size
from ._protocol import plain_tuple as _plain_tuple

DEFAULT_TIMEOUT = 10.0
TOKEN_ENV = "BURN_REMOTE_TOKEN"


_PLAIN = frozenset({int, float, bool, str, type(None)})
_new_object = object.__new__


class RemoteTensor(Sym):
    """A tensor of a remote session: its id, shape and dtype, and the connection. ``ref`` (the graph
    reference ``burn.ir`` code reads) is made on demand: the hot paths read the fields."""

    __slots__ = ("conn", "dtype", "id", "shape")
    id: int
    shape: tuple[int, ...]  # a field here (Sym has a property)
    dtype: DType

    def __init__(self, ref: TensorRef, conn: Connection) -> None:
        self.id, self.shape, self.dtype = ref.id, ref.shape, ref.dtype
        self.conn = conn

    @property
    def ref(self) -> TensorRef:  # type: ignore[override]
        return TensorRef(self.id, self.shape, self.dtype)

    def __del__(self) -> None:
        try:
            self.conn._drops.append(self.id)  # Connection.drop inlined
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"RemoteTensor(%{self.id}, {self.dtype.name}{list(self.shape)})"


class RemoteBackend(CaptureBackend):
    """The ``remote`` backend: ``burn.device("remote", url="ws://host:3000", token=...)``."""

    name = "remote"

    def __init__(
        self, url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT, tls_ca: str | None = None
    ) -> None:
        self.url = url
        self._token = token
        self.timeout = timeout
        self.tls_ca = tls_ca
        self.graph = Graph()  # _define records here; each record is taken off at once
        self._next = 0
        self._connect()

    def _connect(self) -> None:
        self.conn = Connection(self.url, self._token, self.timeout, self.tls_ca)
        info = self.conn.info
        self.server = info
        self.dtypes = frozenset(burn.dtype(n) for n in info["dtypes"])
        self.default_float = burn.dtype(info["default_float"])
        self.default_int = burn.dtype(info["default_int"])
        self.like = self

    def reconnect(self) -> None:
        """Open a new session (after a server restart); tensors of the old session stay unusable."""
        old = self.conn
        self._connect()  # a new connection: no signatures yet (the new server may differ)
        old.close()

    def close(self) -> None:
        """End the session: the server frees its tensors."""
        self.conn.close()

    def __repr__(self) -> str:
        return f"<RemoteBackend {self.url} -> {self.server.get('device')}>"

    def shape_of(self, x: Sym) -> tuple[int, ...]:
        return x.shape

    def dtype_of(self, x: Sym) -> DType:
        return x.dtype  # type: ignore[attr-defined]

    # ---- recording: outputs are handles, each op goes on the wire as a compact record
    def _new(self, shape: tuple[int, ...], dtype: DType) -> RemoteTensor:
        out: RemoteTensor = _new_object(RemoteTensor)
        out.id = self.conn.next_id()
        out.shape = tuple(int(s) for s in shape)
        out.dtype = dtype
        out.conn = self.conn
        return out

    # The element-wise ops in full: no argument loop, no generic signature (the keys are those _emit
    # builds for the same arguments, so both paths share one signature table).
    def unary(self, kind: str, x: Any) -> Any:
        conn = self.conn
        if type(x) is RemoteTensor and x.conn is conn:
            sig = conn.sigs.get((kind, x.shape, x.dtype))
            if sig is not None and sig[1] is not None:
                return _send1(conn, sig, (x.id,))
        return self._emit(kind, "unary", (x,))

    def activation(self, op: str, x: Any) -> Any:
        if op in self.native_activations:
            return self.unary(op, x)
        return super().activation(op, x)

    def binary(self, kind: str, a: Any, b: Any) -> Any:
        # the most frequent op of all: _send1 inlined
        conn = self.conn
        if type(a) is RemoteTensor and a.conn is conn:
            tb = type(b)
            if tb is float:
                sig = conn.sigs.get((kind, a.shape, a.dtype, float))
                rest: tuple = (a.id, b)
            elif tb is RemoteTensor and b.conn is conn:
                sig = conn.sigs.get((kind, a.shape, a.dtype, b.shape, b.dtype))
                rest = (a.id, b.id)
            else:
                sig = None
            if sig is not None and sig[1] is not None:
                out: RemoteTensor = _new_object(RemoteTensor)
                out.id = tid = conn.next_id()
                out.shape, out.dtype = sig[1]
                out.conn = conn
                if conn.closed_reason is not None or conn._state._state is not _OPEN:
                    raise conn._lost()
                ops = conn._ops
                ops.append((sig[0], tid, *rest))  # no lock: see Connection.enqueue_encoded
                if len(ops) >= BATCH:
                    conn.flush_batch()
                return out
        return self._emit(kind, "binary", (a, b))

    def cast(self, x: Any, dtype: DType) -> Any:
        conn = self.conn
        if type(x) is RemoteTensor and x.conn is conn and type(dtype) is DType:
            sig = conn.sigs.get(("cast", x.shape, x.dtype, dtype))
            if sig is not None and sig[1] is not None:
                return _send1(conn, sig, (x.id,))
        return self._emit("cast", "cast", (x, dtype))

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        conn = self.conn
        if type(cond) is RemoteTensor and cond.conn is conn:
            ta, tb = type(a), type(b)
            if ta is RemoteTensor and a.conn is conn:
                if tb is RemoteTensor and b.conn is conn:
                    key: tuple = ("where", cond.shape, cond.dtype, a.shape, a.dtype, b.shape, b.dtype)
                    rest: tuple = (cond.id, a.id, b.id)
                elif tb is float:
                    key, rest = ("where", cond.shape, cond.dtype, a.shape, a.dtype, float), (cond.id, a.id, b)
                else:
                    key = ()
            elif ta is float and tb is RemoteTensor and b.conn is conn:
                key, rest = ("where", cond.shape, cond.dtype, float, b.shape, b.dtype), (cond.id, b.id, a)
            else:
                key = ()
            sig = conn.sigs.get(key) if key else None
            if sig is not None and sig[1] is not None:
                return _send1(conn, sig, rest)
        return self._emit("where", "where", (cond, a, b))

    def _emit(self, kind: str, method: str, args: tuple) -> Any:
        # The capture backend's rules give the output shapes and dtypes; they depend only on the input
        # shapes/dtypes and the other arguments (not on the values of VAR_FLOAT_METHODS' floats), so a
        # signature is defined once per session (the rules run, the server checks it) and each op of it
        # is a compact record of ids: a repeated op costs a dict lookup.
        conn = self.conn
        var = method in VAR_FLOAT_METHODS
        key: list[Any] = [kind]
        ids: list[Any] = []
        floats: list[float] = []
        for a in args:
            ta = type(a)
            if ta is RemoteTensor:
                if a.conn is not conn:
                    _check_session(a, conn)
                key.append(a.shape)
                key.append(a.dtype)
                ids.append(a.id)
            elif ta is float and var:
                key.append(float)
                floats.append(a)
            elif ta in _PLAIN or (ta is tuple and _plain_tuple(a)):
                key.append(ta)
                key.append(a)
            elif ta is DType:
                key.append(a)
            else:
                return self._emit_slow(kind, method, args)
        sig = tuple(key)
        entry = conn.sigs.get(sig)
        if entry is None:
            return self._define(kind, method, args, sig, var)
        ids += floats
        if entry[1] is not None:
            return _send1(conn, entry, tuple(ids))
        results = [self._new(shape, dtype) for shape, dtype in entry[2]]
        conn.enqueue_encoded([(entry[0], *(o.id for o in results), *ids)])
        return tuple(results)

    def _define(self, kind: str, method: str, args: tuple, sig: tuple, var: bool) -> Any:
        """The first op of a signature: the capture rules derive its outputs; a signature record goes
        out before the op's compact record (a full record instead once the session has
        ``MAX_SIGNATURES``, or for a signature larger than ``MAX_SIGNATURE_SIZE``)."""
        conn = self.conn
        out = super()._emit(kind, method, args)
        record = self.graph.ops.pop()
        outs = tuple((t.shape, t.dtype) for t in record.outputs)
        template: list[Any] = []
        ins: list[tuple[tuple[int, ...], str]] = []
        ids: list[int] = []
        fpos: list[int] = []
        floats: list[float] = []
        for pos, a in enumerate(args):
            if type(a) is RemoteTensor:
                template.append({"t": len(ins)})
                ins.append((a.shape, a.dtype.name))
                ids.append(a.id)
            elif type(a) is DType:
                template.append({"d": a.name})
            else:
                template.append(a)
                if var and type(a) is float:
                    fpos.append(pos)
                    floats.append(a)
        args_t, ins_t, outs_t = tuple(template), tuple(ins), tuple((s, d.name) for s, d in outs)
        if conn.n_sigs >= MAX_SIGNATURES or signature_size(args_t, ins_t, outs_t) > MAX_SIGNATURE_SIZE:
            conn.enqueue(
                str(record.kind), record.args, [(t.id, t.shape, t.dtype.name) for t in record.outputs]
            )
            return out
        with conn._lock:  # one number per signature, even with several threads defining
            conn.check()
            sid = conn.n_sigs
            conn.n_sigs += 1
            definition = (None, sid, kind, args_t, ins_t, outs_t, tuple(fpos))
            op = (sid, *(t.id for t in record.outputs), *ids, *floats)
            conn._ops += [definition, op]  # queued in number order, then published
            single = (outs[0][0], outs[0][1]) if len(outs) == 1 else None
            conn.sigs[sig] = (sid, single, outs)
        if len(conn._ops) >= BATCH:
            conn.flush_batch()
        return out

    def _emit_slow(self, kind: str, method: str, args: tuple) -> Any:
        """A full op record (arguments that a signature cannot hold: lists of tensors, host arrays)."""
        conn = self.conn
        for a in args:
            _check_session(a, conn)
        out = super()._emit(kind, method, args)
        record = self.graph.ops.pop()
        outs = [(t.id, t.shape, t.dtype.name) for t in record.outputs]
        conn.enqueue(str(record.kind), record.args, outs)
        return out

    # ---- data
    def from_numpy(self, array: Any, dtype: DType) -> RemoteTensor:
        import numpy as np

        arr = np.asarray(array)
        target = NUMPY_DTYPES.get(dtype)
        if target is not None and arr.dtype != target:
            arr = arr.astype(target)
        arr = np.asarray(arr, order="C")
        out = self._new(arr.shape, dtype)
        if arr.nbytes <= INLINE:
            self.conn.enqueue("from_numpy", (arr, dtype), [(out.id, out.shape, dtype.name)])
        else:
            self.conn.upload(out.id, out.shape, dtype, arr)
        return out

    def to_numpy(self, x: Sym) -> Any:
        return self.read_many([x])[0]

    def read_many(self, xs: Sequence[Sym]) -> list[Any]:
        for x in xs:
            _check_session(x, self.conn)
        return self.conn.read([x.id for x in xs])  # type: ignore[attr-defined]

    def sync(self) -> None:
        self.conn.sync()

    def mark_step(self) -> None:
        """A training step ended (``burn.fusion.mark_step``): so does the server device's stream."""
        self.conn.mark_step()

    def counters(self) -> dict[str, int]:
        """Op records sent (``kernels``), frames sent (``submits``) and round trips (``syncs``)."""
        return dict(self.conn.counts)

    # ---- random numbers: drawn on the client (burn.seed's generator), then uploaded
    random_uniform = Backend.random_uniform
    random_normal = Backend.random_normal
    random_int = Backend.random_int
    random_bernoulli = Backend.random_bernoulli


def _send1(conn: Connection, entry: tuple, rest: tuple) -> RemoteTensor:
    """Queue the compact record ``(signature, output id, *rest)`` of a one-output op and return the
    output's handle."""
    out: RemoteTensor = _new_object(RemoteTensor)
    out.id = tid = conn.next_id()
    out.shape, out.dtype = entry[1]
    out.conn = conn
    if conn.closed_reason is not None or conn._state._state is not _OPEN:
        raise conn._lost()
    ops = conn._ops
    ops.append((entry[0], tid) + rest)  # no lock: see Connection.enqueue_encoded
    if len(ops) >= BATCH:
        conn.flush_batch()
    return out


def _check_session(a: Any, conn: Connection) -> None:
    if isinstance(a, RemoteTensor):
        if a.conn is not conn:
            raise RemoteError(
                f"remote device: {a!r} belongs to a session that has ended (the device reconnected); "
                "tensors do not survive a reconnect"
            )
    elif isinstance(a, (list, tuple)):
        for v in a:
            _check_session(v, conn)


def connect(
    index: int = 0,
    url: str | None = None,
    token: str | None = None,
    timeout: float | None = None,
    tls_ca: str | None = None,
) -> Backend:
    """The backend factory ``burn.device("remote", ...)`` calls: options checked, defaults from the
    environment (``BURN_REMOTE_URL``, ``BURN_REMOTE_TOKEN``)."""
    url = url if url is not None else os.environ.get(URL_ENV)
    if url is None:
        raise burn.BackendUnavailableError(
            f"device remote:{index}: backend 'remote' is unavailable: no server given: pass "
            f"url='ws://host:3000' or set {URL_ENV}"
        )
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise ValueError(f"remote device: url: expected 'ws://host:port' or 'wss://host:port', got {url!r}")
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and not isinstance(token, str):
        raise TypeError(f"remote device: token: expected a string, got {type(token).__name__}")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"remote device: timeout: expected a positive number of seconds, got {timeout!r}")
    if tls_ca is not None and not isinstance(tls_ca, str):
        raise TypeError(f"remote device: tls_ca: expected a path to a CA file, got {tls_ca!r}")
    return RemoteBackend(url, token, float(timeout), tls_ca)
