"""PyTorch weights in and out of burn modules: ``load_torch``, ``save_torch``, ``torch_state_dict``.

Stages: a source becomes a flat ``{key: numpy array}`` (``_torch_sources``), the caller's ``key_map``
renames its keys, ``_torch_layout.plan`` says which PyTorch keys fill each burn entry and how to convert
them, and the module loads the result through ``load_record`` (all checks first, then in place).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import RecordError
from ._torch_layout import Field, plan

if TYPE_CHECKING:
    import numpy as np

KeyMap = Callable[[str], str | None] | Mapping[str, str] | Iterable[tuple[str, str]] | None

_SHOWN = 20  # lines listed per kind of problem in an error


@dataclass
class LoadReport:
    """What ``load_torch`` did. ``loaded``: burn entry names filled from the file; ``missing``: PyTorch
    keys the module needs that the file (after ``key_map``) lacks; ``unused``: the file's keys (as the
    file spells them) that no entry used; ``mismatched``: one line per key whose shape or kind of dtype
    does not fit. ``ok`` when nothing is missing, unused or mismatched.

    >>> report = burn.record.load_torch({"weight": np.ones((2, 4)), "extra": np.ones(1)},
    ...                                 nn.LinearConfig(4, 2).init(), strict=False)
    >>> report.loaded, report.missing, report.unused, report.ok
    (['weight'], ['bias'], ['extra'], False)
    """

    module: Any
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    hint: str = ""

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unused or self.mismatched)

    def problems(self) -> list[str]:
        """One line per problem, at most 20 of each kind."""
        lines: list[str] = []
        for kind, items in (
            ("missing", self.missing),
            ("unused", self.unused),
            ("mismatch", self.mismatched),
        ):
            lines += [f"{kind}: {item}" for item in items[:_SHOWN]]
            if len(items) > _SHOWN:
                lines.append(f"... and {len(items) - _SHOWN} more {kind}")
        return lines

    def __str__(self) -> str:
        head = f"loaded {len(self.loaded)} entries of {type(self.module).__name__}"
        return "\n  ".join([head, *self.problems()] + ([self.hint] if self.hint else []))


def _key_mapper(key_map: KeyMap) -> Callable[[str], str | None]:
    if key_map is None:
        return lambda k: k
    if callable(key_map):
        return key_map
    pairs = list(key_map.items()) if isinstance(key_map, Mapping) else list(key_map)
    compiled = [(re.compile(p), r) for p, r in pairs]

    def apply(key: str) -> str | None:
        for pattern, replacement in compiled:
            key = pattern.sub(replacement, key)
        return key

    return apply


def _kind(dt: np.dtype[Any]) -> str:
    if dt.kind == "f" or dt.name.startswith(("bfloat", "float8")):
        return "float"
    return {"i": "int", "u": "int", "b": "bool", "c": "complex"}.get(dt.kind, dt.name)


def _entry_kind(entry: Any) -> str:
    dt = entry.dtype
    return "float" if dt.is_float else "bool" if dt.is_bool else "int"


def _expected_torch_shapes(choice: Field, entries: dict[str, Any]) -> list[tuple[int, ...]]:
    """The shapes PyTorch's keys have for this module: the conversion run on shape-only stand-ins."""
    import numpy as np

    dummies = [np.broadcast_to(np.zeros((), np.float32), tuple(entries[n].shape)) for n in choice.burn]
    return [tuple(a.shape) for a in choice.to_torch(dummies)]


