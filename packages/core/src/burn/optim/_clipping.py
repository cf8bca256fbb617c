"""Gradient clipping (Burn's ``GradientClippingConfig``): by value or by norm, per parameter tensor."""

from __future__ import annotations

from typing import Any

from ..config import Config, check


class GradientClipping(Config, frozen=True):
    """``GradientClipping.value(v)`` clamps every gradient element to [-v, v];
    ``GradientClipping.norm(n)`` rescales each parameter's gradient whose L2 norm exceeds ``n`` to norm
    ``n`` (per tensor, as Burn does, not PyTorch's global norm). Optimizer configs take one as
    ``grad_clipping``.

    >>> burn.optim.GradientClipping.value(0.5).clip(burn.tensor([-2.0, 0.25, 3.0])).tolist()
    [-0.5, 0.25, 0.5]
    >>> [round(v, 4) for v in burn.optim.GradientClipping.norm(1.0).clip(burn.tensor([3.0, 4.0])).tolist()]
    [0.6, 0.8]
    >>> opt = burn.optim.AdamConfig(grad_clipping=burn.optim.GradientClipping.norm(1.0)).init()
    """

    mode: str = "norm"
    threshold: float = 1.0

    def __post_init__(self) -> None:
        check(
            self.mode in ("value", "norm"),
            "GradientClipping",
            f"mode must be 'value' or 'norm', got {self.mode!r}",
        )
        check(self.threshold > 0, "GradientClipping", f"threshold must be positive, got {self.threshold}")

    @classmethod
    def value(cls, threshold: float) -> GradientClipping:
        return cls("value", float(threshold))

    @classmethod
    def norm(cls, threshold: float) -> GradientClipping:
        return cls("norm", float(threshold))

    def clip(self, grad: Any) -> Any:
        """The clipped gradient (a tensor of the same shape)."""
        if self.mode == "value":
            return grad.clamp(-self.threshold, self.threshold)
        norm = float((grad * grad).sum().sqrt().item())
        if norm <= self.threshold:
            return grad
        return grad * (self.threshold / (norm + 1e-6))
