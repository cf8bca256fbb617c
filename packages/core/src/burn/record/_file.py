"""Module records as safetensors: one tensor per Param/RunningState (dotted names) plus JSON metadata in
the safetensors header: format, burn-core version, module type, its config, and per entry the param id
and the module's dtype (so a half-precision save loads back at the module's precision).

Loading checks every name, shape and dtype before touching the module and reports all mismatches in one
``burn.RecordError``; a truncated or foreign file is a RecordError too, never a crash half-way.

bfloat16 tensors are stored with safetensors' ``BF16`` tag (what PyTorch and others write and read).
safetensors' numpy API does not read that tag back (0.8 writes it for an ml_dtypes array, then fails
with ``KeyError: 'BF16'`` on load), so burn carries the bits itself: it saves them as a ``U16`` view
and retags the header ``BF16``, and on load retags ``BF16`` as ``U16`` and views the bits as ml_dtypes'
bfloat16 (``_retag``). The round trip is exact.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .. import _dtype as D
from .._errors import RecordError
from .._transaction import Transaction
from .._version import __version__

FORMAT = "burn-record"
FORMAT_VERSION = "1"
SUFFIX = ".safetensors"


def to_bytes(module: Any, dtype: Any = None) -> bytes:
    """The module's record as safetensors bytes. ``dtype=burn.float16`` stores float tensors at half
    precision (``load`` casts them back to the module's dtype).

    >>> model = nn.LinearConfig(64, 64).init()
    >>> len(burn.record.to_bytes(model, dtype=burn.float16)) < len(burn.record.to_bytes(model))
    True
    """
    save_dt = None if dtype is None else D.dtype(dtype)
    if save_dt is not None and not save_dt.is_float:
        raise ValueError(f"record: dtype must be a float dtype, got {save_dt.name}")
    arrays: dict[str, Any] = {}
    entries: dict[str, dict[str, str]] = {}
    named = list(module.named_entries())
    read = Transaction()  # every value in one read (one device sync on a GPU backend, not one each)
    for _, entry in named:
        read.register(entry.value)
    for (name, entry), arr in zip(named, read.execute()):
        if save_dt is not None and entry.dtype.is_float:
            arr = arr.astype(_np_dtype(save_dt))
        arrays[name] = arr
        kind = "param" if type(entry).__name__ == "Param" else "state"
        entries[name] = {"id": entry.id, "dtype": entry.dtype.name, "kind": kind}
    config: Any = getattr(module, "_config", None)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "burn_core_version": __version__,
        "module": f"{type(module).__module__}.{type(module).__qualname__}",
        "config": config.to_json(indent=None) if hasattr(config, "to_json") else "",
        "config_type": type(config).__name__ if config is not None else "",
        "save_dtype": save_dt.name if save_dt is not None else "",
        "entries": json.dumps(entries),
    }
    return safetensors_bytes(arrays, metadata)


def safetensors_bytes(arrays: dict[str, Any], metadata: dict[str, str]) -> bytes:
    """safetensors bytes of numpy arrays; bfloat16 ones as their bits tagged ``BF16`` (module docstring)."""
    import numpy as np
    from safetensors.numpy import save as st_save

    # safetensors writes an array's memory as it lies: a strided view (a backend's expand or
    # transpose read back as is) must be made dense first or its bytes come out in the wrong order
    # C order, keeping 0-d arrays 0-d (np.ascontiguousarray would make them 1-d)
    arrays = {n: np.asarray(a) for n, a in arrays.items()}
    arrays = {n: a if a.flags.c_contiguous else a.copy(order="C") for n, a in arrays.items()}
    bf16 = {n for n, a in arrays.items() if a.dtype.name == "bfloat16"}
    for n in bf16:  # the bits, tagged BF16 below (see the module docstring)
        arrays[n] = arrays[n].view("uint16")
    data = st_save(arrays, metadata=metadata)
    return _retag(data, bf16, "U16", "BF16") if bf16 else data


def _np_dtype(dt: D.DType) -> Any:
    from ..backend._numpy_dtypes import NUMPY_DTYPES

    return NUMPY_DTYPES[dt]


def _retag(data: bytes, names: set[str] | None, old: str, new: str) -> bytes:
    """``data`` with the safetensors dtype tag of tensors ``names`` (None: every one tagged ``old``)
    changed from ``old`` to ``new``. Offsets count from the end of the header, so only the header
    (re-padded to 8 bytes, as safetensors writes it) changes."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    for name, info in header.items():
        if name != "__metadata__" and (names is None or name in names) and info.get("dtype") == old:
            info["dtype"] = new
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw + data[8 + n :]


def save(module: Any, path: str | os.PathLike, dtype: Any = None) -> str:
    """Write the module's record to ``path`` (``.safetensors`` appended when there is no suffix),
    atomically: a temp file in the same folder, then ``os.replace``. Returns the path written.

    >>> import os, tempfile
    >>> model = nn.LinearConfig(4, 2).init()
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = burn.record.save(model, os.path.join(tmp, "model"))
    ...     restored = burn.record.load(nn.LinearConfig(4, 2).init(), path)
    >>> os.path.basename(path), np.array_equal(restored.weight.val().numpy(), model.weight.val().numpy())
    ('model.safetensors', True)
    """
    path = os.fspath(path)
    if not os.path.splitext(path)[1]:
        path += SUFFIX
    data = to_bytes(module, dtype)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def load(module: Any, path: str | os.PathLike) -> Any:
    """Load a record file into ``module`` (checked first; in place) and return the module. A path
    without a suffix finds ``path + ".safetensors"``.

    >>> import os, tempfile
    >>> model = nn.Sequential(nn.LinearConfig(4, 8).init(), nn.Relu(), nn.LinearConfig(8, 1).init())
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = burn.record.save(model, os.path.join(tmp, "mlp"))
    ...     fresh = nn.Sequential(nn.LinearConfig(4, 8).init(), nn.Relu(), nn.LinearConfig(8, 1).init())
    ...     fresh = burn.record.load(fresh, os.path.join(tmp, "mlp"))
    >>> x = burn.randn((2, 4))
    >>> np.array_equal(fresh(x).numpy(), model(x).numpy())
    True
    """
    path = os.fspath(path)
    if not os.path.exists(path) and not os.path.splitext(path)[1] and os.path.exists(path + SUFFIX):
        path += SUFFIX
    with open(path, "rb") as fh:
        data = fh.read()
    return from_bytes(module, data, source=path)


def read_metadata(data: bytes, source: str = "<bytes>") -> dict[str, str]:
    """The safetensors header metadata of a record (format, version, module, config, entries).

    >>> meta = burn.record.read_metadata(burn.record.to_bytes(nn.LinearConfig(4, 2).init()))
    >>> meta["format"], meta["module"], meta["config_type"]
    ('burn-record', 'burn.nn._linear.Linear', 'LinearConfig')
    """
    if len(data) < 8:
        raise RecordError(f"{source}: not a safetensors record (only {len(data)} bytes)")
    n = int.from_bytes(data[:8], "little")
    if n <= 0 or 8 + n > len(data):
        raise RecordError(
            f"{source}: not a safetensors record (header length {n} exceeds the {len(data)} bytes)"
        )
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{source}: corrupted safetensors header: {exc}") from None
    if not isinstance(header, dict):
        raise RecordError(f"{source}: corrupted safetensors header (not a JSON object)")
    meta = header.get("__metadata__") or {}
    return meta if isinstance(meta, dict) else {}


def read_arrays(data: bytes, source: str = "<bytes>") -> dict[str, Any]:
    from safetensors.numpy import load as st_load

    read_metadata(data, source)
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    bf16 = {k for k, v in header.items() if isinstance(v, dict) and v.get("dtype") == "BF16"}
    if bf16:  # safetensors' numpy API cannot read BF16: load the bits as U16 (module docstring)
        data = _retag(data, bf16, "BF16", "U16")
    try:
        arrays = st_load(data)
    except Exception as exc:  # safetensors raises its own error types for every kind of damage
        raise RecordError(f"{source}: corrupted safetensors data: {exc}") from None
    if bf16:
        from ..backend._numpy_dtypes import has_bfloat16

        if not has_bfloat16():
            raise RecordError(
                f"{source}: the record holds bfloat16 tensors, which need ml_dtypes (not installed)"
            )
        bf16_dtype = _np_dtype(D.bfloat16)
        for k in bf16:
            arrays[k] = arrays[k].view(bf16_dtype)
    return arrays


def from_bytes(module: Any, data: bytes, source: str = "<bytes>") -> Any:
    """Load record bytes (``to_bytes`` output) into ``module`` (checked first; in place); return it.

    >>> model = nn.LinearConfig(4, 2).init()
    >>> restored = burn.record.from_bytes(nn.LinearConfig(4, 2).init(), burn.record.to_bytes(model))
    >>> np.array_equal(restored.weight.val().numpy(), model.weight.val().numpy())
    True
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"from_bytes: data must be bytes, got {type(data).__name__}")
    data = bytes(data)
    meta = read_metadata(data, source)
    arrays = read_arrays(data, source)
    try:
        saved = json.loads(meta.get("entries") or "{}")
    except json.JSONDecodeError as exc:
        raise RecordError(f"{source}: corrupted record metadata 'entries': {exc}") from None
    save_dtype = meta.get("save_dtype", "")
    problems = []
    module_entries = dict(module.named_entries())
    for name, entry in module_entries.items():
        if name not in arrays:
            problems.append(f"missing: {name} (expected shape {entry.shape}, dtype {entry.dtype.name})")
            continue
        arr = arrays[name]
        if tuple(arr.shape) != tuple(entry.shape):
            problems.append(
                f"shape mismatch: {name}: module has {tuple(entry.shape)}, record has {tuple(arr.shape)}"
            )
        problem = _dtype_problem(entry.dtype.name, arr.dtype.name, saved.get(name, {}), save_dtype)
        if problem:
            problems.append(f"dtype mismatch: {name}: {problem}")
    for name in arrays:
        if name not in module_entries:
            problems.append(f"unexpected: {name} (not in the module)")
    if problems:
        origin = meta.get("module", "unknown module")
        raise RecordError(
            f"{source}: record (saved from {origin}) does not match {type(module).__name__} "
            f"({len(problems)} problem(s)):\n  " + "\n  ".join(problems)
        )
    ids = {name: info["id"] for name, info in saved.items() if isinstance(info, dict) and "id" in info}
    return module.load_record(arrays, ids=ids)


def _dtype_problem(module_dtype: str, stored: str, info: Any, save_dtype: str) -> str:
    """What is wrong with one entry's dtype ('' when nothing): the message names the dtype the record
    really holds, and the one its metadata claims when the two disagree (a file edited by hand)."""
    claimed = str(info.get("dtype", stored)) if isinstance(info, dict) else stored
    half_save = bool(save_dtype) and stored == save_dtype and claimed.startswith(("float", "bfloat"))
    if stored != claimed and not half_save:
        return f"module has {module_dtype}, record has {stored} (its metadata says {claimed})"
    if claimed != module_dtype:
        held = claimed if stored == claimed else f"{claimed} (stored as {stored})"
        return f"module has {module_dtype}, record has {held}"
    return ""
