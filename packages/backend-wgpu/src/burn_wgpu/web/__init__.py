"""burn_wgpu.web: export a model to a static web page that runs burn-wgpu's WGSL kernels on WebGPU.

``export(module, example_inputs, out_dir)`` (a burn module or any function of tensors, captured through
``burn.ir``) writes ``OUT/model.js`` (an ES module: the runtime with the recorded schedule inlined),
``OUT/weights.bin`` and a demo ``OUT/index.html``. ONNX files go through burn-onnx, which builds on it:
``burn web export MODEL.onnx -o OUT/`` or ``burn_onnx.export_web(path, out_dir, shapes)``. In the page::

    import { load } from "./model.js";
    const model = await load({ device /* optional */, baseUrl /* default: next to model.js */ });
    const out = await model.run({ input: { data: Float32Array, shape: [1, 4] } });

``export_training(model, step_fn, optimizer, example_batch, out_dir)`` writes a whole training step
(forward, backward, SGD/Adam/AdamW update) as ``OUT/trainer.js`` + ``weights.bin``: ``loadTrainer()``,
``step(batch, { lr })``, ``evaluate(batch)``, ``saveRecord()`` in the page.

``train_demo("digits", out_dir)`` (``burn web train-demo digits -o OUT/``) writes a page that trains the
digits CNN in a Worker with a live chart, browser metrics, pause/resume and "download weights".

``NativeSchedule(out_dir)`` runs the same schedule natively through wgpu-py (tests, real-GPU figures);
``NativeTrainer(out_dir)`` does the same for an exported trainer: ``step(batch, lr=...)`` as the page.
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

if TYPE_CHECKING:
    from ._demo import TrainDemo, train_demo
    from ._export import WebExport, export
    from ._native import NativeSchedule
    from ._native_train import NativeTrainer
    from ._record import WebExportError
    from ._train_export import TrainingExport, export_training

_LAZY = {
    "WebExport": "._export",
    "export": "._export",
    "NativeSchedule": "._native",
    "NativeTrainer": "._native_train",
    "WebExportError": "._record",
    "TrainingExport": "._train_export",
    "export_training": "._train_export",
    "TrainDemo": "._demo",
    "train_demo": "._demo",
}


# wgpu and numpy load when an export runs, not on ``import burn_wgpu.web``
__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "NativeSchedule",
    "NativeTrainer",
    "TrainDemo",
    "TrainingExport",
    "WebExport",
    "WebExportError",
    "export",
    "export_training",
    "train_demo",
]
