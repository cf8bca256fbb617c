"""The IDX file format of MNIST (and Fashion-MNIST, KMNIST, EMNIST), raw or gzip-compressed.

Layout: two zero bytes, a type code, the number of dimensions ``d``, then ``d`` big-endian uint32 sizes,
then the values, big-endian, row-major. Every check names the file and what is wrong with it.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path
from typing import Any

from .._errors import DatasetError

# IDX type code -> (numpy dtype, name used in messages)
IDX_TYPES = {
    0x08: (">u1", "unsigned byte"),
    0x09: (">i1", "signed byte"),
    0x0B: (">i2", "short"),
    0x0C: (">i4", "int"),
    0x0D: (">f4", "float"),
    0x0E: (">f8", "double"),
}

_GZIP_MAGIC = b"\x1f\x8b"


def _read_bytes(path: Path) -> tuple[bytes, bool]:
    """The file's bytes, decompressed when they are gzip data; and whether they were."""
    raw = path.read_bytes()
    if raw[:2] != _GZIP_MAGIC:
        if path.suffix == ".gz":
            raise DatasetError(
                path, f"named .gz but not gzip data (starts with {raw[:4].hex() or 'nothing'})"
            )
        return raw, False
    try:
        return gzip.decompress(raw), True
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(path, f"corrupt gzip data: {exc}") from exc


def read_idx(path: Any, *, expect_magic: int | None = None) -> Any:
    """The array stored in an IDX file (raw or gzip, detected from the content).

    ``expect_magic`` (e.g. ``0x00000803`` for MNIST images: unsigned bytes, 3 dims) rejects any other
    type or rank. Returns a read-only numpy array of the file's shape, in native byte order.

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "labels-idx1-ubyte")
    ...     with open(path, "wb") as fh:   # magic 0x00000801 (unsigned bytes, 1 dim), size 3, the values
    ...         _ = fh.write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 2, 1]))
    ...     labels = burn.data.vision.read_idx(path, expect_magic=0x00000801)
    >>> labels.shape, labels.tolist()
    ((3,), [7, 2, 1])
    """
    import numpy as np

    p = Path(path)
    data, compressed = _read_bytes(p)
    if len(data) < 4:
        raise DatasetError(p, f"too short for an IDX header: {len(data)} bytes, need at least 4")
    magic = int.from_bytes(data[:4], "big")
    zero, code, ndim = data[0] | data[1], data[2], data[3]
    if zero or code not in IDX_TYPES or ndim == 0:
        raise DatasetError(
            p,
            f"bad IDX magic number 0x{magic:08x}: expected two zero bytes, a type code in "
            f"{{{', '.join(f'0x{c:02x}' for c in IDX_TYPES)}}} and at least one dimension",
        )
    if expect_magic is not None and magic != expect_magic:
        want_code, want_ndim = (expect_magic >> 8) & 0xFF, expect_magic & 0xFF
        raise DatasetError(
            p,
            f"magic number 0x{magic:08x} ({IDX_TYPES[code][1]}, {ndim} dims), expected "
            f"0x{expect_magic:08x} ({IDX_TYPES.get(want_code, ('', '?'))[1]}, {want_ndim} dims)",
        )
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetError(p, f"truncated header: {ndim} dims need {header} bytes, file has {len(data)}")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(IDX_TYPES[code][0])
    expected = header + math.prod(dims) * dtype.itemsize
    if len(data) != expected:
        raise DatasetError(
            p,
            f"size mismatch: the header declares shape {dims} of {IDX_TYPES[code][1]}s, i.e. {expected} "
            f"bytes in all, but the {'decompressed ' if compressed else ''}data has {len(data)} bytes",
        )
    arr = np.frombuffer(data, dtype=dtype, count=math.prod(dims), offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=False)
