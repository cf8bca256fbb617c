"""burn-onnx's own view of an ONNX model: plain dataclasses with decoded attributes and numpy initializers.

``read_model`` turns a path, bytes or ``onnx.ModelProto`` into a ``Model``; everything after it (the op
checks, the executor, ``burn onnx check``) works on these classes, never on protobuf messages. A file
that cannot be parsed, or whose graph is inconsistent (a value used but never produced, a cycle), is an
``OnnxLoadError`` that names the file and the problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._dtypes import ONNX_NAMES, ONNX_TO_BURN, STORED_AS, WIDENED
from ._errors import OnnxLoadError

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output: its name, shape (ints, names of symbolic dims, None for unknown; None
    for an unknown rank) and element type (a burn dtype name such as ``"float32"``, or the ONNX type
    name where burn has no dtype). ``kind`` is ``"tensor"``, ``"sequence"`` or ``"optional"``."""

    name: str
    shape: tuple[int | str | None, ...] | None
    dtype: str
    kind: str = "tensor"
    elem_type: int = 0

    def __str__(self) -> str:
        dims = "?" if self.shape is None else "x".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype}[{dims}]"


@dataclass
class Node:
    """One node: its op, domain, opset of that domain, name, input/output names ('' = omitted) and
    attributes decoded to Python values (ints, floats, str, numpy arrays, ``Graph``s and lists)."""

    op_type: str
    domain: str
    opset: int
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]

    def input(self, i: int) -> str:
        return self.inputs[i] if i < len(self.inputs) else ""

    @property
    def label(self) -> str:
        return self.name or f"{self.op_type}({', '.join(self.outputs)})"


@dataclass
class Graph:
    """A graph (the main one or an If/Loop body): nodes in topological order, inputs, outputs and
    initializers (name -> numpy array). ``inputs`` excludes graph inputs that have an initializer
    (IR v3 files list every weight as an input); those stay in ``overridable``."""

    name: str
    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    initializers: dict[str, np.ndarray]
    overridable: list[str] = field(default_factory=list)
    widened: dict[str, int] = field(default_factory=dict)  # initializer -> ONNX type held wider (int4...)

    def subgraphs(self) -> list[Graph]:
        """Every graph nested in this one's node attributes, depth first."""
        found: list[Graph] = []
        for node in self.nodes:
            for value in node.attrs.values():
                for g in value if isinstance(value, list) else [value]:
                    if isinstance(g, Graph):
                        found.append(g)
                        found.extend(g.subgraphs())
        return found

    def all_nodes(self) -> list[Node]:
        return self.nodes + [n for g in self.subgraphs() for n in g.nodes]


@dataclass
class Model:
    """A parsed model: its main graph, opset per domain, IR version and producer."""

    graph: Graph
    opsets: dict[str, int]
    ir_version: int
    producer: str
    source: str

    @property
    def opset(self) -> int:
        """The opset of the default (ai.onnx) domain."""
        return self.opsets.get("", self.opsets.get("ai.onnx", 1))


# ------------------------------------------------------------------ reading