def load_torch(
    source: Any,
    module: Any,
    key_map: KeyMap = None,
    strict: bool = True,
    top_level_key: str | None = None,
) -> LoadReport:
    """Load PyTorch weights into ``module`` (in place) and return a ``LoadReport``.

    ``source``: a ``torch.save`` file of a state dict (.pt/.pth/.bin, read without running its pickle:
    anything but tensors and plain values is refused), a ``.safetensors`` file, a sharded Hugging Face
    checkpoint's ``*.index.json`` (or the folder holding it), or a dict of numpy arrays / torch tensors.
    Names and layouts are converted to burn's: Linear weights transposed to (in, out), norms' ``weight``/
    ``bias`` as ``gamma``/``beta``, MultiHeadAttention's packed ``in_proj_weight`` split, burn's
    ``Sequential.layers.i`` as PyTorch's ``i``; ``num_batches_tracked`` is ignored. ``key_map`` renames the
    file's keys first: ``[(regex, replacement), ...]`` applied in order, or a callable (returning None or
    '' drops a key). ``torch_state_dict(module)`` lists the names expected. ``top_level_key`` picks a
    state dict inside a checkpoint dict (``"state_dict"``, ``"model"``).

    ``strict=True`` raises a ``burn.RecordError`` listing every missing, unused and mismatched key, the
    module untouched; ``strict=False`` loads what fits and reports the rest.

    >>> fc = nn.LinearConfig(3, 2).init()
    >>> weights = {"fc.weight": np.arange(6.0).reshape(2, 3), "fc.bias": np.zeros(2)}  # PyTorch: (out, in)
    >>> report = burn.record.load_torch(weights, fc, key_map=[(r"^fc\\.", "")])
    >>> fc.weight.val().numpy().tolist()   # burn: (in, out)
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    import numpy as np

    from ._torch_sources import read_state_dict

    arrays, where = read_state_dict(source, top_level_key)
    mapper = _key_mapper(key_map)
    mapped: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    for key, arr in arrays.items():
        new = mapper(key)
        if not new:
            continue
        if new in mapped:
            raise RecordError(f"{where}: key_map gives {origin[new]!r} and {key!r} the same name {new!r}")
        mapped[new], origin[new] = arr, key
    entries = dict(module.named_entries())
    layout = plan(module)
    report = LoadReport(module)
    loaded: dict[str, np.ndarray] = {}
    used = {k for k in layout.torch_only if k in mapped}
    for slot in layout.slots:
        choice = next((c for c in slot.choices if all(t in mapped for t in c.torch)), None)
        if choice is None:
            canonical = slot.choices[0]
            report.missing += [t for t in canonical.torch if t not in mapped] or list(canonical.torch)
            continue
        used.update(choice.torch)
        bad = _mismatches(choice, [mapped[t] for t in choice.torch], entries, origin)
        if bad:
            report.mismatched += bad
            continue
        for name, arr in zip(choice.burn, choice.to_burn([mapped[t] for t in choice.torch])):
            loaded[name] = np.ascontiguousarray(arr)
            report.loaded.append(name)
    report.unused = [origin[k] for k in mapped if k not in used]
    report.hint = _prefix_hint(report.unused, report.missing)
    if strict and not report.ok:
        raise RecordError(
            f"{where}: PyTorch weights do not fit {type(module).__name__} "
            f"({len(report.missing)} missing, {len(report.unused)} unused, {len(report.mismatched)} "
            "mismatched; strict=False loads what fits, key_map= renames the file's keys):\n  "
            + "\n  ".join(report.problems() + ([report.hint] if report.hint else []))
        )
    if loaded:
        record = loaded if len(loaded) == len(entries) else {**module.record(), **loaded}
        module.load_record(record)
    return report


def _mismatches(
    choice: Field, found: list[np.ndarray], entries: dict[str, Any], origin: dict[str, str]
) -> list[str]:
    lines = []
    burn_shapes = ", ".join(f"{n} {tuple(entries[n].shape)}" for n in choice.burn)
    for key, arr, want in zip(choice.torch, found, _expected_torch_shapes(choice, entries)):
        shown = key if origin[key] == key else f"{origin[key]} (as {key})"
        if tuple(arr.shape) != want:
            lines.append(
                f"{shown}: the module expects {want} (burn: {burn_shapes}), the file has {tuple(arr.shape)}"
            )
        kinds = {_entry_kind(entries[n]) for n in choice.burn}
        if _kind(arr.dtype) not in kinds:
            lines.append(
                f"{shown}: the module expects {'/'.join(sorted(kinds))}, the file has {arr.dtype.name}"
            )
    return lines


def _prefix_hint(unused: list[str], missing: list[str]) -> str:
    """When the file's keys differ from the module's by a leading component ('model.'), say so."""
    if not unused or not missing:
        return ""
    want = set(missing)
    counts: dict[str, int] = {}
    for key in unused:
        head, _, rest = key.partition(".")
        if rest in want:
            counts[head] = counts.get(head, 0) + 1
    if not counts:
        return ""
    head = max(counts, key=lambda h: counts[h])
    return f"hint: the file's keys start with {head + '.'!r}: key_map=[(r'^{re.escape(head)}\\.', '')]"


def torch_state_dict(module: Any) -> dict[str, np.ndarray]:
    """The module's weights under PyTorch's names and layouts (what ``save_torch`` writes, and the names
    ``load_torch`` looks for), as numpy arrays.

    >>> {k: v.shape for k, v in burn.record.torch_state_dict(nn.LinearConfig(4, 2).init()).items()}
    {'weight': (2, 4), 'bias': (2,)}
    """
    import numpy as np

    values = module.record()
    layout = plan(module)
    out: dict[str, np.ndarray] = {}
    for slot in layout.slots:
        choice = slot.choices[0]
        for key, arr in zip(choice.torch, choice.to_torch([values[n] for n in choice.burn])):
            out[key] = np.ascontiguousarray(arr)
    for key, make in layout.torch_only.items():
        out[key] = make()
    return out


def save_torch(module: Any, path: str | os.PathLike[str], key_map: KeyMap = None) -> str:
    """Write the module's weights with PyTorch's names and layouts, for the equivalent PyTorch module's
    ``load_state_dict``: a ``.safetensors`` file (the default; appended when ``path`` has no suffix), or
    a ``torch.save`` zip file for ``.pt``/``.pth``/``.bin`` (written without torch; ``torch.load(path,
    weights_only=True)`` reads it). ``key_map`` renames the keys written (as in ``load_torch``; where the
    PyTorch module's attributes are named otherwise). Returns the path written.

    >>> import os, tempfile
    >>> model = nn.LinearConfig(4, 2).init()
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = burn.record.save_torch(model, os.path.join(tmp, "linear"))
    ...     copy = nn.LinearConfig(4, 2).init()
    ...     report = burn.record.load_torch(path, copy)
    >>> os.path.basename(path), np.array_equal(copy.weight.val().numpy(), model.weight.val().numpy())
    ('linear.safetensors', True)
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1]
    if not suffix:
        path, suffix = path + ".safetensors", ".safetensors"
    mapper = _key_mapper(key_map)
    arrays: dict[str, Any] = {}
    for key, arr in torch_state_dict(module).items():
        new = mapper(key)
        if new and new in arrays:
            raise RecordError(f"save_torch: key_map gives two entries the same name {new!r}")
        if new:
            arrays[new] = arr
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        if suffix in (".pt", ".pth", ".bin"):
            from ._torch_write import write_torch_file

            write_torch_file(arrays, tmp)
        else:
            from ._file import safetensors_bytes

            with open(tmp, "wb") as fh:
                fh.write(safetensors_bytes(arrays, {"format": "pt"}))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
