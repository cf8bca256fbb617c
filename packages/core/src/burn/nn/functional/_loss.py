"""Losses with ``reduction="mean"|"sum"|"none"``. Formulas follow PyTorch's documented definitions (which
Burn's losses match) and use only basic differentiable ops (log_softmax, mul, sum, abs, clamp)."""

from __future__ import annotations

from collections.abc import Callable

from ..._errors import DTypeError, ShapeError
from ..._tensor import Tensor, _wrap
from ._activation import _check_tensor, _fp32, log_softmax

_REDUCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "mean": lambda t: t.mean(),
    "sum": lambda t: t.sum(),
    "none": lambda t: t,
}


def _reduce(op: str, loss: Tensor, reduction: str) -> Tensor:
    fn = _REDUCTIONS.get(reduction)
    if fn is None:
        raise ValueError(f"{op}: reduction must be one of {sorted(_REDUCTIONS)}, got {reduction!r}")
    return fn(loss)


def _same_shape(op: str, a: Tensor, b: Tensor, names: str = "input/target") -> None:
    if a.shape != b.shape:
        left, right = names.split("/")
        raise ShapeError(f"{op}: {left} shape {a.shape} != {right} shape {b.shape}")


def cross_entropy(
    logits: Tensor,
    targets: Tensor,
    label_smoothing: float = 0.0,
    weight: Tensor | None = None,
    ignore_index: int | None = -100,
    reduction: str = "mean",
) -> Tensor:
    """Cross-entropy of ``logits`` (..., C) against int class indices (...) or float class probabilities
    (..., C); the class dim is last (PyTorch's (N, C, d1, ...) images: permute C last first).

    With smoothing eps the target distribution is (1 - eps) * one_hot + eps / C. ``weight`` (C,)
    scales each class; the mean divides by the summed weights of the counted targets. Class-index targets
    equal to ``ignore_index`` (PyTorch's default -100; None: none ignored) add nothing and are not
    counted; probability targets ignore it, as PyTorch. Returns a scalar, or the targets' shape (...) for
    ``reduction="none"``.

    >>> logits = burn.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> [round(v, 4) for v in F.cross_entropy(logits, burn.tensor([0, 2]), reduction="none").tolist()]
    [0.2395, 1.0986]
    >>> round(F.cross_entropy(logits, burn.tensor([0, 2])).item(), 4)
    0.6691
    >>> F.cross_entropy(burn.zeros(4, 5, 3), burn.zeros(4, 5, dtype=burn.int64), reduction="none").shape
    (4, 5)
    """
    logits = _fp32("cross_entropy", logits)
    targets = _check_tensor("cross_entropy", targets, "targets")
    if logits.ndim < 1:
        raise ShapeError(f"cross_entropy: logits must be (..., C), got shape {logits.shape}")
    lead, c = tuple(logits.shape[:-1]), logits.shape[-1]
    if targets.dtype.is_float and tuple(targets.shape) == lead and lead != tuple(logits.shape):
        raise DTypeError(
            f"cross_entropy: targets of shape {targets.shape} are class indices and must be an int "
            f"tensor, got {targets.dtype} (float targets are class probabilities of the logits' shape "
            f"{logits.shape})"
        )
    if targets.dtype.is_float:
        _same_shape("cross_entropy", logits, targets, "logits/targets")
    elif tuple(targets.shape) != lead:
        raise ShapeError(
            f"cross_entropy: int targets must have shape {lead} for logits {logits.shape}, got {targets.shape}"
        )
    if logits.ndim == 2:
        return _cross_entropy_rows(logits, targets, label_smoothing, weight, ignore_index, reduction)
    flat = targets.reshape(-1, c) if targets.dtype.is_float else targets.reshape(-1)
    rows = _cross_entropy_rows(logits.reshape(-1, c), flat, label_smoothing, weight, ignore_index, reduction)
    return rows.reshape(lead) if reduction == "none" else rows