def _load_proto(source: Any, base_dir: str | os.PathLike[str] | None) -> tuple[Any, str]:
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(source, onnx.ModelProto):
        return source, "model"
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label, folder = bytes(source), "model bytes", base_dir
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        label = str(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise OnnxLoadError(f"{label}: cannot read the file: {exc.strerror or exc}") from None
        folder = base_dir if base_dir is not None else path.parent
    else:
        raise TypeError(f"load: expected a path, bytes or an onnx.ModelProto, got {type(source).__name__}")
    if not data:
        raise OnnxLoadError(f"{label}: the file is empty")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OnnxLoadError(
            f"{label}: not a valid ONNX model (protobuf could not parse it: {exc}); the file may be "
            "truncated or not an ONNX file"
        ) from None
    if not proto.HasField("graph"):
        raise OnnxLoadError(f"{label}: not a valid ONNX model (no graph); the file may be truncated")
    if _uses_external_data(proto.graph):
        if folder is None:
            raise OnnxLoadError(
                f"{label}: the model keeps tensors in external data files; pass base_dir= (the folder "
                "holding them) when loading from bytes"
            )
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(proto, str(folder))
        except (OSError, ValueError, onnx.checker.ValidationError) as exc:
            raise OnnxLoadError(f"{label}: cannot read external data from {folder}: {exc}") from None
    return proto, label


def _uses_external_data(graph: Any) -> bool:
    for t in graph.initializer:
        if t.data_location == 1:  # TensorProto.EXTERNAL
            return True
    for node in graph.node:
        for a in node.attribute:
            if a.type == 4 and a.t.data_location == 1:
                return True
            if a.type == 5 and _uses_external_data(a.g):
                return True
            if a.type == 10 and any(_uses_external_data(g) for g in a.graphs):
                return True
    return False


def _array(tensor: Any, where: str) -> np.ndarray:
    from onnx import numpy_helper

    try:
        arr = numpy_helper.to_array(tensor)
    except Exception as exc:  # corrupt raw_data, a size that does not match the dims, ...
        raise OnnxLoadError(f"{where}: tensor {tensor.name!r} cannot be decoded: {exc}") from None
    if arr.dtype.kind in "OSU":
        return arr  # strings: kept, and reported by the op check where used
    if tensor.data_type == 16:  # bfloat16 arrives as its bit pattern or ml_dtypes; compute in float32
        arr = np.asarray(arr, dtype=np.float32)
    elif tensor.data_type in WIDENED:  # uint16 -> int32, uint64 -> int64, float8 -> float32, int4 -> int8
        arr = arr.astype(ONNX_TO_BURN.get(tensor.data_type) or STORED_AS[tensor.data_type])
    return arr


def _value_info(vi: Any) -> ValueInfo:
    tt = vi.type
    which = tt.WhichOneof("value")
    kind = {"tensor_type": "tensor", "sequence_type": "sequence", "optional_type": "optional"}.get(
        which or "", which or "tensor"
    )
    inner = tt.optional_type.elem_type if which == "optional_type" else tt  # an optional's content
    t = inner.tensor_type if inner.HasField("tensor_type") else None
    if inner.HasField("sequence_type") and inner.sequence_type.elem_type.HasField("tensor_type"):
        t = inner.sequence_type.elem_type.tensor_type
    elem = t.elem_type if t is not None else 0
    shape: tuple[int | str | None, ...] | None = None
    if t is not None and t.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim)
    dtype = ONNX_TO_BURN.get(elem, ONNX_NAMES.get(elem, str(elem)))
    return ValueInfo(vi.name, shape, dtype, kind, elem)


def _attrs(node: Any, opsets: dict[str, int], where: str) -> dict[str, Any]:
    from onnx import helper

    out: dict[str, Any] = {}
    for a in node.attribute:
        if a.ref_attr_name:  # only inside function bodies, which are inlined by onnx
            out[a.name] = None
            continue
        if a.type == 4:  # TENSOR
            out[a.name] = _array(a.t, where)
        elif a.type == 9:  # TENSORS
            out[a.name] = [_array(t, where) for t in a.tensors]
        elif a.type == 5:  # GRAPH
            out[a.name] = _graph(a.g, opsets, f"{where} attribute {a.name}")
        elif a.type == 10:  # GRAPHS
            out[a.name] = [_graph(g, opsets, f"{where} attribute {a.name}") for g in a.graphs]
        else:
            value = helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            elif isinstance(value, list):
                value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
            out[a.name] = value
    return out


