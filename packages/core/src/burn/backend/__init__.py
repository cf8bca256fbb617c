"""The surface for backend and decorator authors: the backend contract (Burn's ``Backend`` trait) and
what an implementation needs from burn-core.

Other packages (burn's own backends and decorators as much as third parties') use these names and
never burn-core's private modules.

- ``Backend``, ``required``, ``Slices``: the contract. Subclass ``Backend``, implement the ``@required``
  core; every other op has a default. Capability flags are class attributes of ``Backend``: ``dtypes``,
  ``default_float``/``default_int``, ``is_autodiff`` (a decorator recording gradients: it also offers
  ``inner_prim``/``from_inner``), ``host_memory`` (reads cost no device sync), ``deferred_index_checks``
  (``check_index`` reports at a later read or sync, so fusion may record it in streams), ``binary_fns``.
- ``Backend.custom(name, xs, attrs)``: a ``burn.custom`` op; the default runs its numpy function,
  composition or host fallback, and a backend with a kernel language overrides it with
  ``burn.custom.dispatch(self, ..., key=, launch=, tuner=)`` (burn-wgpu: WGSL, burn-cuda: CUDA C).
- ``ACTIVATION_OPS``: the activations in ``UNARY_OPS`` (relu, sigmoid, gelu, ...); ``Backend.activation``
  runs them, from the core unless the backend lists them in ``native_activations``.
- ``UNARY_OPS``, ``BINARY_OPS``, ``COMPARISON_OPS``, ``UNARY_BOOL_RESULT``, ``REDUCE_OPS``,
  ``ARG_REDUCE_OPS``: the op tables every backend shares (op name -> dtype class it accepts).
- ``ELEMENTWISE_BOOL_RESULT``: the element-wise ops whose result is bool (comparisons, isnan, isinf), read
  off the vocabulary's rows (``op_def(op).bool_result``) for per-op paths that test membership.
- ``DType``, ``ALL_DTYPES``, ``DEFAULT_FLOAT``, ``DEFAULT_INT``: dtype tables (the dtypes themselves
  are ``burn.float32`` and friends). ``NUMPY_DTYPES`` / ``FROM_NUMPY``: burn dtype <-> numpy dtype for
  every burn dtype (bfloat16 as ml_dtypes' numpy dtype, where ml_dtypes is installed, imported on first
  lookup of it); they import numpy on first use.
- ``op_def(kind)``: the op vocabulary's row of ``kind`` (``"add"``, ``"sum"``, ``"conv"``, ...), the one home of
  its semantics: ``.result_dtype(dt)`` / ``.result_dtypes(dt, default_int, attr)`` (comparisons, isnan/isinf
  and all/any give bool: ``.bool_result``), ``.out_shape(*args)`` (the result's shape from the call's
  arguments, tensors as shapes). Backends ask it instead of repeating a rule.
- ``broadcast_shape(*shapes)``: NumPy broadcasting of shapes, the one rule the frontend checks with (a pair
  is worked out once and remembered: the frontend's check and the backend's sizing share it).
- ``reduced_shape(shape, dims, keepdim)`` / ``matmul_shape(a, b)``: a reduction's and a batched matmul's
  result shape.
- ``from_primitive``: a ``burn.Tensor`` around a backend primitive (``tensor.primitive`` is the inverse).
- ``Gradients``: what a decorator's ``backward`` returns (``burn.Gradients``).
- ``Failed(error)``: a slot holding an error instead of a value (fusion's failed lazy nodes, burn-remote's
  failed ops).
- ``MemoryStats`` / ``PeakTracker`` / ``process_memory()``: what ``Backend.memory_stats`` returns for
  ``burn.memory_stats``, a current/peak counter for backends that count their own allocations, and this
  process's resident memory (now, peak).
- ``host_rng``: the process-wide numpy Generator ``burn.seed`` resets, for host-side random ops.
- ``pool_out_size(size, kernel, stride, padding, dilation, ceil_mode)``: PyTorch's sliding-window (pool, conv)
  output size; ``pool_out_sizes(spatial, kernel, stride, padding, dilation, ceil_mode)``: per spatial dim.
- ``conv_out_sizes_padded(spatial, kernel, stride, padding, dilation)`` / ``conv_transpose_out_sizes(spatial,
  kernel, stride, padding, output_padding, dilation)``: a convolution's and a transposed convolution's
  output sizes (every backend, shape check and capture calls these: one home per formula).
- ``deform_conv2d_backward(b, ...)`` / ``roi_align_backward(b, ...)``: the gradients of those module ops
  composed from ``b``'s core, for decorators' backward rules; ``conv_weight_grad(b, x, g, wshape, stride,
  padding, dilation, groups)``: the default of ``Backend.conv_weight_grad`` (a conv's weight gradient)
  on ``b``'s core, for a decorator differentiating through it.

Decorators register through ``burn.plugins`` (``DecoratorSpec``, hook ``burn_register_decorators``).
"""

from __future__ import annotations

from typing import Any

from .._dtype import ALL_DTYPES, DEFAULT_FLOAT, DEFAULT_INT, DType
from .._gradients import Gradients
from .._memory import MemoryStats, PeakTracker, process_memory
from ._base import Backend, Slices, required
from ._conv_defaults import conv_weight_grad
from ._failed import Failed
from ._optable import (
    ACTIVATION_OPS,
    ARG_REDUCE_OPS,
    BINARY_OPS,
    COMPARISON_OPS,
    REDUCE_OPS,
    UNARY_BOOL_RESULT,
    UNARY_OPS,
)
from ._random import host_rng
from ._shapes import (
    broadcast_shape,
    conv_out_sizes_padded,
    conv_transpose_out_sizes,
    matmul_shape,
    pool_out_size,
    pool_out_sizes,
    reduced_shape,
)
from ._tensors import from_primitive
from ._vision_defaults import deform_conv2d_backward, roi_align_backward
from ._vocabulary import ELEMENTWISE_BOOL_RESULT, op_def

_NUMPY_TABLES = ("NUMPY_DTYPES", "FROM_NUMPY")  # import numpy: loaded on first access


def __getattr__(name: str) -> Any:
    if name in _NUMPY_TABLES:
        from . import _numpy_dtypes

        value = getattr(_numpy_dtypes, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'burn.backend' has no attribute {name!r}")


__all__ = [
    "ACTIVATION_OPS",
    "ALL_DTYPES",
    "ARG_REDUCE_OPS",
    "BINARY_OPS",
    "COMPARISON_OPS",
    "DEFAULT_FLOAT",
    "DEFAULT_INT",
    "ELEMENTWISE_BOOL_RESULT",
    "FROM_NUMPY",
    "Failed",
    "NUMPY_DTYPES",
    "REDUCE_OPS",
    "UNARY_BOOL_RESULT",
    "UNARY_OPS",
    "Backend",
    "DType",
    "Gradients",
    "MemoryStats",
    "PeakTracker",
    "Slices",
    "broadcast_shape",
    "conv_out_sizes_padded",
    "conv_transpose_out_sizes",
    "conv_weight_grad",
    "deform_conv2d_backward",
    "from_primitive",
    "host_rng",
    "matmul_shape",
    "op_def",
    "pool_out_size",
    "pool_out_sizes",
    "process_memory",
    "reduced_shape",
    "required",
    "roi_align_backward",
]
