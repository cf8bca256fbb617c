"""What a model needs that burn-onnx cannot run: every offending node, found before any compute."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ._errors import UnsupportedNode
from ._graph import Graph, Model
from ._registry import OLDEST_OPSET, ops


def newest_opset() -> int:
    """The newest ai.onnx opset the installed onnx package knows."""
    import onnx

    return int(onnx.defs.onnx_opset_version())


def unsupported(model: Model) -> list[UnsupportedNode]:
    """Every node of ``model`` (subgraphs included) that cannot run, with why."""
    table = ops()
    newest = newest_opset()
    found: list[UnsupportedNode] = []
    opset = model.opset
    foreign = _foreign_values(model.graph)
    for node in model.graph.all_nodes():
        spec = table.get(node.op_type) if node.domain == "" else None
        reason: str | None
        if node.domain:
            reason = f"domain {node.domain!r} is not supported (only the default ai.onnx domain is)"
        elif opset < OLDEST_OPSET:
            reason = f"opset {opset} is older than {OLDEST_OPSET}, the oldest burn-onnx reads"
        elif opset > newest:
            reason = f"opset {opset} is newer than {newest}, the newest the installed onnx package knows"
        elif spec is None:
            reason = "no converter for this op type"
        elif opset < spec.since:
            reason = f"supported from opset {spec.since}"
        else:
            reason = spec.check(node) if spec.check is not None else None
            if reason is None:
                reason = _bad_types(node) or _foreign_inputs(node, foreign)
        if reason:
            found.append(UnsupportedNode(node.op_type, node.domain, node.opset, node.name, reason))
    return found


def _bad_types(node: Any) -> str | None:
    """String tensors (and other types burn has no dtype for) in constant attributes."""
    for name, value in node.attrs.items():
        if hasattr(value, "dtype") and value.dtype.kind in "OSU":
            return f"attribute {name} holds strings, which burn tensors cannot hold"
    return None


_NO_DTYPE = {8: "string", 14: "complex64", 15: "complex128"}


def _foreign_values(graph: Graph) -> dict[str, str]:
    """Graph inputs and initializers of types burn tensors cannot hold (strings, complex): name -> type."""
    found = {v.name: _NO_DTYPE[v.elem_type] for v in graph.inputs if v.elem_type in _NO_DTYPE}
    for name, arr in graph.initializers.items():
        if arr.dtype.kind in "OSUc":
            found[name] = "string" if arr.dtype.kind in "OSU" else str(arr.dtype)
    return found


def _foreign_inputs(node: Any, foreign: dict[str, str]) -> str | None:
    for name in node.inputs:
        if name in foreign:
            return f"input {name!r} is a {foreign[name]} tensor, which burn tensors cannot hold"
    return None


def histogram(graph: Graph) -> dict[str, int]:
    """Op type (``domain::Op`` outside ai.onnx) -> node count, subgraphs included, most frequent first."""
    counts = Counter(f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in graph.all_nodes())
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def supported_ops(opset: int | None = None) -> Any:
    """What burn-onnx runs. Without ``opset``: op type -> the ai.onnx opsets (OLDEST..newest) at which
    the op exists and is supported. With ``opset``: the sorted op types supported at that opset.

    >>> import burn_onnx
    >>> "Conv" in burn_onnx.supported_ops(13), burn_onnx.supported_ops()["Gelu"][0]
    (True, 20)
    """
    import onnx

    newest = newest_opset()
    table = ops()
    result: dict[str, tuple[int, ...]] = {}
    for name, spec in sorted(table.items()):
        versions = []
        for v in range(max(OLDEST_OPSET, spec.since), newest + 1):
            try:
                schema = onnx.defs.get_schema(name, v, "")
            except Exception:  # not defined (yet) at this opset
                continue
            if not schema.deprecated:
                versions.append(v)
        if versions:
            result[name] = tuple(versions)
    if opset is None:
        return result
    return sorted(name for name, versions in result.items() if opset in versions)
