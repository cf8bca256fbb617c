"""The module ops of the Autodiff backend (Burn's ModuleOps): each one row of the rule table, except
unfold4d, which is differentiated through conv with a one-hot kernel when its input is tracked."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING, Any

from burn.backend import conv_weight_grad

from ._graph import ADPrim
from ._rules import RULES

if TYPE_CHECKING:
    from burn.backend import Backend

    from ._rule import Rule


class AutodiffModuleOps:
    inner: Backend

    if TYPE_CHECKING:  # provided by Autodiff, which this mixin is a base of

        def _op(self, rule: Rule, inputs: Sequence[Any], meta: Any) -> Any: ...

        def reshape(self, x: ADPrim, shape: tuple[int, ...]) -> ADPrim: ...

    def conv(
        self,
        x: ADPrim,
        weight: ADPrim,
        bias: ADPrim | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> ADPrim:
        return self._op(RULES["conv"], (x, weight, bias), (stride, padding, dilation, groups))

    def conv_transpose(
        self,
        x: ADPrim,
        weight: ADPrim,
        bias: ADPrim | None,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        output_padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> ADPrim:
        meta = (stride, padding, output_padding, dilation, groups)
        return self._op(RULES["conv_transpose"], (x, weight, bias), meta)

    def max_pool(
        self,
        x: ADPrim,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        ceil_mode: bool,
    ) -> tuple[ADPrim, ADPrim]:
        return self._op(RULES["max_pool"], (x,), (kernel, stride, padding, dilation, ceil_mode))

    def adaptive_max_pool(self, x: ADPrim, output_size: tuple[int, ...]) -> tuple[ADPrim, ADPrim]:
        return self._op(RULES["adaptive_max_pool"], (x,), tuple(output_size))

    def avg_pool(
        self,
        x: ADPrim,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        count_include_pad: bool,
        ceil_mode: bool,
    ) -> ADPrim:
        meta = (kernel, stride, padding, count_include_pad, ceil_mode)
        return self._op(RULES["avg_pool"], (x,), meta)

    def adaptive_avg_pool(self, x: ADPrim, output_size: tuple[int, ...]) -> ADPrim:
        return self._op(RULES["adaptive_avg_pool"], (x,), tuple(output_size))

    def interpolate(self, x: ADPrim, size: tuple[int, ...], mode: str, align_corners: bool) -> ADPrim:
        return self._op(RULES["interpolate"], (x,), (tuple(size), mode, align_corners))

    def embedding(self, weight: ADPrim, indices: ADPrim) -> ADPrim:
        return self._op(RULES["embedding"], (weight, indices), None)

    def unfold4d(
        self,
        x: ADPrim,
        kernel: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
    ) -> ADPrim:
        if x.node is None:
            return ADPrim(self.inner.unfold4d(x.inner, kernel, stride, padding, dilation))
        # im2col is a conv with one one-hot kernel per (channel, kernel offset): its rule differentiates it
        B = self.inner
        n, c = B.shape_of(x.inner)[:2]
        kp = prod(kernel)
        eye = B.one_hot(B.arange(0, kp, 1, B.default_int), kp, B.dtype_of(x.inner))  # (kp, kp)
        weight = B.reshape(B.repeat(B.reshape(eye, (1, kp, kp)), (c, 1, 1)), (c * kp, 1, *kernel))
        y = self.conv(x, ADPrim(weight), None, tuple(stride), tuple(padding), tuple(dilation), c)
        return self.reshape(y, (n, c * kp, -1))

    def conv_weight_grad(
        self,
        x: ADPrim,
        g: ADPrim,
        wshape: tuple[int, ...],
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> ADPrim:
        if x.node is None and g.node is None:  # a first-order backward: the inner backend's kernel
            return ADPrim(
                self.inner.conv_weight_grad(x.inner, g.inner, wshape, stride, padding, dilation, groups)
            )
        # a tracked operand (double backward): the contract's composition, differentiated op by op
        return conv_weight_grad(self, x, g, wshape, stride, padding, dilation, groups)  # type: ignore[arg-type]
