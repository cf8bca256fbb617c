"""``burn.Gradients``: the result of ``loss.backward()``, owned by the caller (nothing global)."""

from __future__ import annotations

from typing import Any


class Gradients:
    """Gradients keyed by the graph node of each leaf tensor that required grad.

    Values are primitives of the inner (non-autodiff) backend; ``x.grad(grads)`` wraps one as a
    tensor. ``remove`` takes a gradient out (optimizers use it to free memory as they go).
    """

    def __init__(self, backend: Any, grads: dict[int, Any] | None = None) -> None:
        self.backend = backend  # the inner backend the gradient primitives live on
        self._grads: dict[int, Any] = dict(grads or {})

    def get_prim(self, node_id: int) -> Any:
        return self._grads.get(node_id)

    def set_prim(self, node_id: int, grad: Any) -> None:
        self._grads[node_id] = grad

    def pop_prim(self, node_id: int) -> Any:
        return self._grads.pop(node_id, None)

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._grads

    def node_ids(self) -> list[int]:
        return list(self._grads)

    def get(self, tensor: Any) -> Any:
        """The gradient of ``tensor`` (a Tensor on the inner backend) or None."""
        return tensor.grad(self)

    def remove(self, tensor: Any) -> Any:
        """Take ``tensor``'s gradient out of the container and return it (or None)."""
        from ._tensor import _wrap

        node = tensor._b.node_id(tensor._p) if tensor._b.is_autodiff else None
        g = self._grads.pop(node, None) if node is not None else None
        return None if g is None else _wrap(g, self.backend)

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"
