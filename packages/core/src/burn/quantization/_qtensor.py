"""``QuantizedTensor``: int8 values with their scales and zero points, and the functions behind
``Tensor.quantize`` / ``Tensor.quantize_dynamic``.

Values are stored as int8 where the backend has int8 (numpy, CUDA, and wgpu, which keeps int8 widened
to one value per 32-bit word), else in its default int. Scales are float32 and zero points the backend's
default int, shaped () per tensor, (C,) per channel, or ``x.shape[:-1] + (L // block_size,)`` per
block. The arithmetic is the backend's ``quantize``/``dequantize`` ops (core compositions by default),
so every backend quantizes alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _dtype as D
from .._errors import DeviceError, DTypeError, ShapeError
from .._tensor import Tensor, _wrap
from ._scheme import QuantScheme

if TYPE_CHECKING:
    from .._device import Device, DeviceLike

_EPS32 = 1.1920928955078125e-07  # float32 machine epsilon: the smallest dynamic scale (PyTorch's observers)


def storage_dtype(t: Tensor) -> D.DType:
    """int8 where the backend has it, else the backend's default int."""
    b = t.backend
    return D.int8 if D.int8 in b.dtypes else b.default_int


def _param_dtype(t: Tensor) -> D.DType:
    return D.float32 if D.float32 in t.backend.dtypes else t.backend.default_float


class QuantizedTensor:
    """A quantized tensor: ``int_repr()`` values, ``scale()``, ``zero_point()`` and the ``scheme``.

    >>> from burn.quantization import QuantScheme
    >>> q = burn.tensor([-1.0, 0.0, 0.5, 1.0]).quantize(QuantScheme(), 1 / 127)
    >>> q.int_repr().tolist(), q.dequantize().tolist()[3]
    ([-127, 0, 64, 127], 1.0)
    """

    __slots__ = ("_values", "_scale", "_zero_point", "scheme", "float_dtype", "_sums")

    def __init__(
        self,
        values: Tensor,
        scale: Tensor,
        zero_point: Tensor,
        scheme: QuantScheme,
        float_dtype: D.DType = D.float32,
    ) -> None:
        if not isinstance(scheme, QuantScheme):
            raise TypeError(f"QuantizedTensor: scheme must be a QuantScheme, got {type(scheme).__name__}")
        if not values.dtype.is_int:
            raise DTypeError(f"QuantizedTensor: values must be an int tensor, got {values.dtype}")
        self._values = values
        self._scale = scale
        self._zero_point = zero_point
        self.scheme = scheme
        self.float_dtype = float_dtype
        self._sums: dict[tuple[int, ...], Tensor] = {}

    def _int_sum(self, dims: tuple[int, ...]) -> Tensor:
        """The sum of the int values over ``dims`` (kept) in the backend's default int, computed once
        per quantized tensor: the zero-point corrections of the int8 products need the weight's sums
        on every call, and a 4096x4096 weight's sum costs a third of the product itself."""
        out = self._sums.get(dims)
        if out is None:
            v = self._values
            out = self._sums[dims] = v.cast(v.backend.default_int).sum(dims, keepdim=True)
        return out

    # ---------------------------------------------------------------- the parts
    def int_repr(self) -> Tensor:
        """The quantized values as an int tensor (int8; the default int on backends without int8).

        >>> from burn.quantization import QuantScheme
        >>> burn.tensor([0.25, -0.5]).quantize(QuantScheme(), 0.25).int_repr().tolist()
        [1, -2]
        """
        return self._values

    def scale(self) -> Tensor:
        """The float32 scale(s): shape () per tensor, (C,) per channel, the block grid per block.

        >>> from burn.quantization import QuantScheme
        >>> burn.tensor([1.0, -2.0]).quantize_dynamic(QuantScheme()).scale().shape
        ()
        """
        return self._scale

    def zero_point(self) -> Tensor:
        """The int zero point(s), shaped as ``scale()`` (all 0 for symmetric schemes).

        >>> from burn.quantization import QuantScheme
        >>> burn.tensor([0.0, 2.55]).quantize_dynamic(QuantScheme(mode="affine")).zero_point().item()
        -128
        """
        return self._zero_point

    def dequantize(self) -> Tensor:
        """``(int_repr() - zero_point()) * scale()`` as a float tensor (float32 unless the input was
        float64).

        >>> from burn.quantization import QuantScheme
        >>> burn.tensor([0.3]).quantize(QuantScheme(), 0.1).dequantize().tolist()
        [0.30000001192092896]
        """
        values = self._values
        b = values.backend
        scale, zp, shape = _broadcast_params(self.scheme, values.shape, self._scale, self._zero_point)
        v = values if shape == values.shape else values.reshape(*shape)
        out = b.dequantize(v.primitive, scale.primitive, zp.primitive, self.float_dtype)
        y = _wrap(out, b, self.float_dtype)
        return y if shape == values.shape else y.reshape(*values.shape)

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return self._values.shape

    @property
    def ndim(self) -> int:
        return self._values.ndim

    @property
    def device(self) -> Device:
        return self._values.device

    def numel(self) -> int:
        return self._values.numel()

    def to(self, device: DeviceLike) -> QuantizedTensor:
        """The same quantized tensor on another device (values keep int8 where it exists there)."""
        from .._device import device as as_device

        dev = as_device(device)
        values = self._values.to(dev)
        store = storage_dtype(values)
        return QuantizedTensor(
            values.cast(store),
            self._scale.to(dev),
            self._zero_point.to(dev),
            self.scheme,
            self.float_dtype,
        )

    def __repr__(self) -> str:
        s = self.scheme
        return (
            f"QuantizedTensor(shape={self.shape}, {s.dtype} {s.mode} {s.granularity}, device={self.device})"
        )


