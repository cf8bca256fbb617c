"""Signature replay: a session's signatures, each checked once, and the compact ops that name them.

A signature record is checked in full once (``Validator.check_signature``) and becomes a ``Plan``: the
backend method and its arguments as a template. Each compact op of it is then checked for what can change
per op: its input ids (this session's, of the signature's shapes and dtypes, not failed), its output ids
(new), the per-op floats (floats), the memory limit and the results' shapes and dtypes (for the
element-wise forms, unary and binary, whose results' shapes and dtypes follow from the inputs', once per
signature). A signature that fails its check poisons the outputs of each of its ops.

``Plan`` is the remote counterpart of burn-fusion's private ``_Program``: both let a repeated signature
skip work done for it once. They are not the same idea: a ``_Program`` holds the steps planning a whole
stream of lazy ops ran (fused kernels over stream positions, run through a ``Fusion`` backend's runtime),
a ``Plan`` one op's checked call (backend method, argument template, output metas) that a compact op
fills in. Remote keeps its own.
"""

from __future__ import annotations

import functools
from typing import Any

from burn.backend import Backend, Failed

from ._errors import ProtocolError
from ._failure import Failures
from ._table import Meta, TensorTable
from ._validate import CheckedSignature, OpError, Validator, bad_output, limit_error, result_mismatch


class Plan:
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

    def __init__(self, n_out: int, size: int, outs: tuple[Meta, ...]) -> None:
        self.n_out = n_out
        self.size = size  # 1 + outputs + inputs + floats
        self.outs = outs
        self.error: BaseException | None = None
        self.fn: Any = None
        self.template: list[Any] = []
        self.tslots: tuple[tuple[int, Meta], ...] = ()
        self.fslots: tuple[int, ...] = ()
        self.total = sum(m.nbytes for m in outs)
        # the common one-output element-wise forms, called without a template: 1 unary fn(kind, x),
        # 2 binary fn(kind, x, float), 3 binary fn2(x, y) of two tensors; 0 any other (the template)
        self.layout = 0
        self.kind: Any = None
        self.fn2: Any = None
        self.in0: Meta | None = None
        self.in1: Meta | None = None
        self.verified = False  # an op of it ran and its result matched (element-wise forms only)


