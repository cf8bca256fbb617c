"""The wire format: versioned, length-checked binary frames over one WebSocket per session.

Every WebSocket message is one frame::

    b"BR" | u8 protocol version | u8 frame type | u32 meta length | meta (msgpack) | raw bytes

``meta`` is a msgpack value; the raw tail carries tensor bytes (uploads and downloads), so tensor data is
never re-encoded. A reader checks the magic, the version, the type and that the meta length fits; a peer
speaking another protocol version gets a clear error naming both versions.

An ``OPS`` frame's meta is ``[records, drops]``. A record is one of three arrays, told apart by its
first element:

- a full op record ``[kind, args, outputs]`` (``burn.ir.OpRecord``) with outputs
  ``[[id, shape, dtype name], ...]``. Arguments are msgpack values where a tuple is an array, and the
  other burn.ir argument types are one-key maps: ``{"t": id}`` a tensor (``burn.ir.Ref``), ``{"d": name}``
  a dtype, ``{"l": [...]}`` a list (lists and tuples differ for backends: ``cat`` takes a list),
  ``{"a": [numpy dtype, shape, bytes]}`` a small host array (``from_numpy``'s argument);
- a signature ``[nil, sig, kind, args, inputs, outputs, float positions]``: ``sig`` numbers the
  session's signatures 0, 1, 2, ... in order, at most ``MAX_SIGNATURES`` of them, each of at most
  ``MAX_SIGNATURE_SIZE`` values (``signature_size``; past either limit the client sends full records,
  which bounds what a session's table holds); ``args`` are the op's
  arguments with its tensors as ``{"t": i}``, the i-th of ``inputs`` (``[[shape, dtype name], ...]``);
  ``outputs`` the declared ``[[shape, dtype name], ...]``; ``float positions`` the indices of the
  top-level float arguments whose value changes per op (only for the ops of ``VAR_FLOAT_METHODS``, whose
  value never changes an output's shape or dtype). The server checks a signature once, in full;
- a compact op ``[sig, output ids..., input ids..., floats...]``: one op of signature ``sig``, a flat
  array of small ints (and the per-op floats). The server checks the ids (inputs of this session with
  the signature's shapes and dtypes, new outputs) and the memory limit every time, and the results'
  shapes and dtypes (once per signature for element-wise ops, whose results follow from the inputs).
"""

from __future__ import annotations

import math
import struct
from typing import Any

from burn.backend import DType
from burn.ir import Ref

from ._errors import ProtocolError

MAGIC = b"BR"
PROTOCOL_VERSION = 2  # 2: signatures and compact op records
_HEAD = struct.Struct("<2sBBI")
HEAD_SIZE = _HEAD.size

# client -> server
HELLO, OPS, UPLOAD, READ, SYNC = 1, 2, 3, 4, 5
# server -> client
WELCOME, DATA, DONE, ERROR = 16, 17, 18, 19
CLIENT_FRAMES = frozenset({HELLO, OPS, UPLOAD, READ, SYNC})
SERVER_FRAMES = frozenset({WELCOME, DATA, DONE, ERROR})

CHUNK = 1 << 20  # bytes of tensor data per UPLOAD/DATA frame: the copies each frame goes through stay in
# the CPU's caches (8 MiB frames moved data at a third of the speed)
INLINE = 64 << 10  # host arrays up to this size travel inside an OPS frame
DEFAULT_PORT = 3000
MAX_SIGNATURES = 4096  # signatures per session; past it the client sends full records
MAX_SIGNATURE_SIZE = 256  # values in one signature (see signature_size): bounds a session's table
# methods whose top-level float arguments (a scalar operand, a fill value, clamp bounds) never change an
# output's shape or dtype: a signature leaves their values to each op
VAR_FLOAT_METHODS = frozenset({"binary", "where", "clamp", "leaky_relu", "mask_fill", "full", "pad"})


def frame(kind: int, meta: Any, *raw: bytes | memoryview) -> bytes:
    """One frame: the header, ``meta`` as msgpack, then the ``raw`` pieces (one copy of each)."""
    import msgpack  # type: ignore[import-untyped]

    body = msgpack.packb(meta, use_bin_type=True)
    return b"".join((_HEAD.pack(MAGIC, PROTOCOL_VERSION, kind, len(body)), body, *raw))


def unframe(data: bytes | bytearray | memoryview, allowed: frozenset[int]) -> tuple[int, Any, memoryview]:
    """``(type, meta, raw)`` of a frame; ``ProtocolError`` for anything malformed."""
    import msgpack

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ProtocolError(f"expected a binary frame, got a {type(data).__name__} message")
    view = memoryview(data)
    if len(view) < HEAD_SIZE:
        raise ProtocolError(f"frame of {len(view)} bytes is shorter than the {HEAD_SIZE}-byte header")
    magic, version, kind, meta_len = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise ProtocolError("not a burn-remote frame (bad magic)")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"protocol version {version} is not supported (this side speaks {PROTOCOL_VERSION}): "
            "the client and the server need matching burn-remote versions"
        )
    if kind not in allowed:
        raise ProtocolError(f"unexpected frame type {kind}")
    if HEAD_SIZE + meta_len > len(view):
        raise ProtocolError(f"meta length {meta_len} runs past the end of a {len(view)}-byte frame")
    try:
        meta = msgpack.unpackb(
            view[HEAD_SIZE : HEAD_SIZE + meta_len], use_list=False, raw=False, object_hook=_decode_map
        )
    except ProtocolError:
        raise
    except Exception as exc:  # msgpack raises several types for bad input
        raise ProtocolError(f"malformed frame meta: {type(exc).__name__}: {exc}") from None
    return kind, meta, view[HEAD_SIZE + meta_len :]


