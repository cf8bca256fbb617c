"""Capture a whole training step (forward, autodiff backward, optimizer update) as one ``burn.ir`` graph.

The step is traced on an Autodiff decorator over ``burn.ir``'s capture backend: the model's params
and the optimizer's state are graph inputs (they live in persistent device buffers in the page), and
so are the run-time scalars (the learning rate, Adam's two bias corrections ``1 - beta**t``), so one
program serves every step. The graph returns the step's metrics (``loss`` first), then each param's
new value, then each state's new value; the page copies the new values back over the old ones at the
end of the step. Optimizer state starts at zero, which gives the first step exactly what burn's
optimizers compute from no state (``0 * beta + g * (1 - beta)`` is ``g * (1 - beta)``).

The updates are written here as tensor ops in the same order as burn's optimizers (``UPDATES``: one
row per optimizer), not through their fused kernels, so the capture records them op by op and the
export's fusion fuses them again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import burn

from ._record import WebExportError
from ._train_random import seeded_draws

Tensor = Any
Update = Callable[
    [Any, Tensor, Tensor, dict[str, Tensor], dict[str, Tensor]], tuple[Tensor, dict[str, Tensor]]
]


def _decay(g: Tensor, w: Tensor, wd: float | None) -> Tensor:
    return g if not wd else g + w * wd


def _sgd(c: Any, w: Tensor, g: Tensor, state: dict[str, Tensor], hyper: dict[str, Tensor]) -> Any:
    g = _decay(g, w, c.weight_decay)
    if not c.momentum:
        return w - g * hyper["lr"], {}
    buf = state["momentum"] * c.momentum + g * (1.0 - c.dampening)
    step = g + buf * c.momentum if c.nesterov else buf
    return w - step * hyper["lr"], {"momentum": buf}


def _adam_like(decoupled: bool) -> Update:
    def update(c: Any, w: Tensor, g: Tensor, state: dict[str, Tensor], hyper: dict[str, Tensor]) -> Any:
        wd = c.weight_decay or 0.0
        if wd and not decoupled:
            g = g + w * wd
        m = state["moment_1"] * c.beta1 + g * (1.0 - c.beta1)
        v = state["moment_2"] * c.beta2 + g * g * (1.0 - c.beta2)
        direction = (m / hyper["bias1"]) / ((v / hyper["bias2"]).sqrt() + c.epsilon)
        kept = w * (1.0 - hyper["lr"] * wd) if decoupled and wd else w
        return kept - direction * hyper["lr"], {"moment_1": m, "moment_2": v}

    return update


@dataclass(frozen=True)
class Rule:
    """How one optimizer runs in a page: its update, its state tensors (shaped like the param) and
    its run-time scalars beyond ``lr``."""

    update: Update
    state: Callable[[Any], tuple[str, ...]]
    hyper: tuple[str, ...]


UPDATES: dict[str, Rule] = {
    "Sgd": Rule(_sgd, lambda c: ("momentum",) if c.momentum else (), ("lr",)),
    "Adam": Rule(_adam_like(False), lambda c: ("moment_1", "moment_2"), ("lr", "bias1", "bias2")),
    "AdamW": Rule(_adam_like(True), lambda c: ("moment_1", "moment_2"), ("lr", "bias1", "bias2")),
}


def rule_for(optimizer: Any) -> Rule:
    name = type(optimizer).__name__
    rule = UPDATES.get(name)
    if rule is None:
        raise WebExportError(
            f"export_training: optimizer {name} cannot run in a page yet (supported: {', '.join(UPDATES)})"
        )
    c = optimizer.config
    if name == "Sgd" and c.momentum and c.dampening:
        raise WebExportError("export_training: SGD with dampening != 0 cannot run in a page yet")
    return rule


def clip(clipping: Any, g: Tensor) -> Tensor:
    """``GradientClipping.clip`` without reading the norm on the host: by norm, a gradient whose norm
    is within the threshold is multiplied by exactly 1."""
    if clipping is None:
        return g
    if clipping.mode == "value":
        return g.clamp(-clipping.threshold, clipping.threshold)
    norm = (g * g).sum().sqrt()
    scale = (norm + 1e-6).reciprocal() * clipping.threshold
    return g * burn.where(norm <= clipping.threshold, burn.ones_like(norm), scale)


class _AutodiffCaptureDevice(burn.Device):
    """The device of the traced step: the Autodiff decorator over the running capture's backend."""

    def __init__(self, inner: Any) -> None:
        super().__init__("capture", autodiff=True)
        object.__setattr__(self, "_inner_device", inner)
        try:
            factory = burn.plugins.registry().decorator("autodiff").factory
        except KeyError:
            raise WebExportError(
                "export_training: the backward needs burn-autodiff (pip install 'burn-core[autodiff]')"
            ) from None
        object.__setattr__(self, "_ad_backend", factory(inner.backend, self))

    @property
    def backend(self) -> Any:
        return self._ad_backend  # type: ignore[attr-defined]

    @property
    def inner(self) -> Any:
        return self._inner_device  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)

    def __str__(self) -> str:
        return "capture+autodiff"

    __repr__ = __str__


