"""Readers behind ``InMemDataset.from_csv`` / ``from_json_rows``: rows to dicts or typed items."""

from __future__ import annotations

import csv
import dataclasses
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import DatasetError


def _parse_bool(text: str) -> bool:
    value = _BOOL_WORDS.get(text.strip().lower())
    if value is None:
        raise ValueError(f"expected one of {sorted(_BOOL_WORDS)}")
    return value


_BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}

# Field types of an item dataclass that CSV text is converted to; other fields keep the text.
_CONVERTERS: dict[Any, Callable[[str], Any]] = {int: int, float: float, bool: _parse_bool, str: str}


def _dataclass_converters(item_type: Any) -> dict[str, Callable[[str], Any]]:
    if not (isinstance(item_type, type) and dataclasses.is_dataclass(item_type)):
        return {}
    hints = typing.get_type_hints(item_type)
    return {
        f.name: _CONVERTERS[hints[f.name]]
        for f in dataclasses.fields(item_type)
        if hints.get(f.name) in _CONVERTERS
    }


def _build(path: Path, line: int, row: Any, item_type: Any) -> Any:
    if item_type is None:
        return row
    if not isinstance(row, dict):
        raise DatasetError(path, f"line {line}: item_type needs an object row, got {type(row).__name__}")
    try:
        return item_type(**row)
    except TypeError as exc:
        raise DatasetError(
            path, f"line {line}: cannot build {item_type.__name__} from the row: {exc}"
        ) from exc


def _open_text(path: Any) -> tuple[Path, Any]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    return p, p.open(newline="", encoding="utf-8")


def read_csv_rows(
    path: Any, *, item_type: Any = None, types: dict[str, Any] | None = None, delimiter: str = ","
) -> list[Any]:
    """Rows of a CSV file with a header line (see ``InMemDataset.from_csv``)."""
    p, f = _open_text(path)
    converters = {**_dataclass_converters(item_type), **(types or {})}
    with f:
        reader = csv.reader(f, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise DatasetError(p, "empty CSV file: expected a header line") from None
        except csv.Error as exc:
            raise DatasetError(p, f"line 1: {exc}") from exc
        unknown = sorted(set(types or {}) - set(header))
        if unknown:
            raise DatasetError(p, f"types names columns {unknown} that the header {header} lacks")
        rows = []
        try:
            for fields in reader:
                line = reader.line_num
                if not fields:
                    continue
                if len(fields) != len(header):
                    raise DatasetError(
                        p, f"line {line}: expected {len(header)} fields ({header}), got {len(fields)}"
                    )
                row = dict(zip(header, fields))
                for column, convert in converters.items():
                    if column in row:
                        row[column] = _convert(p, line, column, row[column], convert)
                rows.append(_build(p, line, row, item_type))
        except csv.Error as exc:
            raise DatasetError(p, f"line {reader.line_num}: {exc}") from exc
    return rows


def _convert(path: Path, line: int, column: str, text: str, convert: Callable[[str], Any]) -> Any:
    try:
        return convert(text)
    except (TypeError, ValueError) as exc:
        name = getattr(convert, "__name__", repr(convert)).lstrip("_")
        raise DatasetError(
            path, f"line {line}, column {column!r}: cannot convert {text!r} with {name}: {exc}"
        ) from exc


def read_json_rows(path: Any, *, item_type: Any = None) -> list[Any]:
    """Rows of a JSON-lines file (see ``InMemDataset.from_json_rows``)."""
    p, f = _open_text(path)
    rows = []
    with f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DatasetError(p, f"line {line}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
            rows.append(_build(p, line, row, item_type))
    return rows
