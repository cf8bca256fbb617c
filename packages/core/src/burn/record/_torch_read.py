"""Read a PyTorch ``torch.save`` file (the zip format, PyTorch >= 1.6) into numpy arrays without torch and
without running pickled code.

The archive holds ``<name>/data.pkl`` (a pickle of the saved object) and one raw little-endian entry
``<name>/data/<key>`` per storage. Tensors are pickled as calls of ``torch._utils._rebuild_tensor_v2``
(storage, offset, size, stride, ...) whose storage is a persistent id ``('storage', torch.FloatStorage,
key, location, numel)``. The unpickler below resolves only an allow-list of globals (``ALLOWED``: the
rebuild functions, storage types, dtypes and ``collections.OrderedDict``), each to a local stand-in that
builds a numpy array; any other global (``os.system``, ``builtins.eval``, a pickled ``nn.Module`` class)
is refused with a RecordError before it is called. Views (offsets, strides, storages shared between
tensors) are checked against the storage's size and copied into contiguous arrays.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import RecordError
from ._torch_dtypes import STORAGE_DTYPES, TORCH_DTYPES, numpy_dtype


class _Sealed:
    """The stand-ins below refuse pickle's BUILD (which would otherwise set their attributes)."""

    def __setstate__(self, state: Any) -> None:
        raise RecordError("malformed pickle: it sets the state of a torch type")


class _StorageType(_Sealed):
    """What ``torch.FloatStorage`` (dtype name) or ``torch.UntypedStorage`` (None: bytes) unpickle to."""

    def __init__(self, name: str, dtype: str | None) -> None:
        self.name, self.dtype = name, dtype


