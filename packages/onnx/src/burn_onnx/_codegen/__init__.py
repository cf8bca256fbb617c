"""``burn_onnx.codegen``: an ONNX model as a readable Python module (a ``burn.nn.Module`` subclass) plus a
safetensors record of its weights, as Burn's ``burn-import`` writes Rust.

The import side's parsed graph is reused as is: values that depend only on constants (and on input shapes,
where ONNX shape inference knows them) are folded on the host with the import side's own converters, so
Shape -> Gather -> Concat -> Reshape chains become literal shapes. Every remaining node is written by one
small emitter per op type (``_emitters.EMITTERS``); a model with nodes no emitter can write fails with one
``UnsupportedOnnxError`` listing all of them.
"""

from __future__ import annotations

import importlib.util
import keyword
import os
import re
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._errors import UnsupportedNode, UnsupportedOnnxError
from .._graph import Graph, Node, _load_proto, read_model
from .._registry import ops
from ._emitters import EMITTERS
from ._gen import Gen, Unsupported, identifier

__all__ = ["EMITTERS", "codegen", "generate"]

_NEVER_FOLDED = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
_FOLD_LIMIT = 1 << 24  # elements: larger folded values would bloat the record


def _shapes(proto: Any) -> dict[str, tuple[int | None, ...]]:
    """Value name -> shape (None for unknown or symbolic dims) from ONNX shape inference."""
    import onnx

    try:
        proto = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # inference is a help, not a requirement
        pass
    g = proto.graph
    out: dict[str, tuple[int | None, ...]] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape"):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
    return out


def _fold(graph: Graph, consts: dict[str, np.ndarray], shapes: dict[str, tuple[int | None, ...]]) -> set[int]:
    """Run every node whose inputs are all known on the host (the import side's converters); returns the
    ids of folded nodes and adds their outputs to ``consts``."""
    import burn

    from .._registry import ops
    from .._runtime import Ctx, Scope, host

    table = ops()
    folded: set[int] = set()
    h = host()
    for node in graph.nodes:
        spec = table.get(node.op_type)
        if spec is None or node.domain or node.op_type in _NEVER_FOLDED or spec.dynamic:
            continue
        values: list[Any] = []
        for i, name in enumerate(node.inputs):
            if not name:
                values.append(None)
            elif name in consts:
                values.append(burn.from_numpy(np.ascontiguousarray(consts[name]), device=h))
            elif node.op_type in ("Shape", "Size") and i == 0 and _static(shapes.get(name)):
                # only the shape is read: zeros of the inferred shape stand in for the input
                values.append(burn.zeros(tuple(cast(tuple[int, ...], shapes[name])), device=h))
            else:
                break
        else:
            try:
                ctx = Ctx(cast(Any, None), node, h, Scope(), list(values))
                result = spec.fn(ctx, node, *values)
            except Exception:  # left to its emitter, which says what is wrong
                continue
            results = result if isinstance(result, tuple) else (result,)
            if not all(isinstance(r, burn.Tensor) and r.numel() <= _FOLD_LIMIT for r in results):
                continue
            for name, r in zip(node.outputs, results):
                if name:
                    consts[name] = r.numpy()
            folded.add(id(node))
    return folded


def _static(shape: tuple[int | None, ...] | None) -> bool:
    return shape is not None and all(isinstance(d, int) and d > 0 for d in shape)


def _readable(name: str) -> bool:
    """Whether an ONNX value name makes a good variable name (``logits``, not ``/fc/Gemm_output_0``)."""
    return re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) is not None and not re.search(r"_\d+$", name)


def _base(op_type: str) -> str:
    """``BatchNormalization`` -> ``batch_normalization``: the variable name of a functional node."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()


def generate(source: Any, name: str = "Net") -> tuple[str, dict[str, np.ndarray]]:
    """The module text and its record (dotted name -> array) for ``source`` (a path, bytes or proto)."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"codegen: name must be a Python identifier (not a keyword), got {name!r}")
    proto, label = _load_proto(source, None)
    shapes = _shapes(proto)
    model = read_model(proto)
    graph = model.graph
    consts = dict(graph.initializers)
    folded = _fold(graph, consts, shapes)
    live = [n for n in graph.nodes if id(n) not in folded]
    consumers: dict[str, list[Node]] = {}
    for node in live:
        for i in dict.fromkeys(node.inputs):
            if i:
                consumers.setdefault(i, []).append(node)
    g = Gen(graph, consts, shapes, consumers)
    inputs = []
    for info in graph.inputs:
        var = g.fresh(identifier(info.name, "x"))
        g.names[info.name] = var
        inputs.append((var, info))
    outputs = {v.name for v in graph.outputs}
    problems: list[UnsupportedNode] = []
    for node in live:
        if id(node) in g.fused:
            g.names[node.outputs[0]] = g.names[g.fused[id(node)]]
            continue
        emit = EMITTERS.get(node.op_type) if not node.domain else None
        spec = ops().get(node.op_type) if not node.domain else None
        try:
            if emit is None:
                raise Unsupported("no code emitter for this op yet")
            # the op table's attribute checks (a required attribute an old file lacks, a mode the
            # runtime refuses) hold for generated code too
            reason = spec.check(node) if spec is not None and spec.check is not None else None
            if reason:
                raise Unsupported(reason)
            if any(isinstance(v, Graph) for v in node.attrs.values()):
                raise Unsupported("subgraphs (If/Loop/Scan) are not supported")
            expr = emit(g, node)
        except Unsupported as exc:
            if "is not available" not in str(exc):  # downstream of an unsupported node: already listed
                problems.append(UnsupportedNode(node.op_type, node.domain, node.opset, node.name, str(exc)))
            continue
        out = node.outputs[0]
        if expr.isidentifier() and out not in outputs:
            g.names[out] = expr  # Identity, Dropout, Clip without bounds: no line of its own
            continue
        layer = re.match(r"self\.(\w+)\(", expr)
        if out in outputs and _readable(out):
            var = g.fresh(identifier(out, "y"))
        elif layer:
            var = g.fresh(layer.group(1))
        else:
            var = g.fresh(_base(node.op_type), numbered=True)
        g.names[out] = var
        g.lines.append(f"{var} = {expr}")
    if problems:
        raise UnsupportedOnnxError(problems, f"burn onnx codegen: {label}")
    returned = [g.arg(v.name) for v in graph.outputs]
    text = _render(g, name, label, model.opset, inputs, returned)
    record: dict[str, np.ndarray] = {}
    for layer_ in g.layers:
        for key, arr in layer_.record.items():
            record[f"{layer_.attr}.{key}"] = np.asarray(arr)
    for attr, arr in g.params.values():
        record[attr] = np.asarray(arr)
    return text, record


