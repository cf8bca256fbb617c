"""Build ``torch.save``-style zip archives without torch, for the reader's tests (CI has no torch).

Python's pickle protocol, written by the standard library's pure-Python pickler: ``Global`` stands for a
module-level name the pickle refers to (``torch._utils._rebuild_tensor_v2``, or ``os.system`` for a
malicious file) and is written as a GLOBAL opcode without importing it; ``Storage`` is written as a
persistent id, as torch.save does; ``Call(func, args)`` is a REDUCE. The archive layout is torch's:
``<archive>/data.pkl``, ``<archive>/data/<key>`` (raw bytes), ``<archive>/byteorder``, ``<archive>/version``.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Global:
    module: str
    name: str

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce asks that the function be callable
        raise AssertionError("never called")


@dataclass(frozen=True)
class Storage:
    key: str
    kind: Global  # torch.FloatStorage, torch.storage.UntypedStorage, ...
    numel: int


@dataclass(frozen=True)
class Call:
    func: Global
    args: tuple[Any, ...]

    def __reduce__(self) -> Any:
        return (self.func, self.args)


class _Pickler(pickle._Pickler):  # type: ignore[name-defined,misc]  # the pure-Python pickler
    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def _save_global_ref(self, obj: Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())

    dispatch[Global] = _save_global_ref

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Storage):
            return ("storage", obj.kind, obj.key, "cpu", obj.numel)
        return None


def tensor(storage: Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> Call:
    """What torch.save pickles for a tensor: _rebuild_tensor_v2(storage, offset, size, stride, ...)."""
    hooks = Call(Global("collections", "OrderedDict"), ())
    return Call(Global("torch._utils", "_rebuild_tensor_v2"), (storage, offset, size, stride, False, hooks))


def ordered_dict(items: dict[str, Any]) -> Call:
    return Call(Global("collections", "OrderedDict"), (list(items.items()),))


def pickle_bytes(obj: Any) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def write_archive(
    path: Any, obj: Any, storages: dict[str, bytes], archive: str = "archive", byteorder: str = "little"
) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{archive}/data.pkl", pickle_bytes(obj))
        zf.writestr(f"{archive}/byteorder", byteorder)
        for key, raw in storages.items():
            zf.writestr(f"{archive}/data/{key}", raw)
        zf.writestr(f"{archive}/version", "3\n")


def float_storage(key: str, values: np.ndarray) -> tuple[Storage, bytes]:
    flat = np.ascontiguousarray(values, dtype="<f4").reshape(-1)
    return Storage(key, Global("torch", "FloatStorage"), flat.size), flat.tobytes()
