"""Reading a COCO object-detection annotation file into (image path, BoundingBoxes) records.

Only what detection needs is read: ``images`` (id, file_name, width, height), ``categories`` (id,
name) and ``annotations`` (image_id, category_id, bbox). Errors name the file and the entry.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .._errors import DatasetError
from ._items import BoundingBox, BoundingBoxes


def _field(path: Path, where: str, entry: Any, key: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(entry, dict):
        raise DatasetError(path, f"{where} must be an object, got {type(entry).__name__}")
    if key not in entry:
        raise DatasetError(path, f"{where} has no {key!r}")
    value = entry[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise DatasetError(path, f"{where}.{key} must be {names}, got {value!r}")
    return value


def _section(path: Path, doc: Any, key: str) -> list[Any]:
    if not isinstance(doc, dict):
        raise DatasetError(path, f"top level must be a JSON object, got {type(doc).__name__}")
    value = doc.get(key)
    if not isinstance(value, list):
        raise DatasetError(path, f"expected a list under {key!r}, got {type(value).__name__}")
    return value


def _bbox(path: Path, where: str, value: Any) -> tuple[float, float, float, float]:
    ok = isinstance(value, list) and len(value) == 4
    ok = ok and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise DatasetError(
            path, f"{where}.bbox must be 4 finite numbers [x, y, width, height], got {value!r}"
        )
    x, y, w, h = (float(v) for v in value)
    if w < 0 or h < 0:
        raise DatasetError(path, f"{where}.bbox has a negative width or height: {value!r}")
    return (x, y, w, h)


def parse_coco(path: Path, images_dir: Path) -> tuple[list[tuple[Path, BoundingBoxes]], list[str]]:
    """Records in the order of the file's ``images``, and class names in category-id order."""
    if not path.is_file():
        raise FileNotFoundError(f"ImageFolderDataset.new_coco_detection: annotations file {path} not found")
    if not images_dir.is_dir():
        raise FileNotFoundError(
            f"ImageFolderDataset.new_coco_detection: images_dir {images_dir} is not a directory"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(path, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    images, annotations, categories = (
        _section(path, doc, k) for k in ("images", "annotations", "categories")
    )

    category_names: dict[int, str] = {}
    for k, cat in enumerate(categories):
        cid = _field(path, f"categories[{k}]", cat, "id", int)
        if cid in category_names:
            raise DatasetError(path, f"categories[{k}]: duplicate category id {cid}")
        category_names[cid] = _field(path, f"categories[{k}]", cat, "name", str)
    ids = sorted(category_names)
    label_of = {cid: label for label, cid in enumerate(ids)}

    declared: dict[int, tuple[Path, tuple[int, int]]] = {}
    for k, img in enumerate(images):
        where = f"images[{k}]"
        iid = _field(path, where, img, "id", int)
        if iid in declared:
            raise DatasetError(path, f"{where}: duplicate image id {iid}")
        file_name = _field(path, where, img, "file_name", str)
        width, height = (_field(path, where, img, key, int) for key in ("width", "height"))
        if width <= 0 or height <= 0:
            raise DatasetError(path, f"{where}: width and height must be positive, got {width}x{height}")
        image_path = images_dir / file_name
        if not image_path.is_file():
            raise DatasetError(path, f"{where}: image file {image_path} not found")
        declared[iid] = (image_path, (width, height))

    boxes: dict[int, list[BoundingBox]] = {iid: [] for iid in declared}
    for k, ann in enumerate(annotations):
        where = f"annotations[{k}]"
        iid = _field(path, where, ann, "image_id", int)
        cid = _field(path, where, ann, "category_id", int)
        if iid not in declared:
            raise DatasetError(path, f"{where}: image_id {iid} is not among the images' ids")
        if cid not in label_of:
            raise DatasetError(path, f"{where}: category_id {cid} is not among the categories' ids {ids}")
        coords = _bbox(path, where, ann.get("bbox"))
        boxes[iid].append(BoundingBox(coords=coords, label=label_of[cid], category_id=cid))

    records = [
        (image_path, BoundingBoxes(tuple(boxes[iid]), size)) for iid, (image_path, size) in declared.items()
    ]
    return records, [category_names[cid] for cid in ids]
