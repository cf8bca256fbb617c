"""burn.nn.functional against independent numpy formulations (float64 references, float32 tensors)."""

import math

import burn
import burn.nn.functional as F
import numpy as np
import pytest

RTOL, ATOL = 1e-5, 1e-6
rng = np.random.default_rng(0)


def t(a, dtype="float32"):
    return burn.tensor(np.asarray(a), dtype=dtype)


def close(x, ref, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(np.asarray(x.numpy(), dtype=np.float64), ref, rtol=rtol, atol=atol)


_erf = np.vectorize(math.erf)
ACTIVATIONS = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (
        lambda x: F.gelu(x, approximate="tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (F.tanh, np.tanh),
    "softplus": (F.softplus, lambda x: np.log1p(np.exp(x))),
    "softplus_beta2": (lambda x: F.softplus(x, beta=2.0), lambda x: np.log1p(np.exp(2 * x)) / 2),
    "mish": (F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "hard_sigmoid": (F.hard_sigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hard_sigmoid_burn": (lambda x: F.hard_sigmoid(x, 0.2, 0.5), lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda x: np.where(x >= 0, x, 0.1 * x)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_numpy(name):
    fn, ref = ACTIVATIONS[name]
    x = rng.normal(size=(3, 7)) * 3
    close(fn(t(x)), ref(x))


def test_prelu_per_channel_and_shared():
    x = rng.normal(size=(2, 3, 4))
    alpha = np.array([0.1, 0.2, 0.3])
    close(F.prelu(t(x), t(alpha)), np.where(x >= 0, x, alpha[None, :, None] * x))
    close(F.prelu(t(x), t([0.25])), np.where(x >= 0, x, 0.25 * x))
    with pytest.raises(burn.ShapeError, match="prelu"):
        F.prelu(t(x), t([0.1, 0.2]))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax(dim):
    x = rng.normal(size=(4, 5)) * 4
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    sm = e / e.sum(axis=dim, keepdims=True)
    close(F.softmax(t(x), dim), sm)
    close(F.log_softmax(t(x), dim), np.log(sm), atol=1e-5)


def test_softmax_rejects_bad_dim():
    with pytest.raises(burn.DimError, match="softmax"):
        F.softmax(t(np.ones((2, 2))), 2)


def test_dropout_is_identity_without_autodiff_and_scales_when_forced():
    x = t(np.ones((200, 50)))
    assert F.dropout(x, 0.5) is x  # plain cpu device: inference
    burn.seed(1)
    y = F.dropout(x, 0.25, training=True).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02  # 10 000 Bernoulli draws: 5 sigma is ~0.02
    with pytest.raises(ValueError, match="prob"):
        F.dropout(x, 1.5)


def test_linear_burn_layout():
    x, w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=5)
    close(F.linear(t(x), t(w), t(b)), x @ w + b)
    close(F.linear(t(x[0, 0]), t(w)), x[0, 0] @ w)
    with pytest.raises(burn.ShapeError, match="d_input=4"):
        F.linear(t(np.ones((2, 3))), t(w))


def _np_norm(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def test_layer_norm():
    x, w, b = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=6)
    close(F.layer_norm(t(x), 6, t(w), t(b)), _np_norm(x, (2,), 1e-5) * w + b, atol=1e-5)
    close(F.layer_norm(t(x), (3, 6)), _np_norm(x, (1, 2), 1e-5), atol=1e-5)
    with pytest.raises(burn.ShapeError, match="normalized_shape"):
        F.layer_norm(t(x), 5)


def test_batch_norm_train_and_eval():
    x = rng.normal(size=(4, 3, 5)) * 2 + 1
    w, b = rng.normal(size=3), rng.normal(size=3)
    ref = _np_norm(x, (0, 2), 1e-5) * w[None, :, None] + b[None, :, None]
    close(F.batch_norm(t(x), t(np.zeros(3)), t(np.ones(3)), t(w), t(b), training=True), ref, atol=1e-5)
    rm, rv = rng.normal(size=3), rng.uniform(0.5, 2, size=3)
    ref = (x - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5) * w[None, :, None] + b[None, :, None]
    close(F.batch_norm(t(x), t(rm), t(rv), t(w), t(b)), ref, atol=1e-5)


def test_group_instance_rms_norm():
    x = rng.normal(size=(2, 4, 3, 2))
    w, b = rng.normal(size=4), rng.normal(size=4)
    g = _np_norm(x.reshape(2, 2, -1), (2,), 1e-5).reshape(x.shape)
    close(F.group_norm(t(x), 2, t(w), t(b)), g * w[None, :, None, None] + b[None, :, None, None], atol=1e-5)
    close(F.instance_norm(t(x)), _np_norm(x, (2, 3), 1e-5), atol=1e-5)
    with pytest.raises(burn.ShapeError, match="num_groups=3"):
        F.group_norm(t(x), 3)
    y = rng.normal(size=(3, 8))
    gamma = rng.normal(size=8)
    close(F.rms_norm(t(y), t(gamma)), y / np.sqrt((y**2).mean(-1, keepdims=True) + 1e-5) * gamma, atol=1e-5)


# ---------------------------------------------------------------------------------------------- losses
def _np_log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _np_cross_entropy(logits, targets, smoothing=0.0, weight=None, ignore_index=None, reduction="mean"):
    """Per-sample loop written from PyTorch's documented formula."""
    n, c = logits.shape
    logp = _np_log_softmax(logits)
    w = np.ones(c) if weight is None else weight
    losses, denom = [], 0.0
    for i in range(n):
        y = targets[i]
        if ignore_index is not None and y == ignore_index:
            losses.append(0.0)
            continue
        nll = -w[y] * logp[i, y]
        smooth = -(w * logp[i]).sum() / c
        losses.append((1 - smoothing) * nll + smoothing * smooth)
        denom += w[y]
    losses = np.array(losses)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / denom


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_options(smoothing, weighted, ignore, reduction):
    logits = rng.normal(size=(6, 4)) * 2
    targets = np.array([0, 2, 1, 3, 2, 0])
    weight = np.array([0.5, 1.0, 2.0, 1.5]) if weighted else None
    got = F.cross_entropy(
        t(logits),
        burn.tensor(targets),
        label_smoothing=smoothing,
        weight=None if weight is None else t(weight),
        ignore_index=ignore,
        reduction=reduction,
    )
    close(got, _np_cross_entropy(logits, targets, smoothing, weight, ignore, reduction), atol=1e-5)


@pytest.mark.parametrize("device", ["cpu", "cpu+fusion"])
def test_cross_entropy_from_indices_gathers_and_builds_no_one_hot(monkeypatch, device):
    """Class-index targets of any leading shape: the loss and its gradient by gathers, never a dense
    (N, C) one-hot (the backend's one_hot would raise); gradient against the numpy formula
    (softmax - onehot) * w[y] / sum of counted weights, with ignore_index and class weights."""
    dev = burn.device("cpu", autodiff=True, fusion=device.endswith("fusion"))
    monkeypatch.setattr(type(burn.device("cpu").backend), "one_hot", _no_one_hot)
    logits = rng.normal(size=(2, 3, 5)).astype(np.float32)
    targets = np.array([[0, 4, 2], [4, 1, 3]])
    weight = np.array([0.5, 1.0, 2.0, 1.5, 0.25], dtype=np.float32)
    x = burn.tensor(logits, device=dev).require_grad()
    loss = F.cross_entropy(
        x, burn.tensor(targets, device=dev), weight=burn.tensor(weight, device=dev), ignore_index=4
    )
    flat, flat_t = logits.reshape(-1, 5).astype(np.float64), targets.reshape(-1)
    close(loss, _np_cross_entropy(flat, flat_t, weight=weight, ignore_index=4), atol=1e-5)
    soft = np.exp(_np_log_softmax(flat))
    counted = flat_t != 4
    grad = (soft - np.eye(5)[flat_t]) * (weight[flat_t] * counted)[:, None] / weight[flat_t][counted].sum()
    close(x.grad(loss.backward()), grad.reshape(2, 3, 5), atol=1e-5)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"cross_entropy: target -1 out of range for 5"):
        F.cross_entropy(burn.tensor(logits[0]), burn.tensor([0, -1, 2])).item()


def _no_one_hot(*args, **kwargs):
    raise AssertionError("cross_entropy built a dense one-hot")


def test_cross_entropy_probability_targets_and_errors():
    logits = rng.normal(size=(3, 4))
    probs = rng.dirichlet(np.ones(4), size=3)
    close(F.cross_entropy(t(logits), t(probs)), -(probs * _np_log_softmax(logits)).sum(1).mean(), atol=1e-6)
    with pytest.raises(burn.ShapeError, match="targets"):
        F.cross_entropy(t(logits), burn.tensor([0, 1]))
    with pytest.raises(burn.IndexOutOfRangeError):
        F.cross_entropy(t(logits), burn.tensor([0, 1, 7]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(t(logits), burn.tensor([0, 1, 2]), reduction="avg")


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0) before the -100 clamp
def test_binary_cross_entropy_and_with_logits():
    x = rng.normal(size=(5, 3)) * 3
    y = (rng.random(size=(5, 3)) > 0.5).astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    ref = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    close(F.binary_cross_entropy(t(p), t(y), reduction="none"), ref, rtol=1e-4, atol=1e-5)
    close(F.binary_cross_entropy_with_logits(t(x), t(y)), ref.mean(), atol=1e-5)
    pw = np.array([1.0, 2.0, 0.5])
    ref_pw = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p))
    close(
        F.binary_cross_entropy_with_logits(t(x), t(y), pos_weight=t(pw), reduction="sum"),
        ref_pw.sum(),
        rtol=1e-5,
    )
    # saturated probabilities: logs clamp at -100 instead of giving inf
    close(F.binary_cross_entropy(t([0.0, 1.0]), t([1.0, 0.0]), reduction="none"), [100.0, 100.0])


def test_regression_losses():
    a, b = rng.normal(size=(4, 5)) * 2, rng.normal(size=(4, 5))
    r = a - b
    close(F.mse_loss(t(a), t(b)), (r**2).mean())
    close(F.mse_loss(t(a), t(b), reduction="sum"), (r**2).sum(), rtol=1e-5)
    for delta in (0.5, 1.0, 2.0):
        huber = np.where(np.abs(r) <= delta, 0.5 * r**2, delta * (np.abs(r) - 0.5 * delta))
        close(F.huber_loss(t(a), t(b), delta, reduction="none"), huber, atol=1e-5)
        smooth = np.where(np.abs(r) < delta, 0.5 * r**2 / delta, np.abs(r) - 0.5 * delta)
        close(F.smooth_l1_loss(t(a), t(b), beta=delta), smooth.mean(), atol=1e-5)
    close(F.smooth_l1_loss(t(a), t(b), beta=0.0), np.abs(r).mean())
    with pytest.raises(burn.ShapeError, match="mse_loss"):
        F.mse_loss(t(a), t(b[:2]))


def test_kl_div():
    logq = _np_log_softmax(rng.normal(size=(3, 4)))
    p = rng.dirichlet(np.ones(4), size=3)
    p[0, 1] = 0.0  # 0 * log 0 counts as 0
    pointwise = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - logq), 0.0)
    close(F.kl_div(t(logq), t(p), reduction="none"), pointwise, atol=1e-6)
    close(F.kl_div(t(logq), t(p), reduction="batchmean"), pointwise.sum() / 3, atol=1e-6)
    close(
        F.kl_div(t(logq), t(np.log(p + 1e-30)), log_target=True, reduction="sum"), pointwise.sum(), atol=1e-5
    )


