"""The ONNX form of burn's fused ``attention`` op: the composed graph it stands for (MatMul, scale, mask,
Softmax, MatMul), so a model that calls ``F.scaled_dot_product_attention`` exports as it did when the
frontend composed it. Bool masks (and causal, as a constant lower triangle) set disallowed scores to the
dtype's lowest finite value and zero the weights of a query with no key, as burn does; a float mask is
added. The second result, the row log-sum-exp, is ReduceLogSumExp of the same scores in float32 (a
large negative number, not -inf, for a query with no key). ``attention_backward`` has no ONNX form."""

from __future__ import annotations

import numpy as np
from burn import float32, int32
from burn.backend import NUMPY_DTYPES
from burn.ir import OpRecord

from ._builder import Builder, OpUnsupported, onnx_type, reduce_node
from ._builder import output_name as _out


def attention(b: Builder, op: OpRecord) -> list[str]:
    q, k, v, mask, is_causal, scale = op.args
    qref = b.ref(q)
    dtype = qref.dtype
    if dtype not in NUMPY_DTYPES:
        raise OpUnsupported(f"attention in {dtype.name} cannot be stored")
    n_q, n_k = qref.shape[2], b.ref(k).shape[2]
    kt = b.node("Transpose", [b.name(k)], perm=[0, 1, 3, 2])
    scores = b.node("Mul", [b.node("MatMul", [b.name(q), kt]), b.scalar(float(scale), dtype)])
    allowed = None
    if is_causal:
        allowed = b.const(np.tril(np.ones((1, 1, n_q, n_k), dtype=bool)))
    elif mask is not None and b.ref(mask).dtype.is_bool:
        allowed = b.name(mask)
    elif mask is not None:
        scores = b.node("Add", [scores, b.name(mask)])
    if allowed is not None:
        lowest = float(np.finfo(NUMPY_DTYPES[dtype]).min)
        scores = b.node("Where", [allowed, scores, b.scalar(lowest, dtype)])
    weights = b.node("Softmax", [scores], axis=3)
    if allowed is not None and not is_causal:  # a query with no key: zero weights
        seen = reduce_node(b, "ReduceMax", b.cast(allowed, int32), [3], True)
        weights = b.node("Mul", [weights, b.node("Cast", [seen], to=onnx_type(dtype))])
    out = b.node("MatMul", [weights, b.name(v)], [_out(op, 0)])
    lse = reduce_node(b, "ReduceLogSumExp", b.node("Cast", [scores], to=onnx_type(float32)), [3], False)
    return [out, b.node("Identity", [lse], [_out(op, 1)])]
