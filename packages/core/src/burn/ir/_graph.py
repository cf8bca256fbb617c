"""Op records, graphs, and their versioned byte form.

A ``Graph`` is a stream of ``OpRecord``s over numbered tensors: its inputs (named, with shapes and
dtypes), the constants the recorded code created from host data (weights, literals), and its outputs.
``to_bytes``/``from_bytes`` give the wire and storage form remote execution and web export use::

    b"BURNIR" | u16 format version | u64 header length | header (UTF-8 JSON) | constant bytes

The header holds the records with their arguments in a tagged JSON (tensors, dtypes, tuples and
non-finite floats are tagged); constants follow as raw little-endian bytes at offsets the header gives.
Reading checks the magic, the version, every length and every tensor reference.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import _dtype as D
from .._errors import BurnError
from ..backend._vocabulary import OpKind, op_def

MAGIC = b"BURNIR"
FORMAT_VERSION = 1
_HEAD = struct.Struct("<6sHQ")


class IrError(BurnError, ValueError):
    """A graph that cannot be read, checked or replayed (malformed bytes, unknown op, bad reference)."""


@dataclass(frozen=True)
class TensorRef:
    """A tensor of a graph: its number, shape and dtype."""

    id: int
    shape: tuple[int, ...]
    dtype: D.DType


@dataclass(frozen=True)
class Ref:
    """Marks the place of a tensor among an op's arguments."""

    id: int


@dataclass(frozen=True)
class OpRecord:
    """One op: its kind, its arguments in the backend method's order (tensors as ``Ref``; the kind's
    name itself is not repeated for unary/binary/reduce kinds), and its outputs."""

    kind: OpKind
    args: tuple[Any, ...]
    outputs: tuple[TensorRef, ...]

    @property
    def inputs(self) -> tuple[int, ...]:
        """The ids of the tensors this op reads, in argument order."""
        return tuple(_refs(self.args))

    def run(self, backend: Any, env: dict[int, Any]) -> tuple[Any, ...]:
        """Call the backend method this op stands for, its tensor arguments read from ``env`` (tensor
        id -> the backend's primitive); the results in ``outputs`` order."""
        spec = op_def(self.kind)
        fn = getattr(backend, spec.method)
        args = tuple(_resolved(a, env) for a in self.args)
        out = fn(str(self.kind), *args) if spec.op_arg else fn(*args)
        return tuple(out) if spec.outputs > 1 else (out,)


def _resolved(value: Any, env: dict[int, Any]) -> Any:
    if isinstance(value, Ref):
        return env[value.id]
    if isinstance(value, (tuple, list)):
        return type(value)(_resolved(v, env) for v in value)
    return value


def _refs(value: Any) -> Iterator[int]:
    if isinstance(value, Ref):
        yield value.id
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _refs(v)


