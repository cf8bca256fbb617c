"""The restricted reader of torch.save files, on archives built here without torch (``_torch_archive``):
views (offsets, strides, shared storages), dtypes, byte order, and files that must be refused (code
in the pickle, a TorchScript archive, a pickled module, out-of-range views, the legacy format)."""

from __future__ import annotations

import os
import pickle
import zipfile

import burn
import numpy as np
import pytest
from burn.record._torch_read import read_torch_file
from burn.record._torch_write import write_torch_file
from burn_core_tests._torch_archive import (
    Call,
    Global,
    Storage,
    float_storage,
    ordered_dict,
    tensor,
    write_archive,
)


def test_views_share_one_storage_with_offsets_and_strides(tmp_path):
    base = np.arange(12, dtype=np.float32)
    storage, raw = float_storage("0", base)
    obj = ordered_dict(
        {
            "matrix": tensor(storage, 0, (3, 4), (4, 1)),
            "transposed": tensor(storage, 0, (4, 3), (1, 4)),  # PyTorch's .t() of the same storage
            "row_slice": tensor(storage, 4, (2, 4), (4, 1)),  # rows 1..2
            "every_other": tensor(storage, 1, (6,), (2,)),
            "scalar": tensor(storage, 7, (), ()),
            "broadcast": tensor(storage, 2, (3, 2), (0, 1)),  # expand(): stride 0
            "empty": tensor(storage, 0, (0, 5), (5, 1)),
        }
    )
    write_archive(tmp_path / "views.pt", obj, {"0": raw})
    got = read_torch_file(str(tmp_path / "views.pt"))
    m = base.reshape(3, 4)
    np.testing.assert_array_equal(got["matrix"], m)
    np.testing.assert_array_equal(got["transposed"], m.T)
    np.testing.assert_array_equal(got["row_slice"], m[1:])
    np.testing.assert_array_equal(got["every_other"], base[1::2])
    assert got["scalar"].shape == () and got["scalar"] == 7.0
    np.testing.assert_array_equal(got["broadcast"], np.broadcast_to(base[2:4], (3, 2)))
    assert got["empty"].shape == (0, 5)
    assert list(got) == ["matrix", "transposed", "row_slice", "every_other", "scalar", "broadcast", "empty"]
    for arr in got.values():  # copies, not views into the archive's bytes
        assert arr.flags.c_contiguous and arr.flags.writeable


@pytest.mark.parametrize(
    "storage_name,dtype",
    [
        ("DoubleStorage", "float64"),
        ("HalfStorage", "float16"),
        ("LongStorage", "int64"),
        ("IntStorage", "int32"),
        ("ShortStorage", "int16"),
        ("CharStorage", "int8"),
        ("ByteStorage", "uint8"),
        ("BoolStorage", "bool"),
    ],
)
def test_typed_storages(tmp_path, storage_name, dtype):
    values = (np.arange(6) % 2 == 0) if dtype == "bool" else np.arange(6).astype(dtype)
    st = Storage("0", Global("torch", storage_name), 6)
    write_archive(tmp_path / "t.pt", {"x": tensor(st, 0, (2, 3), (3, 1))}, {"0": values.tobytes()})
    got = read_torch_file(str(tmp_path / "t.pt"))["x"]
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, values.reshape(2, 3))


