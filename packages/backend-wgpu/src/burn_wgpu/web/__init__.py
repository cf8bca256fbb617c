"""burn_wgpu.web: export a model to a static web page that runs burn-wgpu's WGSL kernels on WebGPU.

``export(module, example_inputs, out_dir)`` (a burn module or any function of tensors, captured through
``burn.ir``) writes ``OUT/model.js`` (an ES module: the runtime with the recorded schedule inlined),
``OUT/weights.bin`` and a demo ``OUT/index.html``. ONNX files go through burn-onnx, which builds on it:
``burn web export MODEL.onnx -o OUT/`` or ``burn_onnx.export_web(path, out_dir, shapes)``. In the page::

    import { load } from "./model.js";
    const model = await load({ device /* optional */, baseUrl /* default: next to model.js */ });
    const out = await model.run({ input: { data: Float32Array, shape: [1, 4] } });

``NativeSchedule(out_dir)`` runs the same schedule natively through wgpu-py (tests, real-GPU figures).
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

if TYPE_CHECKING:
    from ._export import WebExport, export
    from ._native import NativeSchedule
    from ._record import WebExportError

_LAZY = {
    "WebExport": "._export",
    "export": "._export",
    "NativeSchedule": "._native",
    "WebExportError": "._record",
}


# wgpu and numpy load when an export runs, not on ``import burn_wgpu.web``
__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = ["NativeSchedule", "WebExport", "WebExportError", "export"]
