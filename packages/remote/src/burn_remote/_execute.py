"""Execution: running the op records of an OPS frame on the server's backend, in order.

A full op record is checked (``Validator``) then run; its results are checked against its declaration
once more, and an op whose signature (kind, input shapes and dtypes, plain arguments) ran and was checked
before runs on the planned path, where its outputs only need to match the plan. Signature records and
their compact ops are ``Signatures``'; the compact ops of verified element-wise signatures, nearly all of
a stream, run inline in ``run_records``. An op that fails poisons its outputs (``Failures``).
"""

from __future__ import annotations

from typing import Any

from burn.backend import Backend, Failed

from ._errors import ProtocolError
from ._failure import Failures
from ._protocol import WireRef, plain_tuple
from ._signatures import Signatures
from ._table import Meta, TensorTable
from ._validate import PLAIN, OpError, Validator, op_spec, result_mismatch

_PLANS_MAX = 8192  # full-record plans kept per session; a miss later only costs the full checks

# A full record's plan, by signature: (method, takes the kind, ((shape, dtype name, meta) per output),
# output bytes)
_FullPlan = tuple[Any, bool, tuple[tuple[tuple[int, ...], str, Meta], ...], int]


class Executor:
    """Runs one session's op records on ``backend`` over its ``table``; ``ops_run`` counts the ops that
    ran."""

    def __init__(
        self,
        backend: Backend,
        table: TensorTable,
        validator: Validator,
        failures: Failures,
        signatures: Signatures,
    ) -> None:
        self.backend = backend
        self.table = table
        self.validator = validator
        self.failures = failures
        self.signatures = signatures
        self.ops_run = 0
        self._methods: dict[str, Any] = {}
        self.plans: dict[tuple, _FullPlan] = {}  # an op whose signature ran and was checked before

    def run_records(self, records: tuple) -> None:
        """The records of one OPS frame, in order: compact ops, signature records, full op records."""
        signatures, run = self.signatures, self.run
        compact, define = signatures.run_compact, signatures.define
        sigs = signatures.plans
        table = self.table
        prims, metas = table.prims, table.metas
        limit = table.limit
        ran = 0  # ops run inline (the others count as they run)
        for record in records:  # compact ops first: they are nearly all of a stream
            if type(record) is tuple and record and type(record[0]) is int:
                # An element-wise op of a verified signature, inline (the bulk of a stream): the checks of
                # Signatures.run_compact, in the same order; anything else or unusual goes to run_compact.
                sid = record[0]
                plan = sigs[sid] if 0 <= sid < len(sigs) else None
                if plan is None or not plan.verified or len(record) != plan.size:
                    self.ops_run += compact(record)
                    continue
                tid, a = record[1], record[2]
                x = prims.get(a) if type(a) is int else None
                if (
                    type(tid) is not int
                    or tid < 0
                    or tid in prims
                    or table.live_bytes + plan.total > limit
                    or x is None
                    or type(x) is Failed
                    or metas[a] is not plan.in0
                ):
                    self.ops_run += compact(record)
                    continue
                layout = plan.layout
                try:
                    if layout == 1:
                        out = plan.fn(plan.kind, x)
                    elif layout == 2:
                        v = record[3]
                        if type(v) is not float:
                            self.ops_run += compact(record)
                            continue
                        out = plan.fn(plan.kind, x, v)
                    else:
                        b = record[3]
                        y = prims.get(b) if type(b) is int else None
                        if y is None or type(y) is Failed or metas[b] is not plan.in1:
                            self.ops_run += compact(record)
                            continue
                        out = plan.fn2(x, y)
                except Exception:
                    self.ops_run += compact(record)
                    continue
                prims[tid] = out
                metas[tid] = plan.outs[0]
                table.live_bytes += plan.total
                ran += 1
            elif type(record) is tuple and len(record) == 7 and record[0] is None:
                define(record)
            else:  # a full record: the planned path when its signature ran before, else full checks
                run(record)
        self.ops_run += ran

    def adopt(self, tid: int, prim: Any, m: Meta) -> None:
        """Tensor ``tid`` was made outside an op record (an upload's chunks written straight into it):
        stored, and counted as the ``from_numpy`` it stands for."""
        self.table.store(tid, prim, m)
        self.ops_run += 1

    # ------------------------------------------------------------------ full op records
    def run(self, record: Any) -> None:
        """A full op record ``(kind, args, outputs)``."""
        if not (type(record) is tuple and len(record) == 3):
            raise ProtocolError("op record: expected [kind, args, outputs]")
        kind, args, outs = record
        if type(args) is not tuple:
            raise ProtocolError("op record: args must be a list")
        if self._run_planned(kind, args, outs):
            return
        validator, failures, table = self.validator, self.failures, self.table
        try:
            refs = validator.outputs(outs)
        except OpError as exc:
            failures.fail(exc)
            return
        out_metas = [table.meta(ref.shape, ref.dtype) for ref in refs]
        try:
            spec = op_spec(kind)
            if len(refs) != spec.outputs:
                raise OpError(f"{kind}: declares {len(refs)} outputs, the op has {spec.outputs}")
            sig, prim_args, failed = validator.resolve(kind, args)
            if failed is not None:
                failures.poison(zip([r.id for r in refs], out_metas), failed, report=False)
                return
            if spec.method == "from_numpy":
                validator.check_from_numpy(prim_args, refs)
            else:
                validator.check_shapes(spec, kind, sig, args, refs)
            fn = self._methods.get(spec.method)
            if fn is None:
                fn = self._methods[spec.method] = getattr(self.backend, spec.method)
            out = fn(kind, *prim_args) if spec.op_arg else fn(*prim_args)
            outs_prims = out if spec.outputs > 1 else (out,)
            backend = self.backend
            for prim, ref in zip(outs_prims, refs):
                shape, dtype = tuple(backend.shape_of(prim)), backend.dtype_of(prim)
                if shape != ref.shape or dtype is not ref.dtype:
                    raise result_mismatch(kind, shape, dtype, ref)
        except Exception as exc:
            failures.poison(zip([r.id for r in refs], out_metas), exc, report=True)
            return
        total = 0
        for prim, ref, m in zip(outs_prims, refs, out_metas):
            table.store(ref.id, prim, m)
            total += m.nbytes
        self.ops_run += 1
        if sig is not None and spec.method != "from_numpy":
            if len(self.plans) > _PLANS_MAX:
                self.plans.clear()
            expected = tuple((m.shape, m.dtype.name, m) for m in out_metas)
            self.plans[sig] = (fn, spec.op_arg, expected, total)

    def _run_planned(self, kind: Any, args: tuple, outs: Any) -> bool:
        """Run an op whose signature ran (and was checked) before: its outputs only need to match the
        plan. False leaves it to the full path (a new signature, anything unusual, any failure: ops are
        pure, so running one again there is harmless)."""
        table = self.table
        prims = table.prims
        key: list[Any] = [kind]
        pargs: list[Any] = []
        for a in args:
            ta = type(a)
            if ta is WireRef:
                prim = prims.get(a)
                if prim is None or type(prim) is Failed:
                    return False
                key.append(table.metas[a])
                pargs.append(prim)
            elif ta in PLAIN or (ta is tuple and plain_tuple(a)):
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
        if table.live_bytes + total > table.limit:
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
        metas = table.metas
        for tid, prim, (_, _, m) in zip(ids, results, expected):
            prims[tid] = prim
            metas[tid] = m
        table.live_bytes += total
        self.ops_run += 1
        return True
