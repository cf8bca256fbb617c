"""Post-training quantization of modules: ``quantize_module`` swaps every Linear and convolution for a
quantized twin holding int8 weights (values, scales and zero points as recorded ``RunningState``s, so
``burn.record`` saves and loads them exactly), for inference.

``QuantizedLinear`` quantizes its input dynamically (per tensor, affine, as PyTorch's dynamic
quantization) and multiplies int8 by int8 with exact integer accumulation (the backend's
``quantized_matmul``), when its weights are quantized per tensor or per output channel; per-block
weights are dequantized on load. ``QuantizedConv`` does the same for 1-d and 2-d convolutions: the
float input is zero-padded, quantized, unfolded (the backend's ``unfold4d``, im2col) and multiplied
by the int8 weights per group; 3-d convolutions and per-block weights are dequantized on load.

The zero points are corrected after the integer product: with ``a`` the activation values (zero
point ``zx``) and ``w`` the weights (``zw``), ``sum_k (a - zx)(w - zw) = a.w - zx * sum_k w -
zw * sum_k a + K * zx * zw``. The weight sums are computed once per weight (``_int_sum``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._tensor import Tensor, _wrap
from ..backend._shapes import conv_out_sizes_padded
from ..nn import functional as F
from ..nn._conv import _ConvNd
from ..nn._linear import Linear
from ..nn._module import Module
from ..nn._param import Param, RunningState
from ._qtensor import QuantizedTensor, quantize_dynamic
from ._scheme import QuantScheme

ACTIVATIONS = QuantScheme(mode="affine")  # dynamic per-tensor activations, as torch's quint8 observers


class _WeightCache:
    """The last ``QuantizedTensor`` a module built from its states (with its cached int sums), and the
    state tensors it was built from; not module state (records and ``map`` skip it)."""

    __slots__ = ("owner", "key", "value")

    def __init__(self, owner: Module) -> None:
        self.owner = owner  # copies (``to``, ``valid``) share the attribute: each builds its own
        self.key: tuple[Tensor, ...] = ()
        self.value: QuantizedTensor | None = None


class _QuantizedWeights(Module):
    """A module holding one quantized weight as three recorded states: ``weight_values``,
    ``weight_scale`` and ``weight_zero_point``."""

    scheme: QuantScheme

    def _store(self, q: QuantizedTensor) -> None:
        self.scheme = q.scheme
        self.weight_values = RunningState(q.int_repr())
        self.weight_scale = RunningState(q.scale())
        self.weight_zero_point = RunningState(q.zero_point())
        self._float_dtype = q.float_dtype

    def weight(self) -> QuantizedTensor:
        """The quantized weight (its values, scales and zero points as recorded)."""
        key = (self.weight_values.val(), self.weight_scale.val(), self.weight_zero_point.val())
        cache = self.__dict__.get("_weight_cache")
        if cache is None or cache.owner is not self:
            cache = self._weight_cache = _WeightCache(self)
        if cache.value is None or any(a is not b for a, b in zip(key, cache.key)):
            # a loaded record or a device move replaced the states: rebuild (and drop the old sums)
            cache.key, cache.value = key, QuantizedTensor(*key, self.scheme, self._float_dtype)
        return cache.value


class QuantizedLinear(_QuantizedWeights):
    """A Linear with int8 weights (d_input, d_output): ``y = x @ dequant(weight) + bias`` computed as an
    int8 x int8 product with integer accumulation (inputs quantized dynamically per tensor).

    >>> from burn.quantization import QuantScheme, QuantizedLinear
    >>> layer = QuantizedLinear(nn.LinearConfig(4, 2).init(), QuantScheme())
    >>> layer(burn.ones((3, 4))).shape, layer.weight_values.dtype
    ((3, 2), burn.int8)
    """

    def __init__(self, linear: Linear, scheme: QuantScheme) -> None:
        self.d_input, self.d_output = linear.d_input, linear.d_output
        if scheme.granularity == "per_channel":
            scheme = replace(scheme, axis=1)  # one scale per output feature
        self._store(quantize_dynamic(linear.weight.val(), scheme))
        self.bias = None if linear.bias is None else Param(linear.bias.val().detach(), require_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        bias = None if self.bias is None else self.bias.val()
        if self.scheme.granularity == "per_block":
            return F.linear(x, self.weight().dequantize().cast(x.dtype), bias)
        y = quantized_linear(x, self.weight())
        return y if bias is None else y + bias


class QuantizedConv(_QuantizedWeights):
    """A Conv1d/2d/3d with int8 weights. 1-d and 2-d convolutions with weights quantized per tensor
    or per output channel run as int8 x int8 products with integer accumulation
    (``quantized_conv2d``: input quantized dynamically per tensor, affine); 3-d convolutions and
    per-block weights are dequantized on load and run the float conv.

    >>> from burn.quantization import QuantScheme, QuantizedConv
    >>> conv = QuantizedConv(nn.Conv2dConfig((1, 4), 3).init(), QuantScheme(granularity="per_channel"))
    >>> conv(burn.ones((1, 1, 5, 5))).shape
    (1, 4, 3, 3)
    """

    def __init__(self, conv: _ConvNd, scheme: QuantScheme) -> None:
        if conv._transposed:
            raise TypeError("QuantizedConv: transposed convolutions are not quantized")
        if scheme.granularity == "per_channel":
            scheme = replace(scheme, axis=0)  # one scale per output channel
        self.channels, self.kernel_size = conv.channels, conv.kernel_size
        self.stride, self.padding, self.dilation, self.groups = (
            conv.stride,
            conv.padding,
            conv.dilation,
            conv.groups,
        )
        self._n = conv._n
        self._store(quantize_dynamic(conv.weight.val(), scheme))
        self.bias = None if conv.bias is None else Param(conv.bias.val().detach(), require_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        bias = None if self.bias is None else self.bias.val()
        args = (self.stride, self.padding, self.dilation, self.groups)
        if self._n in (1, 2) and self.scheme.granularity != "per_block":
            if self._n == 2:
                return quantized_conv2d(x, self.weight(), bias, *args)
            return _conv1d_as_2d(x, self.weight(), bias, *args)
        fn = getattr(F, f"conv{self._n}d")
        w = self.weight().dequantize().cast(x.dtype)
        return fn(x, w, bias, stride=args[0], padding=args[1], dilation=args[2], groups=args[3])


def _conv1d_as_2d(
    x: Tensor,
    weight: QuantizedTensor,
    bias: Tensor | None,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> Tensor:
    """A 1-d conv as a 2-d one over a height of 1 (weights viewed (O, C/g, 1, k))."""
    from .._errors import ShapeError

    if x.ndim != 3:
        raise ShapeError(f"QuantizedConv (1-d): x must be (N, C, L), got shape {x.shape}")
    w4 = weight.int_repr().reshape(*weight.shape[:2], 1, weight.shape[2])
    q4 = QuantizedTensor(w4, weight.scale(), weight.zero_point(), weight.scheme, weight.float_dtype)
    q4._sums[(1, 2, 3)] = weight._int_sum((1, 2)).reshape(weight.shape[0], 1, 1, 1)  # cached on weight
    y = quantized_conv2d(
        x.reshape(x.shape[0], x.shape[1], 1, x.shape[2]),
        q4,
        bias,
        (1, stride[0]),
        (0, padding[0]),
        (1, dilation[0]),
        groups,
    )
    return y.reshape(y.shape[0], y.shape[1], y.shape[3])


def quantized_conv2d(
    x: Tensor,
    weight: QuantizedTensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] = 0,
    dilation: int | tuple[int, ...] = 1,
    groups: int = 1,
) -> Tensor:
    """``conv2d(x, dequant(weight), bias)`` for a float x (N, C, H, W) and an int8 weight
    (C_out, C / groups, kh, kw) quantized per tensor or per output channel (axis 0), as an integer
    convolution: x is zero-padded in float (so the padding quantizes to exactly the zero point),
    quantized dynamically (per tensor, affine), unfolded (im2col, ``unfold4d``) and multiplied by the
    weights per group with exact integer accumulation (``quantized_matmul``); zero points and scales
    are applied to the int result. Output (N, C_out, H_out, W_out), as ``F.conv2d``.

    >>> from burn.quantization import QuantScheme, quantized_conv2d
    >>> w = burn.ones((2, 1, 3, 3)).quantize_dynamic(QuantScheme())
    >>> y = quantized_conv2d(burn.ones((1, 1, 4, 4)), w, padding=1)
    >>> y.shape, round(y[0, 0, 1, 1].item(), 1), round(y[0, 1, 0, 0].item(), 1)
    ((1, 2, 4, 4), 9.0, 4.0)
    """
    from .._errors import ShapeError

    if not isinstance(weight, QuantizedTensor):
        raise TypeError(f"quantized_conv2d: weight must be a QuantizedTensor, got {type(weight).__name__}")
    if x.ndim != 4 or weight.ndim != 4:
        raise ShapeError(
            f"quantized_conv2d: x {x.shape} and weight {weight.shape}: expected (N, C, H, W) and "
            "(C_out, C / groups, kh, kw)"
        )
    s = weight.scheme
    if s.granularity == "per_block" or (s.granularity == "per_channel" and s.axis % 4 != 0):
        raise ValueError(
            "quantized_conv2d: the weight must be quantized per tensor or per output channel (axis 0)"
        )
    st, pad, dil = (_pair("stride", stride), _pair("padding", padding), _pair("dilation", dilation))
    n, c, h, wd = x.shape
    c_out, c_g, kh, kw = weight.shape
    if not isinstance(groups, int) or groups < 1 or c % groups or c_out % groups or c // groups != c_g:
        raise ShapeError(
            f"quantized_conv2d: x has {c} channels and weight {weight.shape} with groups={groups}: "
            f"expected C = groups * weight.shape[1] and C_out divisible by groups"
        )
    oh, ow = conv_out_sizes_padded((h, wd), (kh, kw), st, pad, dil)
    if oh < 1 or ow < 1:
        raise ShapeError(f"quantized_conv2d: the kernel {(kh, kw)} is larger than the padded input {x.shape}")
    b = x.backend
    if any(pad):  # float zeros quantize to the zero point: the integer padding is then exact
        x = _wrap(b.pad(x.primitive, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2), "constant", 0.0), b)
    qx = quantize_dynamic(x, ACTIVATIONS)
    a = qx.int_repr()
    depth = c_g * kh * kw  # the contraction of each group
    cols = _wrap(b.unfold4d(a.primitive, (kh, kw), st, (0, 0), dil), b, a.dtype)
    cols = cols.reshape(n, groups, depth, oh * ow)  # rows run channel-major, as the weight's
    w = weight.int_repr()
    wg = w.reshape(groups, c_out // groups, depth)
    acc = _wrap(b.quantized_matmul(wg.primitive, cols.primitive), b)  # (N, G, C_out / G, L)
    ints = acc.dtype
    zx = qx.zero_point().cast(ints)
    acc = acc - zx * weight._int_sum((1, 2, 3)).reshape(groups, c_out // groups, 1)
    if s.mode == "affine":
        zw = weight.zero_point().cast(ints).reshape(-1, 1)  # () or (C_out,): per output row
        zw = zw.reshape(groups, c_out // groups, 1) if zw.numel() > 1 else zw.reshape(1, 1)
        acc = acc - cols.cast(ints).sum(2, keepdim=True) * zw + zx * zw * depth
    scale = qx.scale() * weight.scale()  # () or (C_out,)
    scale = scale.reshape(groups, c_out // groups, 1) if scale.ndim else scale
    y = (acc.cast(scale.dtype) * scale).cast(x.dtype).reshape(n, c_out, oh, ow)
    return y if bias is None else y + bias.reshape(1, c_out, 1, 1)


def _pair(name: str, v: Any) -> tuple[int, int]:
    t = (v, v) if isinstance(v, int) else tuple(v)
    if len(t) != 2 or not all(isinstance(i, int) and i >= 0 for i in t):
        raise ValueError(f"quantized_conv2d: {name} must be an int or a pair of non-negative ints, got {v!r}")
    return (int(t[0]), int(t[1]))


def quantized_linear(x: Tensor, weight: QuantizedTensor) -> Tensor:
    """``x @ weight`` for a float x (..., K) and an int8 weight (K, N) quantized per tensor or per output
    channel (axis 1): x is quantized dynamically (per tensor, affine), the int8 product accumulates
    exactly in integers, and the zero points and scales are applied to the (M, N) result.

    >>> from burn.quantization import QuantScheme, quantized_linear
    >>> w = burn.tensor([[1.0, -1.0], [0.5, 2.0]]).quantize_dynamic(QuantScheme())
    >>> [round(v, 1) for v in quantized_linear(burn.tensor([[1.0, 1.0]]), w).tolist()[0]]
    [1.5, 1.0]
    """
    from .._errors import ShapeError

    if not isinstance(weight, QuantizedTensor):
        raise TypeError(f"quantized_linear: weight must be a QuantizedTensor, got {type(weight).__name__}")
    if weight.ndim != 2 or x.ndim < 1 or x.shape[-1] != weight.shape[0]:
        raise ShapeError(
            f"quantized_linear: x {x.shape} and weight {weight.shape}: expected (..., K) and (K, N)"
        )
    s = weight.scheme
    if s.granularity == "per_block" or (s.granularity == "per_channel" and s.axis % 2 != 1):
        raise ValueError(
            "quantized_linear: the weight must be quantized per tensor or per output channel (axis 1)"
        )
    lead, (k, n) = x.shape[:-1], weight.shape
    x2 = x.reshape(-1, k)
    qx = quantize_dynamic(x2, ACTIVATIONS)
    b = x.backend
    a, w = qx.int_repr(), weight.int_repr()
    acc = _wrap(b.quantized_matmul(a.primitive, w.primitive), b)  # (M, N) default int
    ints = acc.dtype
    zx, zw = qx.zero_point().cast(ints), weight.zero_point().cast(ints)
    # sum_k (a - zx)(w - zw) = a.w - zx * colsum(w) - zw * rowsum(a) + k * zx * zw
    acc = acc - zx * weight._int_sum((0,))
    if s.mode == "affine":
        acc = acc - a.cast(ints).sum(1, keepdim=True) * zw + zx * zw * k
    scale = qx.scale() * weight.scale()  # () or (N,)
    y = acc.cast(scale.dtype) * scale
    return y.cast(x.dtype).reshape(*lead, n)


def quantize_module(model: Module, scheme: QuantScheme) -> Module:
    """A copy of ``model`` with every Linear and Conv1d/2d/3d replaced by its quantized twin (weights
    int8 under ``scheme``; per-channel schemes use each layer's output-channel axis), for inference.

    >>> from burn.quantization import QuantScheme, quantize_module
    >>> model = nn.Sequential(nn.LinearConfig(4, 8).init(), nn.Relu(), nn.LinearConfig(8, 2).init())
    >>> qmodel = quantize_module(model, QuantScheme(granularity="per_channel"))
    >>> qmodel(burn.ones((1, 4))).shape, sorted(qmodel.record())[:3]
    ((1, 2), ['layers.0.bias', 'layers.0.weight_scale', 'layers.0.weight_values'])
    """
    if not isinstance(model, Module):
        raise TypeError(f"quantize_module: model must be a burn.nn.Module, got {type(model).__name__}")
    if not isinstance(scheme, QuantScheme):
        raise TypeError(f"quantize_module: scheme must be a QuantScheme, got {type(scheme).__name__}")
    return _swap(model.valid(), scheme)


def _swap(value: Any, scheme: QuantScheme) -> Any:
    import copy

    if isinstance(value, Linear):
        return QuantizedLinear(value, scheme)
    if isinstance(value, _ConvNd) and not value._transposed:
        return QuantizedConv(value, scheme)
    if isinstance(value, Module):
        new = copy.copy(value)
        for name, v in vars(value).items():
            setattr(new, name, _swap(v, scheme))
        return new
    if isinstance(value, list):
        return [_swap(v, scheme) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_swap(v, scheme) for v in value)
    if isinstance(value, dict):
        return {k: _swap(v, scheme) for k, v in value.items()}
    return value
