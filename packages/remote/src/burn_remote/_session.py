"""One client's session on the server: its tensor table, and every frame it sends, validated then run.

Each op record is checked before it runs: its kind is in ``burn.ir``'s vocabulary, its output ids are new,
its inputs name tensors of this session only, its declared output shapes and dtypes are what the capture
backend's shape rules derive from the inputs (so a hostile client cannot make the backend allocate more
than it declared), and the outputs fit the session's memory limit. After it runs, the results are checked
against the declaration once more. A signature record gets the same checks once (on symbolic inputs of
its declared shapes and dtypes); each compact op of it is then checked for what can change per op: its
input ids (this session's, of the signature's shapes and dtypes, not failed), its output ids (new), the
per-op floats (floats), the memory limit and the results' shapes and dtypes (for the element-wise forms,
unary and binary, whose results' shapes and dtypes follow from the inputs', once per signature).

An op that fails poisons its outputs: ops reading them fail the same way without running, reading them
raises the error, and the first error since the last read or sync is reported by the next read or sync
(as a device backend reports an asynchronous error). A frame that breaks the wire format closes the
session instead. Nothing here touches another session.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
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
    MAX_SIGNATURE_SIZE,
    MAX_SIGNATURES,
    OPS,
    READ,
    SYNC,
    UPLOAD,
    VAR_FLOAT_METHODS,
    WireRef,
    allowed,
    frame,
    numpy_dtype,
    plain_tuple,
    raw_bytes,
    signature_size,
    unframe,
    wire_dtype,
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


class _Plan:
    """A checked signature: the backend method, its argument template (tensor and per-op float places
    empty), the input and output metas, and the record length of its compact ops. ``error``: the
    signature failed its check; its ops poison their outputs with that error."""

    __slots__ = (
        "error",
        "fn",
        "fn2",
        "fslots",
        "in0",
        "in1",
        "kind",
        "layout",
        "n_out",
        "outs",
        "size",
        "template",
        "total",
        "tslots",
        "verified",
    )

    def __init__(self, n_out: int, size: int, outs: tuple[_Meta, ...]) -> None:
        self.n_out = n_out
        self.size = size  # 1 + outputs + inputs + floats
        self.outs = outs
        self.error: BaseException | None = None
        self.fn: Any = None
        self.template: list[Any] = []
        self.tslots: tuple[tuple[int, _Meta], ...] = ()
        self.fslots: tuple[int, ...] = ()
        self.total = sum(m.nbytes for m in outs)
        # the common one-output element-wise forms, called without a template: 1 unary fn(kind, x),
        # 2 binary fn(kind, x, float), 3 binary fn2(x, y) of two tensors; 0 any other (the template)
        self.layout = 0
        self.kind: Any = None
        self.fn2: Any = None
        self.in0: _Meta | None = None
        self.in1: _Meta | None = None
        self.verified = False  # an op of it ran and its result matched (element-wise forms only)


@dataclass
class _Upload:
    ref: TensorRef | None  # None: refused, its remaining chunks are skipped
    np_dtype: Any
    buffer: Any
    received: int = 0
    total: int = 0
    prim: Any = None  # the tensor ``buffer`` is the bytes of (a host backend's array), or None


@dataclass
class Reply:
    """What handling one frame gives: frames to send back, and a reason when the session must close."""

    frames: list[bytes] = field(default_factory=list)
    close: str | None = None
    # frames made one at a time on the session's thread and sent as they come (a read's DATA frames:
    # sending starts with the first, and only a few are held at once); sent after ``frames``
    stream: Iterator[bytes] | None = None
    streamed: bool = False  # one frame of a stream (the server's sender then asks for the next)


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
        self.sigs: list[_Plan] = []  # the signatures the client defined, by number
        self._shape_of = backend.shape_of
        self._dtype_of = backend.dtype_of

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
                return self._read(meta)
            return Reply([self._sync()])
        except ProtocolError as exc:
            return Reply([error_frame("protocol", exc)], str(exc)[:120])

    def _ops(self, meta: Any) -> None:
        if not (isinstance(meta, tuple) and len(meta) in (2, 3) and isinstance(meta[0], tuple)):
            raise ProtocolError("OPS frame: expected (records, drops[, step])")
        records, drops = meta[0], meta[1]
        step = len(meta) == 3
        if step and meta[2] is not True:
            raise ProtocolError("OPS frame: the step mark must be true")
        if not isinstance(drops, tuple) or not all(type(d) is int for d in drops):
            raise ProtocolError("OPS frame: drops must be a list of tensor ids")
        compact, run = self._run_compact, self.run
        sigs, prims, metas = self.sigs, self.prims, self.refs
        limit = self.limits.max_session_bytes
        ran = 0
        for record in records:  # compact ops first: they are nearly all of a stream
            if type(record) is tuple and record and type(record[0]) is int:
                # An element-wise op of a verified signature, inline (the bulk of a stream): the checks of
                # _run_compact, in the same order; anything else or unusual goes to _run_compact.
                sid = record[0]
                plan = sigs[sid] if 0 <= sid < len(sigs) else None
                if plan is None or not plan.verified or len(record) != plan.size:
                    compact(record)
                    continue
                tid, a = record[1], record[2]
                x = prims.get(a) if type(a) is int else None
                if (
                    type(tid) is not int
                    or tid < 0
                    or tid in prims
                    or self.live_bytes + plan.total > limit
                    or x is None
                    or type(x) is _Failed
                    or metas[a] is not plan.in0
                ):
                    compact(record)
                    continue
                layout = plan.layout
                try:
                    if layout == 1:
                        out = plan.fn(plan.kind, x)
                    elif layout == 2:
                        v = record[3]
                        if type(v) is not float:
                            compact(record)
                            continue
                        out = plan.fn(plan.kind, x, v)
                    else:
                        b = record[3]
                        y = prims.get(b) if type(b) is int else None
                        if y is None or type(y) is _Failed or metas[b] is not plan.in1:
                            compact(record)
                            continue
                        out = plan.fn2(x, y)
                except Exception:
                    compact(record)
                    continue
                prims[tid] = out
                metas[tid] = plan.outs[0]
                self.live_bytes += plan.total
                ran += 1
            elif type(record) is tuple and len(record) == 7 and record[0] is None:
                self._define(record)
            else:  # a full record: the planned path when its signature ran before, else full checks
                run(record)
        self.ops_run += ran
        for tid in drops:
            prim = prims.pop(tid, None)  # free() inlined
            if prim is not None:
                m = metas.pop(tid)
                if type(prim) is not _Failed:  # poisoned entries hold no memory
                    self.live_bytes -= m.nbytes
        if step:  # the client's training step ended here: so does the stream of the device's fusion
            burn.fusion.mark_step(self.backend.device)

    # ------------------------------------------------------------------ signatures and compact ops
    def _define(self, record: tuple) -> None:
        """A signature record: checked in full once (as a full record of those shapes would be). A
        malformed one closes the session; one that fails its check poisons the outputs of its ops."""
        _, sid, kind, args, ins, outs, fpos = record
        if type(sid) is not int or sid != len(self.sigs):
            raise ProtocolError(
                f"signature record: number {sid!r:.20} is not the next one ({len(self.sigs)})"
            )
        if sid >= MAX_SIGNATURES:
            raise ProtocolError(f"signature record: more than {MAX_SIGNATURES} signatures in one session")
        if not (type(args) is tuple and type(ins) is tuple and type(outs) is tuple and type(fpos) is tuple):
            raise ProtocolError(
                "signature record: expected (nil, number, kind, args, inputs, outputs, floats)"
            )
        if not outs:
            raise ProtocolError("signature record: no outputs")
        if len(fpos) > len(args) or signature_size(args, ins, outs) > MAX_SIGNATURE_SIZE:
            raise ProtocolError(f"signature record: more than {MAX_SIGNATURE_SIZE} values")
        out_metas: list[_Meta] = []
        for out in outs:  # metas to poison with when the check fails; the check itself is _plan's
            try:
                shape, name = out
                dtype, _ = self._check_output(shape, name)
                out_metas.append(self._meta(shape, dtype))
            except Exception:
                out_metas.append(self._meta((0,), burn.bool_))
        plan = _Plan(len(outs), 1 + len(outs) + len(ins) + len(fpos), tuple(out_metas))
        try:
            self._plan(plan, kind, args, ins, outs, fpos)
        except OpError as exc:
            plan.error = exc
            self._fail(exc)
        self.sigs.append(plan)

    def _plan(self, plan: _Plan, kind: Any, args: tuple, ins: tuple, outs: tuple, fpos: tuple) -> None:
        spec = _spec(kind)
        if spec.method == "from_numpy":
            raise OpError("from_numpy: not allowed in a signature")
        if len(outs) != spec.outputs:
            raise OpError(f"{kind}: declares {len(outs)} outputs, the op has {spec.outputs}")
        declared = []
        for out in outs:
            if type(out) is not tuple or len(out) != 2:
                raise OpError(f"signature: malformed output {out!r:.80}")
            dtype, _ = self._check_output(*out)
            declared.append((out[0], dtype))
        in_metas = []
        for i in ins:
            if type(i) is not tuple or len(i) != 2:
                raise OpError(f"signature: malformed input {i!r:.80}")
            dtype, _ = self._check_output(*i)
            in_metas.append(self._meta(i[0], dtype))
        sym_args: list[Any] = []
        template: list[Any] = []
        tslots: list[tuple[int, _Meta]] = []
        for pos, a in enumerate(args):
            if type(a) is WireRef:
                if a != len(tslots) or a >= len(in_metas):
                    raise OpError(
                        f"signature: tensor argument {pos} names input {int(a)}, expected {len(tslots)}"
                    )
                m = in_metas[a]
                sym_args.append(Sym(TensorRef(int(a), m.shape, m.dtype)))
                tslots.append((pos, m))
                template.append(None)
            elif type(a) in _PLAIN or (type(a) is tuple and plain_tuple(a)):
                if type(a) is str and len(a) > MAX_STRING:
                    raise OpError(f"string argument of {len(a)} characters exceeds {MAX_STRING}")
                sym_args.append(a)
                template.append(a)
            else:
                raise OpError(
                    f"signature: argument {pos} of type {type(a).__name__} cannot be in a signature"
                )
        if len(tslots) != len(in_metas):
            raise OpError(f"signature: {len(in_metas)} inputs declared, {len(tslots)} used")
        last = -1
        for p in fpos:
            if type(p) is not int or not last < p < len(args) or type(args[p]) is not float:
                raise OpError(f"signature: float position {p!r:.20} is not a float argument")
            if spec.method not in VAR_FLOAT_METHODS:
                raise OpError(f"{kind}: its float arguments cannot change per op")
            last = p
        expected = self._derive(spec, kind, tuple(sym_args))
        for (shape, dtype), (dshape, ddtype) in zip(expected, declared):
            if shape != dshape or dtype is not ddtype:
                raise OpError(
                    f"{kind}: the client declared {ddtype.name}{list(dshape)}, the op gives "
                    f"{dtype.name}{list(shape)}"
                )
        shift = 1 if spec.op_arg else 0
        plan.fn = getattr(self.backend, spec.method)
        backend = self.backend
        if spec.method == "activation" and type(backend).activation is Backend.activation:
            if kind in backend.native_activations:  # what Backend.activation itself would call
                plan.fn = backend.unary
        plan.template = [kind, *template] if shift else template
        plan.tslots = tuple((pos + shift, m) for pos, m in tslots)
        plan.fslots = tuple(p + shift for p in fpos)
        if shift and plan.n_out == 1:
            plan.kind = kind
            places = [pos for pos, _ in plan.tslots]
            if len(template) == 1 and places == [1] and spec.method in ("unary", "activation"):
                plan.layout = 1
            elif len(template) == 2 and places == [1] and plan.fslots == (2,) and spec.method == "binary":
                plan.layout = 2
            elif len(template) == 2 and places == [1, 2] and spec.method == "binary":
                plan.layout = 3
                fns = self.backend.binary_fns
                same = tslots[0][1].dtype is tslots[1][1].dtype
                plan.fn2 = fns.get(kind) if fns is not None and same else None
                if plan.fn2 is None:
                    plan.fn2 = functools.partial(plan.fn, kind)
            if plan.layout:
                plan.in0 = tslots[0][1]
                plan.in1 = tslots[1][1] if len(tslots) > 1 else None

    def _run_compact(self, record: tuple) -> None:
        """A compact op ``(sig, outputs..., inputs..., floats...)`` of a checked signature: the common
        case (one output, every check passes) here; anything else, and every error, in
        ``_run_compact_checked`` (which runs the same checks again: ops are pure, so an op that fails here
        may run there once more, harmlessly)."""
        sid = record[0]
        sigs = self.sigs
        plan = sigs[sid] if 0 <= sid < len(sigs) else None
        if plan is None or len(record) != plan.size or plan.n_out != 1 or plan.error is not None:
            return self._run_compact_checked(record)
        prims = self.prims
        tid = record[1]
        if type(tid) is not int or tid < 0 or tid in prims:
            return self._run_compact_checked(record)
        total = plan.total
        if self.live_bytes + total > self.limits.max_session_bytes:
            return self._run_compact_checked(record)
        metas = self.refs
        layout = plan.layout
        if layout:  # the common forms, spelled out
            a = record[2]
            x = prims.get(a) if type(a) is int else None
            if x is None or type(x) is _Failed or metas[a] is not plan.in0:
                return self._run_compact_checked(record)
            try:
                if layout == 1:
                    out = plan.fn(plan.kind, x)
                elif layout == 2:
                    v = record[3]
                    if type(v) is not float:
                        return self._run_compact_checked(record)
                    out = plan.fn(plan.kind, x, v)
                else:
                    b = record[3]
                    y = prims.get(b) if type(b) is int else None
                    if y is None or type(y) is _Failed or metas[b] is not plan.in1:
                        return self._run_compact_checked(record)
                    out = plan.fn2(x, y)
            except Exception:
                return self._run_compact_checked(record)
        else:
            args = plan.template.copy()
            i = 2
            for pos, pm in plan.tslots:
                a = record[i]
                prim = prims.get(a) if type(a) is int else None
                if prim is None or type(prim) is _Failed or metas[a] is not pm:
                    return self._run_compact_checked(record)
                args[pos] = prim
                i += 1
            for pos in plan.fslots:
                v = record[i]
                if type(v) is not float:
                    return self._run_compact_checked(record)
                args[pos] = v
                i += 1
            try:
                out = plan.fn(*args)
            except Exception:
                return self._run_compact_checked(record)
        m = plan.outs[0]
        if not plan.verified:
            if tuple(self._shape_of(out)) != m.shape or self._dtype_of(out) is not m.dtype:
                return self._run_compact_checked(record)
            # an element-wise op's result shape and dtype follow from its inputs' alone, which the plan
            # fixes (checked above for every op): one result checked stands for all of them
            plan.verified = layout != 0
        prims[tid] = out
        metas[tid] = m
        self.live_bytes += total
        self.ops_run += 1
        return None

    def _run_compact_checked(self, record: tuple) -> None:
        """``_run_compact`` with every check spelled out and each failure reported."""
        sid = record[0]
        sigs = self.sigs
        if not 0 <= sid < len(sigs):
            raise ProtocolError(f"op record: signature {sid} is not defined")
        plan = sigs[sid]
        if len(record) != plan.size:
            raise ProtocolError(
                f"op record: signature {sid} takes {plan.size - 1} ids and values, got {len(record) - 1}"
            )
        prims = self.prims
        n_out = plan.n_out
        if n_out == 1:
            tid = record[1]
            if type(tid) is not int or tid < 0 or tid in prims:
                self._fail(_bad_output(tid, prims))
                return
        else:
            ids = record[1 : 1 + n_out]
            for tid in ids:
                if type(tid) is not int or tid < 0 or tid in prims:
                    self._fail(_bad_output(tid, prims))
                    return
            if len(set(ids)) != n_out:
                self._fail(OpError(f"op record: output ids {list(ids)} repeat"))
                return
        if plan.error is not None:
            self._poison_plan(record, plan, plan.error)
            return
        args = plan.template.copy()
        i = n_out + 1
        metas = self.refs
        for pos, pm in plan.tslots:
            a = record[i]
            prim = prims.get(a) if type(a) is int else None
            if prim is None:
                self._poison_plan(
                    record, plan, OpError(f"unknown tensor id {a!r:.20} (not a tensor of this session)")
                )
                return
            if type(prim) is _Failed:
                self._poison_plan(record, plan, prim.error, report=False)
                return
            m = metas[a]
            if m is not pm and (m.shape != pm.shape or m.dtype is not pm.dtype):
                self._poison_plan(
                    record,
                    plan,
                    OpError(
                        f"op record: tensor {a} is {m.dtype.name}{list(m.shape)}, its signature says "
                        f"{pm.dtype.name}{list(pm.shape)}"
                    ),
                )
                return
            args[pos] = prim
            i += 1
        for pos in plan.fslots:
            v = record[i]
            if type(v) is not float:
                self._poison_plan(record, plan, OpError(f"op record: expected a float, got {v!r:.20}"))
                return
            args[pos] = v
            i += 1
        total = plan.total
        if self.live_bytes + total > self.limits.max_session_bytes:
            self._poison_plan(record, plan, self._limit_error(total))
            return
        try:
            out = plan.fn(*args)
        except Exception as exc:
            self._poison_plan(record, plan, exc)
            return
        shape_of, dtype_of = self._shape_of, self._dtype_of
        if n_out == 1:
            m = plan.outs[0]
            if tuple(shape_of(out)) != m.shape or dtype_of(out) is not m.dtype:
                self._poison_plan(record, plan, _gave(record, out, m, shape_of, dtype_of))
                return
            prims[tid] = out
            metas[tid] = m
        else:
            for prim, m in zip(out, plan.outs):
                if tuple(shape_of(prim)) != m.shape or dtype_of(prim) is not m.dtype:
                    self._poison_plan(record, plan, _gave(record, prim, m, shape_of, dtype_of))
                    return
            for tid, prim, m in zip(record[1 : 1 + n_out], out, plan.outs):
                prims[tid] = prim
                metas[tid] = m
        self.live_bytes += total
        self.ops_run += 1

    def _poison_plan(self, record: tuple, plan: _Plan, error: BaseException, report: bool = True) -> None:
        """The outputs of a compact op that cannot run hold ``error`` (reported once unless ``report`` is
        False: an input that already failed was reported when it failed)."""
        for tid, m in zip(record[1 : 1 + plan.n_out], plan.outs):
            self.prims[tid] = _Failed(error)
            self.refs[tid] = m
        if report:
            self._fail(error)

    def _limit_error(self, total: int) -> OpError:
        return OpError(
            f"session memory limit: outputs of {total} bytes on top of {self.live_bytes} live exceed "
            f"{self.limits.max_session_bytes} bytes (the server's --max-session-mib)"
        )

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
            raise self._limit_error(total)
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
            np_dtype = numpy_dtype(np_name)
            ok = type(tid) is int and type(total) is int and type(offset) is int and allowed(np_dtype)
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
                prim = self._host_tensor(ref, np_dtype)
                buffer = np.empty(total, np.uint8) if prim is None else prim.reshape(-1).view(np.uint8)
                up = self.uploads[tid] = _Upload(ref, np_dtype, buffer, total=total, prim=prim)
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
            if up.prim is not None:  # the chunks went straight into the tensor
                try:
                    self._outputs(((tid, done.shape, done.dtype.name),))  # the id may be taken since
                except OpError as exc:
                    self._fail(exc)
                    return
                self._store(done, up.prim)
                self.ops_run += 1
                return
            arr = up.buffer.view(up.np_dtype).reshape(done.shape)
            self.run(("from_numpy", (arr, done.dtype), ((tid, done.shape, done.dtype.name),)))

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
        if type(probe) is not np.ndarray or probe.dtype != np_dtype or self._dtype_of(probe) is not ref.dtype:
            return None
        return np.empty(ref.shape, np_dtype)  # such an array, its pages untouched until the chunks come

    def _poison_id(self, tid: Any, shape: Any, dtype_name: Any, exc: BaseException) -> None:
        if type(tid) is int and tid not in self.prims:
            try:
                self._poison([TensorRef(tid, tuple(shape), _dtype(dtype_name))], exc)
            except Exception:
                pass

    def _read(self, meta: Any) -> Reply:
        import numpy as np

        if not (isinstance(meta, tuple) and len(meta) == 1 and isinstance(meta[0], tuple)):
            raise ProtocolError("READ frame: expected (ids,)")
        (ids,) = meta
        if self.first_error is not None:
            return Reply([self._report()])
        prims = []
        for tid in ids:
            prim = self.prims.get(tid) if type(tid) is int else None
            if prim is None:
                error = OpError(f"read: unknown tensor id {tid!r:.20} (not a tensor of this session)")
                return Reply([error_frame("op", error)])
            if isinstance(prim, _Failed):
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
        return Reply(stream=_data_frames(arrays))

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


def _data_frames(arrays: list[Any]) -> Iterator[bytes]:
    """DATA frames carrying ``arrays``: pieces of at most ``CHUNK`` bytes, several small arrays per frame;
    the last frame says so."""
    pieces: list[tuple] = []
    raws: list[memoryview] = []
    size = 0
    for i, arr in enumerate(arrays):
        data = raw_bytes(arr)
        total = len(data)
        offset = 0
        while True:
            n = min(CHUNK - size, total - offset)
            pieces.append((i, wire_dtype(arr.dtype), list(arr.shape), total, offset, n))
            raws.append(data[offset : offset + n])
            size += n
            offset += n
            if offset >= total:
                break
            yield frame(DATA, (False, tuple(pieces)), *raws)
            pieces, raws, size = [], [], 0
    yield frame(DATA, (True, tuple(pieces)), *raws)


def _bad_output(tid: Any, prims: dict[int, Any]) -> OpError:
    if type(tid) is int and tid >= 0 and tid in prims:
        return OpError(f"op record: output id {tid} is already in use")
    return OpError(f"op record: malformed output id {tid!r:.40}")


def _gave(record: tuple, prim: Any, m: _Meta, shape_of: Any, dtype_of: Any) -> OpError:
    return OpError(
        f"op record {record!r:.60}: gave {dtype_of(prim).name}{list(shape_of(prim))}, the client declared "
        f"{m.dtype.name}{list(m.shape)}"
    )


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
