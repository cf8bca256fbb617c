"""``burn.custom``: extend every backend with your own ops, without forking one.

- ``op(name, shape=, dtype=, kernels={"cpu": numpy_fn, "wgpu": Wgsl(...), "cuda": Cuda(...)},
  compose=, backward=)``: an op with its own kernels. A call is one backend call
  (``Backend.custom``): the numpy backend runs the numpy function, burn-wgpu and burn-cuda launch the
  source kernel (several variants are autotuned), and a backend without a kernel runs ``compose`` (burn
  ops) or, failing that, the numpy function through the host with a one-time note. Autodiff uses
  ``backward`` (or differentiates ``compose``); fusion records the op in its streams as a call (replayed,
  captured in CUDA graphs and recorded wgpu command lists); ``burn.ir`` captures it, burn-wgpu's page
  export writes its WGSL kernel, burn-remote runs it where the server registered the same op.
- ``Wgsl`` / ``Cuda``: source kernels, bound and launched as burn's own (``Launch`` is what their
  ``params`` and ``grid`` functions read).
- ``elementwise(name, expr)``: an op declared by an expression in burn's element-wise vocabulary; it
  expands into burn's ops, so fusion fuses it into its neighbours' kernel on every backend.
- ``check_grad(op, *inputs)``: the op's gradients against finite differences.
- ``get(name)``, ``names()``, ``unregister(name)``; plugins register ops through the
  ``burn_register_custom_ops`` hook. ``dispatch``: ``Backend.custom``'s body, for backend authors.

>>> relu6 = burn.custom.elementwise("doc_relu6", "clamp(x, 0.0, 6.0)")
>>> relu6(burn.tensor([-1.0, 3.0, 9.0])).tolist()
[0.0, 3.0, 6.0]
"""

from ._elementwise import ElementwiseOp, elementwise
from ._gradcheck import GradReport, check_grad
from ._kernels import Cuda, Launch, Wgsl, spread
from ._op import BackwardCtx, CustomOp, op
from ._registry import CustomOpError, names
from ._registry import lookup as get
from ._registry import remove as unregister
from ._run import dispatch

__all__ = [
    "BackwardCtx",
    "Cuda",
    "CustomOp",
    "CustomOpError",
    "ElementwiseOp",
    "GradReport",
    "Launch",
    "Wgsl",
    "check_grad",
    "dispatch",
    "elementwise",
    "get",
    "names",
    "op",
    "spread",
    "unregister",
]