class _DType(_Sealed):
    """What ``torch.float32`` unpickles to."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Storage(_Sealed):
    """One storage of the archive: its flat array, read once however many tensors view it."""

    def __init__(self, key: str, dtype: str | None, numel: int, read: Callable[[str], bytes]) -> None:
        self.key, self.dtype, self.numel, self._read = key, dtype, numel, read
        self._flat: dict[str, np.ndarray] = {}

    def flat(self, dtype_name: str, big_endian: bool) -> np.ndarray:
        if dtype_name not in self._flat:
            dt = numpy_dtype(dtype_name)
            raw = self._read(self.key)
            count = self.numel if self.dtype is not None else self.numel // dt.itemsize
            if count * dt.itemsize > len(raw):
                raise RecordError(
                    f"storage {self.key!r} is truncated: {count} x {dtype_name} need "
                    f"{count * dt.itemsize} bytes, the archive has {len(raw)}"
                )
            arr = np.frombuffer(raw, dtype=dt, count=count)
            if big_endian and dt.itemsize > 1:
                arr = arr.byteswap()
            self._flat[dtype_name] = arr
        return self._flat[dtype_name]


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(type(v) is int and v >= 0 for v in value):
        raise RecordError(
            f"malformed tensor in the pickle: {what} must be a tuple of ints >= 0, got {value!r}"
        )
    return tuple(value)


def _tensor(storage: Any, offset: Any, size: Any, stride: Any, dtype_name: str, big_endian: bool) -> Any:
    if not isinstance(storage, _Storage):
        raise RecordError(f"malformed tensor in the pickle: its storage is a {type(storage).__name__}")
    if type(offset) is not int or offset < 0:
        raise RecordError(f"malformed tensor in the pickle: storage offset {offset!r}")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    if len(shape) != len(strides):
        raise RecordError(f"malformed tensor in the pickle: size {shape} and stride {strides} differ in rank")
    flat = storage.flat(dtype_name, big_endian)
    if 0 in shape:
        return np.zeros(shape, dtype=flat.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    if last >= flat.size:
        raise RecordError(
            f"malformed tensor in the pickle: size {shape}, stride {strides} at offset {offset} reach element "
            f"{last} of storage {storage.key!r}, which holds {flat.size}"
        )
    item = flat.itemsize
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=shape, strides=tuple(s * item for s in strides), writeable=False
    )
    return np.array(view, copy=True, order="C")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, read: Callable[[str], bytes], big_endian: bool, source: str) -> None:
        super().__init__(io.BytesIO(data))
        self._read, self._big, self._source = read, big_endian, source
        self._storages: dict[str, _Storage] = {}

    # -- the only globals a state dict needs, each a local stand-in (nothing from torch is imported)
    def _rebuild_v2(
        self, storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any
    ) -> np.ndarray:  # (requires_grad, backward_hooks[, metadata]) carry no data
        if not isinstance(storage, _Storage) or storage.dtype is None:
            raise RecordError("malformed tensor in the pickle: _rebuild_tensor_v2 needs a typed storage")
        return _tensor(storage, offset, size, stride, storage.dtype, self._big)

    def _rebuild_v3(
        self, storage: Any, offset: Any, size: Any, stride: Any, grad: Any, hooks: Any, dtype: Any, *_: Any
    ) -> np.ndarray:
        if not isinstance(dtype, _DType) or dtype.name not in TORCH_DTYPES:
            raise RecordError(f"malformed tensor in the pickle: dtype {dtype!r}")
        return _tensor(storage, offset, size, stride, TORCH_DTYPES[dtype.name], self._big)

    @staticmethod
    def _parameter(data: Any, *_rest: Any) -> Any:  # nn.Parameter: its data is the tensor
        return data

    @staticmethod
    def _from_type(func: Any, new_type: Any, args: Any, state: Any) -> Any:  # a Tensor subclass
        return func(*args)

    def find_class(self, module: str, name: str) -> Any:
        found = self._allowed(module, name)
        if found is not None:
            return found
        path = f"{module}.{name}"
        if module.startswith("__torch__"):
            hint = "a TorchScript archive (torch.jit.save): save model.state_dict() with torch.save instead"
        elif module.startswith("torch.") and ("Q" in name or "quant" in module):
            hint = "quantized tensors are not supported: dequantize before saving"
        else:
            hint = (
                "burn reads only tensors, dicts, lists and plain values from a PyTorch file, without "
                "running the pickle's code; if this file pickles a whole model, save model.state_dict()"
            )
        raise RecordError(f"{self._source}: refusing to load {path!r} from the pickle: {hint}")

    def _allowed(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if module == "torch._utils":
            table: dict[str, Any] = {
                "_rebuild_tensor_v2": self._rebuild_v2,
                "_rebuild_tensor_v3": self._rebuild_v3,
                "_rebuild_parameter": self._parameter,
                "_rebuild_parameter_with_state": self._parameter,
            }
            return table.get(name)
        if (module, name) == ("torch._tensor", "_rebuild_from_type_v2"):
            return self._from_type
        if (module, name) in (("torch", "Tensor"), ("torch.nn.parameter", "Parameter")):
            return _DType(name)  # only passed to _rebuild_from_type_v2, which ignores it
        if (module, name) == ("torch", "Size"):
            return tuple
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name, STORAGE_DTYPES[name])
        if (module, name) == ("torch.storage", "UntypedStorage") or (module, name) == (
            "torch",
            "UntypedStorage",
        ):
            return _StorageType(name, None)
        if module == "torch" and name in TORCH_DTYPES:
            return _DType(name)
        return None

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RecordError(f"{self._source}: unsupported persistent id in the pickle: {pid!r:.80}")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or type(numel) is not int:
            raise RecordError(f"{self._source}: malformed storage record in the pickle: {pid!r:.80}")
        if key not in self._storages:
            self._storages[key] = _Storage(key, kind.dtype, numel, self._read)
        return self._storages[key]


LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # pre-1.6 torch.save


def read_torch_file(path: str) -> Any:
    """The object a ``torch.save`` zip file holds, tensors as numpy arrays (see the module docstring)."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        with open(path, "rb") as fh:
            head = fh.read(len(LEGACY_MAGIC))
        if head == LEGACY_MAGIC:
            raise RecordError(
                f"{path}: a PyTorch file in the legacy format (before PyTorch 1.6, or saved with "
                "_use_new_zipfile_serialization=False), which burn does not read: re-save it with a "
                "recent torch.save, or as safetensors"
            ) from None
        raise RecordError(
            f"{path}: not a PyTorch checkpoint (neither a zip archive nor safetensors)"
        ) from None
    with zf:
        pickles = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise RecordError(f"{path}: a zip archive, but not a torch.save file (no <name>/data.pkl)")
        prefix = pickles[0][: -len("data.pkl")]
        names = set(zf.namelist())
        big = prefix + "byteorder" in names and zf.read(prefix + "byteorder").strip() == b"big"

        def read(key: str) -> bytes:
            entry = f"{prefix}data/{key}"
            if entry not in names:
                raise RecordError(f"{path}: the pickle refers to storage {key!r}, which the archive lacks")
            return zf.read(entry)

        unpickler = _Unpickler(zf.read(pickles[0]), read, big, path)
        try:
            return unpickler.load()
        except RecordError:
            raise
        except Exception as exc:  # a damaged pickle: report it as the file's problem
            raise RecordError(f"{path}: damaged PyTorch pickle: {type(exc).__name__}: {exc}") from None
