"""A session's frames: the client's frames decoded into typed parts, and the replies that go back.

The server's connection (``_server``) moves whole frames; here a frame is opened (``unframe``, whose
errors close the session), the meta of each frame type is checked for its form, and the DATA frames of a
read are made, one at a time. The wire format is ``_protocol``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ._errors import ProtocolError
from ._protocol import CHUNK, CLIENT_FRAMES, DATA, HELLO, frame, numpy_dtype, raw_bytes, unframe, wire_dtype
from ._protocol import allowed as allowed_dtype


@dataclass
class Reply:
    """What handling one frame gives: frames to send back, and a reason when the session must close."""

    frames: list[bytes] = field(default_factory=list)
    close: str | None = None
    # frames made one at a time on the session's thread and sent as they come (a read's DATA frames:
    # sending starts with the first, and only a few are held at once); sent after ``frames``
    stream: Iterator[bytes] | None = None
    streamed: bool = False  # one frame of a stream (the server's sender then asks for the next)


def decode(message: Any) -> tuple[int, Any, memoryview]:
    """``(type, meta, raw)`` of a frame of an open session (one after its HELLO)."""
    kind, meta, raw = unframe(message, CLIENT_FRAMES)
    if kind == HELLO:
        raise ProtocolError("HELLO sent twice")
    return kind, meta, raw


def ops_meta(meta: Any) -> tuple[tuple, tuple[int, ...], bool]:
    """``(records, drops, step)`` of an OPS frame (``step``: the client's training step ended)."""
    if not (isinstance(meta, tuple) and len(meta) in (2, 3) and isinstance(meta[0], tuple)):
        raise ProtocolError("OPS frame: expected (records, drops[, step])")
    records, drops = meta[0], meta[1]
    step = len(meta) == 3
    if step and meta[2] is not True:
        raise ProtocolError("OPS frame: the step mark must be true")
    if not isinstance(drops, tuple) or not all(type(d) is int for d in drops):
        raise ProtocolError("OPS frame: drops must be a list of tensor ids")
    return records, drops, step


class Chunk(NamedTuple):
    """An UPLOAD frame's meta: the bytes from ``offset`` of tensor ``tid`` (``total`` bytes in all)."""

    tid: int
    dtype_name: Any  # the burn dtype's name, checked when the tensor is made
    np_dtype: Any
    shape: tuple
    total: int
    offset: int


def upload_meta(meta: Any) -> Chunk:
    """The ``Chunk`` an UPLOAD frame's meta describes."""
    try:
        tid, dtype_name, np_name, shape, total, offset = meta
        shape = tuple(shape)
        np_dtype = numpy_dtype(np_name)
        ok = type(tid) is int and type(total) is int and type(offset) is int and allowed_dtype(np_dtype)
    except Exception:
        raise ProtocolError("UPLOAD frame: expected (id, dtype, numpy dtype, shape, total, offset)") from None
    if not ok:
        raise ProtocolError("UPLOAD frame: malformed sizes or dtype")
    return Chunk(tid, dtype_name, np_dtype, shape, total, offset)


def read_meta(meta: Any) -> tuple:
    """The tensor ids a READ frame asks for (checked one by one by the reader)."""
    if not (isinstance(meta, tuple) and len(meta) == 1 and isinstance(meta[0], tuple)):
        raise ProtocolError("READ frame: expected (ids,)")
    ids: tuple = meta[0]
    return ids


def data_frames(arrays: list[Any]) -> Iterator[bytes]:
    """DATA frames carrying ``arrays``: pieces of at most ``CHUNK`` bytes, several small arrays per frame;
    the last frame says so."""
    pieces: list[tuple] = []
    raws: list[memoryview] = []
    size = 0
    for i, arr in enumerate(arrays):
        data = raw_bytes(arr)
        total = len(data)
        offset = 0
        while True:
            n = min(CHUNK - size, total - offset)
            pieces.append((i, wire_dtype(arr.dtype), list(arr.shape), total, offset, n))
            raws.append(data[offset : offset + n])
            size += n
            offset += n
            if offset >= total:
                break
            yield frame(DATA, (False, tuple(pieces)), *raws)
            pieces, raws, size = [], [], 0
    yield frame(DATA, (True, tuple(pieces)), *raws)