def _graph(g: Any, opsets: dict[str, int], where: str) -> Graph:
    initializers = {t.name: _array(t, where) for t in g.initializer}
    for st in g.sparse_initializer:
        from onnx import numpy_helper

        initializers[st.values.name] = numpy_helper.to_array(st)
    overridable = [vi.name for vi in g.input if vi.name in initializers]
    in_infos = [_value_info(vi) for vi in g.input if vi.name not in initializers]
    nodes = []
    for i, n in enumerate(g.node):
        label = f"{where} node {n.name or n.op_type + '#' + str(i)!r}"
        domain = n.domain if n.domain not in DEFAULT_DOMAINS else ""
        nodes.append(
            Node(
                n.op_type,
                domain,
                opsets.get(domain, opsets.get("ai.onnx", 0) if domain == "" else 0),
                n.name,
                list(n.input),
                list(n.output),
                _attrs(n, opsets, label),
            )
        )
    return Graph(
        g.name,
        nodes,
        in_infos,
        [_value_info(vi) for vi in g.output],
        initializers,
        overridable,
        {t.name: t.data_type for t in g.initializer if t.data_type in WIDENED},
    )


def _toposort(graph: Graph, outer: set[str], where: str) -> None:
    """Sort ``graph.nodes`` topologically (exporters do not always) and check every value is defined."""
    known = set(outer) | {v.name for v in graph.inputs} | set(graph.initializers) | {""}
    pending = list(graph.nodes)
    ordered: list[Node] = []
    while pending:
        rest = []
        for node in pending:
            needed = set(node.inputs) | _captured(node)
            if needed <= known:
                ordered.append(node)
                known.update(node.outputs)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            node = rest[0]
            missing = sorted((set(node.inputs) | _captured(node)) - known)
            produced = {o for n in rest for o in n.outputs}
            why = "a cycle through" if set(missing) & produced else "undefined"
            raise OnnxLoadError(
                f"{where}: node {node.label!r} ({node.op_type}) uses {why} value(s) "
                f"{', '.join(repr(m) for m in missing)}; the model is malformed or truncated"
            )
        pending = rest
    graph.nodes = ordered
    for out in graph.outputs:
        if out.name not in known:
            raise OnnxLoadError(
                f"{where}: graph output {out.name!r} is produced by no node; the model is malformed "
                "or truncated"
            )
    for node in graph.nodes:
        for value in node.attrs.values():
            for sub in value if isinstance(value, list) else [value]:
                if isinstance(sub, Graph):
                    _toposort(sub, known, f"{where} > {node.label}")


def _captured(node: Node) -> set[str]:
    """Outer-scope names a node's subgraphs read (If/Loop bodies refer to values of the main graph)."""
    names: set[str] = set()
    for value in node.attrs.values():
        for sub in value if isinstance(value, list) else [value]:
            if isinstance(sub, Graph):
                local = {v.name for v in sub.inputs} | set(sub.initializers)
                for n in sub.nodes:
                    local.update(n.outputs)
                for n in sub.nodes:
                    names.update(i for i in n.inputs if i and i not in local)
                    names.update(c for c in _captured(n) if c not in local)
                names.update(o.name for o in sub.outputs if o.name not in local)
    return names


def read_model(source: Any, base_dir: str | os.PathLike[str] | None = None) -> Model:
    """Parse ``source`` (a path, bytes or an ``onnx.ModelProto``) into a ``Model``."""
    proto, label = _load_proto(source, base_dir)
    opsets: dict[str, int] = {}
    for imp in proto.opset_import:
        domain = imp.domain if imp.domain not in DEFAULT_DOMAINS else ""
        opsets[domain] = int(imp.version)
    if not proto.opset_import:  # IR v1/v2 files carry no opset: opset 1
        opsets[""] = 1
    if proto.functions:
        try:
            from onnx import inliner

            proto = inliner.inline_local_functions(proto)
        except Exception as exc:
            raise OnnxLoadError(f"{label}: cannot inline the model's local functions: {exc}") from None
    graph = _graph(proto.graph, opsets, label)
    _toposort(graph, set(), label)
    return Model(graph, opsets, int(proto.ir_version), proto.producer_name, label)
