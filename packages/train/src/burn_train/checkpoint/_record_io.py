"""Nested records (dicts/lists of numpy arrays, tensors, numbers, strings) to bytes and back.

Arrays go into an ``.npz`` archive; the structure goes into a JSON entry of the same archive with
``{"__array__": k}`` placeholders. No pickle: loading a checkpoint cannot run code.
"""

from __future__ import annotations

import io
import json
from typing import Any

_META = "__record__.json"


def _encode(value: Any, arrays: list[Any]) -> Any:
    import numpy as np

    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):  # a burn Tensor
        value = value.numpy()
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"__array__": len(arrays) - 1}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"record: dict keys must be str, got {sorted(map(repr, value))[:3]}")
        return {"__dict__": {k: _encode(v, arrays) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"__list__" if isinstance(value, list) else "__tuple__": [_encode(v, arrays) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"record: cannot store a {type(value).__name__} (arrays, numbers, str, dict, list only)")


def _decode(node: Any, arrays: Any) -> Any:
    if isinstance(node, dict):
        if "__array__" in node:
            return arrays[f"a{node['__array__']}"]
        if "__dict__" in node:
            return {k: _decode(v, arrays) for k, v in node["__dict__"].items()}
        if "__list__" in node:
            return [_decode(v, arrays) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_decode(v, arrays) for v in node["__tuple__"])
    return node


def record_to_bytes(record: Any) -> bytes:
    """Serialize a nested record (see module doc)."""
    import numpy as np

    arrays: list[Any] = []
    skeleton = _encode(record, arrays)
    buffer = io.BytesIO()
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload[_META] = np.frombuffer(json.dumps(skeleton).encode("utf-8"), dtype=np.uint8)
    np.savez(buffer, **payload)
    return buffer.getvalue()


def check_record_file(path: str) -> None:
    """``burn.RecordError`` naming ``path`` unless it is a record ``record_to_bytes`` wrote (the archive
    and its skeleton are read, not its arrays)."""
    import zipfile

    import burn
    import numpy as np

    if not zipfile.is_zipfile(path):  # numpy would call any other file "pickled data"
        raise burn.RecordError(f"{path}: not a burn_train record (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            json.loads(archive[_META].tobytes().decode("utf-8"))
    except Exception as exc:  # not a zip, no skeleton entry, a skeleton that is not JSON
        raise burn.RecordError(f"{path}: not a burn_train record ({type(exc).__name__}: {exc})") from None


def record_from_bytes(data: bytes, source: str = "<bytes>") -> Any:
    """The record ``record_to_bytes`` wrote; ValueError naming ``source`` when the bytes are not one."""
    import numpy as np

    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            skeleton = json.loads(archive[_META].tobytes().decode("utf-8"))
            arrays = {k: archive[k] for k in archive.files if k != _META}
    except Exception as exc:
        raise ValueError(f"{source}: not a burn_train record ({type(exc).__name__}: {exc})") from exc
    return _decode(skeleton, arrays)