def _dims(info: Any) -> str:
    if info.shape is None:
        return f"{info.dtype}[?]"
    return f"{info.dtype}[{', '.join('?' if d is None else str(d) for d in info.shape)}]"


def _render(g: Gen, name: str, label: str, opset: int, inputs: list[Any], returned: list[str]) -> str:
    lower = name.lower()
    source = os.path.basename(label) if label not in ("model", "model bytes") else "ONNX"
    example = ", ".join(var for var, _ in inputs)
    shapes = "; ".join(f"{var}: {_dims(info)}" for var, info in inputs)
    head = [
        f'"""{name}: generated by ``burn onnx codegen`` from {source} (ONNX opset {opset}).',
        "",
        "Usage::",
        "",
        "    import burn",
        f"    from {lower} import {name}",
        "",
        f'    model = {name}(device=burn.device("cpu"))',
        f'    burn.record.load(model, "{lower}.safetensors")',
        f"    out = model({example})  # {shapes}",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import burn",
        "from burn import nn",
    ]
    body = "\n".join(g.lines)
    if g.params:
        head.append("from burn.nn import Param")
    if "F." in body:
        head.append("from burn.nn import functional as F")
    lines = [*head, "", "", f"class {name}(nn.Module):"]
    lines.append(f'    """The {source} graph as a burn module (weights: ``{lower}.safetensors``)."""')
    lines.append("")
    lines.append("    def __init__(self, device: burn.Device | None = None) -> None:")
    for layer in g.layers:
        lines.append(f"        self.{layer.attr} = {layer.ctor}")
    for attr, arr in g.params.values():
        lines.append(f"        self.{attr} = Param(burn.zeros({_tuple(arr.shape)}, device=device))")
    if not g.layers and not g.params:
        lines.append("        pass")
    args = ", ".join(f"{var}: burn.Tensor" for var, _ in inputs)
    ret = "burn.Tensor" if len(returned) == 1 else f"tuple[{', '.join(['burn.Tensor'] * len(returned))}]"
    lines += ["", f"    def forward(self{', ' if args else ''}{args}) -> {ret}:"]
    lines += [f"        {line}" for line in g.lines]
    lines.append(f"        return {', '.join(returned)}")
    return "\n".join(lines) + "\n"


def _tuple(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def codegen(
    source: str | os.PathLike[str] | bytes | Any, out_dir: str | os.PathLike[str], name: str = "Net"
) -> Path:
    """Write ``out_dir/<name_lower>.py`` (a ``burn.nn.Module`` subclass ``name`` reading like hand-written
    burn code) and ``out_dir/<name_lower>.safetensors`` (its weights as a ``burn.record``); returns the
    module's path. Nodes no emitter can write are listed in one ``UnsupportedOnnxError``.

    >>> path = burn_onnx.codegen("model.onnx", "out/", name="Net")  # doctest: +SKIP
    >>> # from out/net.py: model = Net(); burn.record.load(model, "out/net.safetensors")
    """
    import burn

    text, record = generate(source, name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lower = name.lower()
    module_path = out / f"{lower}.py"
    module_path.write_text(text, encoding="utf-8")
    # the record is saved from an instance of the generated class: its names are the module's own
    spec = importlib.util.spec_from_file_location(f"_burn_codegen_{lower}", module_path)
    assert spec is not None and spec.loader is not None
    generated = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generated
    try:
        spec.loader.exec_module(generated)
        model = getattr(generated, name)(device=burn.device("cpu"))
        model.load_record(record)
        burn.record.save(model, out / f"{lower}.safetensors")
    finally:
        sys.modules.pop(spec.name, None)
    return module_path
