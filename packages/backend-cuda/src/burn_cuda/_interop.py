"""Interop and device services: DLPack in and out (zero-copy with PyTorch, CuPy, JAX...), the memory
pool's statistics, streams and synchronisation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from burn import DeviceError, DTypeError

from ._types import Prim, Stream

if TYPE_CHECKING:
    from burn import Device, Tensor
    from burn.backend import Backend

    from ._backend import CudaBackend

    DeviceLike = Device | str | None


def _innermost(backend: Backend) -> Backend:
    """The backend under every decorator (autodiff, fusion): each keeps the one it wraps as ``inner``."""
    while getattr(backend, "inner", None) is not None:
        backend = backend.inner
    return backend


def _cuda_backend(device: DeviceLike) -> tuple[Device, Backend, CudaBackend]:
    import burn

    dev = burn.device(device if device is not None else "cuda")
    backend = dev.backend
    inner = _innermost(backend)
    if getattr(inner, "name", None) != "cuda":
        raise DeviceError(f"expected a CUDA device such as 'cuda:0', got {dev}")
    return dev, backend, cast("CudaBackend", inner)


def from_dlpack(obj: Any, device: DeviceLike = None) -> Tensor:
    """A burn tensor sharing memory with ``obj`` (a torch/CuPy/JAX GPU array or a DLPack capsule).

    Zero-copy when ``obj`` lives on the target GPU: the tensor aliases its memory (burn never writes to
    it, but the producer may). The producer's pending work is ordered before this device's stream via
    the DLPack stream handshake. Host arrays (numpy, CPU tensors) are copied to the GPU instead.

    >>> import burn_cuda
    >>> import torch                                                    # doctest: +SKIP
    >>> burn_cuda.from_dlpack(torch.ones(2, 3, device="cuda")).shape   # doctest: +SKIP
    (2, 3)
    """
    from burn.backend import from_primitive

    from ._dtypes import FROM_NP

    dev, backend, inner = _cuda_backend(device)
    cp = inner._on()
    on_host = hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] in (1, 3)  # CPU, pinned
    if on_host:
        import numpy as np

        arr = cp.asarray(np.from_dlpack(obj))
    else:
        arr = cp.from_dlpack(obj)
        if arr.device.id != inner.index:
            raise DeviceError(
                f"from_dlpack: the array lives on cuda:{arr.device.id}, the target device is {dev}; "
                f"move it first or pass device='cuda:{arr.device.id}'"
            )
    if arr.dtype not in FROM_NP:
        raise DTypeError(
            f"from_dlpack: dtype {arr.dtype} is not supported by the CUDA backend "
            f"(supported: {', '.join(sorted(d.name for d in FROM_NP))})"
        )
    layers = []  # the decorators, outermost first: each wraps the array as an untracked value
    b = backend
    while getattr(b, "inner", None) is not None:
        layers.append(b)
        b = b.inner
    prim = arr
    for layer in reversed(layers):
        wrap_inner = getattr(layer, "from_inner", None)
        if wrap_inner is None:
            raise DeviceError(f"from_dlpack: the {layer.name} decorator cannot wrap an inner array")
        prim = wrap_inner(prim)
    return from_primitive(prim, backend)


def as_cupy(tensor: Tensor) -> Prim:
    """The ``cupy.ndarray`` behind a CUDA tensor (zero-copy; do not write to it). It implements
    ``__dlpack__``, so ``torch.from_dlpack(burn_cuda.as_cupy(t))`` shares memory too."""
    backend = tensor.backend
    if getattr(_innermost(backend), "name", None) != "cuda":
        raise DeviceError(f"as_cupy: expected a tensor on a CUDA device, got one on {tensor.device}")
    prim = tensor.primitive
    while getattr(backend, "inner", None) is not None:  # through autodiff and fusion
        prim = backend.inner_prim(prim)
        backend = backend.inner
    cast("CudaBackend", backend)._on()  # a CUDA backend: its name says so
    return prim


def to_dlpack(tensor: Tensor) -> object:
    """A DLPack capsule of a CUDA tensor for consumers that take capsules (``torch.from_dlpack``).

    The device's stream is synchronised first, since a capsule carries no stream to wait on."""
    arr = as_cupy(tensor)
    _innermost(tensor.backend).sync()
    return arr.__dlpack__()


def synchronize(device: DeviceLike = None) -> None:
    """Wait until every op queued on the device has finished: the fusion decorator's recorded ops run
    first (the device backend's own ``sync``), then the stream is waited on."""
    _cuda_backend(device)[1].sync()


def stream(device: DeviceLike = None) -> Stream:
    """The ``cupy.cuda.Stream`` this device issues its work on (non-blocking, one per device)."""
    return _cuda_backend(device)[2].stream


def memory_stats(device: DeviceLike = None) -> dict[str, int]:
    """CuPy memory-pool figures for the device, in bytes: ``used`` (held by live arrays), ``pooled``
    (reserved from the driver, used + cached), ``cached`` (free blocks ready for reuse), ``free_blocks``
    (their count), ``limit`` (0 = none), and the driver's ``device_free`` / ``device_total``. The
    figures every backend gives, with peaks and CUDA-graph pools, are ``burn.memory_stats(device)``."""
    inner = _cuda_backend(device)[2]
    cp = inner._on()
    pool = inner.memory_pool
    with inner.cuda_device:
        free, total = cp.cuda.runtime.memGetInfo()
        used, pooled = int(pool.used_bytes()), int(pool.total_bytes())
        return {
            "used": used,
            "pooled": pooled,
            "cached": pooled - used,
            "free_blocks": int(pool.n_free_blocks()),
            "limit": int(pool.get_limit()),
            "device_free": int(free),
            "device_total": int(total),
        }


def empty_cache(device: DeviceLike = None) -> None:
    """Give the pool's cached (unused) blocks back to the driver."""
    inner = _cuda_backend(device)[2]
    inner._on()
    inner.sync()
    with inner.cuda_device:
        inner.memory_pool.free_all_blocks()


def set_memory_limit(limit_bytes: int, device: DeviceLike = None) -> None:
    """Cap the pool for one device (0 removes the cap); allocations past it raise OutOfMemoryError."""
    if not isinstance(limit_bytes, int) or limit_bytes < 0:
        raise ValueError(f"set_memory_limit: expected a non-negative int of bytes, got {limit_bytes!r}")
    inner = _cuda_backend(device)[2]
    with inner.cuda_device:
        inner.memory_pool.set_limit(size=limit_bytes)
