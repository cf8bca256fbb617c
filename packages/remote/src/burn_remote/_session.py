"""One client's session on the server: its tensor table, and every frame it sends, validated then run.

Each op record is checked before it runs: its kind is in ``burn.ir``'s vocabulary, its output ids are new,
its inputs name tensors of this session only, its declared output shapes and dtypes are what the capture
backend's shape rules derive from the inputs (so a hostile client cannot make the backend allocate more
than it declared), and the outputs fit the session's memory limit. After it runs, the results are checked
against the declaration once more.

An op that fails poisons its outputs: ops reading them fail the same way without running, reading them
raises the error, and the first error since the last read or sync is reported by the next read or sync
(as a device backend reports an asynchronous error). A frame that breaks the wire format closes the
session instead. Nothing here touches another session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import burn
from burn.backend import Backend, DType
from burn.ir import CaptureBackend, Sym, TensorRef, op_def

from ._errors import ProtocolError
from ._protocol import (
    CHUNK,
    DATA,
    DONE,
    ERROR,
    HELLO,
    OPS,
    READ,
    SYNC,
    UPLOAD,
    WireRef,
    frame,
    plain_tuple,
    unframe,
)

_ALLOWED = frozenset({OPS, UPLOAD, READ, SYNC})
MAX_RANK = 16
MAX_STRING = 1024


class OpError(Exception):
    """An op record that fails validation (reported to the client like an op's own error)."""


@dataclass
class Limits:
    """What one session may use: ``max_frame`` bytes per frame (the WebSocket's message limit),
    ``max_session_bytes`` of live tensors, ``max_sessions`` open at once."""

    max_frame: int = 64 << 20
    max_session_bytes: int = 4 << 30
    max_sessions: int = 32


class _Meta:
    """The shape, dtype and size of a live tensor, interned per session (one object per (shape, dtype)):
    plan keys hold it by identity, so a repeated signature hashes cheaply, and storing an op's outputs
    builds no per-tensor object."""

    __slots__ = ("dtype", "nbytes", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: DType) -> None:
        self.shape = shape
        self.dtype = dtype
        self.nbytes = _nbytes(shape, dtype)


@dataclass
class _Failed:
    error: BaseException


@dataclass
class _Upload:
    ref: TensorRef | None  # None: refused, its remaining chunks are skipped
    np_dtype: Any
    buffer: Any
    received: int = 0
    total: int = 0


@dataclass
class Reply:
    """What handling one frame gives: frames to send back, and a reason when the session must close."""

    frames: list[bytes] = field(default_factory=list)
    close: str | None = None


class Session:
    """The tensors of one client and the frames that act on them (run on the session's worker thread)."""

    def __init__(self, backend: Backend, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self.checker = CaptureBackend(backend)
        self.prims: dict[int, Any] = {}
        self.refs: dict[int, _Meta] = {}  # shape and dtype of every tensor in prims (poisoned ones too)
        self._interned: dict[tuple[tuple[int, ...], DType], _Meta] = {}
        self._methods: dict[str, Any] = {}
        # signature (kind, input metas, plain arguments) -> (method, takes the kind, ((shape, dtype name,
        # meta) per output), output bytes): an op whose signature ran and was checked before
        self.plans: dict[tuple, tuple[Any, bool, tuple[tuple[tuple[int, ...], str, _Meta], ...], int]] = {}
        self._out_ok: dict[tuple, tuple[DType, int]] = {}  # (shape, dtype name) already validated
        self.live_bytes = 0
        self.first_error: BaseException | None = None
        self.uploads: dict[int, _Upload] = {}
        self.ops_run = 0
        self.shapes: dict[tuple, tuple[tuple[tuple[int, ...], DType], ...]] = {}

    # ------------------------------------------------------------------ frames
    def handle(self, message: Any) -> Reply:
        try:
            kind, meta, raw = unframe(message, _ALLOWED | {HELLO})
            if kind == HELLO:
                raise ProtocolError("HELLO sent twice")
            if kind == OPS:
                self._ops(meta)
                return Reply()
            if kind == UPLOAD:
                self._upload(meta, raw)
                return Reply()
            if kind == READ:
                return Reply(self._read(meta))
            return Reply([self._sync()])
        except ProtocolError as exc:
            return Reply([error_frame("protocol", exc)], str(exc)[:120])

    def _ops(self, meta: Any) -> None:
        if not (isinstance(meta, tuple) and len(meta) == 2 and isinstance(meta[0], tuple)):
            raise ProtocolError("OPS frame: expected (records, drops)")
        records, drops = meta
        if not isinstance(drops, tuple) or not all(type(d) is int for d in drops):
            raise ProtocolError("OPS frame: drops must be a list of tensor ids")
        for record in records:  # each op: the planned path when its signature ran before, else full checks
            self.run(record)
        for tid in drops:
            self.free(tid)

    def free(self, tid: int) -> None:
        prim = self.prims.pop(tid, None)
        if prim is not None:
            m = self.refs.pop(tid)
            if type(prim) is not _Failed:  # poisoned entries hold no memory
                self.live_bytes -= m.nbytes

    def _meta(self, shape: tuple[int, ...], dtype: DType) -> _Meta:
        interned = self._interned
        m = interned.get((shape, dtype))
        if m is None:
            if len(interned) > 8192:  # a miss later only costs the full validation path
                interned.clear()
            m = interned[(shape, dtype)] = _Meta(shape, dtype)
        return m

    def close(self) -> None:
        """Free every tensor of the session (the client left)."""
        self.prims.clear()
        self.refs.clear()
        self.uploads.clear()
        self.live_bytes = 0

    # ------------------------------------------------------------------ ops
    def run(self, record: Any) -> None:
        if not (type(record) is tuple and len(record) == 3):
            raise ProtocolError("op record: expected [kind, args, outputs]")
        kind, args, outs = record
        if type(args) is not tuple:
            raise ProtocolError("op record: args must be a list")
        if self._run_planned(kind, args, outs):
            return
        try:
            refs = self._outputs(outs)
        except OpError as exc:
            self._fail(exc)
            return
        try:
            spec = _spec(kind)
            if len(refs) != spec.outputs:
                raise OpError(f"{kind}: declares {len(refs)} outputs, the op has {spec.outputs}")
            sig, prim_args, failed = self._resolve(kind, args)
            if failed is not None:
                self._poison(refs, failed)
                return
            if spec.method == "from_numpy":
                self._check_from_numpy(kind, prim_args, refs)
            else:
                self._check_shapes(spec, kind, sig, args, refs)
            fn = self._methods.get(spec.method)
            if fn is None:
                fn = self._methods[spec.method] = getattr(self.backend, spec.method)
            out = fn(kind, *prim_args) if spec.op_arg else fn(*prim_args)
            outs_prims = out if spec.outputs > 1 else (out,)
            backend = self.backend
            for prim, ref in zip(outs_prims, refs):
                shape, dtype = tuple(backend.shape_of(prim)), backend.dtype_of(prim)
                if shape != ref.shape or dtype is not ref.dtype:
                    raise OpError(
                        f"{kind}: gave {dtype.name}{list(shape)}, the client declared "
                        f"{ref.dtype.name}{list(ref.shape)}"
                    )
        except Exception as exc:
            self._poison(refs, exc)
            self._fail(exc)
            return
        prims, metas = self.prims, self.refs
        total = 0
        out_metas = []
        for prim, ref in zip(outs_prims, refs):
            m = self._meta(ref.shape, ref.dtype)
            prims[ref.id] = prim
            metas[ref.id] = m
            out_metas.append(m)
            total += m.nbytes
        self.live_bytes += total
        self.ops_run += 1
        if sig is not None and spec.method != "from_numpy":
            if len(self.plans) > 8192:
                self.plans.clear()
            expected = tuple((m.shape, m.dtype.name, m) for m in out_metas)
            self.plans[sig] = (fn, spec.op_arg, expected, total)

    def _run_planned(self, kind: Any, args: tuple, outs: Any) -> bool:
        """Run an op whose signature ran (and was checked) before: its outputs only need to match the
        plan. False leaves it to the full path (a new signature, anything unusual, any failure: ops are
        pure, so running one again there is harmless)."""
        prims = self.prims
        key: list[Any] = [kind]
        pargs: list[Any] = []
        for a in args:
            ta = type(a)
            if ta is WireRef:
                prim = prims.get(a)
                if prim is None or type(prim) is _Failed:
                    return False
                key.append(self.refs[a])
                pargs.append(prim)
            elif ta in _PLAIN or (ta is tuple and plain_tuple(a)):
                key.append(ta)
                key.append(a)
                pargs.append(a)
            else:
                return False
        try:
            plan = self.plans.get(tuple(key))
        except TypeError:
            return False
        if plan is None or type(outs) is not tuple or len(outs) != len(plan[2]):
            return False
        fn, op_arg, expected, total = plan
        ids = []
        for out, (shape, name, _) in zip(outs, expected):
            if type(out) is not tuple or len(out) != 3:
                return False
            tid = out[0]
            if type(tid) is not int or tid < 0 or tid in prims or out[1] != shape or out[2] != name:
                return False
            ids.append(tid)
        if len(ids) > 1 and len(set(ids)) != len(ids):
            return False
        if self.live_bytes + total > self.limits.max_session_bytes:
            return False
        try:
            result = fn(kind, *pargs) if op_arg else fn(*pargs)
        except Exception:
            return False
        results = result if len(ids) > 1 else (result,)
        backend = self.backend
        for prim, (shape, _, m) in zip(results, expected):
            if tuple(backend.shape_of(prim)) != shape or backend.dtype_of(prim) is not m.dtype:
                return False
        metas = self.refs
        for tid, prim, (_, _, m) in zip(ids, results, expected):
            prims[tid] = prim
            metas[tid] = m
        self.live_bytes += total
        self.ops_run += 1
        return True

    def _outputs(self, outs: Any) -> list[TensorRef]:
        if type(outs) is not tuple or not outs:
            raise OpError("op record: outputs must be a non-empty list")
        refs: list[TensorRef] = []
        total = 0
        prims = self.prims
        for out in outs:
            if type(out) is not tuple or len(out) != 3:
                raise OpError(f"op record: malformed output {out!r:.80}")
            tid, shape, dtype_name = out
            if type(tid) is not int or tid < 0:
                raise OpError(f"op record: malformed output {out!r:.80}")
            try:
                known = self._out_ok.get((shape, dtype_name))
            except TypeError:  # unhashable parts
                raise OpError(f"op record: malformed output {out!r:.80}") from None
            if known is None:
                known = self._check_output(shape, dtype_name)
            if tid in prims or (refs and any(r.id == tid for r in refs)):
                raise OpError(f"op record: output id {tid} is already in use")
            refs.append(TensorRef(tid, shape, known[0]))
            total += known[1]
        if self.live_bytes + total > self.limits.max_session_bytes:
            raise OpError(
                f"session memory limit: outputs of {total} bytes on top of {self.live_bytes} live exceed "
                f"{self.limits.max_session_bytes} bytes (the server's --max-session-mib)"
            )
        return refs

    def _check_output(self, shape: Any, dtype_name: Any) -> tuple[DType, int]:
        ok = type(shape) is tuple and len(shape) <= MAX_RANK and all(type(s) is int and s >= 0 for s in shape)
        if not ok:
            raise OpError(f"op record: malformed output shape {shape!r:.80}")
        dtype = _dtype(dtype_name)
        if dtype not in self.backend.dtypes:
            raise OpError(f"op record: dtype {dtype.name} is not supported by the server's backend")
        known = (dtype, _nbytes(shape, dtype))
        if len(self._out_ok) > 8192:
            self._out_ok.clear()
        self._out_ok[(shape, dtype_name)] = known
        return known

    def _resolve(self, kind: str, args: tuple) -> tuple[tuple | None, tuple, BaseException | None]:
        """``(signature, args with tensors as primitives, the error of a poisoned input)``. The signature
        (kind, input shapes/dtypes, plain arguments) keys the memoised shape check; None when an argument
        is not plain (a list of tensors, an array)."""
        prims = self.prims
        key: list[Any] = [kind]
        out: list[Any] = []
        failed: BaseException | None = None
        plain = True
        for a in args:
            if type(a) is WireRef:
                prim = prims.get(a)
                if prim is None:
                    raise OpError(f"unknown tensor id {a} (not a tensor of this session)")
                if type(prim) is _Failed and failed is None:
                    failed = prim.error
                key.append(self.refs[a])
                out.append(prim)
            elif type(a) in _PLAIN or (type(a) is tuple and plain_tuple(a)):
                if type(a) is str and len(a) > MAX_STRING:
                    raise OpError(f"string argument of {len(a)} characters exceeds {MAX_STRING}")
                key.append(type(a))
                key.append(a)
                out.append(a)
            else:
                nested = self._walk(a, False)
                if failed is None:
                    failed = self._nested_failure(a)
                out.append(nested)
                plain = False
        return (tuple(key) if plain else None), tuple(out), failed

    def _walk(self, a: Any, symbolic: bool) -> Any:
        if type(a) is WireRef:
            prim = self.prims.get(a)
            if prim is None:
                raise OpError(f"unknown tensor id {a} (not a tensor of this session)")
            if not symbolic:
                return prim
            m = self.refs[a]
            return Sym(TensorRef(int(a), m.shape, m.dtype))
        if isinstance(a, (tuple, list)):
            return type(a)(self._walk(v, symbolic) for v in a)
        if isinstance(a, str) and len(a) > MAX_STRING:
            raise OpError(f"string argument of {len(a)} characters exceeds {MAX_STRING}")
        return a

    def _nested_failure(self, a: Any) -> BaseException | None:
        if type(a) is WireRef:
            prim = self.prims.get(a)
            return prim.error if type(prim) is _Failed else None
        if isinstance(a, (tuple, list)):
            for v in a:
                found = self._nested_failure(v)
                if found is not None:
                    return found
        return None

    def _check_shapes(
        self, spec: Any, kind: str, sig: tuple | None, args: tuple, refs: list[TensorRef]
    ) -> None:
        """The declared outputs are what the capture backend's rules derive (memoised by signature)."""
        expected = self.shapes.get(sig) if sig is not None else None
        if expected is None:
            expected = self._derive(spec, kind, tuple(self._walk(a, True) for a in args))
            if sig is not None:
                if len(self.shapes) > 8192:
                    self.shapes.clear()
                self.shapes[sig] = expected
        for (shape, dtype), ref in zip(expected, refs):
            if shape != ref.shape or dtype is not ref.dtype:
                raise OpError(
                    f"{kind}: the client declared {ref.dtype.name}{list(ref.shape)}, the op gives "
                    f"{dtype.name}{list(shape)}"
                )

    def _derive(self, spec: Any, kind: str, sym_args: tuple) -> tuple[tuple[tuple[int, ...], DType], ...]:
        if kind == "check_index":  # its message is formatted with the bad value: one placeholder only
            message = sym_args[3] if len(sym_args) == 4 else None
            if not isinstance(message, str) or "{" in message.replace("{value}", ""):
                raise OpError("check_index: message must be a string whose only field is {value}")
        fn = getattr(self.checker, spec.method)
        try:
            out = fn(kind, *sym_args) if spec.op_arg else fn(*sym_args)
        except Exception as exc:
            raise OpError(f"{kind}: invalid arguments: {type(exc).__name__}: {exc}") from None
        finally:
            self.checker.graph.ops.clear()
            self.checker.graph.constants.clear()
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Sym) for o in outs):
            raise OpError(f"{kind}: invalid arguments")
        return tuple((o.ref.shape, o.ref.dtype) for o in outs)

    def _check_from_numpy(self, kind: str, args: tuple, refs: list[TensorRef]) -> None:
        import numpy as np

        if len(args) != 2 or not isinstance(args[0], np.ndarray) or not isinstance(args[1], DType):
            raise OpError("from_numpy: expected (array, dtype)")
        if args[0].shape != refs[0].shape or args[1] is not refs[0].dtype:
            raise OpError("from_numpy: the array does not match the declared output")

    def _store(self, ref: TensorRef, prim: Any) -> None:
        m = self._meta(ref.shape, ref.dtype)
        self.prims[ref.id] = prim
        self.refs[ref.id] = m
        self.live_bytes += m.nbytes

    def _poison(self, refs: list[TensorRef], error: BaseException) -> None:
        for ref in refs:
            self.prims[ref.id] = _Failed(error)
            self.refs[ref.id] = self._meta(ref.shape, ref.dtype)  # holds no memory: not counted in live_bytes

    def _fail(self, error: BaseException) -> None:
        if self.first_error is None:
            self.first_error = error

    # ------------------------------------------------------------------ data
    def _upload(self, meta: Any, raw: memoryview) -> None:
        import numpy as np

        try:
            tid, dtype_name, np_name, shape, total, offset = meta
            shape = tuple(shape)
            np_dtype = np.dtype(np_name)
            ok = type(tid) is int and type(total) is int and type(offset) is int and np_dtype.kind in "biuf"
        except Exception:
            raise ProtocolError(
                "UPLOAD frame: expected (id, dtype, numpy dtype, shape, total, offset)"
            ) from None
        if not ok:
            raise ProtocolError("UPLOAD frame: malformed sizes or dtype")
        up = self.uploads.get(tid)
        if up is None:
            if offset != 0:
                raise ProtocolError(f"UPLOAD frame: tensor {tid} starts at offset {offset}, expected 0")
            if not all(type(n) is int and n >= 0 for n in shape) or total != np_dtype.itemsize * math.prod(
                shape
            ):
                raise ProtocolError(f"UPLOAD frame: {total} bytes do not hold {np_dtype}{list(shape)}")
            try:
                (ref,) = self._outputs(((tid, shape, dtype_name),))
            except OpError as exc:  # refused (memory limit, dtype, id in use): its chunks are skipped
                self._fail(exc)
                self._poison_id(tid, shape, dtype_name, exc)
                up = self.uploads[tid] = _Upload(None, np_dtype, None, total=total)
            else:
                up = self.uploads[tid] = _Upload(ref, np_dtype, np.empty(total, np.uint8), total=total)
                self.live_bytes += total
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
            self.live_bytes -= len(up.buffer)
            done = up.ref
            assert done is not None
            arr = up.buffer.view(up.np_dtype).reshape(done.shape)
            self.run(("from_numpy", (arr, done.dtype), ((tid, done.shape, done.dtype.name),)))

    def _poison_id(self, tid: Any, shape: Any, dtype_name: Any, exc: BaseException) -> None:
        if type(tid) is int and tid not in self.prims:
            try:
                self._poison([TensorRef(tid, tuple(shape), _dtype(dtype_name))], exc)
            except Exception:
                pass

    def _read(self, meta: Any) -> list[bytes]:
        import numpy as np

        if not (isinstance(meta, tuple) and len(meta) == 1 and isinstance(meta[0], tuple)):
            raise ProtocolError("READ frame: expected (ids,)")
        (ids,) = meta
        if self.first_error is not None:
            return [self._report()]
        prims = []
        for tid in ids:
            prim = self.prims.get(tid) if type(tid) is int else None
            if prim is None:
                return [
                    error_frame(
                        "op", OpError(f"read: unknown tensor id {tid!r:.20} (not a tensor of this session)")
                    )
                ]
            if isinstance(prim, _Failed):
                return [error_frame("op", prim.error)]
            prims.append(prim)
        try:
            arrays = [np.asarray(a, order="C") for a in self.backend.read_many(prims)]
        except Exception as exc:
            return [error_frame("op", exc)]
        return list(_data_frames(arrays))

    def _sync(self) -> bytes:
        try:
            self.backend.sync()
        except Exception as exc:
            self._fail(exc)
        if self.first_error is not None:
            return self._report()
        return frame(DONE, None)

    def _report(self) -> bytes:
        error, self.first_error = self.first_error, None
        assert error is not None
        return error_frame("op", error)


