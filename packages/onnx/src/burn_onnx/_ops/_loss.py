"""Training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both pick each target's entry along the class axis (input (N, C, d1, ...), target (N, d1, ...)), weight
it by the class weight (zero where the target is ``ignore_index``) and reduce: ``mean`` divides by the
summed weights (the count of kept targets without class weights), as the ONNX reference does.
"""

from __future__ import annotations

from typing import Any

import burn
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, op

_REDUCTIONS = ("none", "sum", "mean")


def _nll(node: Node, logp: burn.Tensor, target: burn.Tensor, weight: burn.Tensor | None) -> burn.Tensor:
    """The weighted, reduced negative log-likelihood of ``logp`` (log-probabilities over dim 1)."""
    reduction = node.attrs.get("reduction", "mean")
    ignore = node.attrs.get("ignore_index")
    kept = None
    index = target
    if ignore is not None:
        kept = target != int(ignore)
        index = target.mask_fill(kept.logical_not(), 0)  # any class will do: its weight is zero
    loss = -logp.gather(1, index.unsqueeze(1)).squeeze(1)
    w = None
    if weight is not None:
        w = weight.select(0, index.reshape(-1)).reshape(*target.shape).cast(logp.dtype)
    if kept is not None:
        mask = kept.cast(logp.dtype)
        w = mask if w is None else w * mask
    if w is not None:
        loss = loss * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if w is None:
        return loss.mean()
    return loss.sum() / w.sum()


@op("NegativeLogLikelihoodLoss", since=12, check=attr_in("reduction", _REDUCTIONS, "mean"))
def nll_loss(
    ctx: Any, node: Node, x: burn.Tensor, target: burn.Tensor, weight: burn.Tensor | None = None
) -> burn.Tensor:
    return _nll(node, x, target, weight)


@op("SoftmaxCrossEntropyLoss", since=12, check=attr_in("reduction", _REDUCTIONS, "mean"))
def softmax_cross_entropy(
    ctx: Any, node: Node, x: burn.Tensor, target: burn.Tensor, weight: burn.Tensor | None = None
) -> Any:
    logp = F.log_softmax(x, 1)
    loss = _nll(node, logp, target, weight)
    return loss, logp
