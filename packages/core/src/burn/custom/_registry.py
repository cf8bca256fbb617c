"""The custom ops this process knows, by name: those defined here (``burn.custom.op``,
``burn.custom.elementwise``) and those plugins register through the ``burn_register_custom_ops`` hook.

Every path that meets an op by name asks ``lookup``: the backends' ``custom`` method, the shape and
dtype rules (``burn.ir`` capture, fusion's deferred calls), autodiff, a remote server, the web export.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import BurnError

if TYPE_CHECKING:
    from ._op import CustomOp

_OPS: dict[str, CustomOp] = {}


class CustomOpError(BurnError, LookupError):
    """A custom op that is unknown here, has no way to run or differentiate, or was called wrongly.

    >>> try:
    ...     burn.custom.get("doc_no_such_op")
    ... except burn.custom.CustomOpError as e:
    ...     print(str(e)[:40])
    custom op 'doc_no_such_op' is not regist
    """


def add(op: CustomOp) -> None:
    """Make ``op`` known by its name (a later definition of the same name replaces the earlier one,
    as re-running a notebook cell does); a name a plugin registered is refused."""
    from ..plugins import registry

    if op.name in registry().custom_ops:
        raise CustomOpError(f"custom op {op.name!r} is already registered by a plugin; pick another name")
    _OPS[op.name] = op


def remove(name: str) -> None:
    """Forget the op defined here as ``name`` (nothing when there is none); ``burn.custom.unregister``.

    >>> _ = burn.custom.op("doc_gone", kernels={"cpu": lambda x: x})
    >>> burn.custom.unregister("doc_gone"); "doc_gone" in burn.custom.names()
    False
    """
    _OPS.pop(name, None)


def lookup(name: str) -> CustomOp:
    """The op registered as ``name`` (``burn.custom.get``); ``CustomOpError`` naming it, and those that
    are known, when there is none.

    >>> op = burn.custom.op("doc_lookup", kernels={"cpu": lambda x: x})
    >>> burn.custom.get("doc_lookup") is op
    True
    """
    op = _OPS.get(name)
    if op is not None:
        return op
    from ..plugins import registry

    op = registry().custom_ops.get(name)
    if op is None:
        known = ", ".join(sorted(names())) or "none"
        raise CustomOpError(
            f"custom op {name!r} is not registered in this process (define it with burn.custom.op or "
            f"burn.custom.elementwise, or install the plugin that registers it); registered: {known}"
        )
    return op


def names() -> list[str]:
    """The names of every known op, defined here or by plugins, sorted.

    >>> _ = burn.custom.op("doc_named", kernels={"cpu": lambda x: x})
    >>> "doc_named" in burn.custom.names()
    True
    """
    from ..plugins import registry

    return sorted(set(_OPS) | set(registry().custom_ops))