def test_cross_entropy_ignores_minus_100_by_default_as_pytorch():
    """The default ``ignore_index`` is PyTorch's -100: such targets add nothing and are not counted;
    ``ignore_index=None`` ignores none (a -100 is then out of range); probability targets ignore it."""
    logits = rng.normal(size=(5, 4))
    targets = np.array([1, -100, 3, 0, -100])
    got = F.cross_entropy(t(logits), burn.tensor(targets))
    close(got, _np_cross_entropy(logits, targets, ignore_index=-100), atol=1e-5)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"target -100 out of range for 4"):
        F.cross_entropy(t(logits), burn.tensor(targets), ignore_index=None).item()
    probs = np.full((5, 4), 0.25)
    close(F.cross_entropy(t(logits), t(probs)), _np_cross_entropy_probs(logits, probs), atol=1e-5)


def test_cross_entropy_default_ignore_index_matches_torch():
    torch = pytest.importorskip("torch")
    logits = rng.normal(size=(6, 3))
    targets = np.array([2, -100, 0, -100, 1, 1])
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(targets))
    close(F.cross_entropy(t(logits), burn.tensor(targets)), float(want), atol=1e-5)


def _np_cross_entropy_probs(logits, probs):
    return float(-(probs * _np_log_softmax(logits)).sum(1).mean())


