"""Inference graph passes run by ``burn_onnx.load(..., optimize=True)``: the rewritten graph computes the
same function from the same parameters, in fewer and cheaper nodes.

- Identity, and Dropout in inference form, are dropped: their readers read the input instead.
- Conv / ConvTranspose / Gemm followed by a BatchNormalization whose inputs are all initializers (and
  whose weights are initializers too) become one ``FusedConv`` / ``FusedGemm`` node. The node keeps
  every original input (weights, bias, BN scale, shift, mean, variance) and folds the BN into the
  weights when it runs (``_fused``): the model's params stay the ONNX initializers, so fine-tuning,
  records and ``load_record`` see the graph's own names, and gradients reach the BN scale and shift
  through the fold. Off autodiff the folded weights are computed once and reused while the params
  are the same tensors.
- A Relu that is the only reader of a Conv (fused or not) or of an Add becomes part of that node
  (``FusedConv`` with ``activation="Relu"``, ``AddRelu``), so the numpy backend rectifies the fresh
  result in place instead of allocating another tensor.
- Then what reads a 2-d conv's result alone goes into the conv's node (``fuse_epilogues``): an
  ``AddRelu`` (a residual add) and a MaxPool whose windows tile its input, so the numpy backend's
  ``conv_fused`` runs bias, residual, ReLU and pool on the GEMM's result while it is in cache.
- Every Conv left becomes a ``FusedConv`` with nothing folded (its converter's fast path).
- After constant folding (the bounds must be known), a Clip with constant bounds that is the only
  reader of a Conv's result (MobileNet's ReLU6) becomes the conv's activation (``fuse_clips``:
  ``FusedConv`` with ``activation="Clip"`` and ``clip=(lo, hi)``): clipped in place, or inside the
  compiled depthwise kernel.

Constant subgraphs are folded by the runner (``Runner.fold_constants``), which owns the converters.
Fused nodes are internal: they are never written to files and ``supported_ops`` does not list them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._graph import Graph, Node

if TYPE_CHECKING:
    import burn

FUSED_DOMAIN = "burn_onnx.fused"
_FOLDABLE = ("Conv", "ConvTranspose", "Gemm")


def _readers(graph: Graph) -> dict[str, list[Node]]:
    """Value name -> the nodes of ``graph`` (not its subgraphs) that read it, once per reading slot."""
    found: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for name in node.inputs:
            if name:
                found.setdefault(name, []).append(node)
    return found


def _pinned(graph: Graph) -> set[str]:
    """Names that must keep their producer: graph outputs and values read inside subgraphs."""
    names = {o.name for o in graph.outputs}
    for sub in graph.subgraphs():
        for node in sub.nodes:
            names.update(i for i in node.inputs if i)
        names.update(o.name for o in sub.outputs)
    return names


def _scalar(name: str, constants: dict[str, burn.Tensor]) -> tuple[float, tuple[int, ...]] | None:
    """A one-element float or integer constant as (value, shape), else None."""
    t = constants.get(name)
    if t is None or t.numel() != 1 or not (t.dtype.is_float or t.dtype.is_int):
        return None
    return float(t.numpy().reshape(-1)[0]), tuple(t.shape)


def _clip_bounds(node: Node, constants: dict[str, burn.Tensor]) -> tuple[float, float] | None:
    if node.opset < 11:
        lo, hi = node.attrs.get("min"), node.attrs.get("max")
    else:
        bounds: list[float | None] = []
        for name in (node.input(1), node.input(2)):
            if not name:
                bounds.append(None)
                continue
            found = _scalar(name, constants)
            if found is None:
                return None  # a bound computed at run time: the node stays
            bounds.append(found[0])
        lo, hi = bounds
    low = -math.inf if lo is None else float(lo)
    high = math.inf if hi is None else float(hi)
    return None if low > high else (low, high)


def _only_reader(name: str, readers: dict[str, list[Node]], pinned: set[str]) -> Node | None:
    users = readers.get(name, [])
    if len(users) != 1 or name in pinned:
        return None
    return users[0]


def _is_passthrough(node: Node, constant_false: set[str]) -> bool:
    if node.domain or not node.inputs or not node.inputs[0]:
        return False
    if node.op_type == "Identity":
        return True
    if node.op_type != "Dropout" or any(node.outputs[1:]):
        return False  # a mask output is read: keep the node
    if node.opset < 7 and not node.attrs.get("is_test", 0):
        return False  # old training-mode Dropout scales its output
    training = node.input(2)
    return not training or training in constant_false


def drop_passthrough(graph: Graph, constant_false: Iterable[str] = ()) -> int:
    """Remove Identity and inference Dropout nodes from ``graph``; returns how many were removed."""
    pinned = _pinned(graph)
    false = set(constant_false)
    rename: dict[str, str] = {}
    kept: list[Node] = []
    for node in graph.nodes:
        if rename:
            node.inputs = [rename.get(i, i) for i in node.inputs]
        if _is_passthrough(node, false) and node.outputs[0] not in pinned:
            rename[node.outputs[0]] = node.inputs[0]
            continue
        kept.append(node)
    graph.nodes = kept
    return len(rename)


def _bn_foldable(bn: Node, initializers: set[str]) -> bool:
    if bn.op_type != "BatchNormalization" or bn.domain or any(bn.outputs[1:]):
        return False
    if bn.attrs.get("training_mode", 0) or (bn.opset < 9 and bn.attrs.get("spatial", 1) == 0):
        return False
    return len(bn.inputs) == 5 and all(i in initializers for i in bn.inputs[1:])


def _producer_foldable(node: Node, initializers: set[str]) -> bool:
    if node.op_type not in _FOLDABLE or node.domain:
        return False
    weights = [i for i in node.inputs[1:] if i]
    return bool(weights) and all(i in initializers for i in weights)


def _dead_fresh_input(
    node: Node, before: list[Node], readers: dict[str, list[Node]], pinned: set[str]
) -> int:
    """The input slot of ``node`` whose value is a conv's (or fused node's) fresh result that nothing
    else reads, so the add may write into it; -1 when there is none."""
    fresh = {
        o
        for n in before
        if n.domain == FUSED_DOMAIN or (n.op_type, n.domain) == ("Conv", "")
        for o in n.outputs
    }
    for slot, name in enumerate(node.inputs[:2]):
        if name in fresh and _only_reader(name, readers, pinned) is not None and node.inputs.count(name) == 1:
            return slot
    return -1


def fuse(graph: Graph, initializers: set[str]) -> dict[str, int]:
    """Fuse Conv/ConvTranspose/Gemm + BatchNormalization, then Conv + Relu and Add + Relu, in place.

    Returns the count of each rewrite (for tests and ``burn onnx check``-style reports)."""
    counts = {"batch_norm": 0, "relu": 0}
    pinned = _pinned(graph)
    readers = _readers(graph)
    removed: set[int] = set()
    replaced: dict[int, Node] = {}
    for node in graph.nodes:
        if not _producer_foldable(node, initializers):
            continue
        bn = _only_reader(node.outputs[0], readers, pinned)
        if bn is None or not _bn_foldable(bn, initializers) or bn.inputs[0] != node.outputs[0]:
            continue
        base = node.op_type
        ins = list(node.inputs) + [""] * (3 - len(node.inputs))
        attrs = dict(node.attrs)
        attrs.update(base=base, epsilon=float(bn.attrs.get("epsilon", 1e-5)), activation="")
        fused = Node(
            "FusedGemm" if base == "Gemm" else "FusedConv",
            FUSED_DOMAIN,
            node.opset,
            node.name or bn.name,
            ins + list(bn.inputs[1:]),
            [bn.outputs[0]],
            attrs,
        )
        replaced[id(node)] = fused
        removed.add(id(bn))
        counts["batch_norm"] += 1
    nodes = [replaced.get(id(n), n) for n in graph.nodes if id(n) not in removed]
    graph.nodes = nodes
    readers = _readers(graph)
    removed = set()
    for i, node in enumerate(nodes):
        conv = node.op_type == "Conv" and not node.domain
        fused_conv = node.op_type == "FusedConv" and node.attrs.get("base") == "Conv"
        add = node.op_type == "Add" and not node.domain and node.opset >= 7  # numpy broadcasting
        if not (conv or fused_conv or add):
            continue
        relu = _only_reader(node.outputs[0], readers, pinned)
        if relu is None or relu.op_type != "Relu" or relu.domain:
            continue
        if conv:
            ins = list(node.inputs) + [""] * (3 - len(node.inputs))
            attrs = dict(node.attrs, base="Conv", epsilon=0.0)
            node = Node("FusedConv", FUSED_DOMAIN, node.opset, node.name, ins, node.outputs, attrs)
        elif add:
            node = Node("AddRelu", FUSED_DOMAIN, node.opset, node.name, list(node.inputs), node.outputs, {})
            node.attrs["inplace"] = _dead_fresh_input(node, nodes[:i], readers, pinned)
        node = dataclasses.replace(node, outputs=list(relu.outputs))
        node.attrs = dict(node.attrs, activation="Relu")
        nodes[i] = node
        removed.add(id(relu))
        counts["relu"] += 1
    graph.nodes = [n for n in nodes if id(n) not in removed]
    counts.update(fuse_epilogues(graph))
    # the Convs left become FusedConv nodes too (nothing folded): their converter resolves a conv's
    # arguments once per signature and then calls the backend straight away (60 us a call less than
    # the Conv converter's checks, at batch 1 a MobileNet's 17 projection convs)
    graph.nodes = [_as_fused_conv(n) or n if n.op_type == "Conv" and not n.domain else n for n in graph.nodes]
    return counts


def _as_fused_conv(node: Node) -> Node | None:
    """``node`` as a ``FusedConv`` of base Conv with all seven inputs (x, w, b, BN x4; '' where absent)
    when it is a Conv or such a FusedConv with nothing fused after the conv yet; else None."""
    if node.op_type == "Conv" and not node.domain:
        attrs = dict(node.attrs, base="Conv", epsilon=0.0, activation="")
    elif node.op_type == "FusedConv" and node.attrs.get("base") == "Conv":
        if node.attrs.get("residual") or node.attrs.get("pool"):
            return None
        attrs = dict(node.attrs)
    else:
        return None
    ins = list(node.inputs) + [""] * (7 - len(node.inputs))
    return Node("FusedConv", FUSED_DOMAIN, node.opset, node.name, ins, list(node.outputs), attrs)


def _poolable(pool: Node) -> bool:
    """A 2-d MaxPool whose windows tile its input: kernel = stride, no padding or dilation, floor mode,
    values only."""
    a = pool.attrs
    kernel = list(a.get("kernel_shape", []))
    return (
        pool.op_type == "MaxPool"
        and not pool.domain
        and len(kernel) == 2
        and not any(pool.outputs[1:])
        and list(a.get("strides", [1, 1])) == kernel
        and not any(a.get("pads", []))
        and all(d == 1 for d in a.get("dilations", []))
        and not a.get("ceil_mode", 0)
        and a.get("auto_pad", "NOTSET") in ("NOTSET", "VALID")
    )


def fuse_epilogues(graph: Graph) -> dict[str, int]:
    """Fold what follows a conv into its node, in place, where the conv's result has no other reader:
    ``AddRelu`` of that result and another value (``FusedConv`` with ``residual``: the other value is
    input 7, the node moves to the add's place) and a tiling 2-d ``MaxPool`` (``pool``: the kernel;
    ``pool_node`` keeps the MaxPool for backends without the fused kernel). The numpy backend then
    runs bias, residual, ReLU and pool on the GEMM's result in one pass (``NdArrayModuleOps.conv_fused``).
    """
    counts = {"residual": 0, "pool": 0}
    pinned = _pinned(graph)
    readers = _readers(graph)
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    nodes = list(graph.nodes)
    moved: dict[int, Node] = {}  # the node at a reader's place <- its conv, now merged
    removed: set[int] = set()
    for node in nodes:
        if node.op_type == "AddRelu" and node.attrs.get("inplace", -1) >= 0 and len(node.inputs) == 2:
            slot = node.attrs["inplace"]
            kind, other = "residual", node.inputs[1 - slot]
        elif _poolable(node):
            slot, kind, other = 0, "pool", ""
        else:
            continue
        src = producer.get(node.inputs[slot])
        if src is None or id(src) in removed or _only_reader(node.inputs[slot], readers, pinned) is not node:
            continue
        conv = _as_fused_conv(src)
        if conv is None or (kind == "pool" and conv.attrs.get("activation") not in ("", "Relu")):
            continue
        if kind == "residual":
            if conv.attrs.get("activation"):
                continue
            conv.inputs.append(other)
            conv.attrs.update(activation="Relu", residual=True)
        else:
            conv.attrs.update(pool=tuple(node.attrs["kernel_shape"]), pool_node=node)
        conv.outputs = list(node.outputs[:1])
        moved[id(node)] = conv
        removed.add(id(src))
        counts[kind] += 1
    graph.nodes = [moved.get(id(n), n) for n in nodes if id(n) not in removed]
    return counts


def fuse_clips(graph: Graph, constants: dict[str, burn.Tensor]) -> int:
    """Fold each Clip with constant bounds that alone reads a 2-d Conv's result (a plain Conv, or a
    ``FusedConv`` of base Conv with no activation, residual or pool) into that conv's node, in place;
    returns how many were folded. Runs after constant folding: ``constants`` holds the bounds."""
    pinned = _pinned(graph)
    readers = _readers(graph)
    removed: set[int] = set()
    nodes = list(graph.nodes)
    for i, node in enumerate(nodes):
        conv = _as_fused_conv(node)
        if conv is None or conv.attrs.get("activation") or len(conv.outputs) != 1:
            continue
        clip = _only_reader(node.outputs[0], readers, pinned)
        if clip is None or clip.op_type != "Clip" or clip.domain or clip.inputs[0] != node.outputs[0]:
            continue
        if len(clip.outputs) != 1 or not clip.outputs[0]:
            continue
        bounds = _clip_bounds(clip, constants)
        if bounds is None or math.isnan(bounds[0]) or math.isnan(bounds[1]):
            continue
        while conv.inputs and not conv.inputs[-1] and len(conv.inputs) > 3:
            conv.inputs.pop()  # no BN: the node reads (x, w, b) as a Conv turned FusedConv does
        conv.attrs.update(activation="Clip", clip=bounds)
        conv.outputs = list(clip.outputs)
        nodes[i] = conv
        removed.add(id(clip))
    graph.nodes = [n for n in nodes if id(n) not in removed]
    return len(removed)
