"""burn: tensors over pluggable backends, with autodiff, nn, optim, data and training on top.

>>> import burn
>>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=burn.device("cpu"))
>>> (x @ x).sum().item()
54.0

Importing burn loads neither numpy nor any backend library; backends are built on first use.
Subpackages (``burn.nn``, ``burn.optim``, ``burn.data``, ...) load when first touched.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from . import plugins
from ._creation import (
    arange,
    bernoulli,
    cat,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from ._device import BackendInfo, Device, backends, default_device, device, set_default_device
from ._dtype import (
    DType,
    bfloat16,
    bool_,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    uint8,
    uint32,
)
from ._errors import (
    BackendUnavailableError,
    BurnError,
    ConfigError,
    DeviceError,
    DimError,
    DTypeError,
    IndexOutOfRangeError,
    RecordError,
    ShapeError,
)
from ._gradients import Gradients
from ._memory import MemoryStats, empty_cache, memory_stats, reset_peak_memory_stats
from ._profile import Profile, profile
from ._tensor import Tensor
from ._transaction import Transaction
from ._version import __version__
from .backend._random import seed

if TYPE_CHECKING:  # the subpackages load on first access (__getattr__ below)
    from . import (  # noqa: F401
        amp,
        autotune,
        backend,
        config,
        custom,
        data,
        distributed,
        ir,
        lr_scheduler,
        nn,
        optim,
        record,
    )

bool = bool_

_SUBPACKAGES = (
    "amp",
    "autotune",
    "backend",
    "config",
    "custom",
    "data",
    "distributed",
    "ir",
    "lr_scheduler",
    "nn",
    "optim",
    "record",
)


def __getattr__(name: str) -> object:
    if name in _SUBPACKAGES:
        module = _import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'burn' has no attribute {name!r}")


__all__ = [
    "Profile",
    "BackendInfo",
    "BackendUnavailableError",
    "BurnError",
    "ConfigError",
    "DType",
    "DTypeError",
    "Device",
    "DeviceError",
    "DimError",
    "Gradients",
    "IndexOutOfRangeError",
    "MemoryStats",
    "RecordError",
    "ShapeError",
    "Tensor",
    "Transaction",
    "__version__",
    "arange",
    "backends",
    "bernoulli",
    "bfloat16",
    "bool",
    "bool_",
    "cat",
    "default_device",
    "device",
    "dtype",
    "empty",
    "empty_cache",
    "eye",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "int16",
    "int32",
    "int64",
    "int8",
    "linspace",
    "memory_stats",
    "ones",
    "ones_like",
    "plugins",
    "profile",
    "promote_types",
    "rand",
    "randint",
    "randn",
    "reset_peak_memory_stats",
    "seed",
    "set_default_device",
    "stack",
    "tensor",
    "uint32",
    "uint8",
    "where",
    "zeros",
    "zeros_like",
    *_SUBPACKAGES,
]