# ---------------------------------------------------------------- layouts of the parameters
def param_shape(scheme: QuantScheme, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the scale/zero point of a tensor of ``shape`` under ``scheme`` (checks it fits)."""
    if scheme.granularity == "per_tensor":
        return ()
    if not shape:
        raise ShapeError(f"quantize: {scheme.granularity} quantization needs a tensor with at least one dim")
    if scheme.granularity == "per_channel":
        axis = _axis(scheme, len(shape))
        return (shape[axis],)
    bs = scheme.block_size
    assert bs is not None
    if shape[-1] % bs:
        raise ShapeError(
            f"quantize: the last dim ({shape[-1]}) must be a multiple of block_size={bs} for per_block "
            f"quantization, got shape {shape}"
        )
    return shape[:-1] + (shape[-1] // bs,)


def _axis(scheme: QuantScheme, ndim: int) -> int:
    axis = scheme.axis + ndim if scheme.axis < 0 else scheme.axis
    if not 0 <= axis < ndim:
        raise ValueError(f"quantize: scheme axis {scheme.axis} is out of range for a {ndim}-d tensor")
    return axis


def _broadcast_params(
    scheme: QuantScheme, shape: tuple[int, ...], scale: Tensor, zero_point: Tensor
) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """(scale, zero point) reshaped to broadcast against the values viewed as the returned shape."""
    if scheme.granularity == "per_tensor":
        return scale, zero_point, shape
    if scheme.granularity == "per_channel":
        view = [1] * len(shape)
        view[_axis(scheme, len(shape))] = shape[_axis(scheme, len(shape))]
        return scale.reshape(*view), zero_point.reshape(*view), shape
    bs = scheme.block_size
    assert bs is not None
    blocks = shape[:-1] + (shape[-1] // bs, bs)
    grid = shape[:-1] + (shape[-1] // bs, 1)
    return scale.reshape(*grid), zero_point.reshape(*grid), blocks


# ---------------------------------------------------------------- quantize
def _check_input(op: str, x: Any, scheme: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a burn.Tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise DTypeError(f"{op}: x must be a float tensor, got {x.dtype}")
    if not isinstance(scheme, QuantScheme):
        raise TypeError(f"{op}: scheme must be a burn.quantization.QuantScheme, got {type(scheme).__name__}")
    return x.detach()


def _finish(x: Tensor, scheme: QuantScheme, scale: Tensor, zero_point: Tensor) -> QuantizedTensor:
    b = x.backend
    store = storage_dtype(x)
    sb, zb, shape = _broadcast_params(scheme, x.shape, scale, zero_point)
    xv = x if shape == x.shape else x.reshape(*shape)
    q = _wrap(b.quantize(xv.primitive, sb.primitive, zb.primitive, scheme.qmin, scheme.qmax, store), b, store)
    if shape != x.shape:
        q = q.reshape(*x.shape)
    out_float = D.float64 if x.dtype is D.float64 else D.float32
    if out_float not in b.dtypes:
        out_float = b.default_float
    return QuantizedTensor(q, scale, zero_point, scheme, out_float)


def quantize(x: Tensor, scheme: QuantScheme, scale: Any, zero_point: Any = None) -> QuantizedTensor:
    """Quantize ``x`` with explicit parameters (``Tensor.quantize``): see ``QuantizedTensor``."""
    from .._creation import tensor

    op = "quantize"
    x = _check_input(op, x, scheme)
    pshape = param_shape(scheme, x.shape)
    pdt = _param_dtype(x)
    s = _param(op, "scale", scale, pshape, x, pdt)
    if not s.dtype.is_float:
        s = s.cast(pdt)
    import numpy as np

    sv = np.asarray(s.numpy(), dtype=np.float64)
    if not np.all(np.isfinite(sv)) or np.any(sv <= 0):
        bad = sv[~(np.isfinite(sv) & (sv > 0))].ravel()[0]
        raise ValueError(f"{op}: scale must be finite and > 0, got {bad}")
    if zero_point is None:
        zp = tensor(np.zeros(pshape, dtype=np.int64), dtype=x.backend.default_int, device=x.device)
    else:
        zp = _param(op, "zero_point", zero_point, pshape, x, x.backend.default_int)
        zv = np.asarray(zp.numpy())
        if zp.dtype.is_float and np.any(zv != np.round(zv)):
            raise ValueError(
                f"{op}: zero_point must hold integers, got {zv.ravel()[zv.ravel() != np.round(zv.ravel())][0]}"
            )
        if np.any(zv < scheme.qmin) or np.any(zv > scheme.qmax):
            raise ValueError(f"{op}: zero_point must be in [{scheme.qmin}, {scheme.qmax}] for {scheme.dtype}")
        if scheme.mode == "symmetric" and np.any(zv != 0):
            raise ValueError(
                f"{op}: a symmetric scheme has zero_point 0, got {zero_point!r}; use mode='affine'"
            )
        zp = zp.cast(x.backend.default_int)
    return _finish(x, scheme, s.cast(pdt), zp)


def _param(op: str, arg: str, value: Any, shape: tuple[int, ...], x: Tensor, dtype: D.DType) -> Tensor:
    """A scale or zero point as a tensor of ``shape`` on x's device (a number fills it)."""
    from .._creation import full

    if isinstance(value, bool):
        raise TypeError(f"{op}: {arg} must be a number or a tensor, got {value!r}")
    if isinstance(value, (int, float)):
        return full(shape, value, dtype=dtype, device=x.device)
    if not isinstance(value, Tensor):
        import numpy as np

        if hasattr(value, "__array__") or isinstance(value, (list, tuple)):
            from .._creation import tensor

            value = tensor(np.asarray(value), device=x.device)
        else:
            raise TypeError(f"{op}: {arg} must be a number or a tensor, got {type(value).__name__}")
    if value.device != x.device:
        raise DeviceError(
            f"{op}: {arg} is on {value.device} but x is on {x.device}; move one with .to(device)"
        )
    if value.dtype.is_bool:
        raise DTypeError(f"{op}: {arg} must be numeric, got bool")
    if value.shape != shape:
        if value.numel() == 1 and shape == ():
            return value.reshape()
        raise ShapeError(
            f"{op}: {arg} must have shape {shape} for {len(shape) and 'this' or 'a per_tensor'} scheme "
            f"on x of shape {x.shape}, got {value.shape}"
        )
    return value


def quantize_dynamic(x: Tensor, scheme: QuantScheme) -> QuantizedTensor:
    """Quantize ``x`` with parameters from its own min/max (``Tensor.quantize_dynamic``), as PyTorch's
    MinMaxObserver: the range always includes 0; symmetric scale = max|x| / 127.5, affine scale =
    (max - min) / 255 with zero point ``-128 - round(min / scale)``; scales are at least float32 eps.
    Computed on the device (no host read)."""
    op = "quantize_dynamic"
    x = _check_input(op, x, scheme)
    pshape = param_shape(scheme, x.shape)
    pdt = _param_dtype(x)
    xf = x.cast(pdt)
    if scheme.granularity == "per_tensor":
        lo, hi = xf.min(), xf.max()
    elif scheme.granularity == "per_channel":
        axis = _axis(scheme, x.ndim)
        dims = tuple(d for d in range(x.ndim) if d != axis)
        lo, hi = (xf.min(dims), xf.max(dims)) if dims else (xf, xf)
    else:
        bs = scheme.block_size
        assert bs is not None
        blocks = xf.reshape(*x.shape[:-1], x.shape[-1] // bs, bs)
        lo, hi = blocks.min(-1), blocks.max(-1)
    lo, hi = lo.clamp(None, 0.0), hi.clamp(0.0, None)
    if scheme.mode == "symmetric":
        amax = _maximum(-lo, hi)
        scale = (amax / ((scheme.qmax - scheme.qmin) / 2)).clamp(_EPS32, None)
        zp = (scale * 0).cast(x.backend.default_int)
    else:
        scale = ((hi - lo) / float(scheme.qmax - scheme.qmin)).clamp(_EPS32, None)
        zp = (float(scheme.qmin) - (lo / scale).round()).clamp(scheme.qmin, scheme.qmax)
        zp = zp.cast(x.backend.default_int)
    scale, zp = scale.reshape(*pshape), zp.reshape(*pshape)
    return _finish(x, scheme, scale, zp)


def _maximum(a: Tensor, b: Tensor) -> Tensor:
    return _wrap(a.backend.binary("maximum", a.primitive, b.primitive), a.backend, a.dtype)
