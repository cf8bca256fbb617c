"""Post-training quantization of modules: ``quantize_module`` swaps every Linear and convolution for a
quantized twin holding int8 weights (values, scales and zero points as recorded ``RunningState``s, so
``burn.record`` saves and loads them exactly), for inference.

``QuantizedLinear`` quantizes its input dynamically (per tensor, affine, as PyTorch's dynamic
quantization) and multiplies int8 by int8 with exact integer accumulation (the backend's
``quantized_matmul``), when its weights are quantized per tensor or per output channel; per-block
weights are dequantized on load. ``QuantizedConv`` dequantizes its weights and runs the float conv.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._tensor import Tensor, _wrap
from ..nn import functional as F
from ..nn._conv import _ConvNd
from ..nn._linear import Linear
from ..nn._module import Module
from ..nn._param import Param, RunningState
from ._qtensor import QuantizedTensor, quantize_dynamic
from ._scheme import QuantScheme

ACTIVATIONS = QuantScheme(mode="affine")  # dynamic per-tensor activations, as torch's quint8 observers


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
        return QuantizedTensor(
            self.weight_values.val(),
            self.weight_scale.val(),
            self.weight_zero_point.val(),
            self.scheme,
            self._float_dtype,
        )


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
    """A Conv1d/2d/3d with int8 weights, dequantized on load (the float conv runs on the dequantized
    weights; an integer conv kernel is not there yet).

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
        fn = getattr(F, f"conv{self._n}d")
        w = self.weight().dequantize().cast(x.dtype)
        bias = None if self.bias is None else self.bias.val()
        return fn(
            x, w, bias, stride=self.stride, padding=self.padding, dilation=self.dilation, groups=self.groups
        )


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
    acc = acc - zx * w.cast(ints).sum(0, keepdim=True)
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
