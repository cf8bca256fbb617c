"""Where PyTorch weights come from, as one flat ``{name: numpy array}``: a torch.save file (.pt, .pth,
.bin; read by ``_torch_read`` without running its pickle), a safetensors file, a sharded Hugging Face
checkpoint (its ``*.index.json``, or a folder holding one), or a dict already in memory (numpy arrays,
burn tensors, or torch tensors the caller made)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._errors import RecordError

# a folder is read through the first of these it holds (Hugging Face's file names)
FOLDER_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def read_state_dict(source: Any, top_level_key: str | None = None) -> tuple[dict[str, Any], str]:
    """(flat name -> numpy array, a description of the source for messages)."""
    if isinstance(source, Mapping):
        obj, where = source, "the state dict"
    elif isinstance(source, (str, os.PathLike)):
        where = os.fspath(source)
        obj = _read_path(where)
    else:
        raise TypeError(
            f"load_torch: source must be a path or a dict of tensors, got {type(source).__name__}"
        )
    if top_level_key is not None:
        if not isinstance(obj, Mapping) or top_level_key not in obj:
            keys = list(obj)[:10] if isinstance(obj, Mapping) else []
            raise RecordError(f"{where}: no top-level key {top_level_key!r} (keys: {keys})")
        obj = obj[top_level_key]
    if not isinstance(obj, Mapping):
        raise RecordError(f"{where}: holds a {type(obj).__name__}, not a state dict (a dict of tensors)")
    flat: dict[str, Any] = {}
    _flatten(obj, "", flat)
    if not flat and obj:
        nested = [k for k, v in obj.items() if isinstance(v, Mapping)]
        hint = f"; pass top_level_key= one of {nested}" if nested else ""
        raise RecordError(f"{where}: holds no tensors at the top level{hint}")
    return flat, where


def _flatten(obj: Mapping[Any, Any], prefix: str, out: dict[str, Any]) -> None:
    """Tensors under dotted names; nested dicts joined with '.'; other values (an epoch count, a
    config) are not weights and are left out."""
    for key, value in obj.items():
        name = f"{prefix}{key}"
        arr = _as_array(value)
        if arr is not None:
            out[name] = arr
        elif isinstance(value, Mapping):
            _flatten(value, f"{name}.", out)


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    kind = type(value).__module__.split(".")[0]
    if kind == "burn" and hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    if kind == "torch" and hasattr(value, "detach"):
        return _torch_to_numpy(value)
    return None


def _torch_to_numpy(t: Any) -> np.ndarray:
    """A torch tensor the caller passed as a numpy array (torch is already imported: the tensor is
    theirs). bfloat16 and float8, which numpy lacks, go through their bits to ml_dtypes' types."""
    import sys

    from ._torch_dtypes import TORCH_DTYPES, numpy_dtype

    torch = sys.modules["torch"]
    t = t.detach().cpu().contiguous()
    name = TORCH_DTYPES.get(str(t.dtype).removeprefix("torch."), "")
    if name.startswith(("bfloat", "float8")):
        bits = {2: torch.int16, 1: torch.uint8}[t.element_size()]
        return np.asarray(t.view(bits).numpy()).view(numpy_dtype(name))
    return np.asarray(t.numpy())


def _read_path(path: str) -> Any:
    if os.path.isdir(path):
        for name in FOLDER_FILES:
            if os.path.exists(os.path.join(path, name)):
                return _read_path(os.path.join(path, name))
        raise RecordError(f"{path}: a folder without any of {', '.join(FOLDER_FILES)}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_torch: no such file: {path}")
    if path.endswith(".index.json"):
        return _read_sharded(path)
    with open(path, "rb") as fh:
        head = fh.read(9)
    # a zip archive, or a legacy torch.save pickle (safetensors: an 8-byte header length, then '{')
    if head[:2] == b"PK" or (head[:1] == b"\x80" and head[8:9] != b"{"):
        from ._torch_read import read_torch_file

        return read_torch_file(path)
    return _read_safetensors(path)


def _read_safetensors(path: str) -> dict[str, Any]:
    from ._file import read_arrays

    with open(path, "rb") as fh:
        data = fh.read()
    return read_arrays(data, path)


def _read_sharded(index_path: str) -> dict[str, Any]:
    """Every shard the index names, each tensor checked to be in the shard the index says."""
    try:
        with open(index_path, encoding="utf-8") as fh:
            weight_map = json.load(fh)["weight_map"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise RecordError(f"{index_path}: not a sharded-checkpoint index (no 'weight_map'): {exc}") from None
    folder = os.path.dirname(index_path)
    out: dict[str, Any] = {}
    for shard in sorted(set(weight_map.values())):
        if not isinstance(shard, str) or os.path.basename(shard) != shard or shard.endswith(".json"):
            raise RecordError(f"{index_path}: shard {shard!r} is not a weights file in the index's folder")
        part = _read_path(os.path.join(folder, shard))
        if not isinstance(part, Mapping):
            raise RecordError(f"{shard}: holds a {type(part).__name__}, not a state dict")
        wanted = {k for k, v in weight_map.items() if v == shard}
        lacking = sorted(wanted - set(part))
        if lacking:
            raise RecordError(
                f"{shard}: lacks {lacking[:5]}, which {os.path.basename(index_path)} puts there"
            )
        out.update({k: part[k] for k in wanted})
    return out
