"""``burn_onnx.export``: a burn function or module as an ONNX model.

The forward is recorded with ``burn.ir.capture`` on symbolic inputs; each ``OpRecord`` becomes ONNX
nodes by its row in ``_rules.RULES``, the graph's constants (a module's weights, literals) become
initializers. Every op that has no ONNX form is reported at once, in one ``UnsupportedExportError``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import burn
import onnx
from burn.ir import Graph, OpRecord, TensorRef
from onnx import helper, numpy_helper

from .._errors import OnnxError
from ._builder import Builder, OpUnsupported, onnx_type
from ._rules import RULES

MIN_OPSET = 13  # Softmax over one axis, ReduceSum/Squeeze/Unsqueeze axes as inputs


class UnsupportedExportError(OnnxError, NotImplementedError):
    """The captured graph has ops with no ONNX form; ``ops`` lists each as ``(index, kind, reason)``."""

    def __init__(self, ops: list[tuple[int, str, str]]) -> None:
        self.ops = list(ops)
        kinds = sorted({kind for _, kind, _ in self.ops})
        lines = "\n  ".join(f"op {i} ({kind}): {reason}" for i, kind, reason in self.ops)
        super().__init__(
            f"burn_onnx.export: {len(self.ops)} op(s) of kind(s) {', '.join(kinds)} cannot be exported "
            f"to ONNX:\n  {lines}"
        )


def exportable_ops() -> list[str]:
    """The op kinds ``export`` has a rule for (some only for certain arguments or opsets)."""
    return sorted(RULES)


def _input_specs(example_inputs: Any) -> tuple[list[tuple[tuple[int, ...], burn.DType]], Any]:
    """(shape, dtype) of each example input, and the device of the first tensor among them (or None)."""
    items = example_inputs if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    if len(items) == 2 and isinstance(items[1], (str, burn.DType)) and not hasattr(items[0], "dtype"):
        items = [items]  # a single (shape, dtype) pair
    specs, device = [], None
    for i, item in enumerate(items):
        if hasattr(item, "shape") and hasattr(item, "dtype") and hasattr(item, "device"):
            specs.append((tuple(item.shape), item.dtype))
            device = device or item.device
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            specs.append((tuple(int(s) for s in item[0]), burn.dtype(item[1])))
        else:
            raise TypeError(
                f"burn_onnx.export: example_inputs[{i}] must be a tensor or a (shape, dtype) pair, "
                f"got {type(item).__name__}"
            )
    return specs, device


def _names(given: Sequence[str] | None, count: int, prefix: str, what: str) -> list[str]:
    if given is None:
        return [f"{prefix}{i}" for i in range(count)]
    names = [str(n) for n in given]
    if len(names) != count:
        raise ValueError(f"burn_onnx.export: {what} has {len(names)} names for {count} {what[:-6]}s")
    if len(set(names)) != len(names):
        raise ValueError(f"burn_onnx.export: {what} {names} repeats a name")
    return names


def export(
    module: Callable[..., Any],
    example_inputs: Any,
    path: str | os.PathLike[str] | None = None,
    opset: int = 17,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
) -> onnx.ModelProto:
    """Write ``module``'s forward (a ``burn.nn.Module`` or a function of tensors) as an ONNX model.

    ``example_inputs``: tensors or ``(shape, dtype)`` pairs (one or a list), one per forward argument;
    the model has their static shapes. Inputs are named ``input0``... and outputs ``output0``...
    unless ``input_names``/``output_names`` are given. A module is exported in inference mode
    (``module.valid()``) with its weights as initializers. Returns the model (written to ``path``
    when one is given); ``UnsupportedExportError`` lists every op with no ONNX form.

    >>> model = burn_onnx.export(mlp, [((1, 4), "float32")], "mlp.onnx")  # doctest: +SKIP
    """
    latest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= latest:
        raise ValueError(f"burn_onnx.export: opset must be in [{MIN_OPSET}, {latest}], got {opset}")
    specs, device = _input_specs(example_inputs)
    in_names = _names(input_names, len(specs), "input", "input_names")
    graph = burn.ir.capture(module, dict(zip(in_names, specs)), like=device)
    model = graph_to_onnx(graph, opset, output_names)
    if path is not None:
        onnx.save_model(model, os.fspath(path))
    return model


def graph_to_onnx(
    graph: Graph, opset: int = 17, output_names: Sequence[str] | None = None
) -> onnx.ModelProto:
    """An ONNX model of a captured ``burn.ir.Graph`` (see ``export``)."""
    b = Builder(opset)
    for name, ref in graph.inputs.items():
        b.names[ref.id], b.refs[ref.id] = name, ref
    for cid, arr in graph.constants.items():
        b.names[cid] = f"c{cid}"
        b.refs[cid] = TensorRef(cid, tuple(arr.shape), burn.dtype(str(arr.dtype)))
        b.initializers.append(numpy_helper.from_array(arr, f"c{cid}"))
    missing: dict[int, tuple[int, str]] = {}  # outputs ONNX does not give -> the op making them
    failures: list[tuple[int, str, str]] = []
    for i, op in enumerate(graph.ops):
        used = [tid for tid in op.inputs if tid in missing]
        if used:
            j, kind = missing[used[0]]
            failures.append((i, str(op.kind), f"uses output %{used[0]} of op {j} ({kind}), which ONNX lacks"))
        names = _convert(b, op, i, failures) if not used else [None] * len(op.outputs)
        for out, value in zip(op.outputs, names):
            b.refs[out.id] = out
            if value is None:
                missing[out.id] = (i, str(op.kind))
            else:
                b.names[out.id] = value
    outputs = _names(output_names, len(graph.outputs), "output", "output_names")
    for ref in graph.outputs:
        if ref.id in missing:
            j, kind = missing[ref.id]
            failures.append((j, kind, f"its output %{ref.id} is a graph output, which ONNX does not give"))
    if failures:
        raise UnsupportedExportError(failures)
    for ref, name in zip(graph.outputs, outputs):
        b.node("Identity", [b.names[ref.id]], [name])
    onnx_graph = helper.make_graph(
        b.nodes,
        "burn",
        [_value_info(n, r) for n, r in graph.inputs.items()],
        [_value_info(n, r) for n, r in zip(outputs, graph.outputs)],
        b.initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        onnx_graph,
        opset_imports=opsets,
        producer_name="burn-onnx",
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    onnx.checker.check_model(model)
    return model


def _convert(b: Builder, op: OpRecord, index: int, failures: list[tuple[int, str, str]]) -> list[str | None]:
    rule = RULES.get(str(op.kind))
    try:
        if rule is None:
            raise OpUnsupported("no ONNX export rule for this op kind")
        return list(rule(b, op))
    except OpUnsupported as exc:
        failures.append((index, str(op.kind), str(exc)))
        return [f"_unsupported{out.id}" for out in op.outputs]


def _value_info(name: str, ref: Any) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, onnx_type(ref.dtype), list(ref.shape))


__all__ = ["UnsupportedExportError", "export", "exportable_ops", "graph_to_onnx"]