class Signatures:
    """The signatures one client defined (``plans``, by number) and the compact ops that run them."""

    def __init__(
        self, backend: Backend, table: TensorTable, validator: Validator, failures: Failures
    ) -> None:
        self.backend = backend
        self.table = table
        self.validator = validator
        self.failures = failures
        self.plans: list[Plan] = []
        self._shape_of = backend.shape_of
        self._dtype_of = backend.dtype_of

    # ------------------------------------------------------------------ definitions
    def define(self, record: tuple) -> None:
        """A signature record: checked in full once (as a full record of those shapes would be). A
        malformed one closes the session; one that fails its check poisons the outputs of its ops."""
        validator = self.validator
        _, kind, args, ins, outs, fpos = validator.signature_record(record, len(self.plans))
        plan = Plan(len(outs), 1 + len(outs) + len(ins) + len(fpos), validator.declared_metas(outs))
        try:
            checked = validator.check_signature(kind, args, ins, outs, fpos)
        except OpError as exc:
            plan.error = exc
            self.failures.fail(exc)
        else:
            self._prepare(plan, checked)
        self.plans.append(plan)

    def _prepare(self, plan: Plan, checked: CheckedSignature) -> None:
        """Fill in how ``plan`` calls the backend: the method and template, and the element-wise form."""
        kind, spec, template, tslots, fpos = checked
        backend = self.backend
        shift = 1 if spec.op_arg else 0
        plan.fn = getattr(backend, spec.method)
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
                fns = backend.binary_fns
                same = tslots[0][1].dtype is tslots[1][1].dtype
                plan.fn2 = fns.get(kind) if fns is not None and same else None
                if plan.fn2 is None:
                    plan.fn2 = functools.partial(plan.fn, kind)
            if plan.layout:
                plan.in0 = tslots[0][1]
                plan.in1 = tslots[1][1] if len(tslots) > 1 else None

    # ------------------------------------------------------------------ compact ops
    def run_compact(self, record: tuple) -> bool:
        """A compact op ``(sig, outputs..., inputs..., floats...)`` of a checked signature: the common
        case (one output, every check passes) here; anything else, and every error, in
        ``_run_compact_checked`` (which runs the same checks again: ops are pure, so an op that fails here
        may run there once more, harmlessly). Whether the op ran."""
        sid = record[0]
        sigs = self.plans
        plan = sigs[sid] if 0 <= sid < len(sigs) else None
        if plan is None or len(record) != plan.size or plan.n_out != 1 or plan.error is not None:
            return self._run_compact_checked(record)
        table = self.table
        prims = table.prims
        tid = record[1]
        if type(tid) is not int or tid < 0 or tid in prims:
            return self._run_compact_checked(record)
        total = plan.total
        if table.live_bytes + total > table.limit:
            return self._run_compact_checked(record)
        metas = table.metas
        layout = plan.layout
        if layout:  # the common forms, spelled out
            a = record[2]
            x = prims.get(a) if type(a) is int else None
            if x is None or type(x) is Failed or metas[a] is not plan.in0:
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
                    if y is None or type(y) is Failed or metas[b] is not plan.in1:
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
                if prim is None or type(prim) is Failed or metas[a] is not pm:
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
        table.live_bytes += total
        return True

    def _run_compact_checked(self, record: tuple) -> bool:
        """``run_compact`` with every check spelled out and each failure reported."""
        sid = record[0]
        sigs = self.plans
        if not 0 <= sid < len(sigs):
            raise ProtocolError(f"op record: signature {sid} is not defined")
        plan = sigs[sid]
        if len(record) != plan.size:
            raise ProtocolError(
                f"op record: signature {sid} takes {plan.size - 1} ids and values, got {len(record) - 1}"
            )
        table = self.table
        prims = table.prims
        n_out = plan.n_out
        if n_out == 1:
            tid = record[1]
            if type(tid) is not int or tid < 0 or tid in prims:
                self.failures.fail(bad_output(tid, prims))
                return False
        else:
            ids = record[1 : 1 + n_out]
            for tid in ids:
                if type(tid) is not int or tid < 0 or tid in prims:
                    self.failures.fail(bad_output(tid, prims))
                    return False
            if len(set(ids)) != n_out:
                self.failures.fail(OpError(f"op record: output ids {list(ids)} repeat"))
                return False
        if plan.error is not None:
            return self._poison(record, plan, plan.error)
        args = plan.template.copy()
        i = n_out + 1
        metas = table.metas
        for pos, pm in plan.tslots:
            a = record[i]
            prim = prims.get(a) if type(a) is int else None
            if prim is None:
                error = OpError(f"unknown tensor id {a!r:.20} (not a tensor of this session)")
                return self._poison(record, plan, error)
            if type(prim) is Failed:
                return self._poison(record, plan, prim.error, report=False)
            m = metas[a]
            if m is not pm and (m.shape != pm.shape or m.dtype is not pm.dtype):
                error = OpError(
                    f"op record: tensor {a} is {m.dtype.name}{list(m.shape)}, its signature says "
                    f"{pm.dtype.name}{list(pm.shape)}"
                )
                return self._poison(record, plan, error)
            args[pos] = prim
            i += 1
        for pos in plan.fslots:
            v = record[i]
            if type(v) is not float:
                return self._poison(record, plan, OpError(f"op record: expected a float, got {v!r:.20}"))
            args[pos] = v
            i += 1
        total = plan.total
        if table.live_bytes + total > table.limit:
            return self._poison(record, plan, limit_error(total, table))
        try:
            out = plan.fn(*args)
        except Exception as exc:
            return self._poison(record, plan, exc)
        results = (out,) if n_out == 1 else out
        shape_of, dtype_of = self._shape_of, self._dtype_of
        for prim, m in zip(results, plan.outs):
            shape, dtype = tuple(shape_of(prim)), dtype_of(prim)
            if shape != m.shape or dtype is not m.dtype:
                return self._poison(
                    record, plan, result_mismatch(f"op record {record!r:.60}", shape, dtype, m)
                )
        for tid, prim, m in zip(record[1 : 1 + n_out], results, plan.outs):
            prims[tid] = prim
            metas[tid] = m
        table.live_bytes += total
        return True

    def _poison(self, record: tuple, plan: Plan, error: BaseException, report: bool = True) -> bool:
        """The outputs of a compact op that cannot run hold ``error`` (see ``Failures.poison``)."""
        self.failures.poison(zip(record[1 : 1 + plan.n_out], plan.outs), error, report)
        return False
