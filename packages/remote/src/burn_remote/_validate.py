"""Validation: checking what a client sends before anything of it runs.

The token of a HELLO; an op record's kind (in ``burn.ir``'s vocabulary), its output ids (new), its
inputs (tensors of this session only), its declared output shapes and dtypes (what the capture backend's
shape rules derive from the inputs, so a hostile client cannot make the backend allocate more than it
declared), its strings (bounded) and the session's memory limit. A signature record gets the same checks
once, on symbolic inputs of its declared shapes and dtypes. An op record that fails a check raises
``OpError`` (reported to the client like an op's own error); a signature record whose form breaks the
wire format raises ``ProtocolError`` (the session closes).
"""

from __future__ import annotations

import hmac
from typing import Any, NamedTuple

import burn
from burn.backend import Backend, DType
from burn.ir import CaptureBackend, OpDef, Sym, TensorRef, op_def

from ._errors import ProtocolError
from ._failure import Failed
from ._protocol import (
    MAX_SIGNATURE_SIZE,
    MAX_SIGNATURES,
    VAR_FLOAT_METHODS,
    WireRef,
    plain_tuple,
    signature_size,
)
from ._table import Meta, TensorTable, nbytes

MAX_RANK = 16
MAX_STRING = 1024
PLAIN = frozenset({int, float, bool, str, type(None), DType})  # argument types passed on as they are
_CACHE_MAX = 8192  # entries of each memo of checks that passed; a miss later only costs the check again


class OpError(Exception):
    """An op record that fails validation (reported to the client like an op's own error)."""


def token_matches(meta: Any, token: bytes | None) -> bool:
    """Whether a HELLO's ``meta`` carries the server's ``token`` (compared in constant time; no token:
    every client may connect)."""
    if token is None:
        return True
    given = meta.get("token") if isinstance(meta, dict) else None
    return hmac.compare_digest(given.encode() if isinstance(given, str) else b"", token)


_SPECS: dict[str, OpDef] = {}


def op_spec(kind: Any) -> OpDef:
    """The vocabulary row of op ``kind``; ``OpError`` for anything else."""
    spec = _SPECS.get(kind) if type(kind) is str else None
    if spec is None:
        if type(kind) is not str:
            raise OpError(f"op kind must be a string, got {kind!r:.40}")
        try:
            spec = _SPECS[kind] = op_def(kind)
        except KeyError as exc:
            raise OpError(str(exc.args[0])) from None
    return spec


def parse_dtype(name: Any) -> DType:
    """The dtype a client names; ``OpError`` for a name burn does not know."""
    try:
        return burn.dtype(name)
    except Exception:
        raise OpError(f"unknown dtype {name!r:.40}") from None


def limit_error(total: int, table: TensorTable) -> OpError:
    """Outputs of ``total`` bytes do not fit the session's memory limit."""
    return OpError(
        f"session memory limit: outputs of {total} bytes on top of {table.live_bytes} live exceed "
        f"{table.limit} bytes (the server's --max-session-mib)"
    )


def in_use_error(tid: int) -> OpError:
    """Output id ``tid`` names a tensor of the session already."""
    return OpError(f"op record: output id {tid} is already in use")


def bad_output(tid: Any, prims: dict[int, Any]) -> OpError:
    """The error of output id ``tid`` of a compact op, which is not a new id."""
    if type(tid) is int and tid >= 0 and tid in prims:
        return in_use_error(tid)
    return OpError(f"op record: malformed output id {tid!r:.40}")


def result_mismatch(what: str, shape: tuple[int, ...], dtype: DType, declared: Meta | TensorRef) -> OpError:
    """An op's result of ``shape`` and ``dtype`` is not what the client ``declared``."""
    return OpError(
        f"{what}: gave {dtype.name}{list(shape)}, the client declared "
        f"{declared.dtype.name}{list(declared.shape)}"
    )


def check_declared(
    kind: str,
    derived: tuple[tuple[tuple[int, ...], DType], ...],
    declared: list[tuple[tuple[int, ...], DType]],
) -> None:
    """The ``declared`` outputs (shape, dtype) are the ones the shape rules ``derived``."""
    for (shape, dtype), (dshape, ddtype) in zip(derived, declared):
        if shape != dshape or dtype is not ddtype:
            raise OpError(
                f"{kind}: the client declared {ddtype.name}{list(dshape)}, the op gives "
                f"{dtype.name}{list(shape)}"
            )


