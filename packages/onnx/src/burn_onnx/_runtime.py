"""Running a parsed graph: the per-node context converters use, the host/device placement rule, and the
cache of values resolved on the host.

Placement: a node whose inputs all live on the host (constants, ``Shape`` outputs, and everything computed
from them: the Shape -> Gather -> Concat -> Reshape chains of exported models) runs on the host, on
burn's numpy backend; every other node runs on the model's device, with host inputs copied there. Values
that depend only on constants and on the *shapes* of the inputs are "static": they are computed once per
input signature (shapes and dtypes) and kept with their device copies, so later calls with the same
shapes skip those nodes and transfer nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, NamedTuple

import burn
import numpy as np

from ._dtypes import burn_dtype, on_backend
from ._errors import OnnxError, OnnxRuntimeError
from ._graph import Graph, Node
from ._registry import OpSpec, ops

CACHED_SIGNATURES = 8
NON_STATIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
)
_HOST: burn.Device | None = None


def host() -> burn.Device:
    """The device host values live on: burn's numpy backend."""
    global _HOST
    if _HOST is None:
        _HOST = burn.device("cpu")
    return _HOST


def _subgraphs(node: Node) -> bool:
    return any(
        isinstance(v, Graph) or (isinstance(v, list) and v and isinstance(v[0], Graph))
        for v in node.attrs.values()
    )


class Scope(dict):
    """Values by name, falling back to the enclosing graph's (If/Loop bodies read outer values)."""

    def __init__(self, parent: Scope | None = None) -> None:
        super().__init__()
        self.parent = parent

    def __missing__(self, key: str) -> Any:
        if self.parent is None:
            raise KeyError(key)
        return self.parent[key]


class Ctx:
    """What a converter sees besides its inputs: the opset, the device the node runs on, and helpers
    to read host numbers, build constants and run subgraphs."""

    __slots__ = ("device", "node", "opset", "raw", "runner", "scope")

    def __init__(self, runner: Runner, node: Node, device: burn.Device, scope: Scope, raw: list[Any]) -> None:
        self.raw = raw  # the inputs where they were before placement (host scalars stay readable for free)
        self.runner = runner
        self.node = node
        self.device = device
        self.opset = node.opset
        self.scope = scope

    # host numbers
    def array(self, t: Any) -> np.ndarray:
        """The values of ``t`` as a numpy array (free for host tensors; a device sync otherwise)."""
        if isinstance(t, burn.Tensor):
            return t.numpy()
        return np.asarray(t)

    def ints(self, t: Any) -> list[int]:
        return [int(v) for v in self.array(t).reshape(-1)]

    def scalar(self, t: Any, default: Any = None) -> Any:
        if t is None:
            return default
        arr = self.array(t).reshape(-1)
        if arr.size != 1:
            raise ValueError(
                f"{self.node.op_type} node {self.node.label!r}: expected a scalar, got {arr.size} values"
            )
        return arr[0].item()

    # building tensors
    @property
    def backend(self) -> Any:
        return self.device.backend

    def dtype(self, elem_type: int) -> burn.DType:
        """The dtype an ONNX element type computes in on this node's backend."""
        return on_backend(burn_dtype(elem_type), self.backend)

    def fit(self, dt: burn.DType) -> burn.DType:
        return on_backend(dt, self.backend)

    def tensor(self, data: Any, dtype: Any = None) -> burn.Tensor:
        """A tensor on this node's device from numpy data (dtype narrowed to what the backend has)."""
        arr = np.asarray(data)
        if dtype is None:
            dtype = burn.dtype(arr.dtype.name) if arr.dtype.kind != "b" else burn.bool_
        dt = self.fit(burn.dtype(dtype))
        return burn.from_numpy(np.asarray(arr, order="C"), device=self.device, dtype=dt)

    def like(self, value: Any, ref: burn.Tensor) -> burn.Tensor:
        """A tensor of ``ref``'s dtype and device holding ``value`` (a number or an array)."""
        return burn.from_numpy(np.asarray(value), device=ref.device, dtype=ref.dtype)

    def host_scalar(self, i: int) -> Any:
        """Input ``i`` as a Python number when it is a one-element host tensor (free to read), else None."""
        v = self.raw[i] if i < len(self.raw) else None
        if isinstance(v, burn.Tensor) and v.device == host() and v.numel() == 1:
            return v.item()
        return None

    def declared_dtype(self, i: int) -> str | None:
        """The dtype name the model declares for input ``i`` (a graph input's type, an initializer's
        or a host value's), which a backend without that dtype narrows on the device (int8 is int32
        on wgpu); None when the model does not say."""
        v = self.raw[i] if i < len(self.raw) else None
        if isinstance(v, burn.Tensor) and v.device == host():
            return v.dtype.name
        name = self.node.input(i)
        if name in self.runner.graph.initializers:
            return str(self.runner.graph.initializers[name].dtype)
        for info in self.runner.graph.inputs:
            if info.name == name and info.kind == "tensor":
                return info.dtype
        return None

    def declared_elem(self, i: int) -> int | None:
        """The ONNX element type the model declares for input ``i`` when it is a graph input or an
        initializer of a type burn holds widened (float8, int4, uint16 ... are held in a wider burn
        dtype: this is how a converter tells them apart); None otherwise."""
        name = self.node.input(i)
        if name in self.runner.graph.widened:
            return self.runner.graph.widened[name]
        for info in self.runner.graph.inputs:
            if info.name == name and info.kind == "tensor":
                return info.elem_type or None
        return None

    def to_device(self, t: burn.Tensor) -> burn.Tensor:
        return self.runner.place(t, self.device)

    def run(self, graph: Graph, feeds: list[Any]) -> list[Any]:
        """Run a subgraph (If branch, Loop body) with its inputs bound to ``feeds``; outer values visible."""
        return self.runner.run_graph(graph, feeds, self.scope, self.device)