def _data_frames(arrays: list[Any]) -> Any:
    """DATA frames carrying ``arrays``: pieces of at most ``CHUNK`` bytes, several small arrays per frame;
    the last frame says so."""
    pieces: list[tuple] = []
    raws: list[memoryview] = []
    size = 0
    for i, arr in enumerate(arrays):
        data = memoryview(arr.reshape(-1)).cast("B") if arr.size else memoryview(b"")
        total = len(data)
        offset = 0
        while True:
            n = min(CHUNK - size, total - offset)
            pieces.append((i, arr.dtype.str, list(arr.shape), total, offset, n))
            raws.append(data[offset : offset + n])
            size += n
            offset += n
            if offset >= total:
                break
            yield frame(DATA, (False, tuple(pieces)), b"".join(raws))
            pieces, raws, size = [], [], 0
    yield frame(DATA, (True, tuple(pieces)), b"".join(raws))


def error_frame(kind: str, exc: BaseException) -> bytes:
    """An ERROR frame: ``kind`` ("auth", "protocol", "op", "limit"), the exception's type and message."""
    return frame(ERROR, {"kind": kind, "type": type(exc).__name__, "message": str(exc)[:4000]})


_PLAIN = frozenset({int, float, bool, str, type(None), DType})
_SPECS: dict[str, Any] = {}


def _spec(kind: Any) -> Any:
    spec = _SPECS.get(kind) if type(kind) is str else None
    if spec is None:
        if type(kind) is not str:
            raise OpError(f"op kind must be a string, got {kind!r:.40}")
        try:
            spec = _SPECS[kind] = op_def(kind)
        except KeyError as exc:
            raise OpError(str(exc.args[0])) from None
    return spec


def _dtype(name: Any) -> DType:
    try:
        return burn.dtype(name)
    except Exception:
        raise OpError(f"unknown dtype {name!r:.40}") from None


def _nbytes(shape: tuple[int, ...], dtype: DType) -> int:
    return math.prod(shape) * dtype.itemsize
