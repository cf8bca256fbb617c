"""Tensor factories: ``burn.tensor``, ``zeros``, ``arange``, ``rand``, ``cat``, ``where`` and friends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _dtype as D
from ._checks import check_non_negative_shape, norm_dim, shape_arg
from ._device import Device, default_device, device
from ._errors import DeviceError, DTypeError, ShapeError
from ._tensor import Tensor, _check_supported, _fallback_dtype, _scalar_for, _wrap
from .backend._shapes import broadcast_shapes

if TYPE_CHECKING:
    from ._device import DeviceLike
    from .backend import Backend


def _backend(dev: DeviceLike) -> Backend:
    if dev is None:
        return default_device().backend
    return (dev if isinstance(dev, Device) else device(dev)).backend


def _dtype_or(dtype: D.DTypeLike, default: D.DType, b: Backend, op: str) -> D.DType:
    dt = default if dtype is None else D.dtype(dtype)
    _check_supported(op, b, dt)
    return dt


def tensor(data: Any, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor from nested lists, scalars, numpy arrays or another tensor (values are copied).

    Without ``dtype``: Python floats give float32, ints int64, bools bool; numpy arrays keep their
    dtype where the backend supports it.

    >>> burn.tensor([[1.0, 2.0], [3.0, 4.0]]).shape
    (2, 2)
    >>> burn.tensor([1, 2]).dtype, burn.tensor([1, 2], dtype=burn.float32).tolist()
    (burn.int64, [1.0, 2.0])
    """
    import numpy as np

    b = _backend(device if device is not None else (data.device if isinstance(data, Tensor) else None))
    if isinstance(data, Tensor):
        arr = data.numpy()
    else:
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as exc:  # ragged nested lists
            raise ShapeError(f"tensor: data must be a rectangular nested list of numbers: {exc}") from None
        if arr.dtype == object:
            raise TypeError(
                f"tensor: data must be numbers or nested lists of equal length, got {type(data).__name__}"
            )
    if dtype is not None:
        dt = _dtype_or(dtype, D.float32, b, "tensor")
    elif arr.dtype.kind == "f":
        keep = isinstance(data, Tensor) or hasattr(data, "__array__") or isinstance(data, np.generic)
        dt = _fallback_dtype(_KNOWN_NP.get(arr.dtype.name, b.default_float), b) if keep else b.default_float
    elif arr.dtype.kind in "iu":
        keep = isinstance(data, Tensor) or hasattr(data, "__array__") or isinstance(data, np.generic)
        dt = _fallback_dtype(_KNOWN_NP.get(arr.dtype.name, b.default_int), b) if keep else b.default_int
    elif arr.dtype.kind == "b":
        dt = _fallback_dtype(D.bool_, b)
    elif arr.dtype.name == "bfloat16":  # ml_dtypes' bfloat16 (kind 'V')
        dt = _fallback_dtype(D.bfloat16, b)
    else:
        raise DTypeError(f"tensor: unsupported element type {arr.dtype} (expected bool, int or float data)")
    return _wrap(b.from_numpy(arr, dt), b, dt)


# numpy dtype names burn knows; others of the same kind (uint16, uint64, longdouble) use the default
_KNOWN_NP = {d.name: d for d in D.ALL_DTYPES}


def from_numpy(array: Any, device: DeviceLike = None, dtype: D.DTypeLike = None) -> Tensor:
    """A tensor holding a copy of a numpy array (same shape); the dtype follows the array where supported.

    >>> x = burn.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    >>> x.shape, x.dtype
    ((2, 3), burn.int32)
    """
    import numpy as np

    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return tensor(array, dtype=dtype, device=device)