@dataclass
class StepSpec:
    """What the traced step reads and returns, by role, in graph order."""

    batch: list[str]
    hyper: list[str]
    params: list[str]  # dotted names
    states: list[tuple[str, str]]  # (param name, state key)
    metrics: list[str]  # "loss" first
    running: list[str] = field(default_factory=list)  # dotted names of running statistics (batch norm)


def _metrics(out: Any) -> dict[str, Tensor]:
    named = out if isinstance(out, dict) else {"loss": out}
    if "loss" not in named:
        raise WebExportError(
            f"export_training: step_fn returned a dict without 'loss' (keys {sorted(named)})"
        )
    named = {"loss": named["loss"], **{k: v for k, v in named.items() if k != "loss"}}
    for k, v in named.items():
        if not isinstance(v, burn.Tensor) or v.numel() != 1:
            what = f"shape {v.shape}" if isinstance(v, burn.Tensor) else type(v).__name__
            raise WebExportError(f"export_training: metric {k!r} must be a one-element tensor, got {what}")
    return named


def entries(model: Any) -> list[tuple[str, Any]]:
    """The params, then the running statistics, of ``model``: the order of a step's persistent inputs."""
    found = model.named_entries()
    params = [(n, e) for n, e in found if isinstance(e, burn.nn.Param)]
    return params + [(n, e) for n, e in model.named_entries() if type(e).__name__ == "RunningState"]


def _on(model: Any, dev: Any, values: Sequence[Tensor]) -> Any:
    """A copy of ``model`` on ``dev`` whose params and running statistics hold ``values`` (in
    ``entries`` order)."""
    by_id = {id(e.value): v for (_, e), v in zip(entries(model), values)}
    return model.map(lambda t: by_id[id(t)], constants=lambda t: t.to(dev))


def _running(net: Any) -> list[Tensor]:
    """The running statistics of the traced copy after its forward (batch norm set them)."""
    return [
        e.value.inner() if e.value.backend.is_autodiff else e.value
        for _, e in entries(net)[len(net.named_params()) :]
    ]


def step_function(
    model: Any, step_fn: Callable[..., Any], optimizer: Any, spec: StepSpec, clipping: Any, train: bool
) -> Callable[..., tuple[Tensor, ...]]:
    """The function ``burn.ir.capture`` traces: (batch..., hyper..., params..., running..., states...) ->
    (metrics..., new params..., new running..., new states...); with ``train=False`` (batch..., params...,
    running...) -> (metrics...). A ``seed`` among the hyper inputs feeds the step's random draws
    (``_train_random``)."""
    rule = rule_for(optimizer) if train else None
    c = optimizer.config

    def traced(*args: Tensor) -> tuple[Tensor, ...]:
        nb, nh, npar, nrun = (
            len(spec.batch),
            len(spec.hyper) if train else 0,
            len(spec.params),
            len(spec.running),
        )
        batch, hyper_t = args[:nb], args[nb : nb + nh]
        params, running = args[nb + nh : nb + nh + npar], args[nb + nh + npar : nb + nh + npar + nrun]
        states = args[nb + nh + npar + nrun :]
        hyper = dict(zip(spec.hyper, hyper_t))
        if train:  # the params as autodiff leaves over the captured inputs, the batch on the same device
            dev = _AutodiffCaptureDevice(burn.ir.capture_device())
            net = _on(model, dev, [t.to(dev) for t in (*params, *running)])
            draws = seeded_draws(hyper["seed"]) if "seed" in hyper else nullcontext()
            with draws:
                out = _metrics(step_fn(net, *(b.to(dev) for b in batch)))
            metrics = [v.inner().reshape(()) for v in out.values()]
        else:  # the inference copy (dropout off, batch norm on its running statistics) over the inputs
            net = _on(model.valid(), burn.ir.capture_device(), [*params, *running])
            out = _metrics(step_fn(net, *batch))
            metrics = [v.reshape(()) for v in out.values()]
        if spec.metrics and list(out) != spec.metrics:
            raise WebExportError(f"export_training: step_fn's metrics changed: {list(out)} != {spec.metrics}")
        spec.metrics = list(out)
        if not train:
            return tuple(metrics)
        assert rule is not None
        new_running = [r.cast(w.dtype) for r, w in zip(_running(net), running)]
        grads = out["loss"].backward()
        keys = rule.state(c)
        new_params, new_states = [], []
        for i, ((_, p), w) in enumerate(zip(net.named_params(), params)):
            g = p.value.grad(grads)
            st = {k: states[i * len(keys) + j] for j, k in enumerate(keys)}
            if g is None or not p.require_grad:
                new_params.append(w)
                new_states += [st[k] for k in keys]
                continue
            new_w, new_st = rule.update(c, w, clip(clipping, g.cast(w.dtype)), st, hyper)
            new_params.append(new_w.cast(w.dtype))
            new_states += [new_st[k] for k in keys]
        return (*metrics, *new_params, *new_running, *new_states)

    return traced
