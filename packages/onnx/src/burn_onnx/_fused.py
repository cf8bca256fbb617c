"""Converters of the internal nodes that ``_optimize`` writes: ``FusedConv`` / ``FusedGemm`` (a Conv,
ConvTranspose or Gemm with a BatchNormalization folded in and an optional Relu; a Conv also with a
residual add before the Relu, input 7, or a tiling max pool after it; or a Conv with a Clip folded in,
``activation="Clip"``) and ``AddRelu``.

On the numpy backend a fused Conv is one ``conv_fused`` call from its second run with the same shapes
on (the first runs the Conv converter, whose checks give the errors); anywhere else (autodiff,
GPU backends, a residual that broadcasts) the node runs the plain ops in order.

A fused node keeps every input of the nodes it replaces, so the fold runs on the current params:
``w' = w * s`` and ``b' = (b - mean) * s + shift`` with ``s = scale / sqrt(var + eps)``, per output
channel. The fold is a handful of small tensor ops (differentiable on an autodiff device); anywhere
else its result is kept and reused as long as the node reads the very same weight tensors.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import burn
import numpy as np
from burn.backend import from_primitive

from ._chains import fused_chain
from ._graph import Node
from ._ops import _nn
from ._ops._elementwise import _relu
from ._registry import OpSpec

_BASES = {"Conv": _nn.conv, "ConvTranspose": _nn.conv_transpose, "Gemm": _nn.gemm}


def _fold(node: Node, w: burn.Tensor, b: burn.Tensor | None, bn: tuple[burn.Tensor, ...]) -> tuple:
    """(w', b') with the BatchNormalization of ``bn`` = (scale, shift, mean, var) folded in."""
    scale, shift, mean, var = bn
    s = scale * (var + float(node.attrs["epsilon"])).rsqrt()
    base = node.attrs["base"]
    if base == "Conv":  # weight (C_out, C_in / g, *k)
        w = w * s.reshape(-1, *([1] * (w.ndim - 1)))
    elif base == "ConvTranspose":  # weight (C_in, C_out / g, *k): output channel g * C_out/g + j
        groups = int(node.attrs.get("group", 1))
        c_in, c_out_g = w.shape[:2]
        split = (groups, c_in // groups, c_out_g, *w.shape[2:])
        w = (w.reshape(*split) * s.reshape(groups, 1, c_out_g, *([1] * (w.ndim - 2)))).reshape(*w.shape)
    else:  # Gemm: y = alpha * A' @ B' + beta * C; the BN scales y's columns
        alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
        w = w * s.reshape(-1, 1) if node.attrs.get("transB", 0) else w * s.reshape(1, -1)
        if b is not None and beta != 1.0:
            b = b * beta
        if alpha != 1.0:  # fold alpha into B too, so the fused Gemm runs with alpha = beta = 1
            w = w * alpha
        if b is None:
            return w, shift - mean * s
        return w, (b - mean) * s + shift  # broadcasts C (scalar, (C,), (1, C) or (M, C)) against s
    if b is None:
        return w, shift - mean * s
    return w, (b - mean) * s + shift


def _tracked(ts: tuple[Any, ...]) -> bool:
    """On an autodiff backend the fold is recomputed each call: its graph must reach this call's params."""
    return any(isinstance(t, burn.Tensor) and t.backend.is_autodiff for t in ts)


def _folded(ctx: Any, node: Node, w: burn.Tensor, b: burn.Tensor | None, bn: tuple) -> tuple:
    """The folded weights, computed once per set of weight tensors (every call when they need grads)."""
    ins = (w, b, *bn)
    memo = ctx.runner.memo
    hit = memo.get(id(node))
    if hit is not None and all(map(operator.is_, hit[0], ins)):
        return hit[1]  # the memo only keeps untracked tensors, so these are untracked too
    if _tracked(ins):
        return _fold(node, w, b, bn)
    out = _fold(node, w, b, bn)
    memo[id(node)] = (ins, out)  # the very tensors the fold read (kept alive, so never mistaken)
    return out


def _activate(y: burn.Tensor, activation: str, clip: tuple[float, float] | None = None) -> burn.Tensor:
    """``activation`` ("" none, "Relu", "Clip" to the bounds ``clip``) on a node's fresh result."""
    if not activation:
        return y
    prim = y.primitive
    # numpy backend: rectify the fresh result in place (this runtime owns it), one pass and no allocation
    if (
        type(prim) is np.ndarray
        and prim.flags.writeable
        and prim.dtype.kind == "f"
        and not y.backend.is_autodiff
    ):
        if activation == "Clip":
            assert clip is not None
            np.clip(prim, clip[0], clip[1], out=prim)
        else:
            np.maximum(prim, 0, out=prim)
        return y
    if activation == "Clip":
        assert clip is not None
        lo, hi = (None if math.isinf(v) else v for v in clip)
        return y if lo is None and hi is None else y.clamp(lo, hi)  # the Clip converter's float form
    return _relu(y)


