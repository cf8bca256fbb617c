"""Pools of ``burn.nn.functional``: max, average and adaptive pools over 1, 2 or 3 spatial dims
(PyTorch semantics, channels-first; the backend's pools take any number of spatial dims). Each family
has one checked implementation behind its 1/2/3-d public functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._tensor import Tensor, _wrap
from ._module_args import half_kernel_padding, ints, output_size_arg, spatial_input, window_out_sizes

if TYPE_CHECKING:
    from ...backend import Backend

IntOrTuple = int | tuple[int, ...]


def _window_args(
    op: str,
    x: Tensor,
    nd: int,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    dilation: IntOrTuple,
    ceil_mode: bool,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    kernel = ints(op, kernel_size, nd, "kernel_size", 1)
    stride = kernel if stride is None else ints(op, stride, nd, "stride", 1)
    padding = ints(op, padding, nd, "padding", 0)
    dilation = ints(op, dilation, nd, "dilation", 1)
    half_kernel_padding(op, padding, kernel)
    window_out_sizes(
        op,
        x.shape[2:],
        kernel,
        stride,
        padding,
        dilation,
        lambda: f"kernel {kernel}, stride {stride}, padding {padding}, dilation {dilation}",
        bool(ceil_mode),
    )
    return kernel, stride, padding, dilation


def _values(b: Backend, pair: tuple[Any, Any], return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    """A max pool's (values, indices) primitives as tensors, or the values alone."""
    values, indices = pair
    return (_wrap(values, b), _wrap(indices, b)) if return_indices else _wrap(values, b)


