"""The errors of burn-onnx: a file that cannot be read, and a model with nodes it cannot run."""

from __future__ import annotations

from dataclasses import dataclass

from burn import BurnError


class OnnxError(BurnError):
    """Base class of burn-onnx's errors."""


class OnnxLoadError(OnnxError, ValueError):
    """The file is not a readable ONNX model: truncated, corrupt, inconsistent, or missing external data."""


class OnnxRuntimeError(OnnxError, RuntimeError):
    """A node failed while running; the message names the node, its op and its input dtypes and shapes."""


@dataclass(frozen=True)
class UnsupportedNode:
    """One node burn-onnx cannot run, and why (unknown op, foreign domain, opset, attribute value)."""

    op_type: str
    domain: str
    opset: int
    name: str
    reason: str

    def __str__(self) -> str:
        domain = self.domain or "ai.onnx"
        name = self.name or "<unnamed>"
        return f"{self.op_type} ({domain} opset {self.opset}) node {name!r}: {self.reason}"


class UnsupportedOnnxError(OnnxError, NotImplementedError):
    """The model has nodes burn-onnx cannot run; ``nodes`` lists every one of them (at load time)."""

    def __init__(self, nodes: list[UnsupportedNode], source: str = "model") -> None:
        self.nodes = list(nodes)
        lines = "\n  ".join(str(n) for n in self.nodes)
        super().__init__(f"{source}: {len(self.nodes)} unsupported node(s):\n  {lines}")
