"""IDX files and MnistDataset: raw and gzip, validated magic numbers, sizes and counts."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from burn.data import DatasetError
from burn.data.vision import MnistDataset, MnistItem, read_idx

# numpy dtype -> IDX type code, written independently of the reader's table
CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def idx_bytes(arr: np.ndarray, code: int | None = None) -> bytes:
    code = CODES[arr.dtype.type] if code is None else code
    header = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write(path, data: bytes, gz: bool = False):
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def make_mnist(root, split="train", n=5, gz=False, size=(28, 28), seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, *size), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    prefix = "train" if split == "train" else "t10k"
    suffix = ".gz" if gz else ""
    write(root / f"{prefix}-images-idx3-ubyte{suffix}", idx_bytes(images), gz)
    write(root / f"{prefix}-labels-idx1-ubyte{suffix}", idx_bytes(labels), gz)
    return images, labels


@pytest.mark.parametrize("dtype", list(CODES))
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trips_every_type(tmp_path, dtype, gz):
    arr = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    if dtype is np.uint8:
        arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    out = read_idx(write(tmp_path / "a.idx", idx_bytes(arr), gz))
    assert out.dtype == np.dtype(dtype) and out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, arr)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("split", ["train", "test"])
def test_mnist_dataset_reads_raw_and_gz(tmp_path, gz, split):
    images, labels = make_mnist(tmp_path, split, n=7, gz=gz, seed=1)
    ds = MnistDataset(tmp_path, split)
    assert len(ds) == 7
    item = ds[3]
    assert isinstance(item, MnistItem) and item.label == int(labels[3]) and type(item.label) is int
    np.testing.assert_array_equal(item.image, images[3])
    assert item.image.shape == (28, 28) and item.image.dtype == np.uint8
    assert [it.label for it in ds] == labels.tolist()


def test_mnist_accepts_dotted_names_and_other_sizes(tmp_path):
    images = np.zeros((2, 4, 5), np.uint8)
    write(tmp_path / "train-images.idx3-ubyte", idx_bytes(images))
    write(tmp_path / "train-labels.idx1-ubyte", idx_bytes(np.array([1, 2], np.uint8)))
    ds = MnistDataset(tmp_path)
    assert ds[1].image.shape == (4, 5) and ds[1].label == 2


def test_mnist_missing_files_and_bad_split(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        MnistDataset(tmp_path, "train")
    with pytest.raises(ValueError, match=r"split must be one of \['test', 'train'\], got 'valid'"):
        MnistDataset(tmp_path, "valid")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        MnistDataset(tmp_path / "nowhere")


def test_mnist_wrong_magic_numbers(tmp_path):
    make_mnist(tmp_path)
    labels = np.zeros(5, np.uint8)
    # labels stored as 32-bit ints: a valid IDX file, but not an MNIST label file
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes(labels.astype(np.int32)))
    with pytest.raises(
        DatasetError, match=r"magic number 0x00000c01 \(int, 1 dims\), expected 0x00000801"
    ) as info:
        MnistDataset(tmp_path)
    assert "train-labels-idx1-ubyte" in str(info.value)
    # images with a label file's rank
    make_mnist(tmp_path)
    write(tmp_path / "train-images-idx3-ubyte", idx_bytes(labels))
    with pytest.raises(DatasetError, match=r"train-images-idx3-ubyte: magic number 0x00000801"):
        MnistDataset(tmp_path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x00", "too short for an IDX header: 2 bytes"),
        (b"\x12\x34\x08\x01" + b"\x00" * 8, "bad IDX magic number 0x12340801"),
        (b"\x00\x00\x07\x01" + b"\x00" * 8, "bad IDX magic number 0x00000701"),
        (b"\x00\x00\x08\x00", "bad IDX magic number 0x00000800"),
        (b"\x00\x00\x08\x03\x00\x00\x00\x02", r"truncated header: 3 dims need 16 bytes, file has 8"),
    ],
)
def test_read_idx_malformed_headers(tmp_path, data, message):
    with pytest.raises(DatasetError, match=message) as info:
        read_idx(write(tmp_path / "bad-idx", data))
    assert str(tmp_path / "bad-idx") in str(info.value)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("extra", [-1, 3])
def test_read_idx_size_mismatch(tmp_path, gz, extra):
    data = idx_bytes(np.zeros((3, 2, 2), np.uint8))
    data = data[:extra] if extra < 0 else data + b"\x00" * extra
    path = write(tmp_path / ("x.gz" if gz else "x"), data, gz)
    expected = 4 + 12 + 12
    pattern = (
        rf"size mismatch: the header declares shape \(3, 2, 2\) of unsigned bytes, i.e. {expected} bytes"
    )
    with pytest.raises(DatasetError, match=pattern) as info:
        read_idx(path)
    assert f"has {expected + extra} bytes" in str(info.value)
    assert ("decompressed data" in str(info.value)) == gz


def test_count_mismatch_and_corrupt_gzip(tmp_path):
    make_mnist(tmp_path, n=5)
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(DatasetError, match="train-labels-idx1-ubyte: 4 labels for 5 images"):
        MnistDataset(tmp_path)
    good = gzip.compress(idx_bytes(np.zeros((2, 2), np.uint8)))
    with pytest.raises(DatasetError, match="corrupt gzip data"):
        read_idx(write(tmp_path / "c.gz", good[:-6]))
    with pytest.raises(DatasetError, match="named .gz but not gzip data"):
        read_idx(write(tmp_path / "d.gz", idx_bytes(np.zeros((2, 2), np.uint8))))