@pytest.mark.parametrize("device", ["cpu", "cpu+fusion"])
@pytest.mark.parametrize("ignore", [-100, None])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_plain_indices_loss_and_gradient(device, ignore, reduction):
    """Class indices without weights or smoothing (a classifier's training loss, its own short path):
    the loss and its gradient against the numpy formula (softmax - onehot) / count, ignored rows
    adding nothing, and the loss against the per-row losses of ``reduction="none"``."""
    dev = burn.device("cpu", autodiff=True, fusion=device.endswith("fusion"))
    logits = rng.normal(size=(7, 5)).astype(np.float32)
    targets = np.array([0, 4, -100, 2, 1, -100, 3]) if ignore is not None else np.array([0, 4, 2, 2, 1, 0, 3])
    x = burn.tensor(logits, device=dev).require_grad()
    y = burn.tensor(targets, device=dev)
    loss = F.cross_entropy(x, y, ignore_index=ignore, reduction=reduction)
    flat = logits.astype(np.float64)
    close(loss, _np_cross_entropy(flat, targets, ignore_index=ignore, reduction=reduction), atol=1e-5)
    counted = targets != -100
    picked = np.where(counted, targets, 0)
    grad = (np.exp(_np_log_softmax(flat)) - np.eye(5)[picked]) * counted[:, None]
    close(x.grad(loss.backward()), grad / (counted.sum() if reduction == "mean" else 1), atol=1e-6)
    rows = F.cross_entropy(x, y, ignore_index=ignore, reduction="none").sum()
    want = rows.item() / (counted.sum() if reduction == "mean" else 1)
    assert loss.item() == pytest.approx(want, rel=1e-6)
