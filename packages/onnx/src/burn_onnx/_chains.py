"""Element-wise chains as one compiled kernel: the last pass of ``load(..., optimize=True)``
(``fuse_chains``, run by ``Runner.fuse_chains`` after constant folding) and the ``FusedChain`` node's
converter (``fused_chain``).

The pass groups element-wise nodes (``CHAIN_OPS``: Add, Mul, Erf, Clip, Where, ...) whose values but
the last are read only inside the group (a bias add and the GELU after it: Add, Div, Erf, Add, Mul,
Mul; a residual add joining it; a scale, Clip and Where) into one ``FusedChain`` node. Constants of one element become the
kernel's scalars; other inputs (activations, weights, masks) its tensor inputs, read where they lie
through their strides (broadcast dims stride 0). A lone node becomes a chain only where numpy takes
several passes or a slow path for it (``SOLO_OPS``: Erf, Sigmoid, Softplus, Tanh).

At run time the node is one ``burn.fusion.FusedKernel`` on the numpy backend's fusion runtime
(``Backend.fusion_runtime()``: burn's compiled C kernels where a C compiler is present), the first
``CHAIN_AFTER`` calls excepted: those, and every call where the runtime is missing (``BURN_CPU_NATIVE=0``,
no compiler), the dtypes are not float32 / float64, or the device is not the plain numpy one
(autodiff, GPU backends, which fuse on their own), run the original nodes' converters one by one, so
results there are exactly as without the pass. Compiled, a chain computes what the converters do
within float32 rounding (the C kernels are written as numpy's own).
"""

from __future__ import annotations

import os
from typing import Any

import burn
import numpy as np
from burn.backend import broadcast_shape, from_primitive
from burn.fusion import FusedKernel, FusedOp

from ._errors import OnnxError
from ._graph import Graph, Node
from ._optimize import _clip_bounds, _pinned, _scalar

CHAIN_DOMAIN = "burn_onnx.fused"
# calls of a chain that run the original converters before it runs compiled: a model called once (a
# check, a conversion) compiles nothing; from the second call on a plan replays, which repays a build
# (about 0.1 s, once per kernel source: later processes load it from the disk cache) within a few calls
CHAIN_AFTER = 1
MAX_SIGNATURES = 16  # input signatures a chain keeps a plan for (the runner keeps 8 per model)
UNARY = {
    "Neg": "neg",
    "Abs": "abs",
    "Exp": "exp",
    "Log": "log",
    "Sqrt": "sqrt",
    "Reciprocal": "reciprocal",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "Relu": "relu",
    "Erf": "erf",
    "Floor": "floor",
    "Ceil": "ceil",
    "Sin": "sin",
    "Cos": "cos",
    "Softplus": "softplus",
}
BINARY = {
    "Add": "add",
    "Sub": "sub",
    "Mul": "mul",
    "Div": "div",
    "Pow": "pow",
    "Max": "maximum",
    "Min": "minimum",
    "Equal": "eq",
    "Less": "lt",
    "LessOrEqual": "le",
    "Greater": "gt",
    "GreaterOrEqual": "ge",
}
COMPARISONS = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
CHAIN_OPS = frozenset({*UNARY, *BINARY, "Where", "Clip"})
# ops worth a kernel of their own: burn's numpy forms take several passes (erf's polynomial, the tanh
# form of sigmoid, logaddexp) or a scalar libm loop (tanh); a lone Add, Clip or Exp is one fast numpy
# pass, which a compiled kernel only matches (measured: a 1e5-element Clip, numpy 25 us, compiled 37 us)
SOLO_OPS = frozenset({"Erf", "Sigmoid", "Softplus", "Tanh"})


# ---------------------------------------------------------------------------------------- the pass
def _fusable(node: Node, constants: dict[str, burn.Tensor], static: frozenset[str]) -> bool:
    if node.domain or node.op_type not in CHAIN_OPS or len(node.outputs) != 1 or not node.outputs[0]:
        return False
    if node.outputs[0] in static or not all(node.inputs):
        return False
    if node.op_type == "Clip":
        return _clip_bounds(node, constants) is not None
    arity = 1 if node.op_type in UNARY else 3 if node.op_type == "Where" else 2
    return len(node.inputs) == arity


def _readers(graph: Graph) -> dict[str, list[Node]]:
    """Value name -> the distinct nodes of ``graph`` that read it."""
    found: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for name in dict.fromkeys(node.inputs):
            if name:
                found.setdefault(name, []).append(node)
    return found


