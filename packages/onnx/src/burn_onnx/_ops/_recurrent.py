"""Recurrent ops: LSTM, GRU and RNN (every direction, layout, clip, peepholes, sequence_lens).

The input projections of all time steps are one matmul (with the recurrent biases that add linearly); the
loop over time does one recurrent matmul per step (GRU: one for the gates that multiply h directly) and the
gates, which fusion runs as few kernels. Without an initial state the first step skips the recurrent
matmul and the products with the zero state. Variable ``sequence_lens`` keep each sequence's state past its end (outputs zero there), and
the reverse direction reverses each sequence within its own length, as ONNX specifies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import burn
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, checks, op

Act = Callable[[burn.Tensor], burn.Tensor]


def _activation(name: str, alpha: float | None, beta: float | None) -> Act:
    lowered = name.lower()
    if lowered == "sigmoid":
        return lambda x: x.sigmoid()
    if lowered == "tanh":
        return lambda x: x.tanh()
    if lowered == "relu":
        return lambda x: x.relu()
    if lowered == "affine":
        return lambda x: x * (1.0 if alpha is None else alpha) + (0.0 if beta is None else beta)
    if lowered == "leakyrelu":
        return lambda x: F.leaky_relu(x, 0.01 if alpha is None else alpha)
    if lowered == "thresholdedrelu":
        return lambda x: burn.where(x > (1.0 if alpha is None else alpha), x, 0.0)
    if lowered == "scaledtanh":
        return lambda x: (x * (1.0 if beta is None else beta)).tanh() * (1.0 if alpha is None else alpha)
    if lowered == "hardsigmoid":
        return lambda x: (x * (0.2 if alpha is None else alpha) + (0.5 if beta is None else beta)).clamp(
            0.0, 1.0
        )
    if lowered == "elu":
        return lambda x: burn.where(x > 0, x, (x.exp() - 1.0) * (1.0 if alpha is None else alpha))
    if lowered == "softsign":
        return lambda x: x / (x.abs() + 1.0)
    if lowered == "softplus":
        return lambda x: F.softplus(x)
    raise ValueError(f"activation {name!r}")


_KNOWN = {
    "sigmoid",
    "tanh",
    "relu",
    "affine",
    "leakyrelu",
    "thresholdedrelu",
    "scaledtanh",
    "hardsigmoid",
    "elu",
    "softsign",
    "softplus",
}
_WITH_ALPHA = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
_WITH_BETA = {"affine", "scaledtanh", "hardsigmoid"}


def _activations_check(node: Node) -> str | None:
    unknown = [a for a in node.attrs.get("activations", []) if a.lower() not in _KNOWN]
    if unknown:
        return f"activation(s) {unknown} are not supported"
    return None


def _activations(node: Node, defaults: list[str], dirs: int) -> list[list[Act]]:
    names = list(node.attrs.get("activations", defaults * dirs))
    alphas = list(node.attrs.get("activation_alpha", []))
    betas = list(node.attrs.get("activation_beta", []))
    acts = []
    for name in names:
        low = name.lower()
        alpha = alphas.pop(0) if low in _WITH_ALPHA and alphas else None
        beta = betas.pop(0) if low in _WITH_BETA and betas else None
        acts.append(_activation(name, alpha, beta))
    per = len(defaults)
    return [acts[d * per : (d + 1) * per] for d in range(dirs)]


def _reverse_index(lens: list[int], seq: int, batch: int, device: burn.Device) -> burn.Tensor:
    """(seq, batch) source steps that reverse each sequence within its length."""
    rows = [[(n - 1 - t) if t < n else t for n in lens] for t in range(seq)]
    import numpy as np

    return burn.from_numpy(np.array(rows, dtype=np.int64), device=device, dtype=device.backend.default_int)


def _time_major(x: burn.Tensor, idx: burn.Tensor) -> burn.Tensor:
    """Gather along time (dim 0) of x (seq, batch, features) with a (seq, batch) index."""
    return x.gather(0, idx.unsqueeze(2).expand(*x.shape))


_Cell = Callable[[burn.Tensor, list[burn.Tensor], int], list[burn.Tensor]]


def _run(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    lens: Any,
    states: list[burn.Tensor | None],
    dirs: int,
    cell: Callable[[int, burn.Tensor, list[burn.Tensor] | None], list[burn.Tensor]],
    proj: Callable[[int, burn.Tensor], burn.Tensor],
    hidden: int,
) -> tuple[burn.Tensor, ...]:
    layout = int(node.attrs.get("layout", 0))
    if layout:
        x = x.transpose(0, 1)
    seq, batch = x.shape[:2]
    direction = node.attrs.get("direction", "forward")
    lengths = ctx.ints(lens) if lens is not None else [seq] * batch
    ragged = any(n != seq for n in lengths)
    mask = None
    if ragged:
        import numpy as np

        steps = np.arange(seq)[:, None] < np.array(lengths)[None, :]
        mask = burn.from_numpy(steps[:, :, None].astype("float32"), device=x.device, dtype=x.dtype)
    ys, finals = [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        xs = x
        rev = None
        if reverse and ragged:
            rev = _reverse_index(lengths, seq, batch, x.device)
            xs = _time_major(x, rev)
        elif reverse:
            xs = x.flip([0])
        pre = proj(d, xs)  # (seq, batch, gates * hidden)
        # no initial state (and no ragged mask, which reads it): the first step runs from None, the
        # zero state, where the recurrent matmul and the products with the state vanish
        carry: list[burn.Tensor] | None = None
        if mask is not None or any(s is not None for s in states):
            carry = [
                s.narrow(0, d, 1).reshape(batch, hidden)
                if s is not None
                else burn.zeros((batch, hidden), dtype=x.dtype, device=x.device)
                for s in states
            ]
        outs = []
        for t in range(seq):
            new = cell(d, pre.narrow(0, t, 1).reshape(batch, -1), carry)
            if mask is not None and carry is not None:
                m = mask.narrow(0, t, 1).reshape(batch, 1)
                new = [m * n + (1.0 - m) * c for n, c in zip(new, carry)]
                outs.append(new[0] * m)
            else:
                outs.append(new[0])
            carry = new
        y = burn.stack(outs, 0)  # (seq, batch, hidden)
        if reverse:
            y = _time_major(y, rev) if rev is not None else y.flip([0])
        ys.append(y)
        assert carry is not None  # seq >= 1 steps ran
        finals.append(carry)
    y_all = burn.stack(ys, 1)  # (seq, dirs, batch, hidden)
    per_state = [burn.stack([f[i] for f in finals], 0) for i in range(len(states))]
    if layout:
        y_all = y_all.permute(2, 0, 1, 3)
        per_state = [s.transpose(0, 1) for s in per_state]
    return (y_all, *per_state)


def _weights(
    w: burn.Tensor, r: burn.Tensor, b: burn.Tensor | None, gates: int, hidden: int
) -> tuple[Any, Any, Any, Any]:
    wb = b.narrow(1, 0, gates * hidden) if b is not None else None
    rb = b.narrow(1, gates * hidden, gates * hidden) if b is not None else None
    return w, r, wb, rb


def _projection(
    w: burn.Tensor, wb: burn.Tensor | None, rb: burn.Tensor | None
) -> Callable[[int, burn.Tensor], burn.Tensor]:
    def proj(d: int, xs: burn.Tensor) -> burn.Tensor:
        out = xs @ w.narrow(0, d, 1).reshape(w.shape[1], w.shape[2]).transpose(0, 1)
        if wb is not None and rb is not None:  # both or neither (one bias input holds the two)
            out = out + (wb.narrow(0, d, 1) + rb.narrow(0, d, 1)).reshape(-1)
        return out

    return proj


def _dirs(node: Node) -> int:
    return 2 if node.attrs.get("direction", "forward") == "bidirectional" else 1


def _clip(node: Node) -> Callable[[burn.Tensor], burn.Tensor]:
    clip = node.attrs.get("clip")
    return (lambda v: v.clamp(-clip, clip)) if clip is not None else (lambda v: v)


_RNN_CHECK = checks(
    attr_in("direction", ("forward", "reverse", "bidirectional"), "forward"), _activations_check
)


@op("LSTM", host=(4,), check=checks(_RNN_CHECK, attr_in("input_forget", (0,), 0)))
def lstm(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    w: burn.Tensor,
    r: burn.Tensor,
    b: Any = None,
    lens: Any = None,
    h0: Any = None,
    c0: Any = None,
    p: Any = None,
) -> tuple[burn.Tensor, ...]:
    hidden = int(node.attrs.get("hidden_size", r.shape[-1]))
    dirs = _dirs(node)
    acts = _activations(node, ["Sigmoid", "Tanh", "Tanh"], dirs)
    w, r, wb, rb = _weights(w, r, b, 4, hidden)
    clip = _clip(node)
    h0 = h0.transpose(0, 1) if h0 is not None and node.attrs.get("layout", 0) else h0
    c0 = c0.transpose(0, 1) if c0 is not None and node.attrs.get("layout", 0) else c0
    rt = [r.narrow(0, d, 1).reshape(4 * hidden, hidden).transpose(0, 1) for d in range(dirs)]

    def cell(d: int, pre: burn.Tensor, carry: list[burn.Tensor] | None) -> list[burn.Tensor]:
        f_act, g_act, h_act = acts[d]
        c = None
        if carry is None:  # the zero state
            gates = pre
        else:
            h, c = carry
            gates = pre + h @ rt[d]
        i, o, f, g = (gates.narrow(1, k * hidden, hidden) for k in range(4))
        if p is not None and c is not None:
            pd = p.narrow(0, d, 1).reshape(3 * hidden)
            i = i + pd.narrow(0, 0, hidden) * c
            f = f + pd.narrow(0, 2 * hidden, hidden) * c
        i, f = f_act(clip(i)), f_act(clip(f))
        c_new = i * g_act(clip(g)) if c is None else f * c + i * g_act(clip(g))
        if p is not None:
            o = o + p.narrow(0, d, 1).reshape(3 * hidden).narrow(0, hidden, hidden) * c_new
        h_new = f_act(clip(o)) * h_act(c_new)
        return [h_new, c_new]

    return _run(ctx, node, x, lens, [h0, c0], dirs, cell, _projection(w, wb, rb), hidden)


@op("GRU", host=(4,), check=_RNN_CHECK)
def gru(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    w: burn.Tensor,
    r: burn.Tensor,
    b: Any = None,
    lens: Any = None,
    h0: Any = None,
) -> tuple[burn.Tensor, ...]:
    hidden = int(node.attrs.get("hidden_size", r.shape[-1]))
    dirs = _dirs(node)
    acts = _activations(node, ["Sigmoid", "Tanh"], dirs)
    w, r, wb, rb = _weights(w, r, b, 3, hidden)
    clip = _clip(node)
    before_reset = bool(node.attrs.get("linear_before_reset", 0))
    h0 = h0.transpose(0, 1) if h0 is not None and node.attrs.get("layout", 0) else h0
    rd = [r.narrow(0, d, 1).reshape(3 * hidden, hidden) for d in range(dirs)]
    # one recurrent matmul per step for the gates that multiply h directly: z, r (and h when
    # linear_before_reset), instead of one matmul per gate
    shared = 3 if before_reset else 2
    rs = [m.narrow(0, 0, shared * hidden).transpose(0, 1) for m in rd]
    rh = [m.narrow(0, 2 * hidden, hidden).transpose(0, 1) for m in rd]
    # the recurrent biases that add linearly go into the input projection (all three, or z and r
    # when linear_before_reset multiplies h's bias by the reset gate)
    fold = hb = None
    if before_reset:
        import numpy as np

        keep = np.repeat(np.array([1.0, 1.0, 0.0], np.float32), hidden)
        fold = burn.from_numpy(keep, device=x.device, dtype=x.dtype)  # z, r: 1; h: 0
        if rb is not None:  # h's recurrent bias alone, beside zeros for z and r
            hb = [rb.narrow(0, d, 1).reshape(-1) * (1.0 - fold) for d in range(dirs)]

    def proj(d: int, xs: burn.Tensor) -> burn.Tensor:
        out = xs @ w.narrow(0, d, 1).reshape(3 * hidden, w.shape[2]).transpose(0, 1)
        if wb is None or rb is None:  # both or neither (one bias input holds the two)
            return out
        rbd = rb.narrow(0, d, 1).reshape(-1)
        return out + (wb.narrow(0, d, 1).reshape(-1) + (rbd * fold if hb is not None else rbd))

    def cell(d: int, pre: burn.Tensor, carry: list[burn.Tensor] | None) -> list[burn.Tensor]:
        f_act, g_act = acts[d]
        xh = pre.narrow(1, 2 * hidden, hidden)
        bh = rb.narrow(0, d, 1).reshape(-1).narrow(0, 2 * hidden, hidden) if rb is not None else 0.0
        if carry is None:  # the zero state: h @ R and z * h vanish
            z = f_act(clip(pre.narrow(1, 0, hidden)))
            rg = f_act(clip(pre.narrow(1, hidden, hidden)))
            cand = g_act(clip(xh + rg * bh)) if before_reset and rb is not None else g_act(clip(xh))
            return [(1.0 - z) * cand]
        (h,) = carry
        hs = h @ rs[d]
        # what the gates read, gathered in one tensor first (one kernel), so that the cell reads 5 or 6
        # tensors (a fused kernel binds at most 7 in the browser-portable limits): z's and r's
        # pre-activations, and (linear_before_reset) h @ Rh + Rbh
        if before_reset:
            assert fold is not None
            zrh = hs + pre * fold if hb is None else hs + pre * fold + hb[d]
            z = f_act(clip(zrh.narrow(1, 0, hidden)))
            rg = f_act(clip(zrh.narrow(1, hidden, hidden)))
            cand = g_act(clip(xh + rg * zrh.narrow(1, 2 * hidden, hidden)))
        else:
            zr = pre.narrow(1, 0, 2 * hidden) + hs
            z = f_act(clip(zr.narrow(1, 0, hidden)))
            rg = f_act(clip(zr.narrow(1, hidden, hidden)))
            cand = g_act(clip(xh + (rg * h) @ rh[d]))
        return [(1.0 - z) * cand + z * h]

    return _run(ctx, node, x, lens, [h0], dirs, cell, proj, hidden)


@op("RNN", host=(4,), check=_RNN_CHECK)
def rnn(
    ctx: Any,
    node: Node,
    x: burn.Tensor,
    w: burn.Tensor,
    r: burn.Tensor,
    b: Any = None,
    lens: Any = None,
    h0: Any = None,
) -> tuple[burn.Tensor, ...]:
    hidden = int(node.attrs.get("hidden_size", r.shape[-1]))
    dirs = _dirs(node)
    acts = _activations(node, ["Tanh"], dirs)
    w, r, wb, rb = _weights(w, r, b, 1, hidden)
    clip = _clip(node)
    h0 = h0.transpose(0, 1) if h0 is not None and node.attrs.get("layout", 0) else h0
    rt = [r.narrow(0, d, 1).reshape(hidden, hidden).transpose(0, 1) for d in range(dirs)]

    def cell(d: int, pre: burn.Tensor, carry: list[burn.Tensor] | None) -> list[burn.Tensor]:
        if carry is None:  # the zero state
            return [acts[d][0](clip(pre))]
        (h,) = carry
        return [acts[d][0](clip(pre + h @ rt[d]))]

    return _run(ctx, node, x, lens, [h0], dirs, cell, _projection(w, wb, rb), hidden)