class _Plan:
    """What one input signature resolved: the static values (and their device copies, keyed ``@name``)
    and, after the first call, the steps that still run on every call."""

    __slots__ = ("steps", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.steps: list[_Step] | None = None


class _Step(NamedTuple):
    """One node of a plan: the scope keys of its inputs (``@name`` where a static value's device copy is
    read), of its raw inputs where they differ, the device it runs on, and whether inputs that are not
    static must be moved to that device on each call."""

    fn: Any
    node: Node
    keys: tuple[str, ...]
    raw_keys: tuple[str, ...] | None
    where: burn.Device
    place: bool
    host_slots: frozenset[int]
    outs: tuple[str, ...]


class Runner:
    """Runs one model's graph: placement, host resolution, and the per-signature plans.

    The first call with an input signature (shapes, dtypes, device) runs the graph node by node,
    deciding placement from where values live, and records the nodes that will run again (those whose
    outputs are not static) as a plan of ``_Step``s; later calls replay the plan: no placement checks,
    no static nodes, inputs looked up by precomputed keys."""

    def __init__(
        self, graph: Graph, constants: dict[str, burn.Tensor], params: set[str], source: str
    ) -> None:
        from ._fused import FUSED

        self.graph = graph
        self.constants = constants  # host tensors: integer initializers, shape-only weights
        self.source = source
        table = {**ops(), **FUSED}
        self.specs: dict[int, OpSpec] = {id(n): table[n.op_type] for n in graph.all_nodes()}
        self._params = params
        self.static = self._static_values(graph, set(constants), params)
        self._cache: OrderedDict[Any, _Plan] = OrderedDict()
        self.memo: dict[int, Any] = {}  # per-node values converters keep between calls (folded weights)

    def fold_constants(self) -> int:
        """Run, once on the host, every main-graph node that depends on constants only, and keep its
        outputs as constants (the node leaves the graph). A node that fails stays, to fail at run time
        with the usual error. Returns how many nodes were folded."""
        h = host()
        scope = Scope()
        scope.update(self.constants)
        known = set(self.constants) | {""}
        kept: list[Node] = []
        for node in self.graph.nodes:
            spec = self.specs[id(node)]
            foldable = (
                node.outputs
                and all(node.outputs)
                and not spec.dynamic
                and node.op_type not in NON_STATIC_OPS
                and not _subgraphs(node)
                and all(i in known for i in node.inputs)
            )
            if foldable:
                values = [scope[i] if i else None for i in node.inputs]
                try:
                    result = spec.fn(Ctx(self, node, h, scope, values), node, *values)
                except Exception:
                    foldable = False
                else:
                    results = result if isinstance(result, tuple) else (result,)
                    tensors = all(isinstance(r, burn.Tensor) for r in results)
                    foldable = tensors and len(results) >= len(node.outputs)
            if not foldable:
                kept.append(node)
                continue
            for o, r in zip(node.outputs, results):
                scope[o] = self.constants[o] = r
                known.add(o)
        folded = len(self.graph.nodes) - len(kept)
        if folded:
            self.graph.nodes = kept
            self.static = self._static_values(self.graph, set(self.constants), self._params)
        return folded

    def fuse_clips(self) -> int:
        """Fold Clips with constant bounds into the convs whose results they alone read
        (``_optimize.fuse_clips``), after ``fold_constants``. Returns how many were folded."""
        from ._optimize import fuse_clips

        made = fuse_clips(self.graph, self.constants)
        if made:
            self._refresh_fused()
        return made

    def fuse_chains(self) -> int:
        """Replace the main graph's element-wise chains by ``FusedChain`` nodes (``_chains``), after
        ``fold_constants`` (a chain's one-element constants become its kernel's scalars). Returns how
        many chain nodes were made."""
        from ._chains import fuse_chains

        made = fuse_chains(self.graph, self.constants, self.static)
        if made:
            self._refresh_fused()
        return made

    def _refresh_fused(self) -> None:
        """After a pass made fused nodes: their specs, and the static values again."""
        from ._fused import FUSED

        for node in self.graph.nodes:
            if node.op_type in FUSED:  # the new nodes (an id of a dropped node may be reused)
                self.specs[id(node)] = FUSED[node.op_type]
        self.static = self._static_values(self.graph, set(self.constants), self._params)

    # ------------------------------------------------------------------ analysis
    def _static_values(self, graph: Graph, constants: set[str], params: set[str]) -> frozenset[str]:
        """Names whose values depend only on constants and on input shapes (resolved once per signature)."""
        static_value = set(constants) | {""}
        static_shape = set(constants) | set(params) | {v.name for v in graph.inputs} | {""}
        for node in graph.nodes:
            spec = self.specs[id(node)]
            dynamic = spec.dynamic or _subgraphs(node) or node.op_type in NON_STATIC_OPS
            ins = node.inputs
            if node.op_type in ("Shape", "Size"):
                known = bool(ins) and ins[0] in static_shape
            else:
                known = not dynamic and all(i in static_value for i in ins)
            if known:
                static_value.update(node.outputs)
                static_shape.update(node.outputs)
                continue
            hosts_known = all(node.input(i) in static_value for i in spec.host)
            if not dynamic and hosts_known and all(i in static_shape for i in ins):
                static_shape.update(node.outputs)
        return frozenset(static_value - {""})

    # ------------------------------------------------------------------ placement
    def place(self, t: Any, device: burn.Device) -> Any:
        """``t`` on ``device`` (a list: each element), narrowing dtypes the backend lacks."""
        if isinstance(t, list):
            return [self.place(v, device) for v in t]
        if not isinstance(t, burn.Tensor) or t.device == device:
            return t
        dt = on_backend(t.dtype, device.backend)
        if dt is not t.dtype:
            t = t.cast(dt) if t.device.backend is host().backend else t.to(host()).cast(dt)
        return t.to(device)

    # ------------------------------------------------------------------ execution
    def signature(self, feeds: list[Any], device: burn.Device) -> Any:
        return (
            str(device),
            tuple((tuple(t.shape), t.dtype.name) if isinstance(t, burn.Tensor) else None for t in feeds),
        )

    def run(self, feeds: list[Any], params: dict[str, burn.Tensor], device: burn.Device) -> list[Any]:
        from burn.ir import CaptureBackend

        scope = Scope()
        scope.update(self.constants)
        scope.update(params)
        if isinstance(device.backend, CaptureBackend):
            # each capture has its own device (same str): its tensors must not be reused
            return self._run(self.graph, feeds, scope, device, None)
        sig = self.signature(feeds, device)
        plan = self._cache.get(sig)
        if plan is None:
            plan = self._cache[sig] = _Plan()
            while len(self._cache) > CACHED_SIGNATURES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(sig)
        if plan.steps is None:
            steps: list[_Step] = []
            outs = self._run(self.graph, feeds, scope, device, plan.values, steps)
            plan.steps = steps
            return outs
        return self._replay(plan, feeds, scope, device)

    def run_graph(self, graph: Graph, feeds: list[Any], outer: Scope, device: burn.Device) -> list[Any]:
        scope = Scope(outer)
        return self._run(graph, feeds, scope, device, None)

    def _replay(self, plan: _Plan, feeds: list[Any], scope: Scope, device: burn.Device) -> list[Any]:
        scope.update(plan.values)
        scope[""] = None
        for info, value in zip(self.graph.inputs, feeds):
            scope[info.name] = value
        for fn, node, keys, raw_keys, where, place, host_slots, outs in plan.steps or ():
            values = [scope[k] for k in keys]
            raw = values if raw_keys is None else [scope[k] for k in raw_keys]
            if place:
                values = [
                    v if v is None or i in host_slots else self.place(v, device) for i, v in enumerate(values)
                ]
            try:
                result = fn(Ctx(self, node, where, scope, raw), node, *values)
            except OnnxError:
                raise
            except Exception as exc:
                raise _node_error(self.source, node, values, exc) from exc
            if type(result) is tuple:
                for o, r in zip(outs, result):
                    if o:
                        scope[o] = r
            elif outs and outs[0]:
                scope[outs[0]] = result
        return [scope[o.name] for o in self.graph.outputs]

    def _run(
        self,
        graph: Graph,
        feeds: list[Any],
        scope: Scope,
        device: burn.Device,
        cache: dict[str, Any] | None,
        steps: list[_Step] | None = None,
    ) -> list[Any]:
        for info, value in zip(graph.inputs, feeds):
            scope[info.name] = value
        if graph is not self.graph:  # a subgraph's own initializers are host constants
            for name, arr in graph.initializers.items():
                scope[name] = burn.from_numpy(arr, device=host())
        static = self.static if cache is not None else frozenset()
        h = host()
        for node in graph.nodes:
            outs = node.outputs
            if cache is not None and outs and outs[0] in cache:
                for o in outs:
                    if o:
                        scope[o] = cache[o]
                continue
            spec = self.specs[id(node)]
            values = [scope[i] if i else None for i in node.inputs]
            on_host = (
                all(_on(v, h) for i, v in enumerate(values) if v is not None and i not in spec.host)
                and node.op_type not in NON_STATIC_OPS
            )
            where = h if on_host else device
            raw = list(values)
            keys = list(node.inputs)
            moved_dynamic = False
            if not on_host:
                for i, v in enumerate(values):
                    if v is not None and i not in spec.host:
                        name = node.inputs[i]
                        if cache is not None and name in static:
                            moved = cache.get("@" + name)  # the device copy of a static host value
                            if moved is None:
                                moved = cache["@" + name] = self.place(v, device)
                            values[i] = moved
                            if moved is not v:
                                keys[i] = "@" + name
                        else:
                            values[i] = self.place(v, device)
                            moved_dynamic = moved_dynamic or values[i] is not v
            ctx = Ctx(self, node, where, scope, raw)
            try:
                result = spec.fn(ctx, node, *values)
            except OnnxError:
                raise
            except Exception as exc:
                raise _node_error(self.source, node, values, exc) from exc
            results = result if isinstance(result, tuple) else (result,)
            if len(results) < len([o for o in outs if o]):
                wanted = [o for o in outs[len(results) :] if o]
                if wanted:
                    raise NotImplementedError(
                        f"{self.source}: {node.op_type} node {node.label!r}: optional output(s) "
                        f"{wanted} are not computed by burn-onnx"
                    )
            for o, r in zip(outs, results):
                if o:
                    scope[o] = r
                    if cache is not None and o in static:
                        cache[o] = r
            if steps is not None and not (outs and outs[0] in static):
                raw_keys = tuple(node.inputs) if keys != node.inputs else None
                steps.append(
                    _Step(
                        spec.fn,
                        node,
                        tuple(keys),
                        raw_keys,
                        where,
                        moved_dynamic,
                        spec.host,
                        tuple(outs),
                    )
                )
        return [scope[o.name] for o in graph.outputs]


def _on(v: Any, device: burn.Device) -> bool:
    if isinstance(v, list):
        return all(_on(x, device) for x in v)
    return not isinstance(v, burn.Tensor) or v.device == device


def _node_error(source: str, node: Node, values: list[Any], exc: Exception) -> Exception:
    def describe(v: Any) -> str:
        if isinstance(v, burn.Tensor):
            return f"{v.dtype.name}{list(v.shape)}"
        if isinstance(v, list):
            return f"sequence[{len(v)}]"
        return "none" if v is None else type(v).__name__

    shapes = ", ".join(f"{n or '-'}: {describe(v)}" for n, v in zip(node.inputs, values))
    return OnnxRuntimeError(
        f"{source}: {node.op_type} node {node.label!r} (opset {node.opset}) failed on inputs ({shapes}): "
        f"{type(exc).__name__}: {exc}"
    )
