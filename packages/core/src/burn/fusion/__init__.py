"""``burn.fusion``: the fusion decorator (Burn's burn-fusion) and the plan its runtimes render.

``burn.device("wgpu")`` and ``burn.device("cuda")`` run behind it by default: element-wise ops are
recorded lazily, chains of element-wise ops run as one generated kernel (with the reduction they feed
or the matmul they follow, where the backend's runtime can), and a repeated stream (a
training step) replays what was planned for it the first time (``fusion=False`` or ``BURN_FUSION=0``
turns fusion off, ``BURN_FUSION_REPLAY=0`` only the replay). A backend offers kernels for it by returning a ``FusionRuntime`` from
``Backend.fusion_runtime()``; without one, plans run op by op (``ReferenceRuntime``). A runtime that
generates kernels renders each plan's ``skeleton`` (the statements every language's kernel runs)
with a ``Renderer`` of its language.

The layout, one module per stage, each stage a class the next one extends (a reader follows a stream
from one to the next):

- ``_graph.py``: ``Node`` (a lazy op or a computed value) and ``FPrim``, the handle a tensor holds;
- ``_stream.py`` (``Recording``): recording, the op stream and its signature: element-wise nodes, calls
  of the inner backend with their result types, ops run at once, creation results kept as constants;
- ``_planner.py`` (``Planning``): a stream grouped into kernels the first time its signature is seen
  (reduce prologues and epilogues, matmul epilogues) and each kernel's ``FusedKernel`` (the plan cache);
- ``_launch.py`` (``Launching``): kernels run on the runtime, split to fit its binding limits, calls run
  on the inner backend, and ``launch`` (a whole kernel a caller built, as one node);
- ``_program.py`` (``Replaying``): ``flush``: a stream replayed from the program planned for it, or
  planned and recorded as one; the graph-capture policy;
- ``_ops.py`` (``InnerOps``): one method per op the inner backend runs whole, with the backend's signature;
- ``_backend.py`` (``Fusion``): the decorator: element-wise ops, values in and out, ``mark_step``;
- ``_plan.py`` (``FusedKernel``, ``FusionRuntime``): the plan a runtime renders; ``_reference.py``: the
  runtime that runs plans op by op.

>>> dev = burn.device("cpu", fusion=True)
>>> x = burn.tensor([1.0, -2.0, 3.0], device=dev)
>>> ((x * 2).relu() + 1).tolist()
[3.0, 1.0, 7.0]
"""

from ._backend import Fusion, backward_begins, fusion_of, mark_step
from ._launch import launch
from ._plan import FusedKernel, FusedOp, FusedReduce, FusionRuntime
from ._program import LATER, RECAPTURE
from ._reference import ReferenceRuntime
from ._skeleton import Apply, Load, ReduceStage, Renderer, ScalarLoad, Skeleton, Stage, Store, skeleton

__all__ = [
    "LATER",
    "RECAPTURE",
    "Apply",
    "FusedKernel",
    "FusedOp",
    "FusedReduce",
    "Fusion",
    "FusionRuntime",
    "Load",
    "ReduceStage",
    "ReferenceRuntime",
    "Renderer",
    "ScalarLoad",
    "Skeleton",
    "Stage",
    "Store",
    "launch",
    "backward_begins",
    "fusion_of",
    "mark_step",
    "skeleton",
]
