"""The ops of ``Fusion`` that the inner backend runs whole: one method each, with the backend's
signature, recorded in the stream as a call (``Recording._defer_call``) or run at once.

Ops run at once instead of joining the stream (``Recording._forward``): random draws (host draws keep
their order with other host draws) and ops whose result depends on the data (``nms``, ``check_index``
where the backend checks on the host). Creation ops (``full``, ``arange``) run at once too, and on
device backends their results are kept and handed out again for the same arguments
(``Recording._constant``): a training step's seed gradient and one-hot class row are then the same
array every step, so a captured graph reads them in place instead of copying them in, and no kernel runs
to make them again (burn never writes a primitive in place, and the zero-copy exports such as
``burn_cuda.as_cupy`` say not to write to them).

Contract defaults made mostly of element-wise ops (``_COMPOSED_HERE``: softmax, leaky_relu, var,
attention and its backward, ...)
run composed here where the inner backend has no kernel of its own, so their element-wise parts fuse;
every other op runs on the inner backend (a composition of shape and index ops gains nothing here and
would pay the deferral per op).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._dtype import DType
from ..backend import Backend
from ..backend._base import Slices
from ._graph import FPrim
from ._stream import Recording

Ints = tuple[int, ...]
Param = FPrim | int | float  # a tensor broadcastable against x, or a Python number
_COMPOSED_HERE = frozenset(
    {
        "softmax",
        "log_softmax",
        "leaky_relu",
        "var",
        "mask_fill",
        "tril",
        "triu",
        "one_hot",
        "attention",
        "attention_backward",
    }
)


class InnerOps(Recording):
    """The op methods ``Fusion`` hands to the inner backend (``INNER_OPS``)."""

    def _bind_calls(self) -> None:
        """Fill ``_calls`` with the inner backend's method of each op it runs: every op here, but an op
        of ``_COMPOSED_HERE`` only where the inner backend has a kernel of its own."""
        inner = self.inner
        base = type(inner)
        for name in INNER_OPS:
            if name not in _COMPOSED_HERE or getattr(base, name, None) is not getattr(Backend, name, None):
                self._calls[name] = getattr(inner, name)

    # ------------------------------------------------------------------ creation, random draws: at once
    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType) -> FPrim:
        return self._constant("full", (shape, value, dtype))

    def arange(self, start: int | float, stop: int | float, step: int | float, dtype: DType) -> FPrim:
        return self._constant("arange", (start, stop, step, dtype))

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType) -> FPrim:
        return self._forward("random_uniform", (shape, low, high, dtype))

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType) -> FPrim:
        return self._forward("random_normal", (shape, mean, std, dtype))

    def random_int(self, shape: tuple[int, ...], low: int, high: int, dtype: DType) -> FPrim:
        return self._forward("random_int", (shape, low, high, dtype))

    def random_bernoulli(self, shape: tuple[int, ...], p: float, dtype: DType) -> FPrim:
        return self._forward("random_bernoulli", (shape, p, dtype))

    # ------------------------------------------------------------------ data-dependent: at once
    def nms(self, boxes: FPrim, scores: FPrim, iou_threshold: float) -> FPrim:
        return self._forward("nms", (boxes, scores, iou_threshold))

    def check_index(self, index: FPrim, size: int, negative: bool, message: str) -> FPrim:
        if self.inner.deferred_index_checks:  # checked on the device: recorded like any op
            return self._defer_call("check_index", (index, size, negative, message))
        return self._forward("check_index", (index, size, negative, message))

    # ------------------------------------------------------------------ ``_COMPOSED_HERE``
    def softmax(self, x: FPrim, dim: int) -> FPrim:
        if "softmax" in self._calls:  # the inner backend's own kernel
            return self._defer_call("softmax", (x, dim))
        return super().softmax(x, dim)

    def log_softmax(self, x: FPrim, dim: int) -> FPrim:
        if "log_softmax" in self._calls:  # the inner backend's own kernel
            return self._defer_call("log_softmax", (x, dim))
        return super().log_softmax(x, dim)

    def leaky_relu(self, x: FPrim, slope: float) -> FPrim:
        if "leaky_relu" in self._calls:  # the inner backend's own kernel
            return self._defer_call("leaky_relu", (x, slope))
        return super().leaky_relu(x, slope)

    def var(self, x: FPrim, dims: tuple[int, ...], correction: int, keepdim: bool) -> FPrim:
        if "var" in self._calls:  # the inner backend's own kernel
            return self._defer_call("var", (x, dims, correction, keepdim))
        return super().var(x, dims, correction, keepdim)

    def mask_fill(self, x: FPrim, mask: FPrim, value: float | int | bool) -> FPrim:
        if "mask_fill" in self._calls:  # the inner backend's own kernel
            return self._defer_call("mask_fill", (x, mask, value))
        return super().mask_fill(x, mask, value)

    def tril(self, x: FPrim, k: int) -> FPrim:
        if "tril" in self._calls:  # the inner backend's own kernel
            return self._defer_call("tril", (x, k))
        return super().tril(x, k)

    def triu(self, x: FPrim, k: int) -> FPrim:
        if "triu" in self._calls:  # the inner backend's own kernel
            return self._defer_call("triu", (x, k))
        return super().triu(x, k)

    def one_hot(self, x: FPrim, num_classes: int, dtype: DType) -> FPrim:
        if "one_hot" in self._calls:  # the inner backend's own kernel
            return self._defer_call("one_hot", (x, num_classes, dtype))
        return super().one_hot(x, num_classes, dtype)

    # ------------------------------------------------------------------ shape ops
    def reshape(self, x: FPrim, shape: tuple[int, ...]) -> FPrim:
        return self._defer_call("reshape", (x, shape))

    def permute(self, x: FPrim, dims: tuple[int, ...]) -> FPrim:
        return self._defer_call("permute", (x, dims))

    def expand(self, x: FPrim, shape: tuple[int, ...]) -> FPrim:
        return self._defer_call("expand", (x, shape))

    def flip(self, x: FPrim, dims: tuple[int, ...]) -> FPrim:
        return self._defer_call("flip", (x, dims))

    def repeat(self, x: FPrim, reps: tuple[int, ...]) -> FPrim:
        return self._defer_call("repeat", (x, reps))

    def pad(self, x: FPrim, pads: tuple[tuple[int, int], ...], mode: str, value: float) -> FPrim:
        return self._defer_call("pad", (x, pads, mode, value))

    def cat(self, xs: Sequence[FPrim], dim: int) -> FPrim:
        return self._defer_call("cat", (xs, dim))

    def stack(self, xs: Sequence[FPrim], dim: int) -> FPrim:
        return self._defer_call("stack", (xs, dim))

    def slice(self, x: FPrim, index: Slices) -> FPrim:
        return self._defer_call("slice", (x, index))

    def slice_assign(self, x: FPrim, index: Slices, value: FPrim) -> FPrim:
        return self._defer_call("slice_assign", (x, index, value))

    # ------------------------------------------------------------------ indexing
    def gather(self, x: FPrim, dim: int, index: FPrim) -> FPrim:
        return self._defer_call("gather", (x, dim, index))

    def scatter_add(self, x: FPrim, dim: int, index: FPrim, src: FPrim) -> FPrim:
        return self._defer_call("scatter_add", (x, dim, index, src))

    def select(self, x: FPrim, dim: int, indices: FPrim) -> FPrim:
        return self._defer_call("select", (x, dim, indices))

    def select_add(self, x: FPrim, dim: int, indices: FPrim, values: FPrim) -> FPrim:
        return self._defer_call("select_add", (x, dim, indices, values))

    def embedding(self, weight: FPrim, indices: FPrim) -> FPrim:
        return self._defer_call("embedding", (weight, indices))

    # ------------------------------------------------------------------ reductions, scans and sorting
    def reduce(self, op: str, x: FPrim, dims: tuple[int, ...], keepdim: bool) -> FPrim:
        return self._defer_call("reduce", (op, x, dims, keepdim))

    def arg_reduce(self, op: str, x: FPrim, dim: int, keepdim: bool) -> FPrim:
        return self._defer_call("arg_reduce", (op, x, dim, keepdim))

    def cumsum(self, x: FPrim, dim: int) -> FPrim:
        return self._defer_call("cumsum", (x, dim))

    def cumprod(self, x: FPrim, dim: int) -> FPrim:
        return self._defer_call("cumprod", (x, dim))

    def sort(self, x: FPrim, dim: int, descending: bool) -> tuple[FPrim, FPrim]:
        return self._defer_call("sort", (x, dim, descending))

    def argsort(self, x: FPrim, dim: int, descending: bool) -> FPrim:
        return self._defer_call("argsort", (x, dim, descending))

    def topk(self, x: FPrim, k: int, dim: int) -> tuple[FPrim, FPrim]:
        return self._defer_call("topk", (x, k, dim))

    # ------------------------------------------------------------------ matmul, convolution, pooling and resampling
    def matmul(self, a: FPrim, b: FPrim) -> FPrim:
        return self._defer_call("matmul", (a, b))

    def conv(
        self,
        x: FPrim,
        weight: FPrim,
        bias: FPrim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> FPrim:
        return self._defer_call("conv", (x, weight, bias, stride, padding, dilation, groups))

    def conv_transpose(
        self,
        x: FPrim,
        weight: FPrim,
        bias: FPrim | None,
        stride: Ints,
        padding: Ints,
        output_padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> FPrim:
        return self._defer_call(
            "conv_transpose", (x, weight, bias, stride, padding, output_padding, dilation, groups)
        )

    def unfold4d(self, x: FPrim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> FPrim:
        return self._defer_call("unfold4d", (x, kernel, stride, padding, dilation))

    def conv_weight_grad(
        self, x: FPrim, g: FPrim, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints, groups: int
    ) -> FPrim:
        return self._defer_call("conv_weight_grad", (x, g, wshape, stride, padding, dilation, groups))

    def deform_conv2d(
        self,
        x: FPrim,
        offset: FPrim,
        weight: FPrim,
        mask: FPrim | None,
        bias: FPrim | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
        offset_groups: int,
    ) -> FPrim:
        return self._defer_call(
            "deform_conv2d", (x, offset, weight, mask, bias, stride, padding, dilation, groups, offset_groups)
        )

    def max_pool(
        self, x: FPrim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
    ) -> tuple[FPrim, FPrim]:
        return self._defer_call("max_pool", (x, kernel, stride, padding, dilation, ceil_mode))

    def avg_pool(
        self, x: FPrim, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool, ceil_mode: bool
    ) -> FPrim:
        return self._defer_call("avg_pool", (x, kernel, stride, padding, count_include_pad, ceil_mode))

    def adaptive_avg_pool(self, x: FPrim, output_size: Ints) -> FPrim:
        return self._defer_call("adaptive_avg_pool", (x, output_size))

    def adaptive_max_pool(self, x: FPrim, output_size: Ints) -> tuple[FPrim, FPrim]:
        return self._defer_call("adaptive_max_pool", (x, output_size))

    def interpolate(self, x: FPrim, size: Ints, mode: str, align_corners: bool) -> FPrim:
        return self._defer_call("interpolate", (x, size, mode, align_corners))

    def roi_align(
        self,
        x: FPrim,
        boxes: FPrim,
        output_size: Ints,
        spatial_scale: float,
        sampling_ratio: int,
        aligned: bool,
    ) -> FPrim:
        return self._defer_call("roi_align", (x, boxes, output_size, spatial_scale, sampling_ratio, aligned))

    def attention(
        self, q: FPrim, k: FPrim, v: FPrim, mask: FPrim | None, is_causal: bool, scale: float
    ) -> tuple[FPrim, FPrim]:
        if "attention" in self._calls:  # the inner backend's own kernel
            return self._defer_call("attention", (q, k, v, mask, is_causal, scale))
        return super().attention(q, k, v, mask, is_causal, scale)

    def attention_backward(
        self,
        q: FPrim,
        k: FPrim,
        v: FPrim,
        mask: FPrim | None,
        is_causal: bool,
        scale: float,
        out: FPrim,
        lse: FPrim,
        grad: FPrim,
    ) -> tuple[FPrim, FPrim, FPrim]:
        if "attention_backward" in self._calls:  # the inner backend's own kernels
            args = (q, k, v, mask, is_causal, scale, out, lse, grad)
            return self._defer_call("attention_backward", args)
        return super().attention_backward(q, k, v, mask, is_causal, scale, out, lse, grad)

    # ------------------------------------------------------------------ quantization
    def quantize(
        self, x: FPrim, scale: Param, zero_point: Param, qmin: int, qmax: int, dtype: DType
    ) -> FPrim:
        return self._defer_call("quantize", (x, scale, zero_point, qmin, qmax, dtype))

    def dequantize(self, q: FPrim, scale: Param, zero_point: Param, dtype: DType) -> FPrim:
        return self._defer_call("dequantize", (q, scale, zero_point, dtype))

    def quantized_matmul(self, a: FPrim, w: FPrim) -> FPrim:
        return self._defer_call("quantized_matmul", (a, w))

    # ------------------------------------------------------------------ user ops (burn.custom)
    def custom(self, name: str, xs: Sequence[FPrim], attrs: tuple[tuple[str, Any], ...]) -> FPrim:
        """A call in the stream where the inner backend has a kernel of the op (or only the numpy
        function is left); its composition here otherwise, so its element-wise parts fuse."""
        from ..custom._registry import lookup

        op = lookup(name)
        if op.compose is not None and not op.native_on(self.inner):
            return op.run_composed(self, xs, attrs)
        return self._defer_call("custom", (name, list(xs), attrs))


INNER_OPS = tuple(sorted(name for name in vars(InnerOps) if not name.startswith("_")))  # the ops above