# ---------------------------------------------------------------------------------------- op arguments
class WireRef(int):
    """A tensor argument as the server decodes it (``burn.ir.Ref``'s id; an int subclass, cheap to make)."""

    __slots__ = ()


def encode_arg(a: Any) -> Any:
    """An op argument as a msgpack-ready value (see the module docstring)."""
    if isinstance(a, Ref):
        return {"t": a.id}
    if isinstance(a, tuple):
        return tuple(encode_arg(v) for v in a)
    if isinstance(a, list):
        return {"l": [encode_arg(v) for v in a]}
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, DType):
        return {"d": a.name}
    if hasattr(a, "dtype") and hasattr(a, "tobytes"):  # a numpy array
        import numpy as np

        arr = np.asarray(a, order="C")
        return {"a": (wire_dtype(arr.dtype), list(arr.shape), arr.tobytes())}
    raise ProtocolError(f"cannot send an op argument of type {type(a).__name__}")


def _decode_map(m: dict[Any, Any]) -> Any:
    if len(m) != 1:
        return m  # frame meta (HELLO, WELCOME, ERROR): not an op argument
    value = m.get("t", m)
    if value is not m:  # a tensor reference, by far the most common map: looked for first
        if type(value) is not int:  # bool is not int here
            raise ProtocolError(f"tensor reference must be an int id, got {value!r}")
        return WireRef(value)
    ((key, value),) = m.items()  # not "t": found above
    if key == "d":
        import burn

        try:
            return burn.dtype(value)
        except Exception:
            raise ProtocolError(f"unknown dtype {value!r}") from None
    if key == "l":
        return list(value)
    if key == "a":
        return _array(value)
    return m


def _array(value: Any) -> Any:
    import numpy as np

    try:
        dtype, shape, data = value
        dt = numpy_dtype(dtype)
        shape = tuple(int(s) for s in shape)
    except Exception:
        raise ProtocolError(f"malformed array argument {value!r:.80}") from None
    if not allowed(dt) or any(s < 0 for s in shape):
        raise ProtocolError(f"array argument of dtype {dt} and shape {shape} is not allowed")
    if not isinstance(data, bytes) or len(data) != dt.itemsize * math.prod(shape):
        raise ProtocolError(f"array argument of {dt}{list(shape)} does not match its {len(data)} data bytes")
    return np.frombuffer(data, dtype=dt).reshape(shape)


BFLOAT16 = "bfloat16"  # the wire name of ml_dtypes' bfloat16, whose numpy ``str`` ('<V2') loses it


def wire_dtype(dt: Any) -> str:
    """A numpy dtype's name on the wire: its ``str`` (byte order and size), or ``"bfloat16"``."""
    return BFLOAT16 if dt.kind == "V" and dt.name == BFLOAT16 else str(dt.str)


def numpy_dtype(name: str) -> Any:
    """The numpy dtype a wire name stands for (bfloat16: ml_dtypes', as burn's numpy tables give it)."""
    import numpy as np

    if name == BFLOAT16:
        import burn
        from burn.backend import NUMPY_DTYPES

        return NUMPY_DTYPES[burn.bfloat16]  # KeyError without ml_dtypes: the caller's protocol error
    return np.dtype(name)


def allowed(dt: Any) -> bool:
    """Whether arrays of numpy dtype ``dt`` may cross the wire: numbers, bools and bfloat16."""
    return dt.kind in "biuf" or (dt.kind == "V" and dt.name == BFLOAT16)


def raw_bytes(arr: Any) -> memoryview:
    """The bytes of a C-contiguous array (bfloat16 through its 16-bit view: it has no buffer format)."""
    import numpy as np

    if not arr.size:
        return memoryview(b"")
    flat = arr.reshape(-1)
    if flat.dtype.kind == "V":
        flat = flat.view(np.uint16)
    return memoryview(flat).cast("B")


def plain_tuple(t: tuple) -> bool:
    """A tuple of numbers (shapes, dims, slices, pads): hashable, free of tensors, sent as it is."""
    for v in t:
        tv = type(v)
        if tv is tuple:
            if not plain_tuple(v):
                return False
        elif tv is not int and tv is not float and tv is not bool:
            return False
    return True


def signature_size(args: tuple, ins: tuple, outs: tuple) -> int:
    """The number of values a signature holds, as both sides count it (each number, each dimension of a
    declared shape, each started 64 characters of a string, one for anything else)."""
    try:
        return _size(args) + sum(_size(i) for i in ins) + sum(_size(o) for o in outs)
    except RecursionError:  # nested past any real argument
        return 1 << 62


def _size(v: Any) -> int:
    if type(v) is tuple or type(v) is list:
        return sum(_size(x) for x in v) + 1
    if type(v) is str:
        return len(v) // 64 + 1
    return 1
