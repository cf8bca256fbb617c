"""A record's dtype mismatch names the dtype the record really holds (issue 13: an int32 ``fc1.bias``
was reported as ``record has float32``, the dtype its metadata claimed)."""

import burn
import numpy as np
import pytest
from burn import nn, record
from burn.record._file import read_arrays
from safetensors.numpy import save as st_save


class Net(nn.Module):
    def __init__(self) -> None:
        self.fc1 = nn.LinearConfig(2, 3).init()


def _rewritten(data: bytes, **arrays: np.ndarray) -> bytes:
    """The record with some tensors replaced, its metadata kept as it was (a file edited by a tool)."""
    tensors = {**read_arrays(data), **arrays}
    return st_save(tensors, metadata=record.read_metadata(data))


def test_int32_tensor_under_float32_metadata_names_int32():
    data = record.to_bytes(Net())
    bias = read_arrays(data)["fc1.bias"].astype(np.int32)
    bad = _rewritten(data, **{"fc1.bias": bias})
    target = Net()
    before = target.record()
    with pytest.raises(burn.RecordError) as info:
        record.from_bytes(target, bad)
    msg = str(info.value)
    assert "dtype mismatch: fc1.bias: module has float32, record has int32 (its metadata says float32)" in msg
    assert "record has float32" not in msg
    assert "fc1.weight" not in msg  # only the entry that is wrong
    assert all(np.array_equal(before[k], v) for k, v in target.record().items())


def test_record_saved_from_an_int32_param_names_int32():
    src = Net()
    src.fc1.bias = src.fc1.bias.with_value(src.fc1.bias.val().cast(burn.int32))
    with pytest.raises(burn.RecordError, match="fc1.bias: module has float32, record has int32$"):
        record.from_bytes(Net(), record.to_bytes(src))


def test_half_precision_record_of_a_float64_model_says_how_it_was_stored():
    src = Net().map(lambda t: t.cast(burn.float64))
    half = record.to_bytes(src, dtype=burn.float16)
    with pytest.raises(burn.RecordError) as info:
        record.from_bytes(Net(), half)
    assert "fc1.weight: module has float32, record has float64 (stored as float16)" in str(info.value)


def test_half_precision_record_of_a_matching_model_still_loads():
    src = Net()
    loaded = record.from_bytes(Net(), record.to_bytes(src, dtype=burn.float16))
    assert loaded.fc1.weight.dtype == burn.float32
    np.testing.assert_allclose(
        loaded.fc1.weight.val().numpy(), src.fc1.weight.val().numpy(), rtol=1e-3, atol=1e-3
    )


def test_load_record_names_the_arrays_dtype_not_its_kind():
    """``Module.load_record`` with an int32 array where the module holds float32 said "record has int"."""
    target = Net()
    arrays = target.record()
    arrays["fc1.bias"] = arrays["fc1.bias"].astype(np.int32)
    with pytest.raises(burn.RecordError, match=r"fc1\.bias: module has float32, record has int32$"):
        target.load_record(arrays)
