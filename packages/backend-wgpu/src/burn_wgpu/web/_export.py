"""``burn_wgpu.web.export``: a burn module, or any function of tensors, as a static WebGPU page.

The path: capture the forward as a ``burn.ir`` graph (on the wgpu dtypes: no 64-bit types), replay it
once on a recording browser-portable wgpu device (``_record``), turn the trace into a schedule with
buffers allocated once (``_schedule``), run that schedule natively exactly as the page would
(``NativeSchedule``) and check it against burn's numpy backend, and only then write ``model.js`` (the runtime with the schedule inlined), ``weights.bin`` and ``index.html``. Importers build on it: burn-onnx's
``burn web export MODEL.onnx`` passes its loaded model (a function of tensors) here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import burn

from ._record import WebExportError, record, recording_backend
from ._schedule import TensorInfo, build, to_json

# page dtype -> storage type (the narrow ints stored widened, as burn-wgpu stores them)
_STORAGE = {
    "float32": "f32",
    "int32": "i32",
    "uint32": "u32",
    "bool": "u32",
    "int8": "i32",
    "uint8": "u32",
    "int16": "i32",
}
_RTOL, _ATOL = 1e-3, 1e-4  # the export's own native-vs-numpy check (float32 kernels, other summation orders)


@dataclass
class WebExport:
    """What ``export`` wrote: the folder, the page's inputs/outputs, the schedule's counts
    (dispatches, copies, submits per run, pipelines, buffers and their bytes) and the largest
    difference per output between the written schedule, run natively as the page runs it, and
    burn's numpy backend (an export whose schedule differs beyond tolerance raises instead)."""

    out_dir: Path
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    counts: dict[str, int]
    max_abs_diff: dict[str, float] = field(default_factory=dict)


# the import of the helpers shared by runtime.js and trainer.js (common.js), inlined at export
_IMPORT_COMMON = re.compile(r'^import \{[^}]*\} from "\./common\.js";\n', re.MULTILINE)
_EXPORTED = re.compile(r"^export (?=(?:async )?function |const )", re.MULTILINE)


def page_module(name: str, marker: str, payload: str) -> str:
    """The page module ``name`` (``runtime.js``, ``trainer.js``) as an export writes it: one file, with
    ``common.js`` inlined in place of its import (its ``export`` keywords dropped: the module's own
    exports stay the public ones) and ``/*MARKER*/null/*END*/`` holding ``payload`` (JSON)."""
    here = resources.files(__package__)
    common = _EXPORTED.sub("", here.joinpath("common.js").read_text(encoding="utf-8"))
    text, found = _IMPORT_COMMON.subn(lambda _: common, here.joinpath(name).read_text(encoding="utf-8"))
    placeholder = f"/*{marker}*/null/*END*/"
    if found != 1 or placeholder not in text:
        raise WebExportError(
            f"web export: {name} in this install is damaged (no common.js import or {placeholder})"
        )
    return text.replace(placeholder, f"/*{marker}*/{payload}/*END*/")


def _page_dtype(source: str, stored: burn.DType) -> tuple[str, str]:
    """(dtype the page reports, storage type) of a value declared ``source`` and stored as ``stored``."""
    name = stored.name
    if name not in _STORAGE:
        raise WebExportError(
            f"web export: dtype {name} cannot be a page input or output (expected float32, int32, "
            "int64, uint32, int8, uint8, int16 or bool)"
        )
    return ("int64" if source == "int64" and name == "int32" else name), _STORAGE[name]


def _like(index: int) -> SimpleNamespace:
    """A stand-in device for ``burn.ir.capture``: the dtypes of a portable wgpu backend."""
    return SimpleNamespace(backend=recording_backend(index))


def _wgpu_dtype(dt: burn.DType) -> burn.DType:
    if dt.is_bool:
        return burn.bool_
    if dt.is_float:
        return burn.float32
    return dt if dt.name in _STORAGE else burn.int32  # int64 runs as int32