def _chain_node(members: list[Node], constants: dict[str, burn.Tensor]) -> Node:
    """One ``FusedChain`` node computing ``members`` (in graph order; the last one's output is the
    chain's). Each op's args are ``("t", k)``: tensor input k, ``("s", j)``: scalar j, ``("o", m)``: op m."""
    inputs: list[str] = []
    scalars: list[float] = []
    shapes: list[tuple[int, ...]] = []
    conds: set[int] = set()
    refs: dict[str, tuple[str, int]] = {}
    ops: list[tuple[str, str, tuple[tuple[str, int], ...]]] = []

    def ref(name: str, is_cond: bool = False) -> tuple[str, int]:
        if name in refs:
            found = refs[name]
        elif not is_cond and (s := _scalar(name, constants)) is not None:
            found = refs[name] = ("s", len(scalars))
            scalars.append(s[0])
            shapes.append(s[1])
        else:
            found = refs[name] = ("t", len(inputs))
            inputs.append(name)
        if is_cond and found[0] == "t":
            conds.add(found[1])
        return found

    def constant(value: float) -> tuple[str, int]:
        scalars.append(value)
        shapes.append(())
        return ("s", len(scalars) - 1)

    for node in members:
        op = node.op_type
        if op in UNARY:
            ops.append(("unary", UNARY[op], (ref(node.inputs[0]),)))
        elif op in BINARY:
            ops.append(("binary", BINARY[op], (ref(node.inputs[0]), ref(node.inputs[1]))))
        elif op == "Where":
            args = (ref(node.inputs[0], is_cond=True), ref(node.inputs[1]), ref(node.inputs[2]))
            ops.append(("where", "where", args))
        else:  # Clip
            bounds = _clip_bounds(node, constants)
            assert bounds is not None
            ops.append(("clamp", "clamp", (ref(node.inputs[0]), constant(bounds[0]), constant(bounds[1]))))
        refs[node.outputs[0]] = ("o", len(ops) - 1)
    root = members[-1]
    attrs = {
        "ops": tuple(ops),
        "scalars": tuple(scalars),
        "scalar_shapes": tuple(shapes),
        "conds": frozenset(conds),
        "nodes": tuple(members),
    }
    return Node("FusedChain", CHAIN_DOMAIN, 1, root.name, inputs, [root.outputs[0]], attrs)


def fuse_chains(graph: Graph, constants: dict[str, burn.Tensor], static: frozenset[str]) -> int:
    """Replace each group of element-wise nodes of ``graph`` (see the module docstring) by one
    ``FusedChain`` node, in place; returns how many chain nodes were made."""
    readers, pinned = _readers(graph), _pinned(graph)
    root_of: dict[int, Node] = {}
    for node in reversed(graph.nodes):  # readers first: a node joins the chain all its readers are in
        if not _fusable(node, constants, static):
            continue
        out = node.outputs[0]
        roots = {id(root_of.get(id(r))) for r in readers.get(out, [])}
        joins = out not in pinned and len(roots) == 1 and id(None) not in roots
        root_of[id(node)] = root_of[id(readers[out][0])] if joins else node
    members: dict[int, list[Node]] = {}
    for node in graph.nodes:
        root = root_of.get(id(node))
        if root is not None:
            members.setdefault(id(root), []).append(node)
    chains: dict[int, Node] = {}
    for root_id, group in members.items():
        if len(group) > 1 or group[0].op_type in SOLO_OPS:
            chains[root_id] = _chain_node(group, constants)
    if not chains:
        return 0
    dropped = {id(n) for root_id in chains for n in members[root_id]}
    kept: list[Node] = []
    for node in graph.nodes:
        if id(node) in chains:
            kept.append(chains[id(node)])
        elif id(node) not in dropped:
            kept.append(node)
    graph.nodes = kept
    return len(chains)


# ---------------------------------------------------------------------------------------- run time
def _runtime(ctx: Any, backend: Any) -> Any:
    """The fusion runtime of ``backend`` this runner's chains run on (None: there is none), made once:
    a compiled runtime builds a chain's kernel the first time it runs it (``CHAIN_AFTER`` counts the
    calls before), unless ``BURN_CPU_NATIVE_AFTER`` says otherwise."""
    memo = ctx.runner.memo
    key = ("chain_runtime", id(backend))
    if key not in memo:
        rt = backend.fusion_runtime()
        if rt is not None and hasattr(rt, "after") and "BURN_CPU_NATIVE_AFTER" not in os.environ:
            rt.after = 0
        memo[key] = (backend, rt)  # the backend kept alive, so its id stays its own
    return memo[key][1]


