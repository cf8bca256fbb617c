"""The state of one export: ONNX value names of the graph's tensors, the nodes and initializers made.

A rule (``_rules``) reads its op's arguments through the builder (``name`` for a ``Ref``, ``scalar`` for
a Python number that ONNX needs as a tensor), adds nodes with ``node`` and returns the names of the op's
outputs. Names are ``t<id>`` for op results, ``c<id>`` for the graph's constants and the given names for
its inputs; helper values get fresh ``_k<n>`` names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import burn
import numpy as np
import onnx
from burn.ir import OpRecord, Ref, TensorRef
from onnx import helper, numpy_helper

from .._dtypes import BURN_TO_ONNX


class OpUnsupported(Exception):
    """Raised by a rule for arguments it cannot express in ONNX (the reason goes into the report)."""


def onnx_type(dtype: burn.DType) -> int:
    """The ``TensorProto`` element type of a burn dtype; ``OpUnsupported`` where ONNX has none."""
    try:
        return BURN_TO_ONNX[dtype.name]
    except KeyError:
        raise OpUnsupported(f"dtype {dtype.name} has no ONNX element type") from None


class Builder:
    """Nodes and initializers of the model being written, for ONNX opset ``opset``."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.names: dict[int, str] = {}  # tensor id -> ONNX value name
        self.refs: dict[int, TensorRef] = {}  # tensor id -> its shape and dtype
        self._fresh = 0

    def fresh(self, hint: str = "k") -> str:
        self._fresh += 1
        return f"_{hint}{self._fresh}"

    def name(self, ref: Ref) -> str:
        return self.names[ref.id]

    def ref(self, ref: Ref) -> TensorRef:
        return self.refs[ref.id]

    def const(self, value: Any, dtype: Any = None, name: str | None = None) -> str:
        """An initializer holding ``value`` (a numpy array or a number; numpy dtype ``dtype``)."""
        arr = np.asarray(value, dtype=dtype)
        out = name or self.fresh("c")
        self.initializers.append(numpy_helper.from_array(arr, out))
        return out

    def ints(self, values: Sequence[int]) -> str:
        """A 1-d int64 initializer (shapes, axes, pads, starts/ends/steps)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def scalar(self, value: float | int | bool, like: burn.DType) -> str:
        """A 0-d initializer of ``value`` as dtype ``like`` (a scalar operand of a binary op)."""
        from burn.backend import NUMPY_DTYPES

        if like not in NUMPY_DTYPES:
            raise OpUnsupported(f"a scalar operand of dtype {like.name} cannot be stored")
        return self.const(np.asarray(value, dtype=NUMPY_DTYPES[like]))

    def operand(self, value: Any, like: burn.DType) -> str:
        """The name of a tensor argument, or a scalar argument made a 0-d constant of dtype ``like``."""
        return self.name(value) if isinstance(value, Ref) else self.scalar(value, like)

    def node(
        self, op_type: str, inputs: Sequence[str], outputs: int | Sequence[str] = 1, **attrs: Any
    ) -> str:
        """Add one node; returns its first output's name (fresh names unless ``outputs`` names them)."""
        outs = [self.fresh() for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
        doc = attrs.pop("doc_string", None)
        self.nodes.append(
            helper.make_node(op_type, list(inputs), outs, name=f"n{len(self.nodes)}_{op_type}", **attrs)
        )
        if doc:
            self.nodes[-1].doc_string = doc
        return outs[0]

    def cast(self, value: str, dtype: burn.DType) -> str:
        return self.node("Cast", [value], to=onnx_type(dtype))


def reduce_node(
    b: Builder, onnx_op: str, x: str, dims: Sequence[int], keepdim: bool, out: str | None = None
) -> str:
    """A Reduce* node: axes are an input from opset 13 (ReduceSum) or 18 (the others), else an attribute."""
    outs: int | list[str] = [out] if out else 1
    if b.opset >= 18 or onnx_op == "ReduceSum":
        return b.node(onnx_op, [x, b.ints(dims)], outs, keepdims=int(keepdim))
    return b.node(onnx_op, [x], outs, axes=list(dims), keepdims=int(keepdim))


Rule = Callable[[Builder, OpRecord], Sequence[str | None]]  # a converter: the ONNX names of the op's outputs


def output_name(op: OpRecord, i: int = 0) -> str:
    """The ONNX name of the record's ``i``-th output."""
    return f"t{op.outputs[i].id}"
