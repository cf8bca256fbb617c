"""``burn_onnx.load``: an ONNX file as a ``burn.nn.Module`` whose float initializers are Params."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import burn
import numpy as np
from burn.nn import Module, Param, RunningState

from ._check import unsupported
from ._dtypes import as_declared, on_backend, on_device_declared, stored, warn_narrowed
from ._errors import UnsupportedOnnxError
from ._graph import Graph, Model, ValueInfo, read_model
from ._optimize import drop_passthrough, fuse
from ._registry import ops
from ._runtime import Runner, host

# input slots that only parametrise a node (running statistics, not trained)
_RUNNING_STATE_SLOTS = {"BatchNormalization": (3, 4)}


def _consumers(graph: Graph) -> dict[str, list[tuple[str, int]]]:
    """Value name -> (op type, input slot) of every node that reads it, subgraphs included."""
    found: dict[str, list[tuple[str, int]]] = {}
    for node in graph.all_nodes():
        for i, name in enumerate(node.inputs):
            if name:
                found.setdefault(name, []).append((node.op_type, i))
    return found


def _classify(graph: Graph) -> tuple[list[str], list[str], list[str]]:
    """Split the initializers into Params, RunningStates and host constants.

    Float initializers are Params (trained, recorded), except those that only parametrise a node
    (batch-norm statistics: RunningState) or that are only read as numbers on the host (Resize scales,
    Clip bounds given as tensors): those, and every integer or bool initializer (shapes, axes,
    indices), are constants of the graph.
    """
    table = ops()
    users = _consumers(graph)
    params, states, constants = [], [], []
    for name, arr in graph.initializers.items():
        uses = users.get(name, [])
        is_float = arr.dtype.kind == "f"
        host_only = bool(uses) and all(op in table and slot in table[op].host for op, slot in uses)
        if not is_float or host_only or not uses:
            constants.append(name)
        elif all(slot in _RUNNING_STATE_SLOTS.get(op, ()) for op, slot in uses):
            states.append(name)
        else:
            params.append(name)
    return params, states, constants


def _inference_graph(graph: Graph, consts: dict[str, burn.Tensor], counts: dict[str, int]) -> Graph:
    """A copy of ``graph`` rewritten by the inference passes (``_optimize``); ``counts`` gets what changed."""
    nodes = [dataclasses.replace(n, inputs=list(n.inputs), outputs=list(n.outputs)) for n in graph.nodes]
    out = dataclasses.replace(graph, nodes=nodes)
    false = [
        name
        for name, t in consts.items()
        if t.dtype.is_bool and t.numel() == 1 and not bool(t.numpy().reshape(-1)[0])
    ]
    counts["passthrough"] = drop_passthrough(out, false)
    counts.update(fuse(out, set(graph.initializers)))
    return out


class OnnxModel(Module):
    """An ONNX model as a burn module: ``model(*inputs)`` returns one tensor, or a tuple in the graph's
    output order.

    Float initializers are ``Param``s in ``model.weights`` (keyed by their ONNX names), so the model can
    be fine-tuned on an autodiff device and saved with ``burn.record``; batch-norm statistics are
    ``RunningState``s. ``model.inputs`` / ``model.outputs`` describe names, shapes (symbolic dims by
    name) and dtypes. Inputs may be burn tensors, numpy arrays or nested lists, given in order or by
    name; they move to the model's device. ``model.optimized`` counts what the inference passes of
    ``load(..., optimize=True)`` changed (empty with ``optimize=False``).
    """

    def __init__(self, model: Model, device: burn.Device, optimize: bool = True) -> None:
        graph = model.graph
        params, states, constants = _classify(graph)  # on the file's graph: the same names either way
        backend = device.backend
        h = host()
        self.weights: dict[str, Param | RunningState] = {}
        for name in params + states:
            arr = graph.initializers[name]
            dt = on_backend(burn.dtype(arr.dtype.name), backend)
            t = burn.from_numpy(np.asarray(arr, order="C"), device=device, dtype=dt)
            self.weights[name] = Param(t) if name in params else RunningState(t)
        consts = {
            name: burn.from_numpy(np.asarray(graph.initializers[name], order="C"), device=h)
            for name in constants
            if graph.initializers[name].dtype.kind not in "OSU"
        }
        self.inputs: tuple[ValueInfo, ...] = tuple(graph.inputs)
        self.outputs: tuple[ValueInfo, ...] = tuple(graph.outputs)
        self.opset: int = model.opset
        self._device = device
        self.optimized: dict[str, int] = {}
        if optimize:
            graph = _inference_graph(graph, consts, self.optimized)
        self._runner = Runner(graph, consts, set(params) | set(states), model.source)
        if optimize:
            self.optimized["constant_nodes"] = self._runner.fold_constants()
            self.optimized["clip"] = self._runner.fuse_clips()
            self.optimized["chains"] = self._runner.fuse_chains()
        self._source = model.source

    def forward(self, *args: Any, **named: Any) -> Any:
        device = self._compute_device(args, named)
        feeds = self._bind(args, named, device)
        params = {name: entry.value for name, entry in self.weights.items()}
        outs = self._runner.run(feeds, params, device)
        outs = [_declared_on_device(v, info.elem_type) for v, info in zip(outs, self.outputs)] + outs[
            len(self.outputs) :
        ]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, *args: Any, **named: Any) -> tuple[Any, ...]:
        """Every graph output as a numpy array of its ONNX-declared dtype (a list of arrays for a
        sequence output, None for an empty optional), as onnxruntime's ``InferenceSession.run``
        returns them, whatever the device computed in: an int64 output of a browser-portable wgpu
        device (int32 there) comes back int64, a uint16 one (int32 in burn) uint16. A value the
        declared type cannot hold raises ``OnnxRuntimeError`` naming the output.

        >>> import numpy as np, burn_onnx
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("ArgMax", ["x"], ["y"], axis=0)], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, [3])], [helper.make_tensor_value_info("y", T.INT64, [1])])
        >>> m = burn_onnx.load(helper.make_model(g).SerializeToString(), device="cpu")
        >>> (y,) = m.run(np.array([1.0, 5.0, 2.0], np.float32))
        >>> y, y.dtype
        (array([1]), dtype('int64'))
        """
        out = self.forward(*args, **named)
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(self._host_declared(v, info) for v, info in zip(outs, self.outputs))

    def _host_declared(self, value: Any, info: ValueInfo) -> Any:
        if value is None:
            return None
        if isinstance(value, list):
            return [self._host_declared(v, info) for v in value]
        computed = f"{value.dtype.name} on {value.device}"
        return as_declared(value.numpy(), info.elem_type, info.name, self._source, computed)

    def _compute_device(self, args: tuple[Any, ...], named: dict[str, Any]) -> burn.Device:
        for entry in self.weights.values():
            return entry.value.device
        for value in (*args, *named.values()):
            if isinstance(value, burn.Tensor):
                return value.device
        return self._device

    def _bind(self, args: tuple[Any, ...], named: dict[str, Any], device: burn.Device) -> list[Any]:
        """The graph inputs in order, as tensors on ``device``, checked against the declared infos."""
        n = len(self.inputs)
        if len(args) > n:
            raise TypeError(f"{self._source}: the model takes {n} input(s), got {len(args)} positional")
        by_name = {info.name: i for i, info in enumerate(self.inputs)}
        values: list[Any] = list(args) + [None] * (n - len(args))
        for key, value in named.items():
            if key not in by_name:
                known = ", ".join(repr(i.name) for i in self.inputs)
                raise TypeError(f"{self._source}: unknown input {key!r}; the inputs are {known}")
            if values[by_name[key]] is not None:
                raise TypeError(f"{self._source}: input {key!r} given twice")
            values[by_name[key]] = value
        missing = [info.name for info, v in zip(self.inputs, values) if v is None and info.kind != "optional"]
        if missing:
            raise TypeError(f"{self._source}: missing input(s) {', '.join(map(repr, missing))}")
        dims: dict[str, tuple[int, str]] = {}
        out: list[Any] = []  # a tensor per input, a list of tensors per sequence input
        backend = device.backend
        for info, value in zip(self.inputs, values):
            if value is None:  # an empty optional
                out.append(None)
            elif info.kind == "sequence" or info.kind == "optional" and isinstance(value, (list, tuple)):
                # items may differ in shape: a sequence's symbolic dims bind per item, not across
                out.append([self._tensor(info, v, device, backend, {}) for v in value])
            else:
                out.append(self._tensor(info, value, device, backend, dims))
        return out

    def _tensor(
        self, info: ValueInfo, value: Any, device: burn.Device, backend: Any, dims: dict
    ) -> burn.Tensor:
        want = burn.dtype(info.dtype) if info.dtype in _BURN_NAMES else None
        if not isinstance(value, burn.Tensor):
            arr = stored(np.asarray(value))  # float8, int4, uint16 ... in the dtype burn holds them in
            if want is None:
                want = burn.dtype(arr.dtype.name) if arr.dtype.kind != "b" else burn.bool_
            self._check_kind(info, _kind(arr.dtype), want)
            value = burn.from_numpy(
                np.asarray(arr, order="C"), device=device, dtype=on_backend(want, backend)
            )
        else:
            kind = "f" if value.dtype.is_float else "b" if value.dtype.is_bool else "i"
            if want is not None:
                self._check_kind(info, kind, want)
                target = on_backend(want, backend)
                if value.dtype is not target:
                    value = value.cast(on_backend(want, value.device.backend))
            if value.device != device:
                value = value.to(device)
            if want is not None and value.dtype is not on_backend(want, backend):
                value = value.cast(on_backend(want, backend))
        shape = tuple(value.shape)
        if info.shape is not None:
            if len(shape) != len(info.shape):
                raise burn.ShapeError(
                    f"{self._source}: input {info.name!r} expects rank {len(info.shape)} "
                    f"(shape {_fmt(info.shape)}), got shape {shape}"
                )
            for axis, (want_dim, got) in enumerate(zip(info.shape, shape)):
                if isinstance(want_dim, int) and want_dim > 0 and want_dim != got:
                    raise burn.ShapeError(
                        f"{self._source}: input {info.name!r} expects shape {_fmt(info.shape)}, got {shape} "
                        f"(dim {axis}: {got} != {want_dim})"
                    )
                if isinstance(want_dim, str):
                    seen = dims.setdefault(want_dim, (got, info.name))
                    if seen[0] != got:
                        raise burn.ShapeError(
                            f"{self._source}: symbolic dim {want_dim!r} is {seen[0]} in input {seen[1]!r} "
                            f"but {got} in input {info.name!r}"
                        )
        return value

    def _check_kind(self, info: ValueInfo, kind: str, want: burn.DType) -> None:
        got = "float" if kind == "f" else "bool" if kind == "b" else "integer"
        wanted = "float" if want.is_float else "bool" if want.is_bool else "integer"
        if got != wanted:
            raise burn.DTypeError(
                f"{self._source}: input {info.name!r} expects {info.dtype}, got a {got} tensor"
            )

    def _repr_fields(self) -> dict[str, Any]:
        return {
            "opset": self.opset,
            "inputs": ", ".join(map(str, self.inputs)),
            "outputs": ", ".join(map(str, self.outputs)),
        }


_BURN_NAMES = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint32",
        "bool",
    }
)


def _declared_on_device(value: Any, elem_type: int) -> Any:
    """An output (a tensor, a sequence's list, None) cast on its device to its declared dtype."""
    if isinstance(value, list):
        return [_declared_on_device(v, elem_type) for v in value]
    if isinstance(value, burn.Tensor):
        return on_device_declared(value, elem_type)
    return value


def _kind(dt: np.dtype) -> str:
    """numpy's kind letter, with ml_dtypes' bfloat16 (kind 'V') as the float it is."""
    return "f" if dt.name == "bfloat16" else dt.kind


def _fmt(shape: tuple[Any, ...]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def load(
    source: str | os.PathLike[str] | bytes | Any,
    device: burn.Device | str | None = None,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    optimize: bool = True,
) -> OnnxModel:
    """Load an ONNX model (a path, bytes or an ``onnx.ModelProto``) as a burn module on ``device``.

    Every unsupported node (op type, domain, opset or attribute value) is listed in one
    ``UnsupportedOnnxError``; a file that cannot be parsed raises ``OnnxLoadError``. ``base_dir`` is the
    folder of external data files when loading from bytes (a path's own folder otherwise).

    ``optimize=True`` (the default) runs inference graph passes at load time: Identity and inference
    Dropout nodes are dropped, nodes that depend on constants only are computed once, and a
    BatchNormalization after a Conv/ConvTranspose/Gemm (all of its inputs initializers) is folded into
    that node's weights, a following Relu into the Conv or Add before it. The fold happens when the
    node runs, from the current params, so ``model.weights`` keep the file's initializers and names:
    fine-tuning on an autodiff device (gradients reach the BN scale and shift through the fold),
    ``burn.record`` and ``load_record`` behave as with ``optimize=False``. Off autodiff the folded
    weights are computed once and reused until a param is replaced. Results match the unoptimised
    graph to float rounding; ``optimize=False`` runs the file's nodes one by one.

    >>> import onnx, burn_onnx
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n"])], [helper.make_tensor_value_info("y", T.FLOAT, ["n"])])
    >>> m = burn_onnx.load(helper.make_model(g).SerializeToString(), device="cpu")
    >>> m(burn.tensor([-1.0, 2.0])).tolist(), m.inputs[0].shape
    ([0.0, 2.0], ('n',))
    """
    dev = burn.device(device) if isinstance(device, str) else (device or burn.default_device())
    model = read_model(source, base_dir)
    problems = unsupported(model)
    if problems:
        raise UnsupportedOnnxError(problems, model.source)
    narrowed = {burn.dtype(a.dtype.name) for a in model.graph.initializers.values() if a.dtype.kind == "f"}
    narrowed |= {
        burn.dtype(v.dtype) for v in (*model.graph.inputs, *model.graph.outputs) if v.dtype in _BURN_NAMES
    }
    warn_narrowed(dev.backend, narrowed, model.source)
    return OnnxModel(model, dev, optimize=optimize)