def _max_pool(
    op: str,
    nd: int,
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    dilation: IntOrTuple,
    ceil_mode: bool,
    return_indices: bool,
) -> Any:
    x = spatial_input(op, x, nd, kind="num")
    args = _window_args(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    return _values(x.backend, x.backend.max_pool(x.primitive, *args, bool(ceil_mode)), return_indices)


def max_pool1d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """1-d max pool of x (N, C, L); ``stride`` defaults to ``kernel_size``. With ``return_indices`` also
    the int64 index of each maximum into L (PyTorch's convention).

    >>> F.max_pool1d(burn.arange(0, 6).float().reshape(1, 1, 6), 2).tolist()
    [[[1.0, 3.0, 5.0]]]
    """
    return _max_pool("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """2-d max pool of x (N, C, H, W) -> (N, C, H_out, W_out); with ``return_indices`` also the int64
    flat index ``h * W + w`` of each maximum (PyTorch's convention, usable by an unpool).

    >>> F.max_pool2d(burn.ones((1, 3, 8, 8)), 2).shape
    (1, 3, 4, 4)
    """
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """3-d max pool of x (N, C, D, H, W) -> (N, C, D_out, H_out, W_out); ``stride`` defaults to
    ``kernel_size``; with ``return_indices`` also the int64 flat index ``(d * H + h) * W + w``.

    >>> F.max_pool3d(burn.ones((1, 2, 4, 4, 4)), 2).shape
    (1, 2, 2, 2, 2)
    """
    return _max_pool("max_pool3d", 3, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(
    op: str,
    nd: int,
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Tensor:
    x = spatial_input(op, x, nd)
    kernel, stride, padding, _ = _window_args(op, x, nd, kernel_size, stride, padding, 1, ceil_mode)
    b = x.backend
    return _wrap(
        b.avg_pool(x.primitive, kernel, stride, padding, bool(count_include_pad), bool(ceil_mode)), b
    )


def avg_pool1d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pool of x (N, C, L); ``count_include_pad`` counts zero padding in the divisor.

    >>> F.avg_pool1d(burn.ones((1, 1, 4)), 2, padding=1, count_include_pad=False).tolist()
    [[[1.0, 1.0, 1.0]]]
    """
    return _avg_pool("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """2-d average pool of x (N, C, H, W) -> (N, C, H_out, W_out).

    >>> F.avg_pool2d(burn.ones((1, 3, 8, 8)), 2).shape
    (1, 3, 4, 4)
    """
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool3d(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """3-d average pool of x (N, C, D, H, W) -> (N, C, D_out, H_out, W_out).

    >>> F.avg_pool3d(burn.ones((1, 2, 4, 4, 4)), 2, padding=1, count_include_pad=False).shape
    (1, 2, 3, 3, 3)
    """
    return _avg_pool("avg_pool3d", 3, x, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _adaptive(op: str, nd: int, x: Any, output_size: Any, kind: str) -> tuple[Tensor, tuple[int, ...]]:
    x = spatial_input(op, x, nd, kind=kind)
    return x, output_size_arg(op, output_size, x.shape[2:])


def _adaptive_avg(op: str, nd: int, x: Any, output_size: Any) -> Tensor:
    x, out = _adaptive(op, nd, x, output_size, "float")
    return _wrap(x.backend.adaptive_avg_pool(x.primitive, out), x.backend)


def adaptive_avg_pool1d(x: Tensor, output_size: int | tuple[int]) -> Tensor:
    """Average over windows [floor(i * L / out), ceil((i + 1) * L / out)) of x (N, C, L) -> (N, C, out).

    >>> F.adaptive_avg_pool1d(burn.ones((2, 3, 10)), 4).shape
    (2, 3, 4)
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: int | tuple[int | None, int | None]) -> Tensor:
    """Adaptive average pool of x (N, C, H, W) -> (N, C, *output_size); a None entry keeps that size.

    >>> F.adaptive_avg_pool2d(burn.ones((1, 8, 7, 7)), 1).shape
    (1, 8, 1, 1)
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, x, output_size)


def _adaptive_max(op: str, nd: int, x: Any, output_size: Any, return_indices: bool) -> Any:
    x, out = _adaptive(op, nd, x, output_size, "num")
    return _values(x.backend, x.backend.adaptive_max_pool(x.primitive, out), return_indices)


def adaptive_max_pool1d(x: Tensor, output_size: int | tuple[int], return_indices: bool = False) -> Any:
    """Adaptive max pool of x (N, C, L) -> (N, C, out), with the int64 indices of the maxima on request.

    >>> F.adaptive_max_pool1d(burn.ones((2, 3, 10)), 4).shape
    (2, 3, 4)
    """
    return _adaptive_max("adaptive_max_pool1d", 1, x, output_size, return_indices)


def adaptive_max_pool2d(
    x: Tensor, output_size: int | tuple[int | None, int | None], return_indices: bool = False
) -> Any:
    """Adaptive max pool of x (N, C, H, W) -> (N, C, *output_size); indices are flat ``h * W + w``.

    >>> F.adaptive_max_pool2d(burn.ones((1, 2, 5, 5)), (2, 3)).shape
    (1, 2, 2, 3)
    """
    return _adaptive_max("adaptive_max_pool2d", 2, x, output_size, return_indices)


def adaptive_avg_pool3d(x: Tensor, output_size: int | tuple[int | None, int | None, int | None]) -> Tensor:
    """Adaptive average pool of x (N, C, D, H, W) -> (N, C, *output_size); a None entry keeps that size.

    >>> F.adaptive_avg_pool3d(burn.ones((1, 2, 5, 6, 7)), (1, 2, None)).shape
    (1, 2, 1, 2, 7)
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, x, output_size)


def adaptive_max_pool3d(
    x: Tensor, output_size: int | tuple[int | None, int | None, int | None], return_indices: bool = False
) -> Any:
    """Adaptive max pool of x (N, C, D, H, W) -> (N, C, *output_size); indices are flat
    ``(d * H + h) * W + w``.

    >>> F.adaptive_max_pool3d(burn.ones((1, 2, 4, 4, 4)), 2).shape
    (1, 2, 2, 2, 2)
    """
    return _adaptive_max("adaptive_max_pool3d", 3, x, output_size, return_indices)
