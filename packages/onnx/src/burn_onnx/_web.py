"""``export_web``: an ONNX file as a static WebGPU page, on top of burn-wgpu's web export.

burn-onnx loads the model (a ``burn.nn.Module``, a function of tensors), fixes its input shapes and
makes example inputs; ``burn_wgpu.web.export`` captures it through ``burn.ir``, records and checks the
schedule and writes the page. burn-wgpu is imported only here, when an export runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import burn

from ._model import load

if TYPE_CHECKING:
    from burn_wgpu.web import WebExport


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``["x=1x3x224x224", ...]`` -> ``{"x": (1, 3, 224, 224)}`` (``--input`` of ``burn web export``).

    >>> parse_shapes(["x=1x3x224x224"])
    {'x': (1, 3, 224, 224)}
    """
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x")) if dims else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 1 for d in shape):
            raise ValueError(
                f"--input: expected NAME=DxDx... with positive dims (e.g. x=1x3x224x224), got {item!r}"
            )
        shapes[name] = shape
    return shapes


def export_web(
    path: str | Path,
    out_dir: str | Path,
    shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    title: str | None = None,
    index: int = 0,
    seed: int = 0,
    fusion: bool = True,
) -> WebExport:
    """Write the ONNX model at ``path`` as a static WebGPU page in ``out_dir`` (``burn web export``):
    ``model.js``, ``weights.bin`` and ``index.html``, through ``burn_wgpu.web.export`` (burn-wgpu must
    be installed; ``index`` picks its adapter).

    ``shapes`` fixes input shapes by name; dims the model leaves open (named or unknown) default to 1.
    The inputs and outputs keep the graph's names and order; int64 values run as int32 on the device
    (an int64 input may be given as a BigInt64Array or an Int32Array, an int64 output comes back as an
    Int32Array). The export checks itself once on random example inputs (integers: zeros).
    ``fusion``: element-wise chains fused into one kernel each, as burn-wgpu runs natively; False: one
    dispatch per op.

    >>> import burn_onnx
    >>> page = burn_onnx.export_web("model.onnx", "page/", {"x": (1, 3, 224, 224)})  # doctest: +SKIP
    >>> [(i.name, i.shape) for i in page.inputs]  # doctest: +SKIP
    [('x', (1, 3, 224, 224))]
    """
    import numpy as np
    from burn_wgpu import web

    shapes = dict(shapes or {})
    model = load(str(path), device="cpu")
    unknown = set(shapes) - {i.name for i in model.inputs}
    if unknown:
        known = ", ".join(repr(i.name) for i in model.inputs)
        raise ValueError(f"--input: the model has no input {sorted(unknown)[0]!r} (inputs: {known})")
    rng = np.random.default_rng(seed)
    examples: dict[str, Any] = {}
    for info in model.inputs:
        if info.kind != "tensor":
            raise web.WebExportError(
                f"web export: input {info.name!r} is a {info.kind}; pages take tensors only"
            )
        if info.name in shapes:
            shape = tuple(int(d) for d in shapes[info.name])
            if info.shape is not None and len(shape) != len(info.shape):
                raise ValueError(
                    f"--input {info.name}: the model declares rank {len(info.shape)}, got shape {shape}"
                )
        elif info.shape is None:
            raise web.WebExportError(
                f"web export: input {info.name!r} has an unknown rank; give --input {info.name}=..."
            )
        else:
            shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in info.shape)
        try:
            src = burn.dtype(info.dtype)
        except Exception as exc:
            raise web.WebExportError(
                f"web export: input {info.name!r} has dtype {info.dtype}, not a page dtype"
            ) from exc
        # the example's dtype is the input's declared one (floats run as float32 on the page anyway)
        if src.is_float:
            examples[info.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            examples[info.name] = np.zeros(shape, np.bool_ if src.is_bool else src.name)
    return web.export(
        model,
        examples,
        out_dir,
        output_names=[o.name for o in model.outputs],
        output_dtypes=[o.dtype for o in model.outputs],
        title=title or Path(path).stem,
        index=index,
        fusion=fusion,
    )