def _cross_entropy_rows(
    logits: Tensor,
    targets: Tensor,
    label_smoothing: float,
    weight: Tensor | None,
    ignore_index: int | None,
    reduction: str,
) -> Tensor:
    """cross_entropy over (N, C) logits."""
    c = logits.shape[1]
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"cross_entropy: weight must have shape ({c},), got {weight.shape}")
    logp = log_softmax(logits, 1)
    if targets.dtype.is_float:  # class probabilities
        q = targets if label_smoothing == 0 else targets * (1.0 - label_smoothing) + label_smoothing / c
        wq = q if weight is None else q * weight.cast(q.dtype)
        return _reduce("cross_entropy", -(wq * logp).sum(1), reduction)
    if not targets.dtype.is_int:
        raise DTypeError(
            f"cross_entropy: targets must be int class indices or float probabilities, got {targets.dtype}"
        )
    keep = None
    if ignore_index is not None:
        ignored = targets == ignore_index
        targets = targets.mask_fill(ignored, 0)  # any valid class: the row is masked out below
        keep = (~ignored).cast(logp.dtype)
    # gathers, never a dense (N, C) one-hot: each row's target log-probability (and class weight)
    picked = _class_index(targets, c)
    column = picked.reshape(-1, 1)._p
    got = _wrap(logp._b.gather(logp._p, 1, column), logp._b, logp.dtype)  # (N, 1)
    if weight is None and label_smoothing == 0 and reduction in ("mean", "sum"):
        # the common case in fewer recorded ops (a training step pays each twice): the (N, 1) column
        # summed as it is, the sign on the scalar; the same numbers (negation is exact)
        if keep is not None:
            got = got * keep.reshape(-1, 1)
        if reduction == "sum":
            return -got.sum()
        return got.sum() / -keep.sum() if keep is not None else -got.mean()
    loss = -got.reshape(-1)
    w = None if weight is None else weight.cast(logp.dtype).detach()
    w_target = None
    if w is not None:
        w_target = w.select(0, picked)
        loss = loss * w_target
    if label_smoothing > 0:
        smooth = -(logp if w is None else logp * w).sum(1) / c
        loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing
    denom = w_target
    if keep is not None:
        loss = loss * keep
        denom = keep if denom is None else denom * keep
    if reduction == "mean" and denom is not None:
        return loss.sum() / denom.sum()
    return _reduce("cross_entropy", loss, reduction)


def _class_index(targets: Tensor, c: int) -> Tensor:
    """Class-index targets (N,) checked against ``[0, c)`` (at once on host backends, at the next read
    or sync on device backends), so a gather by them is safe."""
    if not targets.numel():
        return targets
    message = f"cross_entropy: target {{value}} out of range for {c} classes (expected 0..{c - 1})"
    return _wrap(targets._b.check_index(targets._p, c, False, message), targets._b, targets.dtype)


