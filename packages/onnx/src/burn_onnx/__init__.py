"""burn-onnx: run ONNX models as burn modules, on any burn backend.

>>> import burn_onnx
>>> model = burn_onnx.load("model.onnx", device=burn.device("cpu"))  # doctest: +SKIP
>>> y = model(x)  # doctest: +SKIP

``load`` returns an ``OnnxModel`` (a ``burn.nn.Module``: its float initializers are Params, so it can be
fine-tuned and saved with ``burn.record``). ``supported_ops()`` lists the operators per opset; any node
that cannot run is reported at load time, all at once, in an ``UnsupportedOnnxError``. The command line
``burn onnx check model.onnx`` prints inputs, outputs, an op histogram and what is unsupported.
``export(module, example_inputs, "out.onnx", opset=17)`` writes a module's forward as an ONNX model.
``codegen("model.onnx", "out/", name="Net")`` (``burn onnx codegen``) writes a model as readable burn code
(``out/net.py``) and its weights as a record (``out/net.safetensors``).
``export_web("model.onnx", "page/", shapes)`` (``burn web export``) writes a model as a static WebGPU page
through burn-wgpu's web export (burn-wgpu loads only then).
``conformance("cpu")`` (``burn onnx conformance --device cpu``) runs the ONNX backend conformance suite, the
node cases of the installed onnx, judged as onnx's runner judges them.
"""

from ._check import supported_ops
from ._codegen import codegen
from ._conformance import CaseResult, conformance
from ._errors import OnnxError, OnnxLoadError, OnnxRuntimeError, UnsupportedNode, UnsupportedOnnxError
from ._export import UnsupportedExportError, export
from ._graph import ValueInfo
from ._model import OnnxModel, load
from ._version import __version__
from ._web import export_web

__all__ = [
    "CaseResult",
    "OnnxError",
    "OnnxLoadError",
    "OnnxModel",
    "OnnxRuntimeError",
    "UnsupportedExportError",
    "UnsupportedNode",
    "UnsupportedOnnxError",
    "ValueInfo",
    "__version__",
    "codegen",
    "conformance",
    "export",
    "export_web",
    "load",
    "supported_ops",
]