def _check_custom_ops(graph: Any) -> None:
    """Each ``burn.custom`` op of the graph can run in a page: it has a WGSL kernel (``kernels["wgpu"]``)
    or a composition of burn ops; else a ``WebExportError`` naming it, before anything runs."""
    for op in graph.ops:
        if str(op.kind) == "custom":
            name = op.args[0]
            custom = burn.custom.get(name)
            if not custom.variants("wgpu") and custom.compose is None:
                raise WebExportError(
                    f"web export: custom op {name!r} has no WGSL kernel (kernels['wgpu']) and no compose=, "
                    "so a page cannot run it: give it a burn.custom.Wgsl kernel"
                )


def _write(
    graph: Any,
    feeds: list[Any],
    declared_in: list[str],
    declared_out: list[str],
    in_names: list[str],
    out_names: list[str],
    out_dir: str | Path,
    title: str,
    index: int,
    fusion: bool,
) -> WebExport:
    _check_custom_ops(graph)
    rec = record(graph, feeds, index, fusion=fusion)
    inputs = [
        TensorInfo(name, tuple(ref.shape), *_page_dtype(src, ref.dtype))
        for name, ref, src in zip(in_names, graph.inputs.values(), declared_in)
    ]
    outputs = [
        TensorInfo(name, tuple(ref.shape), *_page_dtype(src, ref.dtype))
        for name, ref, src in zip(out_names, graph.outputs, declared_out)
    ]
    schedule, blob = build(rec, inputs, outputs, title)
    here = resources.files(__package__)
    files = {
        "model.js": page_module("runtime.js", "SCHEDULE", to_json(schedule)).encode("utf-8"),
        "weights.bin": blob,
        "index.html": here.joinpath("index.html")
        .read_text(encoding="utf-8")
        .replace("{{TITLE}}", _html_escape(title))
        .encode("utf-8"),
    }
    diffs = _check(files, graph, feeds, in_names, outputs, index)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return WebExport(folder, inputs, outputs, schedule["counts"], diffs)


