"""Random op graphs for property tests of the paths that run a graph other than op by op (fusion's plans
and replays, device graphs, ``burn.ir`` replay, a web export's schedule), each checked against burn's
numpy backend unfused.

A graph is a list of ``Step``s over one or two inputs: element-wise functions, broadcasting binaries
against constants of partly-1 shapes and against the second input, scalar ops, comparisons through
``where``, clamps, reductions (sum/mean/max/min/var over an axis, keepdim or not), linear layers,
batched matmuls (self-attention), softmax and log-softmax, layer norm, transposes, reshapes, narrows,
concatenations, broadcasts (``expand``), filled constants, values saved for later residual adds, reads in
the middle of the stream, and blocks (an MLP block, a pre-norm transformer block) applied two or three
times with shared or separate weights (the repeated layers of issue 32). Intermediates no step saves
are dropped as soon as the next step has read them, as in a real forward, so fused programs may free
them or write into them.

``RandomGraph`` is a plain function of burn tensors that makes its constants on its input's device, so
the same graph runs on every path. Its scalars move with ``shift`` (a replayed program takes scalars as
arguments, not as part of its signature), and ``inputs(k)`` gives the k-th set of input values of the
same shapes, so a path called again must recompute, not hand back a cached result.

``graphs()`` is the hypothesis strategy (hypothesis is a test dependency: import this module from tests
only). Tolerances are in ``assert_close``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import burn
from burn.nn import functional as F

UNARY = ("tanh", "sigmoid", "relu", "neg", "abs", "sin", "exp_tanh", "square", "gelu", "silu", "log1p_abs")
BINARY = ("add", "sub", "mul", "maximum", "minimum", "div_pos")
REDUCE = ("sum", "mean", "max", "min", "var")
MAX_RANK = 4
MAX_SIZE = 6000  # elements; steps that would grow a value past this are skipped
# Outputs are compared with the graph computed in float64 on the numpy backend. A float32 path differs from
# it by rounding: float32 kernels sum in other orders than numpy (tree reductions, tiled matmuls) and fuse
# a*b+c. For a well-conditioned graph of a dozen steps that stays within a few hundred float32 ulps
# (6e-8 each) of the largest value the chain carries: RTOL 1e-4 of each value plus ATOL 2e-5 times the
# output's largest magnitude (values much smaller than the largest carry the others' rounding). Some
# graphs amplify rounding (a layer norm of nearly equal values, a softmax of large logits): there the
# float32 numpy run of the same graph is itself off by more, and a path may be off by SLACK times that
# (another summation order lands elsewhere in the same error ball).
RTOL = {"float32": 1e-4}
ATOL = {"float32": 2e-5}
SLACK = 8.0


@dataclass(frozen=True)
class Step:
    kind: str
    args: tuple[Any, ...] = ()


@dataclass
class RandomGraph:
    """``steps`` over inputs of ``shapes`` (one or two); constants and input values come from ``seed``.
    ``outputs``: 1 (the last value) or 2 (also the first saved value, where there is one). ``reads``:
    whether a ``read`` step reads its value to the host (False when the graph is captured symbolically)."""

    steps: list[Step]
    shapes: list[tuple[int, ...]]
    seed: int
    outputs: int = 1
    shift: float = 0.0
    reads: bool = True
    _cache: dict[int, list[np.ndarray]] = field(default_factory=dict, repr=False)

    def inputs(self, k: int = 0) -> list[np.ndarray]:
        """The k-th set of input values (same shapes and dtype every time)."""
        if k not in self._cache:
            rng = np.random.default_rng([self.seed, k])
            self._cache[k] = [rng.standard_normal(s).astype(np.float32) for s in self.shapes]
        return self._cache[k]

    def scalar(self, c: float) -> float:
        return c * (1.0 + self.shift)

    def __call__(self, x: Any, y: Any = None) -> Any:
        rng = np.random.default_rng([self.seed, 1 << 20])
        dev = x.device

        def const(shape: tuple[int, ...], scale: float = 1.0) -> Any:
            return burn.tensor((rng.standard_normal(shape) * scale).astype(np.float32), device=dev)

        h = x
        saved: list[Any] = []
        for step in self.steps:
            h = self._step(h, y, step, saved, const, dev)
        if self.outputs == 2 and saved:
            return h, saved[0]
        return h

    def _step(self, h: Any, y: Any, step: Step, saved: list[Any], const: Callable[..., Any], dev: Any) -> Any:
        kind, a = step.kind, step.args
        shape = tuple(h.shape)
        size = int(np.prod(shape))
        if kind == "unary":
            return _unary(h, a[0])
        if kind == "binary":
            mask, name = a
            cshape = tuple(1 if m else d for d, m in zip(shape, mask))
            if mask[0] and len(cshape) > 1:  # drop a leading 1: broadcasting adds it back
                cshape = cshape[1:]
            return _binary(h, const(cshape), name)
        if kind == "input2":
            if y is None or not _broadcasts_to(tuple(y.shape), shape):
                return h
            return _binary(h, y, a[0])
        if kind == "scalar":
            op, c = a
            c = self.scalar(c)
            if op == "mul":
                return h * c
            if op == "add":
                return h + c
            if op == "rsub":
                return c - h
            return h / c
        if kind == "where":  # continuous at the threshold: rounding on either side changes little
            return burn.where(h > 0, h, h * self.scalar(a[0]))
        if kind == "clamp":
            return h.clamp(-self.scalar(a[0]), self.scalar(a[0]) * 0.5)
        if kind == "reduce":
            name, axis, keepdim = a
            if h.ndim == 1:
                keepdim = True  # keeps a tensor, not a scalar
            axis = axis % h.ndim
            if name == "var":
                return h.var(axis, correction=0, keepdim=keepdim)
            return getattr(h, name)(axis, keepdim=keepdim)
        if kind == "linear":
            (n_out,) = a
            d = shape[-1]
            return F.linear(h, const((d, n_out), d**-0.5), const((n_out,), 0.1))
        if kind == "attention":  # batched matmuls of a value with itself
            if h.ndim < 2:
                return h
            d = shape[-1]
            scores = (h @ h.transpose(-1, -2)) * (d**-0.5)
            return F.softmax(scores, -1) @ h
        if kind == "softmax":
            return F.softmax(h, a[0] % h.ndim)
        if kind == "log_softmax":
            return F.log_softmax(h, a[0] % h.ndim)
        if kind == "layer_norm":
            d = shape[-1]
            return F.layer_norm(h, d, const((d,), 0.2) + 1.0, const((d,), 0.1))
        if kind == "transpose":
            if h.ndim < 2:
                return h
            return h.transpose(a[0] % h.ndim, a[1] % h.ndim)
        if kind == "reshape":
            if h.ndim >= 2:  # merge the last two dims
                return h.reshape(*shape[:-2], shape[-2] * shape[-1])
            return h.reshape(1, *shape)
        if kind == "narrow":
            axis = a[0] % h.ndim
            n = shape[axis]
            if n < 2:
                return h
            start = a[1] % n
            return h.narrow(axis, start, max(1, (n - start) // 2))
        if kind == "cat":
            axis = a[0] % h.ndim
            if size * 2 > MAX_SIZE:
                return h
            other = h * self.scalar(-0.5) if a[1] else const(shape)
            return burn.cat([h, other], axis)
        if kind == "expand":
            if h.ndim >= MAX_RANK or size * a[0] > MAX_SIZE:
                return h
            return h.unsqueeze(0).expand(a[0], *shape)
        if kind == "full":  # a filled constant (device backends keep and hand these out again)
            return h * burn.full(shape, self.scalar(a[0]), device=dev) + burn.ones(*shape, device=dev)
        if kind == "save":
            saved.append(h)
            return h
        if kind == "residual":
            same = [v for v in saved if tuple(v.shape) == shape]
            return h + same[a[0] % len(same)] if same else h
        if kind == "read":  # a read in the middle of the stream flushes it there
            if self.reads:
                h.numpy()
            return h
        if kind == "block":
            return self._block(h, a, const, _mlp)
        if kind == "transformer":
            if h.ndim < 2:
                return h
            return self._block(h, a, const, _transformer)
        raise AssertionError(f"unknown step {kind!r}")

    def _block(self, h: Any, a: tuple[Any, ...], const: Callable[..., Any], body: Callable[..., Any]) -> Any:
        reps, share, act = a
        d = h.shape[-1]
        weights = None
        for _ in range(reps):
            if weights is None or not share:  # shared: every repeat reads the first one's weights
                weights = [const((d, d), d**-0.5) for _ in range(4)] + [
                    const((d,), 0.2) + 1.0,
                    const((d,), 0.1),
                ]
            h = body(h, weights, act)
        return h


def _mlp(h: Any, w: list[Any], act: str) -> Any:
    d = h.shape[-1]
    y = F.layer_norm(F.linear(h, w[0], w[5]), d, w[4], w[5])
    return h + _unary(y, act)


def _transformer(h: Any, w: list[Any], act: str) -> Any:
    """Pre-norm: h + attention(ln(h)), then h + mlp(ln(h)); one head, weights (d, d)."""
    d = h.shape[-1]
    n = F.layer_norm(h, d, w[4], w[5])
    q, k, v = F.linear(n, w[0]), F.linear(n, w[1]), F.linear(n, w[2])
    h = h + F.softmax((q @ k.transpose(-1, -2)) * (d**-0.5), -1) @ v
    n = F.layer_norm(h, d, w[4], w[5])
    return h + F.linear(_unary(F.linear(n, w[3], w[5]), act), w[0])


def _broadcasts_to(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    if len(small) > len(shape):
        return False
    return all(s in (1, d) for s, d in zip(small[::-1], shape[::-1]))


def _unary(h: Any, name: str) -> Any:
    if name == "exp_tanh":
        return h.tanh().exp()
    if name == "square":
        return h * h
    if name == "gelu":
        return F.gelu(h)
    if name == "silu":
        return F.silu(h)
    if name == "log1p_abs":
        return (h.abs() + 1.0).log()
    return getattr(h, name)()


def _binary(h: Any, other: Any, name: str) -> Any:
    if name == "add":
        return h + other
    if name == "sub":
        return other - h
    if name == "mul":
        return h * other
    if name == "maximum":
        return h.maximum(other)
    if name == "minimum":
        return h.minimum(other)
    return h / (other.abs() + 0.5)  # div_pos: a denominator bounded away from zero


def steps() -> Any:
    """The hypothesis strategy of one ``Step``."""
    from hypothesis import strategies as st

    mask = st.lists(st.booleans(), min_size=MAX_RANK, max_size=MAX_RANK).map(tuple)
    axis = st.integers(-MAX_RANK, MAX_RANK - 1)
    scalar = st.sampled_from((0.5, -1.5, 2.0, 0.25))
    act = st.sampled_from(("relu", "tanh", "gelu", "silu"))
    return st.one_of(
        st.sampled_from(UNARY).map(lambda n: Step("unary", (n,))),
        st.tuples(mask, st.sampled_from(BINARY)).map(lambda t: Step("binary", t)),
        st.sampled_from(BINARY).map(lambda n: Step("input2", (n,))),
        st.tuples(st.sampled_from(("mul", "add", "rsub", "div")), scalar).map(lambda t: Step("scalar", t)),
        scalar.map(lambda c: Step("where", (c,))),
        st.sampled_from((0.5, 1.0, 2.0)).map(lambda c: Step("clamp", (c,))),
        st.tuples(st.sampled_from(REDUCE), axis, st.booleans()).map(lambda t: Step("reduce", t)),
        st.integers(1, 9).map(lambda n: Step("linear", (n,))),
        st.just(Step("attention")),
        axis.map(lambda i: Step("softmax", (i,))),
        axis.map(lambda i: Step("log_softmax", (i,))),
        st.just(Step("layer_norm")),
        st.tuples(axis, axis).map(lambda t: Step("transpose", t)),
        st.just(Step("reshape")),
        st.tuples(axis, st.integers(0, 5)).map(lambda t: Step("narrow", t)),
        st.tuples(axis, st.booleans()).map(lambda t: Step("cat", t)),
        st.integers(2, 3).map(lambda n: Step("expand", (n,))),
        scalar.map(lambda c: Step("full", (c,))),
        st.just(Step("save")),
        st.integers(0, 7).map(lambda i: Step("residual", (i,))),
        st.just(Step("read")),
        st.tuples(st.integers(2, 3), st.booleans(), act).map(lambda t: Step("block", t)),
        st.tuples(st.integers(2, 3), st.booleans(), act).map(lambda t: Step("transformer", t)),
    )


def graphs(max_steps: int = 10) -> Any:
    """The hypothesis strategy of a ``RandomGraph``: an input of rank 2-4 (dims 1-6, sometimes one of
    17, 33 or 70: more than one workgroup, vector-width tails), sometimes a second input of a
    broadcastable shape, 2 to ``max_steps`` steps, one output or two."""
    from hypothesis import strategies as st

    @st.composite
    def draw_graph(draw: Any) -> RandomGraph:
        rank = draw(st.integers(2, MAX_RANK))
        shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
        if draw(st.booleans()):
            i = draw(st.integers(0, rank - 1))
            shape = shape[:i] + (draw(st.sampled_from((17, 33, 70))),) + shape[i + 1 :]
        shapes = [shape]
        if draw(st.booleans()):
            ones = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
            shapes.append(tuple(1 if o else d for d, o in zip(shape, ones)))
        chain = draw(st.lists(steps(), min_size=2, max_size=max_steps))
        if len(shapes) == 2:  # the second input is used at least once
            chain.insert(0, Step("input2", (draw(st.sampled_from(BINARY)),)))
        return RandomGraph(chain, shapes, draw(st.integers(0, 2**16)), outputs=draw(st.sampled_from((1, 2))))

    return draw_graph()


def as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@dataclass
class Reference:
    """The graph's outputs computed in float64 on burn's numpy backend (``exact``: float64 inputs promote
    every float32 constant), and per output how far the same graph run in float32 on that backend landed
    from them (``slack``): how ill-conditioned the graph is for these inputs. A float32 path may land as
    far from ``exact`` as another float32 evaluation order did, times a margin."""

    exact: list[np.ndarray]
    slack: list[float]


def reference(graph: RandomGraph, k: int = 0) -> Reference | None:
    """The graph's ``Reference`` for input set ``k`` on burn's numpy backend, unfused, or None when an
    output is not finite (a graph that overflows says nothing about the other paths)."""
    exact = [np.asarray(t.numpy(), dtype=np.float64) for t in as_list(graph(*_cpu(graph, k, np.float64)))]
    f32 = [np.asarray(t.numpy(), dtype=np.float64) for t in as_list(graph(*_cpu(graph, k, np.float32)))]
    if not all(np.all(np.isfinite(o)) for o in exact + f32):
        return None
    return Reference(exact, [float(np.max(np.abs(a - e))) if e.size else 0.0 for a, e in zip(f32, exact)])


def _cpu(graph: RandomGraph, k: int, dtype: Any) -> list[Any]:
    return [burn.tensor(v.astype(dtype), device="cpu") for v in graph.inputs(k)]


def assert_close(got: Any, want: Reference, where: str, graph: RandomGraph) -> None:
    """Every output of ``got`` (a tensor, array or a sequence of them) against ``want``: within
    ``RTOL`` of each value plus ``ATOL`` times the output's largest magnitude, plus ``SLACK`` times the
    distance the float32 numpy run of the same graph landed from the float64 one."""
    got_list = [np.asarray(g.numpy() if hasattr(g, "numpy") else g, dtype=np.float64) for g in as_list(got)]
    assert len(got_list) == len(want.exact), f"{where}: {len(got_list)} outputs, expected {len(want.exact)}"
    for i, (g, w, slack) in enumerate(zip(got_list, want.exact, want.slack)):
        assert g.shape == w.shape, f"{where}: output {i} shape {g.shape} != {w.shape} for {graph}"
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(
            g,
            w,
            rtol=RTOL["float32"],
            atol=ATOL["float32"] * scale + SLACK * slack,
            err_msg=f"{where}: output {i} differs from numpy (float64; float32 run off by {slack:.2e}) "
            f"for {graph}",
        )


def feeds(graph: RandomGraph, k: int, device: Any) -> list[Any]:
    """Input set ``k`` of ``graph`` as tensors on ``device``."""
    return [burn.tensor(v, device=device) for v in graph.inputs(k)]


def check_calls_and_replay(graph: RandomGraph, device: Any, label: str, calls: int) -> Any:
    """The property every device path must have: ``calls`` runs of ``graph`` on ``device``, each with
    other inputs and scalars (so a replayed plan or a recorded command list must take both as
    arguments), then its ``burn.ir`` capture (at shift 0, reads off) replayed there on two input sets;
    every output against the float64 numpy ``reference``. Returns the captured graph. Uses hypothesis's
    ``assume`` to drop a graph whose reference overflows."""
    from hypothesis import assume

    for call in range(calls):
        graph.shift = 0.125 * call
        want = reference(graph, call)
        assume(want is not None)
        assert want is not None
        assert_close(graph(*feeds(graph, call, device)), want, f"{label} fused, call {call + 1}", graph)
    # captured at shift 0: the graph's constants and scalars are fixed, the inputs vary
    graph.shift, graph.reads = 0.0, False
    try:
        ir = burn.ir.capture(graph, [(v.shape, "float32") for v in graph.inputs(0)])
    finally:
        graph.reads = True
    for k in (0, 1):
        want = reference(graph, k)
        assume(want is not None)
        assert want is not None
        assert_close(
            burn.ir.replay(ir, feeds(graph, k, device)), want, f"burn.ir replay on {label}, inputs {k}", graph
        )
    return ir


def fixed_graph_calls(device: Any, steps: list[Step], calls: int, label: str) -> dict[str, int]:
    """Runs one fixed graph (``steps`` over a (3, 4, 8) input, seed 3) ``calls`` times on ``device`` with
    other inputs and scalars each call, checks every call against the ``reference``, and returns how much
    each of the fused backend's ``stats`` counters grew: the tests use it to show that the calls reach the
    path they name (program replay, recorded command lists, CUDA graphs)."""
    fb = device.backend
    graph = RandomGraph(steps, [(3, 4, 8)], seed=3)
    before = dict(fb.stats)
    for call in range(calls):
        graph.shift = 0.125 * call
        want = reference(graph, call)
        assert want is not None
        assert_close(graph(*feeds(graph, call, device)), want, f"{label}, call {call + 1}", graph)
    assert not np.array_equal(graph.inputs(0)[0], graph.inputs(1)[0])
    return {k: v - before.get(k, 0) for k, v in fb.stats.items()}


def ci_settings(default_examples: int) -> Any:
    """The hypothesis settings of every random-graph test: derandomized (CI runs the same graphs each
    time), no deadline, ``default_examples`` examples unless ``BURN_PROPERTY_EXAMPLES=N`` says more."""
    import os

    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=int(os.environ.get("BURN_PROPERTY_EXAMPLES", str(default_examples))),
        derandomize=True,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much,
        ],
        print_blob=True,
    )
