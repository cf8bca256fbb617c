"""``Autodiff(inner)``: a backend whose primitives carry graph nodes (Burn's Autodiff decorator).

Every op runs on the inner backend; when an input is tracked, a node recording the op's rule is
attached to the output. Ops whose inputs are all untracked build no graph. Non-differentiable ops
(comparisons, arg reductions, sort indices, int casts, random, creation) pass through untracked.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from burn.backend import ACTIVATION_OPS, Backend, DType, MemoryStats, Slices
from burn.fusion import backward_begins

from ._engine import retained_bytes, run_backward
from ._graph import ADPrim, Node, leaf
from ._module import AutodiffModuleOps
from ._rule import OUT, SELF, Prim, Rule
from ._rules import BINARY_RULES, REDUCE_RULES, RULES, UNARY_RULES
from ._rules_attention import AutodiffAttentionOps
from ._rules_custom import AutodiffCustomOps
from ._rules_vision import AutodiffVisionOps

if TYPE_CHECKING:
    from burn import Device
    from burn.backend import Gradients

CHECKPOINTING = ("none", "balanced")


def _in(v: ADPrim | Prim) -> Prim:
    return v.inner if type(v) is ADPrim else v


class Autodiff(AutodiffModuleOps, AutodiffVisionOps, AutodiffAttentionOps, AutodiffCustomOps, Backend):
    """The Autodiff decorator over ``inner``; ``burn.device(name, autodiff=True)`` builds one.

    ``checkpointing``: "none" keeps every value the backward reads; "balanced" (Burn's
    BalancedCheckpointing) keeps only the outputs of compute-bound ops (matmul, conv, sort, max pools)
    and recomputes memory-bound ones (element-wise, reshape-like) during backward.

    >>> dev = burn.device("cpu", autodiff=True, checkpointing="balanced")
    """

    is_autodiff = True
    native_activations = ACTIVATION_OPS  # recorded as one op each; the inner backend runs them its way

    def __init__(self, inner: Backend, device: Device | None = None, checkpointing: str = "none") -> None:
        if getattr(inner, "is_autodiff", False):
            raise TypeError(f"Autodiff: the inner backend {inner!r} is already an autodiff backend")
        if checkpointing not in CHECKPOINTING:
            raise ValueError(f"Autodiff: checkpointing must be one of {CHECKPOINTING}, got {checkpointing!r}")
        self.inner = inner
        if device is not None:  # else Backend's default: attached later by burn.device()
            self.device = device
        self.name = f"autodiff<{inner.name}>"
        self.dtypes = inner.dtypes
        self.default_float = inner.default_float
        self.default_int = inner.default_int
        self.checkpointing = checkpointing
        self._balanced = checkpointing == "balanced"

    def __repr__(self) -> str:
        return f"<Autodiff({type(self.inner).__name__}) {self.device} checkpointing={self.checkpointing}>"

    # ---------------------------------------------------------------- the autodiff surface
    def from_inner(self, p: Prim) -> ADPrim:
        """Wrap an inner primitive without graph."""
        return ADPrim(p)

    def inner_prim(self, p: ADPrim) -> Prim:
        return p.inner

    def require_grad(self, p: ADPrim) -> ADPrim:
        """A leaf tracked for gradients with p's values (p itself if it is already such a leaf)."""
        if p.node is not None and p.node.rule is None:
            return p
        return ADPrim(p.inner, leaf(tuple(self.inner.shape_of(p.inner))))

    def is_require_grad(self, p: ADPrim) -> bool:
        """True for leaves that require grad and for results computed from them."""
        return p.node is not None

    def is_leaf(self, p: ADPrim) -> bool:
        return p.node is not None and p.node.rule is None

    def detach(self, p: ADPrim) -> ADPrim:
        return p if p.node is None else ADPrim(p.inner)

    def node_id(self, p: ADPrim) -> int | None:
        return None if p.node is None else p.node.id

    def grad(self, p: ADPrim, grads: Gradients) -> Prim | None:
        return None if p.node is None else grads.get_prim(p.node.id)

    def backward(self, p: ADPrim, seed: Prim | None = None) -> Gradients:
        """``burn.Gradients`` of every leaf behind p for the output gradient ``seed`` (ones when None).

        The graph behind p is freed afterwards; an untracked p gives empty gradients (as Burn)."""
        from burn.backend import Gradients

        if p.node is None:
            return Gradients(self.inner, {})
        B = self.inner
        backward_begins(B)  # a loop that marks no steps gets its step boundary here (fusion)
        dtype = B.dtype_of(p.inner)
        if seed is None:
            seed = B.full(tuple(B.shape_of(p.inner)), 1.0, dtype)
        elif B.dtype_of(seed) is not dtype:
            seed = B.cast(seed, dtype)
        return Gradients(B, run_backward(B, p.node, seed))

    def fusion_runtime(self) -> None:
        """None: fusion wraps the backend under autodiff, never autodiff itself."""
        return None

    def graph_bytes(self, p: ADPrim) -> int:
        """Bytes of primitives the graph behind p keeps for its backward (the checkpointing measure)."""
        return 0 if p.node is None else retained_bytes(self.inner, p.node)

    # ---------------------------------------------------------------- recording
    def _op(self, rule: Rule, inputs: Sequence[Any], meta: Any) -> Any:
        """Run ``rule.forward`` on the inner values; record a node when an input is tracked."""
        B = self.inner
        vals = tuple(x.inner if type(x) is ADPrim else x for x in inputs)
        out = rule.forward(B, meta, *vals)
        extras: Sequence[Any] = ()
        if rule.multi:
            out, *extras = out
        node = None
        for x in inputs:
            if type(x) is ADPrim and x.node is not None:
                node = self._record(rule, inputs, vals, out, meta, extras)
                break
        res = ADPrim(out, node)
        if rule.multi:
            return (res, *(ADPrim(e) for e in extras))
        return res

    def _record(
        self,
        rule: Rule,
        inputs: Sequence[Any],
        vals: tuple[Any, ...],
        out: Prim,
        meta: Any,
        extras: Sequence[Prim],
    ) -> Node:
        B = self.inner
        parents = tuple(x.node if type(x) is ADPrim else None for x in inputs)
        in_shapes = tuple(tuple(B.shape_of(v)) if type(x) is ADPrim else None for x, v in zip(inputs, vals))
        node = Node(rule, parents, tuple(B.shape_of(out)), in_shapes, meta)
        if self._balanced:
            # refer to recomputable parents instead of holding their values
            refs = tuple(p if p is not None and p.retro_in is not None else v for p, v in zip(parents, vals))
            if rule.memory_bound:
                node.retro_in = refs
            saved_out = SELF if rule.memory_bound else out
        else:
            refs, saved_out = vals, out
        save, keep_out = rule.save_in, rule.save_out
        if rule.save_for is not None:  # only what the gradients of tracked inputs read
            reads = {j for i, p in enumerate(parents) if p is not None for j in rule.save_for[i]}
            save, keep_out = tuple(j for j in reads if j != OUT), OUT in reads
        if save:
            node.saved_in = (
                refs if save == "all" else tuple(r if i in save else None for i, r in enumerate(refs))
            )
        if keep_out:
            node.saved_out = saved_out
        if rule.multi:
            node.extras = tuple(extras)
        return node

    # ---------------------------------------------------------------- creation and data (untracked)
    def from_numpy(self, array: Any, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.from_numpy(array, dtype))

    def to_numpy(self, x: ADPrim) -> Any:
        return self.inner.to_numpy(_in(x))

    def read_many(self, xs: Sequence[ADPrim]) -> list[Any]:
        return self.inner.read_many([_in(x) for x in xs])

    def shape_of(self, x: ADPrim) -> tuple[int, ...]:
        return self.inner.shape_of(x.inner)

    def dtype_of(self, x: ADPrim) -> DType:
        return self.inner.dtype_of(x.inner)

    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.full(shape, value, dtype))

    def arange(self, start: int | float, stop: int | float, step: int | float, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.arange(start, stop, step, dtype))

    def call_state(self) -> Any:
        return self.inner.call_state()

    def call_state_scope(self, state: Any) -> AbstractContextManager[Any]:
        return self.inner.call_state_scope(state)

    def sync(self) -> None:
        self.inner.sync()

    def memory_stats(self) -> MemoryStats | None:
        return self.inner.memory_stats()

    def reset_peak_memory(self) -> None:
        self.inner.reset_peak_memory()

    def empty_cache(self) -> None:
        self.inner.empty_cache()

    def cast(self, x: ADPrim, dtype: DType) -> ADPrim:
        if x.node is not None and dtype.is_float:
            src = self.inner.dtype_of(x.inner)
            if src.is_float and src is not dtype:
                return self._op(RULES["cast"], (x,), (dtype, src))
        return ADPrim(self.inner.cast(x.inner, dtype))

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.random_uniform(shape, low, high, dtype))

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.random_normal(shape, mean, std, dtype))

    def random_int(self, shape: tuple[int, ...], low: int, high: int, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.random_int(shape, low, high, dtype))

    def random_bernoulli(self, shape: tuple[int, ...], p: float, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.random_bernoulli(shape, p, dtype))

    # ---------------------------------------------------------------- element-wise
    # unary and binary are the hottest ops: untracked operands take the shortest path
    def unary(self, op: str, x: ADPrim) -> ADPrim:
        rule = UNARY_RULES.get(op) if x.node is not None else None
        if rule is None:
            inner = self.inner
            return ADPrim(inner.activation(op, x.inner) if op in ACTIVATION_OPS else inner.unary(op, x.inner))
        return self._op(rule, (x,), op)

    def activation(self, op: str, x: ADPrim) -> ADPrim:
        return self.unary(op, x)  # one recorded op; its forward asks the inner backend's activation

    def binary(self, op: str, a: ADPrim | float | int | bool, b: ADPrim | float | int | bool) -> ADPrim:
        if (type(a) is ADPrim and a.node is not None) or (type(b) is ADPrim and b.node is not None):
            rule = BINARY_RULES.get(op)
            if rule is not None:
                return self._op(rule, (a, b), op)
        return ADPrim(
            self.inner.binary(op, a.inner if type(a) is ADPrim else a, b.inner if type(b) is ADPrim else b)
        )

    def where(self, cond: ADPrim, a: ADPrim | float | int | bool, b: ADPrim | float | int | bool) -> ADPrim:
        return self._op(RULES["where"], (cond, a, b), None)

    def clamp(self, x: ADPrim, lo: float | int | None, hi: float | int | None) -> ADPrim:
        return self._op(RULES["clamp"], (x,), (lo, hi))

    def leaky_relu(self, x: ADPrim, slope: float) -> ADPrim:
        return self._op(RULES["leaky_relu"], (x,), slope)

    def mask_fill(self, x: ADPrim, mask: ADPrim, value: float | int | bool) -> ADPrim:
        return self._op(RULES["mask_fill"], (x, mask), value)

    def softmax(self, x: ADPrim, dim: int) -> ADPrim:
        return self._op(RULES["softmax"], (x,), dim)

    def log_softmax(self, x: ADPrim, dim: int) -> ADPrim:
        return self._op(RULES["log_softmax"], (x,), dim)

    # ---------------------------------------------------------------- reductions, scans, matmul
    def reduce(self, op: str, x: ADPrim, dims: tuple[int, ...], keepdim: bool) -> ADPrim:
        rule = REDUCE_RULES.get(op)
        if rule is None or x.node is None:
            return ADPrim(self.inner.reduce(op, x.inner, dims, keepdim))
        return self._op(rule, (x,), (dims, keepdim))

    def arg_reduce(self, op: str, x: ADPrim, dim: int, keepdim: bool) -> ADPrim:
        return ADPrim(self.inner.arg_reduce(op, x.inner, dim, keepdim))

    def var(self, x: ADPrim, dims: tuple[int, ...], correction: int, keepdim: bool) -> ADPrim:
        return self._op(RULES["var"], (x,), (dims, correction, keepdim))

    def cumsum(self, x: ADPrim, dim: int) -> ADPrim:
        return self._op(RULES["cumsum"], (x,), dim)

    def cumprod(self, x: ADPrim, dim: int) -> ADPrim:
        return self._op(RULES["cumprod"], (x,), dim)

    def matmul(self, a: ADPrim, b: ADPrim) -> ADPrim:
        return self._op(RULES["matmul"], (a, b), None)

    # ---------------------------------------------------------------- shape ops
    def reshape(self, x: ADPrim, shape: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["reshape"], (x,), tuple(shape))

    def permute(self, x: ADPrim, dims: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["permute"], (x,), tuple(dims))

    def expand(self, x: ADPrim, shape: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["expand"], (x,), tuple(shape))

    def slice(self, x: ADPrim, index: Slices) -> ADPrim:
        return self._op(RULES["slice"], (x,), tuple(index))

    def slice_assign(self, x: ADPrim, index: Slices, value: ADPrim) -> ADPrim:
        return self._op(RULES["slice_assign"], (x, value), tuple(index))

    def cat(self, xs: Sequence[ADPrim], dim: int) -> ADPrim:
        return self._op(RULES["cat"], tuple(xs), dim)

    def stack(self, xs: Sequence[ADPrim], dim: int) -> ADPrim:
        return self._op(RULES["stack"], tuple(xs), dim)

    def flip(self, x: ADPrim, dims: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["flip"], (x,), tuple(dims))

    def repeat(self, x: ADPrim, reps: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["repeat"], (x,), tuple(reps))

    def pad(self, x: ADPrim, pads: tuple[tuple[int, int], ...], mode: str, value: float) -> ADPrim:
        return self._op(RULES["pad"], (x,), (tuple(pads), mode, value))

    def tril(self, x: ADPrim, k: int) -> ADPrim:
        return self._op(RULES["tril"], (x,), k)

    def triu(self, x: ADPrim, k: int) -> ADPrim:
        return self._op(RULES["triu"], (x,), k)

    # ---------------------------------------------------------------- indexing ops
    def counters(self) -> dict[str, int]:
        return self.inner.counters()

    def check_index(self, index: ADPrim, size: int, negative: bool, message: str) -> ADPrim:
        return ADPrim(self.inner.check_index(_in(index), size, negative, message))

    def gather(self, x: ADPrim, dim: int, index: ADPrim) -> ADPrim:
        return self._op(RULES["gather"], (x, index), dim)

    def scatter_add(self, x: ADPrim, dim: int, index: ADPrim, src: ADPrim) -> ADPrim:
        return self._op(RULES["scatter_add"], (x, index, src), dim)

    def select(self, x: ADPrim, dim: int, indices: ADPrim) -> ADPrim:
        return self._op(RULES["select"], (x, indices), dim)

    def select_add(self, x: ADPrim, dim: int, indices: ADPrim, values: ADPrim) -> ADPrim:
        return self._op(RULES["select_add"], (x, indices, values), dim)

    def one_hot(self, x: ADPrim, num_classes: int, dtype: DType) -> ADPrim:
        return ADPrim(self.inner.one_hot(x.inner, num_classes, dtype))

    def sort(self, x: ADPrim, dim: int, descending: bool) -> tuple[ADPrim, ADPrim]:
        return self._op(RULES["sort"], (x,), (descending, dim))

    def argsort(self, x: ADPrim, dim: int, descending: bool) -> ADPrim:
        return ADPrim(self.inner.argsort(x.inner, dim, descending))

    def topk(self, x: ADPrim, k: int, dim: int) -> tuple[ADPrim, ADPrim]:
        return self._op(RULES["topk"], (x,), (k, dim))