def binary_cross_entropy(
    probs: Tensor, targets: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """-(t log p + (1 - t) log(1 - p)), element-wise, with logs clamped at -100 as in PyTorch.

    probs and targets: the same shape -> a scalar, or that shape for ``reduction="none"``.

    >>> round(F.binary_cross_entropy(burn.tensor([0.5, 0.9]), burn.tensor([1.0, 1.0])).item(), 4)
    0.3993
    """
    probs = _fp32("binary_cross_entropy", probs)
    targets = _fp32("binary_cross_entropy", targets)
    _same_shape("binary_cross_entropy", probs, targets, "probs/targets")
    loss = -(
        targets * probs.log().clamp_min(-100.0) + (1.0 - targets) * (1.0 - probs).log().clamp_min(-100.0)
    )
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy", loss, reduction)


def binary_cross_entropy_with_logits(
    logits: Tensor,
    targets: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of sigmoid(logits), computed stably as
    (1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x).

    logits and targets: the same shape -> a scalar, or that shape for ``reduction="none"``.

    >>> loss = F.binary_cross_entropy_with_logits(burn.zeros(2), burn.tensor([0.0, 1.0]))
    >>> round(loss.item(), 4)   # log 2: sigmoid(0) = 0.5 for either target
    0.6931
    """
    x = _fp32("binary_cross_entropy_with_logits", logits)
    t = _fp32("binary_cross_entropy_with_logits", targets)
    _same_shape("binary_cross_entropy_with_logits", x, t, "logits/targets")
    log_weight = 1.0 if pos_weight is None else (pos_weight - 1.0) * t + 1.0
    loss = (1.0 - t) * x + (-x)._unary("softplus") * log_weight
    if weight is not None:
        loss = loss * weight
    return _reduce("binary_cross_entropy_with_logits", loss, reduction)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(input - target)^2, element-wise; the same shapes -> a scalar, or that shape for "none".

    >>> F.mse_loss(burn.tensor([1.0, 2.0]), burn.tensor([1.0, 4.0])).item()
    2.0
    >>> F.mse_loss(burn.tensor([1.0, 2.0]), burn.tensor([1.0, 4.0]), reduction="sum").item()
    4.0
    """
    input, target = _fp32("mse_loss", input), _fp32("mse_loss", target)
    _same_shape("mse_loss", input, target)
    diff = input - target
    return _reduce("mse_loss", diff * diff, reduction)


def _huber(op: str, input: Tensor, target: Tensor, delta: float) -> Tensor:
    input, target = _fp32(op, input), _fp32(op, target)
    _same_shape(op, input, target)
    a = (input - target).abs()
    q = a.clamp_max(delta)
    # 0.5 q^2 + delta (a - q): 0.5 r^2 inside [-delta, delta], delta (|r| - delta / 2) outside
    return q * q * 0.5 + (a - q) * delta


def huber_loss(input: Tensor, target: Tensor, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    """0.5 r^2 if |r| <= delta else delta * (|r| - 0.5 delta), with r = input - target; the same
    shapes -> a scalar, or that shape for ``reduction="none"``.

    >>> F.huber_loss(burn.zeros(2), burn.tensor([0.5, 3.0]), reduction="none").tolist()
    [0.125, 2.5]
    """
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    return _reduce("huber_loss", _huber("huber_loss", input, target, delta), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, beta: float = 1.0, reduction: str = "mean") -> Tensor:
    """0.5 r^2 / beta if |r| < beta else |r| - 0.5 beta (beta = 0: plain L1), with r = input - target;
    the same shapes -> a scalar, or that shape for ``reduction="none"``.

    >>> F.smooth_l1_loss(burn.zeros(2), burn.tensor([0.5, 3.0]), beta=2.0, reduction="none").tolist()
    [0.0625, 2.0]
    """
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    if beta == 0:
        input, target = _fp32("smooth_l1_loss", input), _fp32("smooth_l1_loss", target)
        _same_shape("smooth_l1_loss", input, target)
        return _reduce("smooth_l1_loss", (input - target).abs(), reduction)
    return _reduce("smooth_l1_loss", _huber("smooth_l1_loss", input, target, beta) / beta, reduction)


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) point-wise: target * (log target - input), 0 where target is 0.

    ``input`` holds log-probabilities; ``reduction="batchmean"`` divides the sum by the batch size
    (the mathematically correct KL); ``"mean"`` averages over every element, as PyTorch.
    input and target: the same shape (N, ...).

    >>> log_q = burn.tensor([[0.5, 0.5]]).log()
    >>> round(F.kl_div(log_q, burn.tensor([[1.0, 0.0]]), reduction="batchmean").item(), 4)   # log 2
    0.6931
    """
    input, target = _fp32("kl_div", input), _fp32("kl_div", target)
    _same_shape("kl_div", input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # x log x -> 0 as x -> 0: log(t + [t == 0]) is log(1) == 0 exactly there, in every dtype
        safe = target + (target == 0).cast(target.dtype)
        loss = target * (safe.log() - input)
    if reduction == "batchmean":
        return loss.sum() * (1.0 / (input.shape[0] if input.ndim else 1))
    return _reduce("kl_div", loss, reduction)