def _check(
    files: dict[str, bytes],
    graph: Any,
    feeds: list[Any],
    in_names: list[str],
    outputs: list[TensorInfo],
    index: int,
) -> dict[str, float]:
    """Run the page's own files (``model.js``'s schedule and ``weights.bin``) through
    ``NativeSchedule``, exactly as the page runs them (twice over the same buffers), against burn's
    numpy backend; raise ``WebExportError`` naming the first output that differs and by how much,
    before anything is written. Returns the largest difference per output over both runs."""
    import tempfile

    import numpy as np

    from ._native import NativeSchedule

    with tempfile.TemporaryDirectory(prefix="burn-web-check-") as tmp:
        for name in ("model.js", "weights.bin"):
            (Path(tmp) / name).write_bytes(files[name])
        schedule = NativeSchedule(tmp, index)
        feed = dict(zip(in_names, feeds))
        # twice, as a page runs it again: the second run must not depend on what the first left behind
        runs = [schedule.run(feed), schedule.run(feed)]
    ref_out = burn.ir.replay(graph, feeds, device="cpu", check=False)
    ref_out = ref_out if isinstance(ref_out, tuple) else (ref_out,)
    diffs: dict[str, float] = {}
    for info, want in zip(outputs, ref_out):
        w = np.asarray(want.numpy(), dtype=np.float64)
        top = float(np.max(np.abs(w))) if w.size else 0.0
        for run, got_out in enumerate(runs, 1):
            g = np.asarray(got_out[info.name], dtype=np.float64)
            diff = float(np.max(np.abs(g - w))) if w.size else 0.0
            diffs[info.name] = max(diff, diffs.get(info.name, 0.0))
            if w.size and not np.allclose(g, w, rtol=_RTOL, atol=_ATOL * max(1.0, top)):
                raise WebExportError(
                    f"web export: output {info.name!r} of the exported schedule (run natively as the "
                    f"page runs it, run {run} of 2) differs from burn's numpy backend by up to "
                    f"{diff:.3g} (largest reference value {top:.3g}); nothing was written"
                )
    return diffs


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _as_numpy(value: Any, what: str) -> Any:
    import numpy as np

    if isinstance(value, burn.Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except Exception as exc:
        raise TypeError(f"web export: {what} must be a tensor or array, got {type(value).__name__}") from exc


def export(
    module: Any,
    example_inputs: Any,
    out_dir: str | Path,
    *,
    output_names: Sequence[str] | None = None,
    output_dtypes: Sequence[str] | None = None,
    title: str = "burn model",
    index: int = 0,
    fusion: bool = True,
) -> WebExport:
    """Write ``module``'s forward as a static WebGPU page: ``out_dir/model.js``, ``weights.bin`` and
    ``index.html`` (no Python at run time; see the package docstring for the JavaScript API).

    ``example_inputs``: one tensor/array, a sequence of them (positional arguments), or a mapping
    name -> tensor/array (keyword order is positional order). Their shapes are fixed in the page; the
    inputs are named ``input`` (``input0``, ``input1``... for several) unless given by name, the
    outputs ``output`` (``output0``...) unless ``output_names`` says. An input's dtype is its example's;
    ``output_dtypes`` declares the outputs' (default: what the forward returns on the page's dtypes; an
    ``"int64"`` output runs as int32 and the page reports it as int64, as for int64 inputs). ``module``: a
    ``burn.nn.Module``
    (exported as its inference copy, its weights in ``weights.bin``) or a function of tensors that
    creates any other tensor it uses inside (on ``burn.ir.capture_device()``). ``index`` picks the wgpu adapter
    the export records and checks on (``wgpu:index``). ``fusion``: record through burn's fusion
    decorator, as burn-wgpu runs natively (element-wise chains as one generated kernel each); False
    exports one dispatch per op.

    >>> import tempfile, burn_wgpu.web
    >>> model = nn.LinearConfig(4, 2).init()
    >>> out = burn_wgpu.web.export(model, np.ones((1, 4), np.float32), tempfile.mkdtemp())
    >>> sorted(p.name for p in out.out_dir.iterdir()), out.counts["submits"]
    (['index.html', 'model.js', 'weights.bin'], 1)
    """
    import numpy as np

    if isinstance(example_inputs, Mapping):
        names = [str(k) for k in example_inputs]
        values = list(example_inputs.values())
    elif isinstance(example_inputs, (list, tuple)):
        values = list(example_inputs)
        names = ["input"] if len(values) == 1 else [f"input{i}" for i in range(len(values))]
    else:
        values, names = [example_inputs], ["input"]
    if not values:
        raise ValueError("web export: example_inputs is empty; give at least one example tensor or array")
    arrays = [_as_numpy(v, f"example input {n!r}") for n, v in zip(names, values)]
    declared, spec = [], {}
    for n, v, a in zip(names, values, arrays):
        src = (
            v.dtype
            if isinstance(v, burn.Tensor)
            else burn.dtype("bool" if a.dtype.kind == "b" else a.dtype.name)
        )
        declared.append(src.name)
        spec[n] = (tuple(a.shape), _wgpu_dtype(src))
    graph = _capture(module, spec, index)
    feeds = [np.asarray(a).astype(_np_storage(s[1])) for a, s in zip(arrays, spec.values())]
    n_out = len(graph.outputs)
    if output_names is None:
        output_names = ["output"] if n_out == 1 else [f"output{i}" for i in range(n_out)]
    elif len(output_names) != n_out:
        raise ValueError(
            f"web export: output_names has {len(output_names)} names, the forward returns {n_out}"
        )
    if output_dtypes is None:
        declared_out = [ref.dtype.name for ref in graph.outputs]
    elif len(output_dtypes) != n_out:
        raise ValueError(
            f"web export: output_dtypes has {len(output_dtypes)} dtypes, the forward returns {n_out}"
        )
    else:
        declared_out = [str(d) for d in output_dtypes]
    return _write(
        graph, feeds, declared, declared_out, names, list(output_names), out_dir, title, index, fusion
    )


def _np_storage(dt: burn.DType) -> Any:
    import numpy as np

    return (
        np.bool_
        if dt is burn.bool_
        else {"f32": np.float32, "i32": np.int32, "u32": np.uint32}[_STORAGE[dt.name]]
    )


def _capture(fn: Any, spec: dict[str, tuple[tuple[int, ...], burn.DType]], index: int) -> Any:
    try:
        return burn.ir.capture(fn, spec, like=_like(index))
    except burn.ir.IrError as exc:
        raise WebExportError(
            f"web export: the forward cannot be recorded as a static graph: {exc} (a data-dependent "
            "shape or a host read inside the forward cannot run as a fixed WebGPU schedule)"
        ) from exc
