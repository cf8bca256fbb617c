"""burn_autodiff: autodiff as a backend decorator (Burn's ``Autodiff<B>``).

``burn.device(name, autodiff=True)`` wraps that device's backend in ``Autodiff``; tensors created there
record the graph of ops on tensors that require grad, and ``loss.backward()`` returns ``burn.Gradients``.

>>> dev = burn.device("cpu", autodiff=True)
>>> x = burn.tensor([1.0, 2.0], device=dev).require_grad()
>>> grads = (x * x).sum().backward()   # burn.Gradients
>>> x.grad(grads).tolist()             # d/dx sum(x^2) = 2x
[2.0, 4.0]
"""

from typing import TYPE_CHECKING

from burn.plugins import lazy_attributes

from ._version import __version__

if TYPE_CHECKING:
    from ._backend import CHECKPOINTING, Autodiff
    from ._engine import GraphFreedError, leaf_gradients
    from ._gradcheck import GradcheckReport, gradcheck, graph_rules
    from ._graph import ADPrim, Node
    from ._rule import Ctx, Rule
    from ._rules import RULES

# name -> submodule; loaded on first access so that the plugin entry point (burn_autodiff._plugin), which
# loads with every registry, does not pull in the rule tables
_LAZY = {
    "CHECKPOINTING": "._backend",
    "Autodiff": "._backend",
    "GraphFreedError": "._engine",
    "leaf_gradients": "._engine",
    "GradcheckReport": "._gradcheck",
    "gradcheck": "._gradcheck",
    "graph_rules": "._gradcheck",
    "ADPrim": "._graph",
    "Node": "._graph",
    "Ctx": "._rule",
    "Rule": "._rule",
    "RULES": "._rules",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


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
    "leaf_gradients",
]
