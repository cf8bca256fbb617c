"""``check_grad``: a custom op's gradients (its ``backward``, or its composed one) against central
finite differences of its forward, in float64 on the numpy backend by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._registry import CustomOpError

if TYPE_CHECKING:
    from .._device import Device
    from ._op import CustomOp


@dataclass(frozen=True)
class GradReport:
    """What ``check_grad`` compared: the largest absolute difference per input (None: not checked,
    an int input) and the tolerance that applied.

    >>> cube = burn.custom.op("doc_cube", kernels={"cpu": lambda x: x**3}, compose=lambda x: x * x * x)
    >>> r = burn.custom.check_grad(cube, np.array([0.5, -1.0]))
    >>> len(r.max_abs_err), r.max_abs_err[0] < 1e-6
    (1, True)
    """

    max_abs_err: tuple[float | None, ...]
    atol: float
    rtol: float


def check_grad(
    op: CustomOp,
    *inputs: Any,
    device: Device | str | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    seed: int = 0,
    **attrs: Any,
) -> GradReport:
    """Check ``op``'s gradients at ``inputs`` (tensors or arrays) against central finite differences.

    A fixed random cotangent ``v`` of the output's shape gives the analytic ``grad(sum(op(x) * v))``
    through autodiff (the op's backward); the numeric one perturbs each input entry by ``+-eps`` and
    runs the op's forward. Runs on ``device`` (default ``cpu``) in float64 where the device has it, else
    float32 (pass a larger ``eps``, ``atol`` and ``rtol`` then). Float inputs are checked, others are
    passed through. Raises ``CustomOpError`` naming the input and its worst entry beyond
    ``atol + rtol * |numeric|``; returns a ``GradReport``.

    >>> sq = burn.custom.op("doc_square", kernels={"cpu": lambda x: x * x},
    ...                     backward=lambda ctx, g: [g * 2 * ctx.inputs[0]])
    >>> burn.custom.check_grad(sq, np.array([1.0, -2.0, 0.5])).max_abs_err[0] < 1e-6
    True
    """
    import numpy as np

    import burn

    plain = burn.device(device).inner if device is not None else burn.device("cpu")
    adev = burn.device(plain, autodiff=True)
    wide = burn.float64 if burn.float64 in plain.backend.dtypes else burn.float32
    arrays = [np.asarray(t.numpy() if isinstance(t, burn.Tensor) else t) for t in inputs]
    floats = [a.dtype.kind == "f" for a in arrays]
    arrays = [a.astype(np.float64) if f else a for a, f in zip(arrays, floats)]

    def on(dev: Any, arrs: list[Any], track: bool) -> list[Any]:
        ts = []
        for a, f in zip(arrs, floats):
            t = burn.tensor(a, dtype=wide, device=dev) if f else burn.tensor(a, device=dev)
            ts.append(t.require_grad() if track and f else t)
        return ts

    xs = on(adev, arrays, True)
    out = op(*xs, **attrs)
    v = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    grads = out.backward(burn.tensor(v, dtype=out.dtype, device=adev))
    errs: list[float | None] = []
    for i, (a, f) in enumerate(zip(arrays, floats)):
        if not f:
            errs.append(None)
            continue
        g = xs[i].grad(grads)
        analytic = np.zeros_like(a) if g is None else g.numpy().astype(np.float64)
        numeric = np.zeros_like(a)
        flat = numeric.reshape(-1)
        for j in range(a.size):
            vals = []
            for step in (eps, -eps):
                moved = [b.copy() for b in arrays]
                moved[i].reshape(-1)[j] += step
                y = op(*on(plain, moved, False), **attrs).numpy().astype(np.float64)
                vals.append(float((y * v).sum()))
            flat[j] = (vals[0] - vals[1]) / (2 * eps)
        diff = np.abs(analytic - numeric)
        bad = diff > atol + rtol * np.abs(numeric)
        if bad.any():
            k = int(np.argmax(np.where(bad, diff, -1.0)))
            raise CustomOpError(
                f"check_grad {op.name}: input {i}, entry {np.unravel_index(k, a.shape)}: analytic "
                f"{analytic.reshape(-1)[k]:.6g}, finite differences {numeric.reshape(-1)[k]:.6g} "
                f"(|diff| {diff.reshape(-1)[k]:.3g} > atol {atol} + rtol {rtol} * |numeric|)"
            )
        errs.append(float(diff.max()) if diff.size else 0.0)
    return GradReport(tuple(errs), atol, rtol)