def fused_conv(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    w: burn.Tensor,
    b: burn.Tensor | None = None,
    *rest: burn.Tensor | None,
) -> burn.Tensor:
    bn, residual = rest[:4], (rest[4] if len(rest) > 4 else None)
    if bn and bn[0] is not None:
        w, b = _folded(ctx, node, w, b, tuple(bn))
    base = node.attrs["base"]
    if base == "Gemm":
        gemm = Node("Gemm", "", node.opset, node.name, [], [], {"transA": node.attrs.get("transA", 0)})
        gemm.attrs["transB"] = node.attrs.get("transB", 0)
        if not (bn and bn[0] is not None):
            gemm.attrs.update(alpha=node.attrs.get("alpha", 1.0), beta=node.attrs.get("beta", 1.0))
        y = _nn.gemm(ctx, gemm, x, w, b)
    elif base == "Conv":
        fast = _conv_fused(ctx, node, x, w, b, residual)
        if fast is not None:
            return fast
        y = _conv(ctx, node, x, w, b)
        if residual is not None:
            y = y + residual
    else:
        y = _BASES[base](ctx, node, x, w, b)
    y = _activate(y, node.attrs.get("activation", ""), node.attrs.get("clip"))
    pool = node.attrs.get("pool_node")
    return y if pool is None else _nn.max_pool(ctx, pool, y)


def _conv_fused(
    ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, b: burn.Tensor | None, residual: burn.Tensor | None
) -> burn.Tensor | None:
    """The whole node (conv, bias, residual, ReLU, pool) as one ``conv_fused`` call of the numpy backend,
    once the Conv converter resolved its arguments for these shapes (``_conv``); None where that does
    not apply. Checked on the primitives: this runs once per conv and forward."""
    memo = ctx.runner.memo
    fast = memo.get(("conv_fused", id(node)))
    prim, wp = x.primitive, w.primitive
    if type(prim) is not np.ndarray or type(wp) is not np.ndarray:
        return None  # not the numpy backend (an autodiff device's primitives are its own)
    bp = None if b is None else b.primitive
    backend = x.backend
    key = (prim.shape, prim.dtype, wp.shape, wp.dtype, None if bp is None else bp.shape, backend, w.backend)
    if fast is None or fast[0] != key:
        fast = None
        seen = memo.get(("conv", id(node)))
        fused = getattr(backend, "conv_fused", None)
        slow = (
            x.shape,
            x.dtype,
            w.shape,
            w.dtype,
            None if b is None else b.shape,
            id(backend),
            id(w.backend),
        )
        if (
            seen is not None
            and seen[1] is not None
            and seen[0] == slow
            and fused is not None
            and not backend.is_autodiff
            and prim.dtype.kind == "f"
        ):
            # the args the converter resolved, the conv's output shape, and the weights' cache
            fast = memo[("conv_fused", id(node))] = (key, fused, seen[1], seen[2], {})
        if fast is None:
            return None
    res = None
    if residual is not None:
        res = residual.primitive
        if type(res) is not np.ndarray or res.shape != fast[3] or res.dtype != prim.dtype:
            return None
    attrs = node.attrs
    out = fast[1](
        prim,
        wp,
        bp,
        *fast[2],
        residual=res,
        relu=attrs.get("activation") == "Relu",
        clip=attrs.get("clip") if attrs.get("activation") == "Clip" else None,
        pool=attrs.get("pool"),
        # the weights' re-laid-out copy, kept while they are the same arrays (as ``_folded`` keeps)
        weight_cache=fast[4],
    )
    return from_primitive(out, backend, x.dtype)


def _conv(ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, b: burn.Tensor | None) -> burn.Tensor:
    """The Conv converter on the first call with given shapes (its checks give the errors), then the
    backend's conv straight away with the arguments that call resolved."""
    key = (x.shape, x.dtype, w.shape, w.dtype, None if b is None else b.shape, id(x.backend), id(w.backend))
    memo = ctx.runner.memo
    slot = ("conv", id(node))
    seen = memo.get(slot)
    if seen is None or seen[0] != key:
        y = _nn.conv(ctx, node, x, w, b)
        nd = x.ndim - 2
        stride, dilation = _nn._spatial_attrs(node, nd)
        begin, end = _nn._window_pads(node, tuple(x.shape[2:]), tuple(w.shape[2:]), stride, dilation)
        args = (tuple(stride), tuple(begin), tuple(dilation), int(node.attrs.get("group", 1)))
        memo[slot] = (key, args if begin == end and x.backend is w.backend else None, tuple(y.shape))
        return y
    args = seen[1]
    if args is None:
        return _nn.conv(ctx, node, x, w, b)
    backend = x.backend
    prim = backend.conv(x.primitive, w.primitive, None if b is None else b.primitive, *args)
    return from_primitive(prim, backend, x.dtype)


def add_relu(ctx: Any, node: Node, a: burn.Tensor, b: burn.Tensor) -> burn.Tensor:
    slot = node.attrs.get("inplace", -1)
    if slot >= 0 and node.inputs[slot] not in ctx.runner.static:
        dst, other = (a, b) if slot == 0 else (b, a)
        p, q = dst.primitive, other.primitive
        # numpy: the sum goes into a dead fresh input (a fused conv's result only this node reads)
        if (
            type(p) is np.ndarray
            and type(q) is np.ndarray
            and p.flags.writeable
            and p.dtype == q.dtype
            and p.dtype.kind == "f"
            and burn.backend.broadcast_shape(p.shape, q.shape) == p.shape
            and not dst.backend.is_autodiff
            and not np.may_share_memory(p, q)
        ):
            np.add(p, q, out=p)
            np.maximum(p, 0, out=p)
            return dst
    return _activate(a + b, "Relu")


FUSED: dict[str, OpSpec] = {
    "FusedConv": OpSpec("FusedConv", fused_conv, "fused"),
    "FusedGemm": OpSpec("FusedGemm", fused_conv, "fused"),
    "AddRelu": OpSpec("AddRelu", add_relu, "fused"),
    "FusedChain": OpSpec("FusedChain", fused_chain, "fused"),
}
