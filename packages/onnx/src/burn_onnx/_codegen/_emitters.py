"""The emitter table: one small function per ONNX op type that writes its node as one line of burn code
(STYLE.md: rules as tables). ``emitter(gen, node) -> str`` returns the expression of the node's first
output; layers (Conv, Linear, norms, pools, Embedding) are added to ``gen`` and called as ``self.<attr>``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._dtypes import ONNX_TO_BURN
from .._graph import Node
from ._gen import Gen, Unsupported, literal, tup

Emitter = Callable[[Gen, Node], str]
EMITTERS: dict[str, Emitter] = {}


def emits(*names: str) -> Callable[[Emitter], Emitter]:
    def register(fn: Emitter) -> Emitter:
        for name in names:
            EMITTERS[name] = fn
        return fn

    return register


def _single_output(node: Node) -> None:
    if any(node.outputs[1:]):
        raise Unsupported("only the first output is supported")


# ------------------------------------------------------------------ element-wise

UNARY = {
    "Relu": "F.relu({x})",
    "Sigmoid": "F.sigmoid({x})",
    "Tanh": "{x}.tanh()",
    "Exp": "{x}.exp()",
    "Log": "{x}.log()",
    "Sqrt": "{x}.sqrt()",
    "Abs": "{x}.abs()",
    "Neg": "-{x}",
    "Erf": "{x}.erf()",
    "Reciprocal": "{x}.reciprocal()",
    "Floor": "{x}.floor()",
    "Ceil": "{x}.ceil()",
    "Sin": "{x}.sin()",
    "Cos": "{x}.cos()",
    "Softplus": "F.softplus({x})",
    "Mish": "F.mish({x})",
    "HardSwish": "{x} * ({x} / 6.0 + 0.5).clamp(0.0, 1.0)",
}
BINARY = {
    "Add": "+",
    "Sub": "-",
    "Mul": "*",
    "Div": "/",
    "Pow": "**",
    "Equal": "==",
    "Less": "<",
    "Greater": ">",
    "LessOrEqual": "<=",
    "GreaterOrEqual": ">=",
}


def _unary(template: str) -> Emitter:
    def emit(g: Gen, node: Node) -> str:
        return template.format(x=g.arg(node.inputs[0]))

    return emit


for _name, _template in UNARY.items():
    emits(_name)(_unary(_template))


def _binary(symbol: str) -> Emitter:
    def emit(g: Gen, node: Node) -> str:
        if node.opset < 7 and node.attrs.get("broadcast", 0):
            raise Unsupported("legacy broadcast=1 (opset < 7) is not supported")
        return f"{g.arg(node.inputs[0])} {symbol} {g.arg(node.inputs[1])}"

    return emit


for _name, _symbol in BINARY.items():
    emits(_name)(_binary(_symbol))


@emits("Identity", "Dropout")
def identity(g: Gen, node: Node) -> str:
    _single_output(node)
    return g.arg(node.inputs[0])  # the driver aliases a bare variable instead of writing a line


@emits("Gelu")
def gelu(g: Gen, node: Node) -> str:
    approx = node.attrs.get("approximate", "none")
    extra = f', approximate="{approx}"' if approx != "none" else ""
    return f"F.gelu({g.arg(node.inputs[0])}{extra})"


@emits("LeakyRelu")
def leaky_relu(g: Gen, node: Node) -> str:
    return f"F.leaky_relu({g.arg(node.inputs[0])}, {literal(float(node.attrs.get('alpha', 0.01)))})"


@emits("HardSigmoid")
def hard_sigmoid(g: Gen, node: Node) -> str:
    alpha, beta = float(node.attrs.get("alpha", 0.2)), float(node.attrs.get("beta", 0.5))
    return f"({g.arg(node.inputs[0])} * {literal(alpha)} + {literal(beta)}).clamp(0.0, 1.0)"


@emits("Clip")
def clip(g: Gen, node: Node) -> str:
    x = g.arg(node.inputs[0])
    if node.opset < 11:
        lo, hi = node.attrs.get("min"), node.attrs.get("max")
    else:
        lo = g.need_const(node.input(1), "min").item() if node.input(1) else None
        hi = g.need_const(node.input(2), "max").item() if node.input(2) else None
    if lo is None and hi is None:
        return x
    if hi is None:
        return f"{x}.clamp_min({literal(lo)})"
    if lo is None:
        return f"{x}.clamp_max({literal(hi)})"
    return f"{x}.clamp({literal(lo)}, {literal(hi)})"


def _softmax(fn: str) -> Emitter:
    def emit(g: Gen, node: Node) -> str:
        x = node.inputs[0]
        a = int(node.attrs.get("axis", -1 if node.opset >= 13 else 1))
        if node.opset < 13:  # older opsets flatten to 2-d at ``axis``: the same only for the last axis
            rank = g.rank(x)
            if a != -1 and (rank is None or a != rank - 1):
                raise Unsupported(f"axis={a} before opset 13 (2-d coercion) is not supported")
        return f"{fn}({g.arg(x)}, {a})"

    return emit


emits("Softmax")(_softmax("F.softmax"))
emits("LogSoftmax")(_softmax("F.log_softmax"))


@emits("Cast")
def cast(g: Gen, node: Node) -> str:
    to = ONNX_TO_BURN.get(int(node.attrs["to"]))
    if to is None:
        raise Unsupported(f"cast to ONNX type {node.attrs['to']} is not supported")
    return f"{g.arg(node.inputs[0])}.cast(burn.{to if to != 'bool' else 'bool_'})"


@emits("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin")
def reduce(g: Gen, node: Node) -> str:
    method = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}[node.op_type]
    x = node.inputs[0]
    from_input = node.op_type == "ReduceSum" and node.opset >= 13 or node.opset >= 18
    if from_input and node.input(1):
        axes = g.ints(node.input(1), "axes")
    elif not from_input and "axes" in node.attrs:
        axes = list(node.attrs["axes"])
    else:
        rank = g.rank(x)
        if rank is None or node.attrs.get("noop_with_empty_axes", 0):
            raise Unsupported("reducing over all axes needs a known rank")
        axes = list(range(rank))
    dims = tup(g.axis(a, x) for a in axes)
    keep = ", keepdim=True" if node.attrs.get("keepdims", 1) else ""
    return f"{g.arg(x)}.{method}({dims}{keep})"


# ------------------------------------------------------------------ shapes


@emits("Reshape")
def reshape(g: Gen, node: Node) -> str:
    x = g.arg(node.inputs[0])
    target = g.ints(node.input(1), "the target shape") if node.opset >= 5 else list(node.attrs["shape"])
    zero_copies = not node.attrs.get("allowzero", 0)
    dims = [f"{x}.shape[{i}]" if d == 0 and zero_copies else str(d) for i, d in enumerate(target)]
    return f"{x}.reshape({', '.join(dims)})"


@emits("Flatten")
def flatten(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    a = g.axis(int(node.attrs.get("axis", 1)), x)
    v = g.arg(x)
    if a < 0:
        raise Unsupported("a negative axis needs a known rank")
    if a == 0:
        return f"{v}.reshape(1, -1)"
    if a == g.rank(x):
        return f"{v}.reshape(-1, 1)"
    return f"{v}.flatten(1)" if a == 1 else f"{v}.flatten(0, {a - 1}).flatten(1)"


@emits("Transpose")
def transpose(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    perm = node.attrs.get("perm")
    if perm is None:
        rank = g.rank(x)
        if rank is None:
            raise Unsupported("the default (reversing) perm needs a known rank")
        perm = list(range(rank))[::-1]
    return f"{g.arg(x)}.permute({', '.join(str(int(p)) for p in perm)})"


@emits("Squeeze")
def squeeze(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    axes = g.ints(node.input(1), "axes") if node.opset >= 13 and node.input(1) else node.attrs.get("axes")
    if axes is None:
        return f"{g.arg(x)}.squeeze()"
    dims = [g.axis(int(a), x) for a in axes]
    return f"{g.arg(x)}.squeeze({dims[0] if len(dims) == 1 else tup(dims)})"


@emits("Unsqueeze")
def unsqueeze(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    axes = g.ints(node.input(1), "axes") if node.opset >= 13 else list(node.attrs["axes"])
    rank = g.rank(x)
    if any(a < 0 for a in axes) and rank is None:
        raise Unsupported("negative axes need a known rank")
    out_rank = (rank or 0) + len(axes)
    dims = sorted(a + out_rank if a < 0 else a for a in axes)
    return g.arg(x) + "".join(f".unsqueeze({d})" for d in dims)


@emits("Concat")
def concat(g: Gen, node: Node) -> str:
    parts = [g.arg(i) for i in node.inputs if i]
    a = g.axis(int(node.attrs["axis"]), node.inputs[0])
    return f"burn.cat([{', '.join(parts)}], {a})"


@emits("Gather")
def gather(g: Gen, node: Node) -> str:
    data, indices = node.inputs[0], node.inputs[1]
    a = g.axis(int(node.attrs.get("axis", 0)), data)
    table = g.const(data)
    if table is not None and table.dtype.kind == "f" and table.ndim == 2 and a == 0:
        attr = g.layer(
            "embedding",
            f"nn.EmbeddingConfig({table.shape[0]}, {table.shape[1]}).init(device)",
            {"weight": table},
        )
        return f"self.{attr}({g.arg(indices)})"
    idx = g.need_const(indices, "the indices (unless gathering rows of a constant table)")
    if a < 0:
        raise Unsupported("a negative axis needs a known rank")
    x = g.arg(data)
    if idx.ndim == 0:
        return f"{x}[{':, ' * a}{int(idx)}]"
    if idx.ndim == 1:
        return f"{x}.select({a}, {[int(i) for i in idx]})"
    raise Unsupported("constant indices of rank > 1 are not supported yet")


# ------------------------------------------------------------------ layers


def _kw(**items: object) -> str:
    """``, key=value`` for every item that is not None."""
    return "".join(f", {k}={v}" for k, v in items.items() if v is not None)


@emits("Conv")
def conv(g: Gen, node: Node) -> str:
    w = g.need_const(node.input(1), "the weight")
    b = g.const(node.input(2)) if node.input(2) else None
    if node.input(2) and b is None:
        raise Unsupported("the bias must be a constant")
    nd = w.ndim - 2
    if nd not in (1, 2, 3):
        raise Unsupported(f"{nd}-d convolutions are not supported")
    groups = int(node.attrs.get("group", 1))
    kernel = tuple(int(k) for k in w.shape[2:])
    stride = [int(s) for s in node.attrs.get("strides", [1] * nd)]
    dilation = [int(d) for d in node.attrs.get("dilations", [1] * nd)]
    from .._ops._nn import _window_pads  # the import side's pad rule (its module loads every converter)

    x = node.inputs[0]
    mode = node.attrs.get("auto_pad", "NOTSET")
    spatial = g.shapes.get(x, (None,) * (nd + 2))[2:]
    if mode in ("SAME_UPPER", "SAME_LOWER") and any(s != 1 for s in stride):
        if any(not isinstance(n, int) for n in spatial):
            raise Unsupported(f"auto_pad={mode} with strides needs known spatial sizes")
    begin, end = _window_pads(node, tuple(n or 1 for n in spatial), kernel, stride, dilation)
    c_out, c_in = int(w.shape[0]), int(w.shape[1]) * groups
    src = g.arg(x)
    if begin != end:  # asymmetric padding: pad explicitly, then convolve unpadded
        flat = [p for b_, e in zip(reversed(begin), reversed(end)) for p in (b_, e)]
        padded = g.fresh("padded")
        g.lines.append(f"{padded} = {src}.pad({flat})")
        src, begin = padded, [0] * nd
    pad = None if not any(begin) else (begin[0] if nd == 1 else tup(begin))
    if nd == 1:
        head = f"nn.Conv1dConfig({c_in}, {c_out}, {kernel[0]}"
        s, d = stride[0], dilation[0]
    else:
        head = f"nn.Conv{nd}dConfig({tup((c_in, c_out))}, {tup(kernel)}"
        s, d = tup(stride), tup(dilation)  # type: ignore[assignment]
    ctor = head + _kw(
        stride=s if any(v != 1 for v in stride) else None,
        padding=pad,
        dilation=d if any(v != 1 for v in dilation) else None,
        groups=groups if groups != 1 else None,
        bias=None if b is not None else False,
    )
    record = {"weight": w} if b is None else {"weight": w, "bias": b}
    attr = g.layer("conv", ctor + ").init(device)", record)
    return f"self.{attr}({src})"


@emits("ConvTranspose")
def conv_transpose(g: Gen, node: Node) -> str:
    w = g.need_const(node.input(1), "the weight")
    b = g.const(node.input(2)) if node.input(2) else None
    if node.input(2) and b is None:
        raise Unsupported("the bias must be a constant")
    nd = w.ndim - 2
    if nd not in (1, 2):
        raise Unsupported(f"{nd}-d transposed convolutions are not supported")
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET" or "output_shape" in node.attrs:
        raise Unsupported("auto_pad and output_shape are not supported (give explicit pads)")
    pads = [int(p) for p in node.attrs.get("pads", [0] * (2 * nd))]
    if pads[:nd] != pads[nd:]:
        raise Unsupported(f"asymmetric pads {pads} are not supported")
    groups = int(node.attrs.get("group", 1))
    kernel = [int(k) for k in w.shape[2:]]
    items = {
        "stride": [int(v) for v in node.attrs.get("strides", [1] * nd)],
        "dilation": [int(v) for v in node.attrs.get("dilations", [1] * nd)],
        "padding": pads[:nd],
        "padding_out": [int(v) for v in node.attrs.get("output_padding", [0] * nd)],
    }
    defaults = {"stride": 1, "dilation": 1, "padding": 0, "padding_out": 0}

    def val(v: list[int]) -> str:
        return str(v[0]) if nd == 1 else tup(v)

    c_in, c_out = int(w.shape[0]), int(w.shape[1]) * groups
    ctor = f"nn.ConvTranspose{nd}dConfig({tup((c_in, c_out))}, {val(kernel)}" + _kw(
        **{k: val(v) if any(x != defaults[k] for x in v) else None for k, v in items.items()},
        groups=groups if groups != 1 else None,
        bias=None if b is not None else False,
    )
    record = {"weight": w} if b is None else {"weight": w, "bias": b}
    attr = g.layer("conv_transpose", ctor + ").init(device)", record)
    return f"self.{attr}({g.arg(node.inputs[0])})"


def _norm_params(g: Gen, node: Node, channels: int | None, per: int = 1) -> dict[str, np.ndarray]:
    """gamma/beta per channel: a scale/bias of ``channels // per`` entries (per group) is repeated."""
    scale = g.need_const(node.input(1), "the scale").reshape(-1)
    bias = g.need_const(node.input(2), "the bias").reshape(-1)
    if channels is not None and scale.shape[0] != channels:
        scale, bias = np.repeat(scale, per), np.repeat(bias, per)
    return {"gamma": np.ascontiguousarray(scale), "beta": np.ascontiguousarray(bias)}