def full(shape: Sequence[int], value: Any, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (dtype from the value when not given).

    >>> burn.full((2, 2), 7).tolist()
    [[7, 7], [7, 7]]
    >>> burn.full(3, 0.5).dtype
    burn.float32
    """
    b = _backend(device)
    shape = check_non_negative_shape(
        "full", shape_arg("full", (shape,) if isinstance(shape, int) else tuple(shape))
    )
    if dtype is None:
        default = (
            D.bool_
            if isinstance(value, bool)
            else b.default_int
            if isinstance(value, int)
            else b.default_float
        )
    else:
        default = None
    if not isinstance(value, (int, float)):
        raise TypeError(f"full: value must be a number or a bool, got {type(value).__name__}")
    dt = _dtype_or(dtype, default, b, "full")  # type: ignore[arg-type]  # None only with a dtype given
    return _wrap(b.full(shape, _scalar_for(dt, value), dt), b, dt)


def _shape_of(op: str, dims: tuple, shape: Any) -> tuple[int, ...]:
    """``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(shape=(2, 3))`` (API.md's spelling, PyTorch's too);
    a dtype given positionally (PyTorch takes it by keyword too) is a clear error, not a bad dim."""
    for d in dims:
        if isinstance(d, Tensor):
            raise TypeError(f"{op}: the shape must be ints, got a Tensor; for its shape pass t.shape")
        if isinstance(d, (D.DType, str)):
            raise TypeError(
                f"{op}: give the dtype by keyword, {op}(2, 3, dtype={d!r}); got {d!r} in the shape"
            )
    if shape is not None:
        if dims:
            raise TypeError(f"{op}: give the shape positionally or as shape=, not both")
        dims = (shape,)
    return shape_arg(op, dims)


def zeros(*dims: Any, shape: Any = None, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype`` says otherwise): ``zeros(2, 3)``, ``zeros((2, 3))`` or
    ``zeros(shape=(2, 3))``.

    >>> burn.zeros(2, 3).shape
    (2, 3)
    >>> burn.zeros((2,), dtype=burn.int32).tolist()
    [0, 0]
    """
    b = _backend(device)
    return full(_shape_of("zeros", dims, shape), 0, dtype=dtype or b.default_float, device=device)


def ones(*dims: Any, shape: Any = None, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype`` says otherwise). ``ones(2, 3)`` or ``ones((2, 3))``.

    >>> burn.ones(2, 2).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    b = _backend(device)
    return full(_shape_of("ones", dims, shape), 1, dtype=dtype or b.default_float, device=device)


def empty(*dims: Any, shape: Any = None, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor whose values are not to be relied on (today: zeros); the shape as ``zeros``.

    >>> burn.empty(2, 3).shape
    (2, 3)
    >>> burn.empty(shape=(4,)).shape
    (4,)
    """
    return zeros(_shape_of("empty", dims, shape), dtype=dtype, device=device)


def zeros_like(t: Tensor, dtype: D.DTypeLike = None) -> Tensor:
    """Zeros of ``t``'s shape, dtype (unless ``dtype`` is given) and device.

    >>> burn.zeros_like(burn.tensor([[1, 2, 3]])).tolist()
    [[0, 0, 0]]
    """
    return full(t.shape, 0, dtype=dtype or t.dtype, device=t.device)


def ones_like(t: Tensor, dtype: D.DTypeLike = None) -> Tensor:
    """Ones of ``t``'s shape, dtype (unless ``dtype`` is given) and device.

    >>> burn.ones_like(burn.tensor([1, 2]), dtype=burn.float32).tolist()
    [1.0, 1.0]
    """
    return full(t.shape, 1, dtype=dtype or t.dtype, device=t.device)


def full_like(t: Tensor, value: Any, dtype: D.DTypeLike = None) -> Tensor:
    """``value`` in ``t``'s shape, dtype (unless ``dtype`` is given) and device.

    >>> burn.full_like(burn.zeros(2), 0.5).tolist()
    [0.5, 0.5]
    """
    return full(t.shape, value, dtype=dtype or t.dtype, device=t.device)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    dtype: D.DTypeLike = None,
    device: DeviceLike = None,
) -> Tensor:
    """Values from ``start`` up to (not including) ``stop`` by ``step``; ``arange(n)`` counts 0..n-1.

    A 1-d tensor; the default int unless an argument is a float.

    >>> burn.arange(4).tolist(), burn.arange(1, 10, 3).tolist()
    ([0, 1, 2, 3], [1, 4, 7])
    >>> burn.arange(0.0, 1.0, 0.25).tolist()
    [0.0, 0.25, 0.5, 0.75]
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    b = _backend(device)
    is_float = any(isinstance(v, float) for v in (start, stop, step))
    dt = _dtype_or(dtype, b.default_float if is_float else b.default_int, b, "arange")
    return _wrap(b.arange(start, stop, step, dt), b, dt)


def linspace(
    start: float, stop: float, num: int, dtype: D.DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive: a 1-d tensor of shape (num,).

    >>> burn.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    import numpy as np

    if not isinstance(num, int) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {num!r}")
    b = _backend(device)
    dt = _dtype_or(dtype, b.default_float, b, "linspace")
    return _wrap(b.from_numpy(np.linspace(start, stop, num), dt), b, dt)


def eye(n: int, m: int | None = None, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """The identity matrix: ones on the diagonal, shape (n, m) (m defaults to n).

    >>> burn.eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> burn.eye(2, 3, dtype=burn.int64).tolist()
    [[1, 0, 0], [0, 1, 0]]
    """
    import numpy as np

    for name, v in (("n", n), ("m", m)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ValueError(f"eye: {name} must be a non-negative int, got {v!r}")
    b = _backend(device)
    dt = _dtype_or(dtype, b.default_float, b, "eye")
    return _wrap(b.from_numpy(np.eye(n, m), dt), b, dt)


def _random_args(
    op: str, shape: Any, dtype: D.DTypeLike, device: DeviceLike, default: str
) -> tuple[Backend, tuple[int, ...], D.DType]:
    b = _backend(device)
    if isinstance(shape, Tensor):
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got a Tensor of shape {shape.shape}")
    shape = check_non_negative_shape(op, shape_arg(op, (shape,) if isinstance(shape, int) else tuple(shape)))
    dt = _dtype_or(dtype, b.default_float if default == "float" else b.default_int, b, op)
    return b, shape, dt


def rand(
    *dims: Any,
    shape: Any = None,
    dtype: D.DTypeLike = None,
    device: DeviceLike = None,
    low: float = 0.0,
    high: float = 1.0,
) -> Tensor:
    """Uniform samples in ``[low, high)``; seeded by ``burn.seed``. The shape as ``zeros``: ``rand(2, 3)``,
    ``rand((2, 3))`` or ``rand(shape=(2, 3))``.

    >>> x = burn.rand((2, 3), low=-1.0, high=1.0)
    >>> x.shape, bool(((x >= -1) & (x < 1)).all())
    ((2, 3), True)
    >>> burn.rand(2, 3).shape
    (2, 3)
    """
    b, shape, dt = _random_args("rand", _shape_of("rand", dims, shape), dtype, device, "float")
    return _wrap(b.random_uniform(shape, low, high, dt), b, dt)


def randn(
    *dims: Any,
    shape: Any = None,
    dtype: D.DTypeLike = None,
    device: DeviceLike = None,
    mean: float = 0.0,
    std: float = 1.0,
) -> Tensor:
    """Normal samples (``mean``, ``std``); seeded by ``burn.seed``. The shape as ``zeros``: ``randn(2, 3)``
    (PyTorch's spelling), ``randn((2, 3))`` or ``randn(shape=(2, 3))``.

    >>> burn.randn((2, 3)).shape
    (2, 3)
    >>> burn.randn(2, 3).shape
    (2, 3)
    >>> burn.randn(2, mean=3.0, std=0.0).tolist()
    [3.0, 3.0]
    """
    if std < 0:
        raise ValueError(f"randn: std must be non-negative, got {std}")
    b, shape, dt = _random_args("randn", _shape_of("randn", dims, shape), dtype, device, "float")
    return _wrap(b.random_normal(shape, mean, std, dt), b, dt)


def randint(
    low: int,
    high: Any = None,
    shape: Any = None,
    dtype: D.DTypeLike = None,
    device: DeviceLike = None,
) -> Tensor:
    """Integers of ``shape`` in ``[low, high)`` (the default int); seeded by ``burn.seed``. PyTorch's
    ``randint(high, shape)`` (shape a tuple) means ``randint(0, high, shape)``.

    >>> x = burn.randint(0, 10, (2, 3))
    >>> x.shape, x.dtype, bool(((x >= 0) & (x < 10)).all())
    ((2, 3), burn.int64, True)
    >>> burn.randint(5, (4,)).shape
    (4,)
    """
    if shape is None and isinstance(high, (tuple, list)):  # PyTorch's randint(high, size)
        low, high, shape = 0, low, high
    if high is None or shape is None:
        raise TypeError(
            f"randint: give low, high and shape (randint(0, 10, (2, 3))) or high and a shape tuple "
            f"(randint(10, (2, 3))), got low={low!r}, high={high!r}, shape={shape!r}"
        )
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    b, shape, dt = _random_args("randint", shape, dtype, device, "int")
    return _wrap(b.random_int(shape, low, high, dt), b, dt)


def bernoulli(shape: Sequence[int], p: float, dtype: D.DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Samples of ``shape`` that are true with probability ``p`` (bool unless ``dtype`` says otherwise).

    >>> burn.bernoulli((2, 2), p=1.0).tolist()
    [[True, True], [True, True]]
    >>> burn.bernoulli(3, p=0.0, dtype=burn.float32).tolist()
    [0.0, 0.0, 0.0]
    """
    if isinstance(shape, Tensor):  # torch.bernoulli(probs) samples per element
        raise TypeError(
            "bernoulli: takes a shape and one probability p; for a tensor of probabilities write "
            "burn.rand(probs.shape, device=probs.device) < probs"
        )
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
    b, shape, dt = _random_args("bernoulli", shape, dtype or D.bool_, device, "float")
    return _wrap(b.random_bernoulli(shape, p, dt), b, dt)


def _same_backend(op: str, tensors: Sequence[Tensor]) -> Backend:
    if not tensors:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected tensors, got {type(t).__name__}")
    b = tensors[0]._b
    for i, t in enumerate(tensors):
        if t._b is not b:
            raise DeviceError(f"{op}: tensor {i} is on {t.device}, tensor 0 on {tensors[0].device}")
    return b


def _common_dtype(tensors: Sequence[Tensor]) -> D.DType:
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    return dt


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; all other dims must match (dtypes promote).

    Shapes: (..., n1, ...), (..., n2, ...) -> (..., n1 + n2, ...) along ``dim``.

    >>> burn.cat([burn.tensor([[1, 2]]), burn.tensor([[3, 4], [5, 6]])]).tolist()
    [[1, 2], [3, 4], [5, 6]]
    >>> burn.cat([burn.zeros(2, 3), burn.zeros(2, 1)], dim=1).shape
    (2, 4)
    """
    tensors = list(tensors)
    b = _same_backend("cat", tensors)
    first = tensors[0].shape
    if not first:
        raise ShapeError("cat: cannot concatenate 0-d tensors; use burn.stack")
    d = norm_dim("cat", dim, len(first))
    for i, t in enumerate(tensors):
        s = t.shape
        if len(s) != len(first) or any(a != c for j, (a, c) in enumerate(zip(s, first)) if j != d):
            raise ShapeError(
                f"cat: tensor {i} has shape {s}, incompatible with tensor 0's {first} along dim {d}"
            )
    dt = _common_dtype(tensors)
    _check_supported("cat", b, dt)
    return _wrap(b.cat([t.cast(dt)._p for t in tensors], d), b, dt)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim: k tensors of shape (...) -> a new dim of size k at ``dim``.

    >>> burn.stack([burn.tensor([1, 2]), burn.tensor([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    >>> burn.stack([burn.zeros(2, 3)] * 4, dim=1).shape
    (2, 4, 3)
    """
    tensors = list(tensors)
    b = _same_backend("stack", tensors)
    first = tensors[0].shape
    d = norm_dim("stack", dim, len(first) + 1)
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise ShapeError(f"stack: tensor {i} has shape {t.shape}, expected {first} (all must match)")
    dt = _common_dtype(tensors)
    _check_supported("stack", b, dt)
    return _wrap(b.stack([t.cast(dt)._p for t in tensors], d), b, dt)


def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (tensors or scalars, broadcasting).

    Shapes: ``cond``, ``a`` and ``b`` broadcast together; the result has the broadcast shape.

    >>> x = burn.tensor([-1.0, 2.0, -3.0])
    >>> burn.where(x > 0, x, 0.0).tolist()
    [0.0, 2.0, 0.0]
    >>> burn.where(burn.tensor([[True], [False]]), burn.tensor([1, 2]), 0).tolist()
    [[1, 2], [0, 0]]
    """
    if not isinstance(cond, Tensor):
        raise TypeError(f"where: cond must be a bool tensor, got {type(cond).__name__}")
    if not cond.dtype.is_bool:
        raise DTypeError(f"where: cond must be bool, got {cond.dtype}")
    be = cond._b
    tensors = [x for x in (a, b) if isinstance(x, Tensor)]
    for x in tensors:
        if x._b is not be:
            raise DeviceError(f"where: operand is on {x.device}, cond on {cond.device}")
    shape = cond.shape
    for x in tensors:
        shape = broadcast_shapes("where", shape, x.shape, "cond/operand")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, (Tensor, int, float)):
            raise TypeError(f"where: {name} must be a tensor or a number, got {type(x).__name__}")
    if tensors:
        dt = _common_dtype(tensors)
        scalars = [x for x in (a, b) if not isinstance(x, Tensor)]
        if any(isinstance(x, float) and not isinstance(x, bool) for x in scalars) and not dt.is_float:
            dt = be.default_float
        elif any(not isinstance(x, (bool, float)) for x in scalars) and dt.is_bool:
            dt = be.default_int
    else:
        dt = (
            be.default_float
            if any(isinstance(x, float) for x in (a, b))
            else D.bool_
            if all(isinstance(x, bool) for x in (a, b))
            else be.default_int
        )
        a = full(cond.shape, a, dtype=dt, device=cond.device)

    def prim(x: Any) -> Any:
        return x.cast(dt)._p if isinstance(x, Tensor) else _scalar_for(dt, x)

    out = _wrap(be.where(cond._p, prim(a), prim(b)), be, dt)
    return out if out.shape == shape else out.expand(*shape)