def _plan(node: Node, values: tuple[Any, ...], prims: list[np.ndarray], rt: Any) -> FusedKernel | None:
    """The chain's ``FusedKernel`` for these inputs, or None where it does not apply."""
    attrs = node.attrs
    conds = attrs["conds"]
    floats = [v.dtype for i, v in enumerate(values) if i not in conds]
    if (
        not floats
        or any(dt is not floats[0] for dt in floats)
        or floats[0] not in (burn.float32, burn.float64)
    ):
        return None
    if any(values[i].dtype is not burn.bool_ for i in conds):
        return None
    dt = floats[0]
    try:
        shape = broadcast_shape(*[p.shape for p in prims], *attrs["scalar_shapes"])
    except Exception:
        return None  # the converters give the error
    n, s = len(values), len(attrs["scalars"])
    number = {"t": 0, "s": n, "o": n + s}
    ops = []
    for kind, name, args in attrs["ops"]:
        out = burn.bool_ if kind == "binary" and name in ("eq", "lt", "le", "gt", "ge") else dt
        if not rt.fusable(kind, name, dt, out):
            return None
        ops.append(FusedOp(kind, name, dt, out, tuple(number[k] + i for k, i in args)))
    inputs = tuple(v.dtype for v in values)
    return FusedKernel(tuple(shape), inputs, (dt,) * s, tuple(ops), (n + s + len(ops) - 1,))


def _compiled(
    ctx: Any, node: Node, values: tuple[Any, ...], plans: dict[Any, tuple[FusedKernel, Any] | None]
) -> Any:
    """The chain run as one kernel of the numpy backend's runtime, or None where that does not apply."""
    if not values or not all(isinstance(v, burn.Tensor) for v in values):
        return None
    prims = [v.primitive for v in values]
    if not all(type(p) is np.ndarray for p in prims):
        return None  # not the plain numpy backend
    backend = values[0].backend
    key = (id(backend), *((p.shape, p.dtype) for p in prims))
    if key not in plans:
        if len(plans) >= MAX_SIGNATURES:  # a model fed ever new shapes: keep the newest few
            plans.clear()
        rt = _runtime(ctx, backend)
        kernel = None if rt is None else _plan(node, values, prims, rt)
        plans[key] = None if kernel is None else (kernel, rt)
    found = plans[key]
    if found is None:
        return None
    kernel, rt = found
    (out,) = rt.execute(kernel, prims, list(node.attrs["scalars"]))
    return from_primitive(out, backend, kernel.out_dtypes()[0])


def _unfused(ctx: Any, node: Node, values: tuple[Any, ...]) -> Any:
    """The chain's original nodes run one by one through their converters."""
    from ._runtime import Ctx, _node_error

    runner = ctx.runner
    scope = dict(zip(node.inputs, values))
    raw_scope = dict(zip(node.inputs, ctx.raw))
    for sub in node.attrs["nodes"]:
        spec = runner.specs[id(sub)]
        args, raw = [], []
        for i, name in enumerate(sub.inputs):
            if name in scope:
                v, r = scope[name], raw_scope.get(name, scope[name])
            else:  # a constant the chain holds as a scalar
                v = r = runner.constants[name]
                if i not in spec.host:
                    v = runner.place(v, ctx.device)
            args.append(v)
            raw.append(r)
        try:
            scope[sub.outputs[0]] = spec.fn(Ctx(runner, sub, ctx.device, ctx.scope, raw), sub, *args)
        except OnnxError:
            raise
        except Exception as exc:
            raise _node_error(runner.source, sub, args, exc) from exc
    return scope[node.outputs[0]]


def fused_chain(ctx: Any, node: Node, *values: Any) -> Any:
    """The ``FusedChain`` converter: the original nodes on the first ``CHAIN_AFTER`` calls, then one
    kernel wherever ``_compiled`` applies."""
    memo = ctx.runner.memo
    entry = memo.get(("chain", id(node)))
    if entry is None:
        entry = memo[("chain", id(node))] = [0, {}]
    entry[0] += 1
    if entry[0] > CHAIN_AFTER:
        out = _compiled(ctx, node, values, entry[1])
        if out is not None:
            return out
    return _unfused(ctx, node, values)
