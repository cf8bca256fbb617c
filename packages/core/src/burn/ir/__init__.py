"""``burn.ir``: every tensor op as a typed record that can be recorded, inspected, serialised and replayed.

- ``OpKind`` / ``OpDef`` / ``OPS``: the op vocabulary (one kind per backend op, one row describing it).
- ``OpRecord``, ``TensorRef``, ``Ref``, ``Graph``: recorded op streams; ``Graph.to_bytes`` /
  ``Graph.from_bytes`` give their versioned byte form.
- ``capture(fn, inputs, like=device)``: run ``fn`` on symbolic tensors and return its ``Graph`` without
  computing anything; ``CaptureBackend`` is the backend doing it.
- ``replay(graph, inputs, device)``: run a graph on any backend.

>>> g = burn.ir.capture(lambda x: x.relu() * 2, {"x": ((3,), "float32")})
>>> burn.ir.replay(g, [burn.tensor([-1.0, 0.5, 2.0])]).tolist()
[0.0, 1.0, 4.0]
"""

from ..backend._vocabulary import OPS, OpDef, OpKind, op_def
from ._capture import CaptureBackend, Sym, capture, capture_device
from ._graph import FORMAT_VERSION, Graph, IrError, OpRecord, Ref, TensorRef
from ._replay import replay

__all__ = [
    "FORMAT_VERSION",
    "OPS",
    "CaptureBackend",
    "Graph",
    "IrError",
    "OpDef",
    "OpKind",
    "OpRecord",
    "Ref",
    "Sym",
    "TensorRef",
    "capture",
    "capture_device",
    "op_def",
    "replay",
]