def test_bfloat16_storage_and_v3_untyped_storage(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
    f8 = np.array([0.5, 1.0], dtype=ml_dtypes.float8_e4m3fn)
    bf_st = Storage("0", Global("torch", "BFloat16Storage"), 3)
    f8_st = Storage("1", Global("torch.storage", "UntypedStorage"), 2)  # numel in bytes
    hooks = Call(Global("collections", "OrderedDict"), ())
    v3 = Call(
        Global("torch._utils", "_rebuild_tensor_v3"),
        (f8_st, 0, (2,), (1,), False, hooks, Global("torch", "float8_e4m3fn")),
    )
    obj = {"bf": tensor(bf_st, 0, (3,), (1,)), "f8": v3}
    write_archive(tmp_path / "t.pt", obj, {"0": bf.tobytes(), "1": f8.tobytes()})
    got = read_torch_file(str(tmp_path / "t.pt"))
    assert got["bf"].dtype.name == "bfloat16" and got["bf"].astype(np.float32).tolist() == [1.5, -2.0, 3.25]
    assert got["f8"].dtype.name == "float8_e4m3fn" and got["f8"].astype(np.float32).tolist() == [0.5, 1.0]


def test_big_endian_archive(tmp_path):
    values = np.arange(4, dtype=">f4")
    st = Storage("0", Global("torch", "FloatStorage"), 4)
    write_archive(
        tmp_path / "be.pt", {"x": tensor(st, 0, (4,), (1,))}, {"0": values.tobytes()}, byteorder="big"
    )
    np.testing.assert_array_equal(read_torch_file(str(tmp_path / "be.pt"))["x"], [0.0, 1.0, 2.0, 3.0])


def test_parameters_nested_dicts_and_plain_values(tmp_path):
    st, raw = float_storage("0", np.ones(3))
    param = Call(
        Global("torch._utils", "_rebuild_parameter"), (tensor(st, 0, (3,), (1,)), True, ordered_dict({}))
    )
    obj = {"epoch": 3, "lr": 0.1, "tags": ["a", "b"], "model": ordered_dict({"w": param}), "none": None}
    write_archive(tmp_path / "ckpt.pt", obj, {"0": raw})
    got = read_torch_file(str(tmp_path / "ckpt.pt"))
    assert got["epoch"] == 3 and got["tags"] == ["a", "b"] and got["none"] is None
    np.testing.assert_array_equal(got["model"]["w"], np.ones(3, np.float32))


MARKER = "burn_pickle_ran"


def _malicious(tmp_path, obj, storages=None):
    path = tmp_path / "evil.pt"
    write_archive(path, obj, storages or {})
    return str(path)


@pytest.mark.parametrize(
    "func,args",
    [
        (Global("os", "system"), (f"touch {MARKER}",)),
        (Global("posix", "system"), (f"touch {MARKER}",)),
        (Global("builtins", "exec"), (f"open('{MARKER}', 'w').close()",)),
        (Global("builtins", "eval"), (f"open('{MARKER}', 'w')",)),
        (Global("subprocess", "call"), (["touch", MARKER],)),
    ],
)
def test_code_in_the_pickle_is_refused_and_never_runs(tmp_path, monkeypatch, func, args):
    monkeypatch.chdir(tmp_path)
    path = _malicious(tmp_path, {"weight": Call(func, args)})
    with pytest.raises(burn.RecordError, match=rf"refusing to load '{func.module}\.{func.name}'"):
        read_torch_file(path)
    with pytest.raises(burn.RecordError, match="without running the pickle's code"):
        burn.record.load_torch(path, burn.nn.LinearConfig(2, 2).init())
    assert not os.path.exists(tmp_path / MARKER)


def test_a_real_malicious_pickle_written_by_pickle_dumps(tmp_path, monkeypatch):
    """What an attacker ships: a class whose __reduce__ returns os.system, pickled by the stdlib."""

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {MARKER}",))

    monkeypatch.chdir(tmp_path)
    with zipfile.ZipFile(tmp_path / "evil.pt", "w") as zf:
        zf.writestr("evil/data.pkl", pickle.dumps({"weight": Exploit()}, protocol=2))
        zf.writestr("evil/version", "3\n")
    with pytest.raises(burn.RecordError, match="refusing to load '(posix|os|nt).system'"):
        read_torch_file(str(tmp_path / "evil.pt"))
    assert not os.path.exists(tmp_path / MARKER)


def test_torchscript_and_pickled_modules_are_refused_with_a_hint(tmp_path):
    scripted = _malicious(tmp_path, Call(Global("__torch__.Net", "Net"), ()))
    with pytest.raises(burn.RecordError, match="TorchScript archive"):
        read_torch_file(scripted)
    module = _malicious(tmp_path, Call(Global("torch.nn.modules.linear", "Linear"), ()))
    with pytest.raises(burn.RecordError, match=r"save model.state_dict\(\)"):
        read_torch_file(module)


@pytest.mark.parametrize(
    "offset,size,stride,match",
    [
        (0, (4, 4), (4, 1), "reach element 15 of storage '0', which holds 12"),
        (10, (3,), (1,), "reach element 12"),
        (0, (3, 4), (4, -1), "tuple of ints >= 0"),
        (-1, (3,), (1,), "storage offset -1"),
        (0, (3, 4), (4,), "differ in rank"),
    ],
)
def test_views_outside_their_storage_are_refused(tmp_path, offset, size, stride, match):
    storage, raw = float_storage("0", np.arange(12))
    path = _malicious(tmp_path, {"x": tensor(storage, offset, size, stride)}, {"0": raw})
    with pytest.raises(burn.RecordError, match=match):
        read_torch_file(path)


def test_truncated_and_missing_storages(tmp_path):
    storage = Storage("0", Global("torch", "FloatStorage"), 12)  # claims 12 floats, holds 2
    path = _malicious(tmp_path, {"x": tensor(storage, 0, (2,), (1,))}, {"0": b"\0" * 8})
    with pytest.raises(burn.RecordError, match="truncated"):
        read_torch_file(path)
    path = _malicious(tmp_path, {"x": tensor(storage, 0, (2,), (1,))}, {})
    with pytest.raises(burn.RecordError, match="which the archive lacks"):
        read_torch_file(path)


def test_not_torch_files(tmp_path):
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19" + b"\0" * 16)
    with pytest.raises(burn.RecordError, match="legacy format"):
        read_torch_file(str(legacy))
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(burn.RecordError, match="not a torch.save file"):
        read_torch_file(str(other_zip))
    damaged = tmp_path / "damaged.pt"
    with zipfile.ZipFile(damaged, "w") as zf:
        zf.writestr("a/data.pkl", b"\x80\x02}q\x00(X")
    with pytest.raises(burn.RecordError, match="damaged PyTorch pickle"):
        read_torch_file(str(damaged))


def test_writer_round_trips_through_the_reader(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "w": rng.standard_normal((3, 5)).astype(np.float32),
        "t": np.asfortranarray(rng.standard_normal((4, 2))),  # written C-ordered
        "n": np.array(7, dtype=np.int64),
        "mask": np.array([True, False]),
    }
    write_torch_file(arrays, str(tmp_path / "w.pt"))
    with zipfile.ZipFile(tmp_path / "w.pt") as zf:  # storages 64-byte aligned, as torch.save lays them out
        for info in zf.infolist():
            if "/data/" in info.filename:
                start = info.header_offset + 30 + len(info.filename) + len(info.extra)
                assert start % 64 == 0, info.filename
    got = read_torch_file(str(tmp_path / "w.pt"))
    assert list(got) == list(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)


def test_setting_state_on_torch_stand_ins_is_refused(tmp_path):
    # GLOBAL torch.float32, {'name': 'x'}, BUILD: would otherwise overwrite the stand-in's attributes
    raw = b"\x80\x02ctorch\nfloat32\n}X\x04\x00\x00\x00nameX\x01\x00\x00\x00xsb."
    with zipfile.ZipFile(tmp_path / "build.pt", "w") as zf:
        zf.writestr("a/data.pkl", raw)
    with pytest.raises(burn.RecordError, match="sets the state of a torch type"):
        read_torch_file(str(tmp_path / "build.pt"))


def test_load_torch_names_the_legacy_format(tmp_path):
    legacy = tmp_path / "old.pth"
    legacy.write_bytes(b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19" + b"\0" * 16)
    with pytest.raises(burn.RecordError, match="legacy format"):
        burn.record.load_torch(legacy, burn.nn.LinearConfig(2, 2).init())
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{]")
    with pytest.raises(burn.RecordError, match="junk.safetensors"):
        burn.record.load_torch(junk, burn.nn.LinearConfig(2, 2).init())
