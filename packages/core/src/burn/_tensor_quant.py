"""Quantization methods of ``burn.Tensor`` (a mixin of the Tensor class): ``quantize`` with explicit
parameters and ``quantize_dynamic`` from the tensor's own range. The work lives in
``burn.quantization``, imported on first use so ``import burn`` stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._tensor import Tensor
    from .quantization import QuantizedTensor, QuantScheme


class QuantOps:
    __slots__ = ()

    def quantize(self: Tensor, scheme: QuantScheme, scale: Any, zero_point: Any = None) -> QuantizedTensor:
        """Quantize with explicit parameters: ``clamp(round_half_even(x / scale + zero_point), -128,
        127)`` (PyTorch's quantize_per_tensor / quantize_per_channel). ``scale``: a number or a tensor
        of the scheme's parameter shape ((C,) per channel); ``zero_point``: None (0), a number or a
        tensor of that shape. A scale <= 0 or a non-float x is a clear error.

        >>> from burn.quantization import QuantScheme
        >>> q = burn.tensor([0.5, 1.5, 2.5, 100.0]).quantize(QuantScheme(mode="affine"), 1.0, 10)
        >>> q.int_repr().tolist()
        [10, 12, 12, 110]
        """
        from .quantization._qtensor import quantize

        return quantize(self, scheme, scale, zero_point)

    def quantize_dynamic(self: Tensor, scheme: QuantScheme) -> QuantizedTensor:
        """Quantize with parameters from the tensor's min/max (per tensor, channel or block as the
        scheme says); the round trip ``q.dequantize()`` is within half a step of x.

        >>> from burn.quantization import QuantScheme
        >>> x = burn.tensor([-1.0, 0.25, 2.0])
        >>> q = x.quantize_dynamic(QuantScheme())
        >>> bool(((q.dequantize() - x).abs() <= q.scale() / 2).all())
        True
        """
        from .quantization._qtensor import quantize_dynamic

        return quantize_dynamic(self, scheme)