@dataclass
class Graph:
    """A recorded op stream: ``inputs`` (name -> tensor), ``constants`` (id -> numpy array), ``ops``
    in execution order, ``outputs`` (the returned tensors, in order)."""

    inputs: dict[str, TensorRef] = field(default_factory=dict)
    constants: dict[int, Any] = field(default_factory=dict)
    ops: list[OpRecord] = field(default_factory=list)
    outputs: list[TensorRef] = field(default_factory=list)

    def op_histogram(self) -> dict[str, int]:
        """How many ops of each kind the graph holds."""
        counts: dict[str, int] = {}
        for op in self.ops:
            counts[str(op.kind)] = counts.get(str(op.kind), 0) + 1
        return counts

    def check(self) -> None:
        """Every reference names a tensor defined earlier (an input, a constant or an op's output)."""
        known = {t.id for t in self.inputs.values()} | set(self.constants)
        for i, op in enumerate(self.ops):
            for ref in op.inputs:
                if ref not in known:
                    raise IrError(f"op {i} ({op.kind}): tensor {ref} is used before it is defined")
            known.update(t.id for t in op.outputs)
        for t in self.outputs:
            if t.id not in known:
                raise IrError(f"output tensor {t.id} is never defined")

    def __str__(self) -> str:
        lines = [
            f"graph({', '.join(f'{n}: %{t.id} {t.dtype.name}{list(t.shape)}' for n, t in self.inputs.items())})"
        ]
        for cid, arr in self.constants.items():
            lines.append(f"  %{cid} = constant {arr.dtype}{list(arr.shape)}")
        for op in self.ops:
            outs = ", ".join(f"%{t.id}" for t in op.outputs)
            args = ", ".join(_show(a) for a in op.args)
            lines.append(f"  {outs} = {op.kind}({args})")
        lines.append(f"  return {', '.join(f'%{t.id}' for t in self.outputs)}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ bytes
    def to_bytes(self) -> bytes:
        """The versioned byte form (see the module docstring); ``Graph.from_bytes`` reads it back."""
        import numpy as np

        blobs, consts, offset = [], [], 0
        for cid, arr in self.constants.items():
            data = np.ascontiguousarray(arr)
            bf16 = data.dtype.name == "bfloat16"  # ml_dtypes' (kind 'V'): its bits as little-endian u2
            raw = (
                (data.view(np.uint16) if bf16 else data)
                .astype((np.dtype(np.uint16) if bf16 else data.dtype).newbyteorder("<"), copy=False)
                .tobytes()
            )
            consts.append(
                {
                    "id": cid,
                    "dtype": "bfloat16" if bf16 else data.dtype.str.lstrip("<>|="),
                    "shape": list(data.shape),
                    "offset": offset,
                    "nbytes": len(raw),
                }
            )
            blobs.append(raw)
            offset += len(raw)
        header = {
            "inputs": [[name, _tensor(t)] for name, t in self.inputs.items()],
            "constants": consts,
            "ops": [
                [str(op.kind), _encode(list(op.args)), [_tensor(t) for t in op.outputs]] for op in self.ops
            ],
            "outputs": [_tensor(t) for t in self.outputs],
        }
        head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
        return _HEAD.pack(MAGIC, FORMAT_VERSION, len(head)) + head + b"".join(blobs)

    @classmethod
    def from_bytes(cls, data: bytes) -> Graph:
        """Read a graph written by ``to_bytes``; ``IrError`` for anything malformed or truncated."""
        import numpy as np

        data = bytes(data)
        if len(data) < _HEAD.size:
            raise IrError(f"burn.ir: {len(data)} bytes is too short for a graph header")
        magic, version, head_len = _HEAD.unpack_from(data)
        if magic != MAGIC:
            raise IrError("burn.ir: not a burn IR graph (bad magic)")
        if version != FORMAT_VERSION:
            raise IrError(
                f"burn.ir: format version {version} is not supported (this burn reads {FORMAT_VERSION})"
            )
        body = _HEAD.size + head_len
        if body > len(data):
            raise IrError(f"burn.ir: truncated header ({len(data) - _HEAD.size} of {head_len} bytes)")
        try:
            header = json.loads(data[_HEAD.size : body])
            graph = cls()
            for name, t in header["inputs"]:
                graph.inputs[str(name)] = _untensor(t)
            for c in header["constants"]:
                start, n = body + int(c["offset"]), int(c["nbytes"])
                if start + n > len(data):
                    raise IrError(f"burn.ir: constant {c['id']} runs past the end of the data")
                bf16 = c["dtype"] == "bfloat16"
                dt = np.dtype("u2" if bf16 else c["dtype"]).newbyteorder("<")
                arr = np.frombuffer(data[start : start + n], dtype=dt).reshape(tuple(c["shape"]))
                arr = arr.astype(dt.newbyteorder("="))
                if bf16:
                    from ..backend._numpy_dtypes import bfloat16_dtype

                    arr = arr.view(bfloat16_dtype())
                graph.constants[int(c["id"])] = arr
            for kind, args, outs in header["ops"]:
                op_def(kind)  # an unknown kind is an error here, not at replay
                graph.ops.append(
                    OpRecord(OpKind(kind), tuple(_decode(args)), tuple(_untensor(t) for t in outs))
                )
            graph.outputs = [_untensor(t) for t in header["outputs"]]
        except IrError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise IrError(f"burn.ir: malformed graph header: {type(exc).__name__}: {exc}") from None
        graph.check()
        return graph


def _show(a: Any) -> str:
    if isinstance(a, Ref):
        return f"%{a.id}"
    if isinstance(a, D.DType):
        return a.name
    if isinstance(a, tuple):
        return "(" + ", ".join(_show(v) for v in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_show(v) for v in a) + "]"
    return repr(a)


def _tensor(t: TensorRef) -> list:
    return [t.id, list(t.shape), t.dtype.name]


def _untensor(v: Any) -> TensorRef:
    tid, shape, dtype = v
    return TensorRef(int(tid), tuple(int(s) for s in shape), D.dtype(dtype))


def _encode(v: Any) -> Any:
    """Arguments as JSON: tensors, dtypes, tuples and non-finite floats tagged; lists stay lists."""
    if isinstance(v, Ref):
        return {"t": v.id}
    if isinstance(v, D.DType):
        return {"dtype": v.name}
    if isinstance(v, tuple):
        return {"tuple": [_encode(x) for x in v]}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise IrError(f"burn.ir: cannot serialise an argument of type {type(v).__name__}: {v!r}")


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, dict):
        if "t" in v:
            return Ref(int(v["t"]))
        if "dtype" in v:
            return D.dtype(v["dtype"])
        if "tuple" in v:
            return tuple(_decode(x) for x in v["tuple"])
        if "float" in v:
            return float(v["float"])
        raise IrError(f"burn.ir: unknown argument tag {sorted(v)}")
    return v
