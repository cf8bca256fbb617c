"""Write a flat state dict of numpy arrays as a ``torch.save`` zip file, without torch.

The pickle is written opcode by opcode (protocol 2, as torch.save writes it): an ``OrderedDict`` of
``torch._utils._rebuild_tensor_v2`` calls, one storage per tensor. ``pickle.Pickler`` cannot write these
references without importing torch (it checks that each global exists), hence the small emitter. Each
storage entry is stored uncompressed and 64-byte aligned, as torch.save lays them out (``torch.load(...,
mmap=True)`` relies on it); ``torch.load(path, weights_only=True)`` reads the result.
"""

from __future__ import annotations

import struct
import zipfile
from typing import Any

import numpy as np

from .._errors import RecordError
from ._torch_dtypes import STORAGE_OF

_ALIGN = 64


def _string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw  # BINUNICODE


def _int(n: int) -> bytes:
    if -(2**31) <= n < 2**31:
        return b"J" + struct.pack("<i", n)  # BININT
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw  # LONG1


def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode("ascii")  # GLOBAL


def _tuple(items: list[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t" if items else b")"  # MARK ... TUPLE, or EMPTY_TUPLE


def _empty_ordered_dict() -> bytes:
    return _global("collections", "OrderedDict") + b")R"  # EMPTY_TUPLE, REDUCE


def _storage_name(arr: np.ndarray, name: str) -> str:
    storage = STORAGE_OF.get(arr.dtype.name)
    if storage is None:
        raise RecordError(f"save_torch: {name} has dtype {arr.dtype.name}, which a .pt file here cannot hold")
    return storage


def state_dict_pickle(arrays: dict[str, np.ndarray]) -> bytes:
    """data.pkl for ``arrays``: storage i holds the i-th array's elements (keys '0', '1', ...)."""
    out = [b"\x80\x02", _empty_ordered_dict(), b"("]  # PROTO 2, the dict, MARK for SETITEMS
    for i, (name, arr) in enumerate(arrays.items()):
        pid = _tuple(
            [
                _string("storage"),
                _global("torch", _storage_name(arr, name)),
                _string(str(i)),
                _string("cpu"),
                _int(arr.size),
            ]
        )
        strides = [int(np.prod(arr.shape[d + 1 :], dtype=np.int64)) for d in range(arr.ndim)]
        args = [
            pid + b"Q",  # BINPERSID
            _int(0),
            _tuple([_int(n) for n in arr.shape]),
            _tuple([_int(s) for s in strides]),
            b"\x89",  # NEWFALSE: requires_grad
            _empty_ordered_dict(),  # backward hooks
        ]
        out += [_string(name), _global("torch._utils", "_rebuild_tensor_v2"), _tuple(args), b"R"]
    out.append(b"u.")  # SETITEMS, STOP
    return b"".join(out)


def write_torch_file(arrays: dict[str, Any], path: str, archive: str = "archive") -> None:
    """Write ``arrays`` (name -> numpy array) to ``path`` in torch.save's zip layout."""
    arrays = {k: np.asarray(v, order="C") for k, v in arrays.items()}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{archive}/data.pkl", state_dict_pickle(arrays))
        zf.writestr(f"{archive}/byteorder", "little")
        for i, arr in enumerate(arrays.values()):
            data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            _write_aligned(zf, f"{archive}/data/{i}", data)
        zf.writestr(f"{archive}/version", "3\n")


def _write_aligned(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """An uncompressed entry whose data starts at a multiple of 64 bytes: the local header (30 bytes +
    name) is padded with an extra field (id 'FB', as PyTorch's writer uses) of the right length."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    assert zf.fp is not None
    start = zf.fp.tell() + 30 + len(name.encode("utf-8")) + 4  # + the extra field's own 4-byte header
    pad = -start % _ALIGN
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)