def _eps_kw(node: Node) -> str:
    eps = float(node.attrs.get("epsilon", 1e-5))
    return _kw(epsilon=literal(eps) if literal(eps) != "1e-05" else None)


@emits("InstanceNormalization")
def instance_norm(g: Gen, node: Node) -> str:
    record = _norm_params(g, node, None)
    c = record["gamma"].shape[0]
    attr = g.layer("instance_norm", f"nn.InstanceNormConfig({c}{_eps_kw(node)}).init(device)", record)
    return f"self.{attr}({g.arg(node.inputs[0])})"


@emits("GroupNormalization")
def group_norm(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    groups = int(node.attrs["num_groups"])
    channels = g.shapes.get(x, (None, None))[1]
    scale = g.need_const(node.input(1), "the scale").reshape(-1)
    if scale.shape[0] == groups and not isinstance(channels, int):
        raise Unsupported("a per-group scale (opset 18) needs the channel count of the input known")
    c = channels if isinstance(channels, int) else scale.shape[0]
    record = _norm_params(g, node, c, c // groups)
    ctor = f"nn.GroupNormConfig({groups}, {c}{_eps_kw(node)}).init(device)"
    return f"self.{g.layer('group_norm', ctor, record)}({g.arg(x)})"


def _linear(g: Gen, node: Node, w: np.ndarray, b: np.ndarray | None, x: str) -> str:
    d_in, d_out = w.shape
    ctor = f"nn.LinearConfig({d_in}, {d_out}{'' if b is not None else ', bias=False'}).init(device)"
    record = {"weight": w} if b is None else {"weight": w, "bias": b}
    return f"self.{g.layer('linear', ctor, record)}({x})"


@emits("Gemm")
def gemm(g: Gen, node: Node) -> str:
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    a = g.arg(node.inputs[0])
    if node.attrs.get("transA", 0):
        a = f"{a}.transpose(0, 1)"
    w = g.const(node.inputs[1])
    c = g.const(node.input(2)) if node.input(2) else None
    if w is None or (node.input(2) and c is None):
        b = g.arg(node.inputs[1]) + (".transpose(0, 1)" if node.attrs.get("transB", 0) else "")
        expr = f"{a} @ {b}" + (f" * {alpha!r}" if alpha != 1.0 else "")
        if node.input(2) and beta != 0.0:
            expr += f" + {g.arg(node.input(2))}" + (f" * {beta!r}" if beta != 1.0 else "")
        return expr
    # a Linear layer: alpha and beta folded into the recorded weight and bias
    weight = (w.T if node.attrs.get("transB", 0) else w) * np.float32(alpha)
    bias = None
    if c is not None and beta != 0.0:
        d_out = weight.shape[1]
        if c.size not in (1, d_out) or (c.ndim == 2 and c.shape[0] != 1):
            raise Unsupported(f"a bias of shape {c.shape} (not broadcast per output feature)")
        bias = np.broadcast_to(c.reshape(-1), (d_out,)) * np.float32(beta)
    return _linear(g, node, np.ascontiguousarray(weight, dtype=w.dtype), bias, a)


@emits("MatMul")
def matmul(g: Gen, node: Node) -> str:
    w = g.const(node.inputs[1])
    x = g.arg(node.inputs[0])
    if w is None or w.ndim != 2 or w.dtype.kind != "f":
        return f"{x} @ {g.arg(node.inputs[1])}"
    bias = None
    add = g.only_consumer(node.outputs[0])  # MatMul + Add(bias) as exported from nn.Linear: one layer
    if add is not None and add.op_type == "Add":
        other = add.inputs[1] if add.inputs[0] == node.outputs[0] else add.inputs[0]
        b = g.const(other)
        if b is not None and b.dtype.kind == "f" and b.shape == (w.shape[1],):
            bias = b
            g.fused[id(add)] = node.outputs[0]
    return _linear(g, node, w, bias, x)


@emits("BatchNormalization")
def batch_norm(g: Gen, node: Node) -> str:
    _single_output(node)
    if node.attrs.get("training_mode", 0):
        raise Unsupported("training_mode=1 is not supported")
    scale, bias, mean, var = (
        g.need_const(node.input(i), what)
        for i, what in enumerate(("the scale", "the bias", "the mean", "the variance"), 1)
    )
    eps = float(node.attrs.get("epsilon", 1e-5))
    momentum = 1.0 - float(node.attrs.get("momentum", 0.9))  # ONNX keeps the old share, burn the new
    kw = _kw(
        epsilon=literal(eps) if literal(eps) != "1e-05" else None,
        momentum=repr(round(momentum, 6)) if abs(momentum - 0.1) > 1e-6 else None,
    )
    record = {"gamma": scale, "beta": bias, "running_mean": mean, "running_var": var}
    attr = g.layer("batch_norm", f"nn.BatchNormConfig({scale.shape[0]}{kw}).init(device)", record)
    return f"self.{attr}({g.arg(node.inputs[0])})"


@emits("LayerNormalization")
def layer_norm(g: Gen, node: Node) -> str:
    _single_output(node)
    x = node.inputs[0]
    a = int(node.attrs.get("axis", -1))
    if a != -1 and (g.rank(x) is None or a != g.rank(x) - 1):  # type: ignore[operator]
        raise Unsupported(f"axis={a}: only the last axis is supported")
    scale = g.need_const(node.input(1), "the scale")
    bias = g.need_const(node.input(2), "the bias") if node.input(2) else np.zeros_like(scale)
    if scale.ndim != 1:
        raise Unsupported("the scale must be 1-d")
    eps = float(node.attrs.get("epsilon", 1e-5))
    kw = _kw(epsilon=literal(eps) if literal(eps) != "1e-05" else None)
    record = {"gamma": scale, "beta": np.broadcast_to(bias, scale.shape).copy()}
    attr = g.layer("layer_norm", f"nn.LayerNormConfig({scale.shape[0]}{kw}).init(device)", record)
    return f"self.{attr}({g.arg(x)})"


def _pool(g: Gen, node: Node, kind: str) -> str:
    _single_output(node)
    kernel = [int(k) for k in node.attrs["kernel_shape"]]
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise Unsupported(f"{nd}-d pooling is not supported")
    if node.attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise Unsupported("auto_pad is not supported yet (give explicit pads)")
    stride = [int(s) for s in node.attrs.get("strides", [1] * nd)]
    dilation = [int(d) for d in node.attrs.get("dilations", [1] * nd)]
    pads = [int(p) for p in node.attrs.get("pads", [0] * (2 * nd))]
    if pads[:nd] != pads[nd:] or any(p > k // 2 for p, k in zip(pads, kernel)):
        raise Unsupported(f"pads {pads} (asymmetric or over half the window) are not supported yet")
    one = nd == 1

    def val(v: list[int]) -> str:
        return str(v[0]) if one else tup(v)

    items: dict[str, object] = {
        "stride": val(stride),
        "padding": val(pads[:nd]) if any(pads) else None,
        "ceil_mode": True if node.attrs.get("ceil_mode", 0) else None,
    }
    if kind == "max":
        if node.attrs.get("storage_order", 0):
            raise Unsupported("storage_order=1 is not supported")
        items["dilation"] = val(dilation) if any(d != 1 for d in dilation) else None
        head, base = f"nn.MaxPool{nd}dConfig", "max_pool"
    else:
        if any(d != 1 for d in dilation):
            raise Unsupported("dilated average pooling is not supported")
        items["count_include_pad"] = (
            None if not any(pads) or node.attrs.get("count_include_pad", 0) else False
        )
        head, base = f"nn.AvgPool{nd}dConfig", "avg_pool"
    attr = g.layer(base, f"{head}({val(kernel)}{_kw(**items)}).init()", {})
    return f"self.{attr}({g.arg(node.inputs[0])})"


emits("MaxPool")(lambda g, node: _pool(g, node, "max"))
emits("AveragePool")(lambda g, node: _pool(g, node, "avg"))


def _global_pool(method: str) -> Emitter:
    def emit(g: Gen, node: Node) -> str:
        x = node.inputs[0]
        rank = g.rank(x)
        if rank is None:
            raise Unsupported("global pooling needs a known rank")
        return f"{g.arg(x)}.{method}({tup(range(2, rank))}, keepdim=True)"

    return emit


emits("GlobalAveragePool")(_global_pool("mean"))
emits("GlobalMaxPool")(_global_pool("max"))


@emits("Where")
def where(g: Gen, node: Node) -> str:
    return f"burn.where({', '.join(g.arg(i) for i in node.inputs)})"


@emits("Slice")
def slice_(g: Gen, node: Node) -> str:
    x = node.inputs[0]
    if node.opset < 10:
        starts, ends = list(node.attrs["starts"]), list(node.attrs["ends"])
        axes, steps = list(node.attrs.get("axes", range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = g.ints(node.input(1), "starts"), g.ints(node.input(2), "ends")
        axes = g.ints(node.input(3), "axes") if node.input(3) else list(range(len(starts)))
        steps = g.ints(node.input(4), "steps") if node.input(4) else [1] * len(starts)
    if any(s != 1 for s in steps):
        raise Unsupported("steps other than 1 are not supported yet")
    dims = [g.axis(a, x) for a in axes]
    if any(d < 0 for d in dims):
        raise Unsupported("negative axes need a known rank")
    big = 2**62  # ONNX's "to the end" markers (INT64_MAX) read as open slices
    index = [":"] * (max(dims) + 1)
    for d, s, e in zip(dims, starts, ends):
        index[d] = f"{s if s else ''}:{e if abs(e) < big else ''}"
    return f"{g.arg(x)}[{', '.join(index)}]"
