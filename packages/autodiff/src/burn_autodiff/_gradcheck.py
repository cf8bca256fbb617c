"""``gradcheck``: compare autodiff gradients with central finite differences (float64).

Used by this package's tests on every available backend, and usable by a third-party backend on
itself: ``gradcheck(lambda x: x.sin(), [np.random.randn(3)], burn.device("mine", autodiff=True))``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burn import Device, Tensor


@dataclass
class GradcheckReport:
    """What ``gradcheck`` compared: the rules on the graph and the largest error per input."""

    rules: set[str] = field(default_factory=set)
    max_abs_err: list[float] = field(default_factory=list)


def graph_rules(t: Tensor) -> set[str]:
    """Names of the rules recorded on the graph behind tensor ``t`` (before it is consumed)."""
    from ._engine import topo_order

    node = getattr(t.primitive, "node", None)
    if node is None:
        return set()
    return {n.rule.name for n in topo_order(node) if n.rule is not None and hasattr(n.rule, "name")}


def gradcheck(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    device: Device,
    *,
    eps: float = 1e-6,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    seed: int = 0,
) -> GradcheckReport:
    """Check the vector-Jacobian product of ``fn`` at float64 ``inputs`` (numpy arrays).

    ``fn`` maps tensors to one tensor; ``device`` is an autodiff device. A fixed random seed vector v
    of the output's shape gives the analytic ``grad(sum(fn(x) * v))`` through ``out.backward(v)``;
    the numeric one perturbs each input entry by +-eps on the inner (plain) device. Raises
    AssertionError naming the input and the worst entry when they differ beyond atol + rtol*|numeric|.
    """
    import burn
    import numpy as np

    if not getattr(device, "autodiff", False):
        raise ValueError(f"gradcheck: device must be an autodiff device, got {device}")
    arrays = [np.asarray(a, dtype=np.float64) for a in inputs]
    xs = [burn.tensor(a, dtype=burn.float64, device=device).require_grad() for a in arrays]
    out = fn(*xs)
    rules = graph_rules(out)
    v = np.random.default_rng(seed).standard_normal(out.shape)
    grads = out.backward(burn.tensor(v, dtype=burn.float64, device=device))
    plain = device.inner

    def objective(values: list[Any]) -> float:
        ts = [burn.tensor(a, dtype=burn.float64, device=plain) for a in values]
        return float(np.sum(np.asarray(fn(*ts).numpy(), dtype=np.float64) * v))

    report = GradcheckReport(rules=rules)
    for i, (x, a) in enumerate(zip(xs, arrays)):
        g = x.grad(grads)
        analytic = np.zeros_like(a) if g is None else np.asarray(g.numpy(), dtype=np.float64)
        if analytic.shape != a.shape:
            raise AssertionError(
                f"gradcheck: gradient of input {i} has shape {analytic.shape}, expected {a.shape}"
            )
        numeric = np.zeros_like(a)
        flat = numeric.reshape(-1)
        for j in range(a.size):
            values = list(arrays)
            plus, minus = a.copy(), a.copy()
            plus.reshape(-1)[j] += eps
            minus.reshape(-1)[j] -= eps
            values[i] = plus
            hi = objective(values)
            values[i] = minus
            lo = objective(values)
            flat[j] = (hi - lo) / (2 * eps)
        err = np.abs(analytic - numeric)
        report.max_abs_err.append(float(err.max()) if err.size else 0.0)
        bad = err > atol + rtol * np.abs(numeric)
        if bad.any():
            j = int(np.argmax(np.where(bad, err, -1)))
            raise AssertionError(
                f"gradcheck: input {i} (shape {a.shape}) entry {np.unravel_index(j, a.shape)}: analytic "
                f"{analytic.reshape(-1)[j]!r} vs numeric {numeric.reshape(-1)[j]!r} "
                f"(max abs error {err.max():.3g}; rules {sorted(rules)})"
            )
    return report