class CheckedSignature(NamedTuple):
    """A signature that passed its checks: the op's row and its arguments as a template (``None`` at
    each tensor's place), with the places and metas of its tensors and the places of its per-op floats
    (positions in the op's arguments, the kind not counted)."""

    kind: str
    spec: OpDef
    template: list[Any]
    tslots: list[tuple[int, Meta]]
    fpos: tuple[int, ...]


class Validator:
    """The checks of one session's records, against its ``table`` and the server's ``backend`` (with
    memos of the checks that passed)."""

    def __init__(self, backend: Backend, table: TensorTable) -> None:
        self.backend = backend
        self.table = table
        self.checker = CaptureBackend(backend)
        self._out_ok: dict[tuple, tuple[DType, int]] = {}  # (shape, dtype name) already validated
        self.shapes: dict[tuple, tuple[tuple[tuple[int, ...], DType], ...]] = {}

    # ------------------------------------------------------------------ outputs
    def check_output(self, shape: Any, dtype_name: Any) -> tuple[DType, int]:
        """``(dtype, bytes)`` of a declared output of ``shape`` and ``dtype_name``."""
        ok = type(shape) is tuple and len(shape) <= MAX_RANK and all(type(s) is int and s >= 0 for s in shape)
        if not ok:
            raise OpError(f"op record: malformed output shape {shape!r:.80}")
        dtype = parse_dtype(dtype_name)
        if dtype not in self.backend.dtypes:
            raise OpError(f"op record: dtype {dtype.name} is not supported by the server's backend")
        known = (dtype, nbytes(shape, dtype))
        if len(self._out_ok) > _CACHE_MAX:
            self._out_ok.clear()
        self._out_ok[(shape, dtype_name)] = known
        return known

    def outputs(self, outs: Any) -> list[TensorRef]:
        """The declared outputs ``[(id, shape, dtype name), ...]`` of an op record: new ids, shapes and
        dtypes the backend has, within the memory limit."""
        if type(outs) is not tuple or not outs:
            raise OpError("op record: outputs must be a non-empty list")
        refs: list[TensorRef] = []
        total = 0
        prims = self.table.prims
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
                known = self.check_output(shape, dtype_name)
            if tid in prims or (refs and any(r.id == tid for r in refs)):
                raise in_use_error(tid)
            refs.append(TensorRef(tid, shape, known[0]))
            total += known[1]
        table = self.table
        if table.live_bytes + total > table.limit:
            raise limit_error(total, table)
        return refs

    # ------------------------------------------------------------------ arguments
    def resolve(self, kind: str, args: tuple) -> tuple[tuple | None, tuple, BaseException | None]:
        """``(signature, args with tensors as primitives, the error of a poisoned input)``. The signature
        (kind, input shapes/dtypes, plain arguments) keys the memoised shape check; None when an argument
        is not plain (a list of tensors, an array)."""
        prims, metas = self.table.prims, self.table.metas
        key: list[Any] = [kind]
        out: list[Any] = []
        failed: BaseException | None = None
        plain = True
        for a in args:
            if type(a) is WireRef:
                prim = prims.get(a)
                if prim is None:
                    raise OpError(f"unknown tensor id {a} (not a tensor of this session)")
                if type(prim) is Failed and failed is None:
                    failed = prim.error
                key.append(metas[a])
                out.append(prim)
            elif type(a) in PLAIN or (type(a) is tuple and plain_tuple(a)):
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
        """``a`` with its tensors as primitives, or as symbols of their shapes and dtypes."""
        if type(a) is WireRef:
            prim = self.table.prims.get(a)
            if prim is None:
                raise OpError(f"unknown tensor id {a} (not a tensor of this session)")
            if not symbolic:
                return prim
            m = self.table.metas[a]
            return Sym(TensorRef(int(a), m.shape, m.dtype))
        if isinstance(a, (tuple, list)):
            return type(a)(self._walk(v, symbolic) for v in a)
        if isinstance(a, str) and len(a) > MAX_STRING:
            raise OpError(f"string argument of {len(a)} characters exceeds {MAX_STRING}")
        return a

    def _nested_failure(self, a: Any) -> BaseException | None:
        if type(a) is WireRef:
            prim = self.table.prims.get(a)
            return prim.error if type(prim) is Failed else None
        if isinstance(a, (tuple, list)):
            for v in a:
                found = self._nested_failure(v)
                if found is not None:
                    return found
        return None

    # ------------------------------------------------------------------ shapes
    def check_shapes(
        self, spec: OpDef, kind: str, sig: tuple | None, args: tuple, refs: list[TensorRef]
    ) -> None:
        """The declared outputs are what the capture backend's rules derive (memoised by signature)."""
        expected = self.shapes.get(sig) if sig is not None else None
        if expected is None:
            expected = self.derive(spec, kind, tuple(self._walk(a, True) for a in args))
            if sig is not None:
                if len(self.shapes) > _CACHE_MAX:
                    self.shapes.clear()
                self.shapes[sig] = expected
        check_declared(kind, expected, [(ref.shape, ref.dtype) for ref in refs])

    def derive(self, spec: OpDef, kind: str, sym_args: tuple) -> tuple[tuple[tuple[int, ...], DType], ...]:
        """The (shape, dtype) of each output of op ``kind`` on symbolic arguments ``sym_args``."""
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

    @staticmethod
    def check_from_numpy(args: tuple, refs: list[TensorRef]) -> None:
        """``from_numpy``'s arguments (a host array and a dtype) are the declared output."""
        import numpy as np

        if len(args) != 2 or not isinstance(args[0], np.ndarray) or not isinstance(args[1], DType):
            raise OpError("from_numpy: expected (array, dtype)")
        if args[0].shape != refs[0].shape or args[1] is not refs[0].dtype:
            raise OpError("from_numpy: the array does not match the declared output")

    # ------------------------------------------------------------------ signatures
    @staticmethod
    def signature_record(record: tuple, defined: int) -> tuple[int, Any, tuple, tuple, tuple, tuple]:
        """``(number, kind, args, inputs, outputs, float positions)`` of a signature record, the
        ``defined``-th of the session; ``ProtocolError`` for one that breaks the wire format."""
        _, sid, kind, args, ins, outs, fpos = record
        if type(sid) is not int or sid != defined:
            raise ProtocolError(f"signature record: number {sid!r:.20} is not the next one ({defined})")
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
        return sid, kind, args, ins, outs, fpos

    def declared_metas(self, outs: tuple) -> tuple[Meta, ...]:
        """The metas of a signature's declared outputs, for its ops to poison with should the signature
        fail its check (an output that is malformed itself: an empty bool tensor)."""
        metas: list[Meta] = []
        for out in outs:
            try:
                shape, name = out
                dtype, _ = self.check_output(shape, name)
                metas.append(self.table.meta(shape, dtype))
            except Exception:
                metas.append(self.table.meta((0,), burn.bool_))
        return tuple(metas)

    def _shape_dtype_pairs(self, pairs: tuple, what: str) -> list[tuple[tuple[int, ...], DType]]:
        checked = []
        for pair in pairs:
            if type(pair) is not tuple or len(pair) != 2:
                raise OpError(f"signature: malformed {what} {pair!r:.80}")
            dtype, _ = self.check_output(*pair)
            checked.append((pair[0], dtype))
        return checked

    def check_signature(
        self, kind: Any, args: tuple, ins: tuple, outs: tuple, fpos: tuple
    ) -> CheckedSignature:
        """A signature's op, checked as a full record of its shapes would be (on symbolic inputs)."""
        spec = op_spec(kind)
        if spec.method == "from_numpy":
            raise OpError("from_numpy: not allowed in a signature")
        if len(outs) != spec.outputs:
            raise OpError(f"{kind}: declares {len(outs)} outputs, the op has {spec.outputs}")
        declared = self._shape_dtype_pairs(outs, "output")
        in_metas = [self.table.meta(shape, dtype) for shape, dtype in self._shape_dtype_pairs(ins, "input")]
        sym_args: list[Any] = []
        template: list[Any] = []
        tslots: list[tuple[int, Meta]] = []
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
            elif type(a) in PLAIN or (type(a) is tuple and plain_tuple(a)):
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
        check_declared(kind, self.derive(spec, kind, tuple(sym_args)), declared)
        return CheckedSignature(kind, spec, template, tslots, fpos)
