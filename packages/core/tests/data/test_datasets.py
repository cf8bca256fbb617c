"""Datasets and dataset transforms: InMemDataset (lists, CSV, JSON rows), Mapper, Partial, Shuffled,
Sampler, Windows, Composed."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pytest
from burn import IndexOutOfRangeError
from burn.data import (
    ComposedDataset,
    Dataset,
    DatasetError,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    ShuffledDataset,
    WindowsDataset,
)


class PlainDataset:
    """A third-party dataset: only the protocol, no burn base class."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(index)
        return index * index


def test_protocol_is_structural():
    assert isinstance(PlainDataset(3), Dataset)
    assert isinstance(InMemDataset([1]), Dataset)
    assert not isinstance(object(), Dataset)


def test_in_mem_dataset_indexing_and_iteration():
    ds = InMemDataset(["a", "b", "c"])
    assert len(ds) == 3 and ds[0] == "a" and ds[-1] == "c" and ds[np.int64(1)] == "b"
    assert list(ds) == ["a", "b", "c"] and ds.items == ("a", "b", "c")
    assert not ds.is_empty() and InMemDataset([]).is_empty()
    with pytest.raises(IndexOutOfRangeError, match="index 3 out of range for a dataset of 3 items"):
        ds[3]
    with pytest.raises(IndexOutOfRangeError, match="index -4"):
        ds[-4]
    with pytest.raises(TypeError, match="index must be an int, got str"):
        ds["0"]
    with pytest.raises(TypeError, match="got bool"):
        ds[True]


@dataclass
class Row:
    x: float
    label: int
    name: str
    flag: bool


