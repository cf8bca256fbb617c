"""The backward pass: topological order from the output, one rule call per node, gradients accumulated
per node (``_accumulate``: summed back over broadcast dims; the windows of slices written at once), and
each node freed as soon as its rule has run.

Under balanced checkpointing, values a rule reads may be references to recomputable nodes; the
``Recomputer`` runs their forwards again from the nearest kept values, caching each result only until
the node itself has been processed (nothing after that can read it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from burn import BurnError

from ._accumulate import accumulate, resolve
from ._graph import FREED, Node
from ._rule import Ctx, Prim

if TYPE_CHECKING:
    from burn.backend import Backend


class GraphFreedError(BurnError, RuntimeError):
    """backward() reached a part of the graph that an earlier backward() already consumed."""


def topo_order(root: Node) -> list[Node]:
    """Every node reachable from ``root`` through tracked parents, parents before children."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node.id in seen:
            continue
        seen.add(node.id)
        stack.append((node, True))
        for p in node.parents:
            if p is not None and p.id not in seen:
                stack.append((p, False))
    return order


class Recomputer:
    """Resolves saved entries: plain values pass through, ``Node`` references are recomputed."""

    __slots__ = ("B", "cache")

    def __init__(self, B: Backend) -> None:
        self.B = B
        self.cache: dict[int, Prim] = {}

    def __call__(self, entry: Any) -> Any:
        if type(entry) is not Node:
            return entry
        hit = self.cache.get(entry.id)
        return hit if hit is not None else self._recompute(entry)

    def _recompute(self, target: Node) -> Prim:
        # iterative, so long chains of element-wise ops cannot hit the recursion limit
        stack = [target]
        cache = self.cache
        while stack:
            node = stack[-1]
            if node.id in cache:
                stack.pop()
                continue
            rule = node.rule
            if node.retro_in is None or rule is None:
                raise GraphFreedError(f"backward: cannot recompute {node!r}; its graph was freed")
            missing = [e for e in node.retro_in if type(e) is Node and e.id not in cache]
            if missing:
                stack.extend(missing)
                continue
            args = [cache[e.id] if type(e) is Node else e for e in node.retro_in]
            out = rule.forward(self.B, node.meta, *args)
            cache[node.id] = out[0] if rule.multi else out
            stack.pop()
        return cache[target.id]

    def forget(self, node: Node) -> None:
        self.cache.pop(node.id, None)


_hooks = threading.local()


@contextmanager
def leaf_gradients(fn: Callable[[int, Prim], None]) -> Iterator[None]:
    """While the block runs, every ``backward()`` in this thread calls ``fn(leaf_id, grad)`` for each
    leaf the moment its gradient is final (its last consumer processed), before the backward ends:
    data-parallel training starts reducing a bucket of gradients while the rest are still computed.
    ``leaf_id`` is the leaf's node id (``Autodiff.node_id`` of the param), ``grad`` the inner
    backend's primitive (the one ``Gradients`` holds afterwards).

    >>> from burn_autodiff import leaf_gradients
    >>> dev = burn.device("cpu", autodiff=True)
    >>> w = burn.tensor([1.0, 2.0], device=dev).require_grad()
    >>> seen = []
    >>> with leaf_gradients(lambda leaf, grad: seen.append(leaf)):
    ...     grads = (w * 3.0).sum().backward()
    >>> seen == [w._b.node_id(w._p)]
    True
    """
    previous = getattr(_hooks, "fn", None)
    _hooks.fn = fn
    try:
        yield
    finally:
        _hooks.fn = previous


def run_backward(B: Backend, root: Node, seed: Prim) -> dict[int, Prim]:
    """Gradients of every leaf reachable from ``root`` (keyed by leaf node id) for output grad ``seed``.

    ``B`` is the inner backend; gradients are its primitives. The graph is freed on success.
    """
    order = topo_order(root)
    for node in order:
        if node.rule is FREED:
            raise GraphFreedError(
                "backward: this graph was already consumed by an earlier backward() (graphs are freed "
                "after backward); run the forward pass again"
            )
    grads: dict[int, Prim] = {root.id: seed}
    leaves: dict[int, Prim] = {}
    recompute = Recomputer(B)
    hook = getattr(_hooks, "fn", None)
    for node in reversed(order):
        acc = grads.pop(node.id, None)
        g = None if acc is None else resolve(B, acc, node.shape)
        del acc
        if node.rule is None:
            if g is not None:
                leaves[node.id] = g
                if hook is not None:  # reverse topological order: nothing adds to it any more
                    hook(node.id, g)
            continue
        if g is not None:
            in_grads = node.rule.backward(B, g, Ctx(node, recompute))
            for parent, pg in zip(node.parents, in_grads):
                if parent is not None and pg is not None:
                    grads[parent.id] = accumulate(B, grads.get(parent.id), pg, parent.shape)
            del g, in_grads
        recompute.forget(node)
        # nothing reads this node's saved values any more (only its descendants, all processed, refer
        # to it): release them now rather than at the end, so the peak does not hold every activation
        node.free()
    return leaves


def retained_bytes(B: Backend, root: Node) -> int:
    """Bytes of the distinct primitives the graph behind ``root`` keeps alive for its backward.

    Counts saved inputs/outputs, recompute inputs and extras (indices) once by identity. The values of
    leaves (parameters) are left out: their tensors own them whether or not a graph exists. Views
    sharing memory are counted separately, so this is an upper bound.
    """
    seen: set[int] = set()
    total = 0

    def count(v: Any) -> None:
        nonlocal total
        if v is None or type(v) is Node or not hasattr(v, "shape") or id(v) in seen:
            return
        seen.add(id(v))
        n = 1
        for s in B.shape_of(v):
            n *= s
        total += n * B.dtype_of(v).itemsize

    for node in topo_order(root):
        for entries in (node.saved_in, node.retro_in):
            for parent, v in zip(node.parents, entries or ()):
                if parent is None or parent.rule is not None:  # skip leaf values
                    count(v)
        count(node.saved_out)
        for v in node.extras:
            count(v)
    return total
