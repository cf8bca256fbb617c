"""burn.quantization: int8 quantized tensors and post-training quantization of modules (Burn 0.16).

>>> from burn.quantization import QuantScheme, quantize_module
>>> q = burn.tensor([[0.1, -0.2], [0.3, 0.4]]).quantize_dynamic(QuantScheme(granularity="per_channel"))
>>> q.int_repr().dtype, q.scale().shape
(burn.int8, (2,))

- ``QuantScheme(dtype="int8", mode="symmetric"|"affine", granularity="per_tensor"|"per_channel",
  axis=0, block_size=None)``; ``x.quantize(scheme, scale, zero_point=None)`` and
  ``x.quantize_dynamic(scheme)`` give a ``QuantizedTensor`` (``int_repr()``, ``scale()``,
  ``zero_point()``, ``dequantize()``).
- ``quantize_module(model, scheme)``: Linear and conv weights to int8 for inference
  (``QuantizedLinear``, ``QuantizedConv``); ``quantized_linear(x, qweight)`` and
  ``quantized_conv2d(x, qweight, bias, stride, padding, dilation, groups)``: the int8 products with
  integer accumulation.
"""

from ._modules import QuantizedConv, QuantizedLinear, quantize_module, quantized_conv2d, quantized_linear
from ._qtensor import QuantizedTensor
from ._scheme import QuantScheme

__all__ = [
    "QuantScheme",
    "QuantizedConv",
    "QuantizedLinear",
    "QuantizedTensor",
    "quantize_module",
    "quantized_conv2d",
    "quantized_linear",
]