def test_from_csv_dicts_types_and_dataclass(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('x,label,name,flag\n1.5,3,a,true\n-2,0,"b,c",0\n\n')
    plain = InMemDataset.from_csv(path)
    assert plain[0] == {"x": "1.5", "label": "3", "name": "a", "flag": "true"} and len(plain) == 2
    typed = InMemDataset.from_csv(path, types={"x": float, "label": int})
    assert typed[1] == {"x": -2.0, "label": 0, "name": "b,c", "flag": "0"}
    items = InMemDataset.from_csv(path, item_type=Row)
    assert list(items) == [Row(1.5, 3, "a", True), Row(-2.0, 0, "b,c", False)]
    semi = tmp_path / "semi.csv"
    semi.write_text("a;b\n1;2\n")
    assert InMemDataset.from_csv(semi, delimiter=";", types={"b": int})[0] == {"a": "1", "b": 2}


@pytest.mark.parametrize(
    ("text", "kwargs", "message"),
    [
        ("", {}, "empty CSV file: expected a header line"),
        ("x,label\n1,2\n3\n", {}, r"line 3: expected 2 fields \(\['x', 'label'\]\), got 1"),
        (
            "x,label\n1,oops\n",
            {"types": {"label": int}},
            r"line 2, column 'label': cannot convert 'oops' with int",
        ),
        (
            "x,label,name,flag\n1,2,a,maybe\n",
            {"item_type": Row},
            r"line 2, column 'flag': cannot convert 'maybe'",
        ),
        ("x,label\n1,2\n", {"item_type": Row}, "line 2: cannot build Row from the row"),
        ("x\n1\n", {"types": {"y": int}}, r"types names columns \['y'\]"),
    ],
)
def test_from_csv_malformed(tmp_path, text, kwargs, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DatasetError, match=message) as info:
        InMemDataset.from_csv(path, **kwargs)
    assert str(path) in str(info.value) and info.value.path == str(path)


def test_from_csv_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        InMemDataset.from_csv(tmp_path / "nope.csv")


def test_from_json_rows(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [
        {"x": 1.5, "label": 3, "name": "a", "flag": True},
        {"x": 2.0, "label": 1, "name": "b", "flag": False},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert list(InMemDataset.from_json_rows(path)) == rows
    assert InMemDataset.from_json_rows(path, item_type=Row)[1] == Row(2.0, 1, "b", False)


def test_from_json_rows_malformed(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"x": 1}\n{"x": 2,}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl: line 2: invalid JSON"):
        InMemDataset.from_json_rows(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(DatasetError, match="line 1: item_type needs an object row, got list"):
        InMemDataset.from_json_rows(path, item_type=Row)


class Doubler:
    def map(self, item: int) -> int:
        return 2 * item


def test_mapper_dataset_with_mapper_and_callable():
    base = PlainDataset(4)
    assert list(MapperDataset(base, Doubler())) == [0, 2, 8, 18]
    assert MapperDataset(base, str)[3] == "9" and len(MapperDataset(base, str)) == 4
    with pytest.raises(TypeError, match="mapper must have a map"):
        MapperDataset(base, 3)


def test_partial_dataset_and_split():
    base = InMemDataset(range(10))
    part = PartialDataset(base, 2, 5)
    assert list(part) == [2, 3, 4] and part[-1] == 4
    assert len(PartialDataset(base, 8, 100)) == 2 and len(PartialDataset(base, 20, 30)) == 0
    with pytest.raises(ValueError, match=r"end \(1\) must be >= start \(2\)"):
        PartialDataset(base, 2, 1)
    with pytest.raises(IndexOutOfRangeError):
        part[3]
    parts = PartialDataset.split(base, 3)
    assert [list(p) for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    with pytest.raises(ValueError, match="num must be >= 1"):
        PartialDataset.split(base, 0)


def test_shuffled_dataset_is_a_seeded_permutation():
    base = InMemDataset(range(50))
    a, b, c = (ShuffledDataset(base, seed=s) for s in (7, 7, 8))
    assert list(a) == list(b) and list(a) != list(c)
    assert sorted(a) == list(range(50)) and list(a) != list(range(50))
    # independent reference: numpy's permutation from the same seed
    assert list(a) == np.random.default_rng(7).permutation(50).tolist()
    assert sorted(ShuffledDataset(base)) == list(range(50))
    with pytest.raises(ValueError, match="seed must be >= 0"):
        ShuffledDataset(base, seed=-1)


def test_sampler_without_replacement_covers_each_pass():
    base = InMemDataset(range(10))
    ds = SamplerDataset(base, 25, replacement=False, seed=3)
    draws = list(ds)
    assert len(draws) == 25
    assert sorted(draws[:10]) == list(range(10)) and sorted(draws[10:20]) == list(range(10))
    assert len(set(draws[20:])) == 5
    assert draws == list(SamplerDataset(base, 25, replacement=False, seed=3))


def test_sampler_with_replacement_is_uniform():
    ds = SamplerDataset(InMemDataset(range(4)), 4000, seed=11)
    counts = Counter(ds)
    assert set(counts) == {0, 1, 2, 3}
    # chi-square with 3 degrees of freedom: 16.27 is the 0.1% critical value
    chi2 = sum((c - 1000) ** 2 / 1000 for c in counts.values())
    assert chi2 < 16.27
    small = list(SamplerDataset(InMemDataset(range(3)), 30, seed=0))
    assert len(set(small)) <= 3 and max(Counter(small).values()) > 1  # repeats happen
    with pytest.raises(ValueError, match="cannot draw 2 items from an empty dataset"):
        SamplerDataset(InMemDataset([]), 2)


def test_windows_dataset():
    ds = WindowsDataset(InMemDataset([1, 2, 3, 4, 5]), size=2)
    assert len(ds) == 4 and list(ds) == [[1, 2], [2, 3], [3, 4], [4, 5]]
    assert len(WindowsDataset(InMemDataset([1, 2]), size=3)) == 0
    with pytest.raises(ValueError, match="size must be >= 1"):
        WindowsDataset(InMemDataset([1]), size=0)


def test_composed_dataset():
    ds = ComposedDataset([InMemDataset([1, 2]), InMemDataset([]), PlainDataset(3)])
    assert len(ds) == 5 and list(ds) == [1, 2, 0, 1, 4] and ds[-1] == 4
    assert len(ComposedDataset([])) == 0
    with pytest.raises(IndexOutOfRangeError):
        ds[5]
    with pytest.raises(TypeError, match=r"datasets\[1\] must have __len__ and __getitem__"):
        ComposedDataset([InMemDataset([1]), 5])
