"""burn_autodiff: autodiff as a backend decorator (Burn's ``Autodiff<B>``).

``burn.device(name, autodiff=True)`` wraps that device's backend in ``Autodiff``; tensors created there
record the graph of ops on tensors that require grad, and ``loss.backward()`` returns ``burn.Gradients``.

>>> dev = burn.device("cpu", autodiff=True)
>>> x = burn.tensor([1.0, 2.0], device=dev).require_grad()
>>> (x * x).sum().backward()   # burn.Gradients; x.grad(grads) == 2 * x
"""

from ._backend import CHECKPOINTING, Autodiff
from ._engine import GraphFreedError
from ._gradcheck import GradcheckReport, gradcheck, graph_rules
from ._graph import ADPrim, Node
from ._rule import Ctx, Rule
from ._rules import RULES
from ._version import __version__

__all__ = [
    "CHECKPOINTING",
    "RULES",
    "ADPrim",
    "Autodiff",
    "Ctx",
    "GradcheckReport",
    "GraphFreedError",
    "Node",
    "Rule",
    "__version__",
    "gradcheck",
    "graph_rules",
]
