"""``burn_wgpu.web.export_training``: a whole training step as a static WebGPU page (``trainer.js``).

The path, stage by stage: trace the step (``_train_graph``: forward, autodiff backward and the
optimizer update as one ``burn.ir`` graph whose params and optimizer state are inputs), and the
forward alone for ``evaluate``; record each on the browser-portable wgpu device (``_record``); build
each schedule (``_schedule``); run it natively through wgpu-py exactly as the page will (the step
twice in a row, the second reading what the first wrote) against burn's numpy backend replaying the
same graph (``_check``); only then write ``trainer.js`` (the trainer runtime with both schedules, the params' layout
and the record metadata inlined), ``weights.bin`` (both schedules' blobs, then the initial params)
and ``index.html``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import burn

from ._export import _STORAGE, _as_numpy, _html_escape, _like, _np_storage, _wgpu_dtype, page_module
from ._record import WebExportError, record
from ._schedule import WEIGHT_ALIGN, TensorInfo, build, to_json
from ._train_graph import StepSpec, entries, rule_for, step_function
from ._train_random import DRAWS

_RTOL, _ATOL = 1e-3, 1e-4  # the exported step against burn's numpy backend (float32, other orders)
_CHECK_STEPS = 2  # steps the export's self-check runs in a row (the second reads what the first wrote)


@dataclass
class TrainingExport:
    """What ``export_training`` wrote: the folder, the batch inputs, the metric names (``loss``
    first), each schedule's counts (``"step"`` and ``"evaluate"``: dispatches, copies, buffers...)
    the largest difference per output between the recorded step and burn's numpy backend, and the
    captured step itself (a ``burn.ir.Graph``: inputs batch, ``lr`` [, ``bias1``, ``bias2``] [, ``seed``
    (uint32, where the step draws random numbers)], then ``param:NAME``, ``running:NAME`` (batch norm's
    statistics) and ``state:NAME:KEY``; outputs the metrics, then the new params, running statistics
    and states)."""

    out_dir: Path
    batch: list[TensorInfo]
    metrics: list[str]
    counts: dict[str, dict[str, int]]
    max_abs_diff: dict[str, float] = field(default_factory=dict)
    graph: Any = None


def _batch(example_batch: Any) -> tuple[list[str], list[Any], list[burn.DType]]:
    if isinstance(example_batch, Mapping):
        names, values = [str(k) for k in example_batch], list(example_batch.values())
    elif isinstance(example_batch, (list, tuple)):
        values = list(example_batch)
        names = ["x", "y"][: len(values)] if len(values) <= 2 else [f"input{i}" for i in range(len(values))]
    else:
        names, values = ["x"], [example_batch]
    if not values:
        raise ValueError("export_training: example_batch is empty")
    for reserved in ("lr", "bias1", "bias2"):
        if reserved in names:
            raise ValueError(
                f"export_training: a batch input cannot be named {reserved!r} (a run-time scalar)"
            )
    dtypes = []
    for n, v in zip(names, values):
        a = _as_numpy(v, f"batch input {n!r}")
        src = (
            v.dtype
            if isinstance(v, burn.Tensor)
            else burn.dtype("bool" if a.dtype.kind == "b" else a.dtype.name)
        )
        dtypes.append(_wgpu_dtype(src))
    return names, [_as_numpy(v, n) for n, v in zip(names, values)], dtypes


def _check_module(model: Any) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(params, running statistics) of ``model``, each float32."""
    params = model.named_params()
    if not params:
        raise WebExportError("export_training: the model has no params to train")
    running = entries(model)[len(params) :]
    for kind, found in (("param", params), ("running statistic", running)):
        for name, p in found:
            if p.dtype is not burn.float32:
                raise WebExportError(
                    f"export_training: {kind} {name} is {p.dtype.name}; a page trains float32 tensors"
                )
    return params, running


def _capture(fn: Callable[..., Any], spec: dict[str, Any], index: int) -> Any:
    try:
        return burn.ir.capture(fn, spec, like=_like(index))
    except burn.ir.IrError as exc:
        raise WebExportError(
            f"export_training: the step cannot be recorded as a static graph: {exc}"
        ) from exc


def _draws(graph: Any) -> list[str]:
    return sorted({str(op.kind) for op in graph.ops if burn.ir.op_def(op.kind).family == "random"})


def _refuse_random(graph: Any, what: str) -> None:
    """A random draw left in a graph would be recorded with its seed fixed: the page would replay the
    same draws every step. The step's draws in ``DRAWS`` come from a run-time seed; others are refused."""
    drawn = _draws(graph)
    if drawn:
        raise WebExportError(
            f"export_training: the {what} draws random numbers ({', '.join(drawn)}), which a page cannot "
            f"draw per step (supported in the training step: {', '.join(DRAWS)}, e.g. dropout)"
        )


def _check(
    graph: Any,
    sched: dict[str, Any],
    blob: bytes,
    feeds: list[Any],
    hyper: Callable[[int], dict[str, Any]],
    steps: int,
    index: int,
) -> dict[str, float]:
    """Run the written schedule natively through wgpu-py as the page runs it, ``steps`` steps in a row
    (each step's new params and state fed to the next, ``hyper(t)`` the run-time scalars of step t),
    against burn's numpy backend replaying the
    graph the same way; ``WebExportError`` naming the first output that differs, before anything is
    written. Returns the largest difference per output."""
    import numpy as np

    from ._native import NativeSchedule

    native = NativeSchedule._from_schedule(sched, blob, index)
    names = [e["name"] for e in sched["inputs"]]
    outs = [e["name"] for e in sched["outputs"]]
    got_feeds, want_feeds = list(feeds), list(feeds)
    diffs: dict[str, float] = {}
    carried = {n: i for i, n in enumerate(names)}
    for step in range(steps):
        for key, value in hyper(step + 1).items():
            got_feeds[carried[key]] = want_feeds[carried[key]] = value
        got = native.run(dict(zip(names, got_feeds)))
        want = burn.ir.replay(graph, want_feeds, device="cpu", check=False)
        want = [np.asarray(w.numpy()) for w in (want if isinstance(want, tuple) else (want,))]
        for name, w in zip(outs, want):
            g = np.asarray(got[name], np.float64).reshape(w.shape)
            diff = float(np.max(np.abs(g - w))) if w.size else 0.0
            diffs[name] = max(diff, diffs.get(name, 0.0))
            top = float(np.max(np.abs(w))) if w.size else 0.0
            if not np.allclose(g, w, rtol=_RTOL, atol=_ATOL * max(1.0, top)):
                raise WebExportError(
                    f"export_training: {name} of the exported schedule (run natively as the page runs it, "
                    f"step {step + 1}) differs from burn's numpy backend by up to {diff:.3g}; nothing was written"
                )
        for name, g, w in zip(outs, [got[n] for n in outs], want):
            if name in carried:  # a new param or state: the next step's input
                got_feeds[carried[name]] = np.asarray(g, np.float32)
                want_feeds[carried[name]] = np.asarray(w, np.float32)
    return diffs


def _schedule(
    graph: Any,
    feeds: list[Any],
    roles: list[tuple[str, str]],
    out_roles: list[tuple[str, str]],
    title: str,
    index: int,
    fusion: bool,
) -> tuple[dict[str, Any], bytes]:
    """Record ``graph`` and build its schedule; inputs/outputs carry a ``role`` (batch, hyper, param,
    state, metric) and their page name. A kernel writing a param or state input in place is refused:
    those buffers persist across steps."""
    rec = record(graph, feeds, index, fusion=fusion)
    for (role, name), n in zip(roles, rec.inputs):
        if role in ("param", "state") and rec.trace.buffers[n].written:
            raise WebExportError(f"export_training: the step writes {role} {name} in place; cannot export it")
    ins = [
        TensorInfo(name, tuple(ref.shape), ref.dtype.name, _STORAGE[ref.dtype.name])
        for (_, name), ref in zip(roles, graph.inputs.values())
    ]
    outs = [
        TensorInfo(name, tuple(ref.shape), ref.dtype.name, _STORAGE[ref.dtype.name])
        for (_, name), ref in zip(out_roles, graph.outputs)
    ]
    sched, blob = build(rec, ins, outs, title)
    for entry, (role, _) in zip(sched["inputs"], roles):
        entry["role"] = role
    in_buffer = {name: e["buffer"] for e, (_, name) in zip(sched["inputs"], roles)}
    for entry, (role, _) in zip(sched["outputs"], out_roles):
        entry["role"] = role
        # a value the step leaves as it was (a param without gradient) is already in its buffer
        entry["same"] = role != "metric" and in_buffer.get(entry["name"]) == entry["buffer"]
    return sched, blob


def export_training(
    model: Any,
    step_fn: Callable[..., Any],
    optimizer: Any,
    example_batch: Any,
    out_dir: str | Path,
    *,
    lr: float = 1e-3,
    grad_clip: Any = None,
    title: str = "burn trainer",
    index: int = 0,
    fusion: bool = True,
) -> TrainingExport:
    """Write a training step of ``model`` as a static WebGPU page: ``out_dir/trainer.js``,
    ``weights.bin`` and ``index.html`` (no Python at run time).

    ``step_fn(model, *batch)`` returns the scalar loss, or a dict of one-element tensors with
    ``"loss"`` (the other entries are metrics the page reports). The forward, its autodiff backward
    and ``optimizer``'s update (``burn.optim`` SGD, Adam or AdamW, with their config) are one program:
    params and optimizer state stay on the device and are updated in place each step; the learning
    rate (default ``lr``) and Adam's step count are run-time inputs, and so is a per-step ``seed`` where
    the step draws random numbers (dropout: a Bernoulli mask from the seed, different every step, the
    same for the same seed). Batch norm's running statistics are updated by the step (burn.nn.BatchNorm's
    momentum), saved with the weights and used by ``evaluate``. ``example_batch``: a mapping
    name -> array (or a tuple, named ``x``, ``y``); shapes are fixed in the page. ``grad_clip``: a
    ``burn.optim.GradientClipping`` (default: the optimizer config's). In the page::

        import { loadTrainer } from "./trainer.js";
        const t = await loadTrainer({ device, baseUrl });            // both optional
        const { loss } = await t.step({ x: { data, shape }, y: { data, shape } }, { lr: 1e-3 });
        await t.step(batch, { read: false });                        // no read back
        const metrics = await t.evaluate(batch);                     // forward only
        const bytes = await t.saveRecord();                          // burn.record.from_bytes reads it
        await t.loadRecord(bytes);                                   // weights back
        const state = await t.saveState();                           // t.loadState(state) resumes

    >>> import tempfile, burn_wgpu.web
    >>> from burn.nn import functional as F
    >>> model = nn.LinearConfig(4, 2).init()
    >>> batch = {"x": np.ones((3, 4), np.float32), "y": np.array([0, 1, 1], np.int32)}
    >>> out = burn_wgpu.web.export_training(
    ...     model, lambda m, x, y: F.cross_entropy(m(x), y), burn.optim.SgdConfig().init(), batch,
    ...     tempfile.mkdtemp())
    >>> sorted(p.name for p in out.out_dir.iterdir()), out.metrics
    (['index.html', 'trainer.js', 'weights.bin'], ['loss'])
    """
    import numpy as np

    rule = rule_for(optimizer)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not np.isfinite(lr) or lr < 0:
        raise ValueError(f"export_training: lr must be a finite number >= 0, got {lr!r}")
    c = optimizer.config
    clipping = grad_clip if grad_clip is not None else getattr(c, "grad_clipping", None)
    params, running = _check_module(model)
    names, arrays, dtypes = _batch(example_batch)
    keys = rule.state(c)
    spec = StepSpec(
        names,
        list(rule.hyper),
        [n for n, _ in params],
        [(n, k) for n, _ in params for k in keys],
        [],
        [n for n, _ in running],
    )
    batch_in = {n: (tuple(a.shape), dt) for n, a, dt in zip(names, arrays, dtypes)}
    param_in = {f"param:{n}": (tuple(p.shape), burn.float32) for n, p in params}
    running_in = {f"running:{n}": (tuple(r.shape), burn.float32) for n, r in running}
    state_in = {f"state:{n}:{k}": (tuple(dict(params)[n].shape), burn.float32) for n, k in spec.states}

    def capture_step() -> Any:
        hyper_in = {h: ((1,), burn.uint32 if h == "seed" else burn.float32) for h in spec.hyper}
        return _capture(
            step_function(model, step_fn, optimizer, spec, clipping, True),
            {**batch_in, **hyper_in, **param_in, **running_in, **state_in},
            index,
        )

    step_graph = capture_step()
    if _draws(step_graph):  # dropout: traced again, its draws from a run-time seed
        spec.hyper.append("seed")
        step_graph = capture_step()
        _refuse_random(step_graph, "step")
    eval_graph = _capture(
        step_function(model, step_fn, optimizer, spec, clipping, False),
        {**batch_in, **param_in, **running_in},
        index,
    )
    _refuse_random(eval_graph, "forward of evaluate()")

    batch_feeds = [np.asarray(a).astype(_np_storage(dt)) for a, dt in zip(arrays, dtypes)]

    def hyper_at(t: int) -> dict[str, Any]:  # the run-time scalars of step t, as trainer.js feeds them
        values = {
            "lr": lr,
            "bias1": 1.0 - getattr(c, "beta1", 0.0) ** t,
            "bias2": 1.0 - getattr(c, "beta2", 0.0) ** t,
        }
        return {
            h: np.array([t], np.uint32) if h == "seed" else np.array([values[h]], np.float32)
            for h in spec.hyper
        }

    hyper_feeds = list(hyper_at(1).values())
    param_feeds = [np.ascontiguousarray(p.value.numpy(), np.float32) for _, p in params]
    running_feeds = [np.ascontiguousarray(r.value.numpy(), np.float32) for _, r in running]
    state_feeds = [np.zeros(dict(params)[n].shape, np.float32) for n, _ in spec.states]

    persistent_roles = (
        [("param", f"param:{n}") for n, _ in params]
        + [("running", f"running:{n}") for n, _ in running]
        + [("state", f"state:{n}:{k}") for n, k in spec.states]
    )
    roles = [("batch", n) for n in names] + [("hyper", h) for h in spec.hyper] + persistent_roles
    out_roles = [("metric", m) for m in spec.metrics] + persistent_roles
    step_feeds = [*batch_feeds, *hyper_feeds, *param_feeds, *running_feeds, *state_feeds]
    step_s, step_blob = _schedule(step_graph, step_feeds, roles, out_roles, title, index, fusion)
    diffs = _check(step_graph, step_s, step_blob, step_feeds, hyper_at, _CHECK_STEPS, index)
    eval_roles = [r for r in roles if r[0] in ("batch", "param", "running")]
    eval_feeds = [*batch_feeds, *param_feeds, *running_feeds]
    eval_s, eval_blob = _schedule(
        eval_graph, eval_feeds, eval_roles, [("metric", m) for m in spec.metrics], title, index, fusion
    )
    _check(eval_graph, eval_s, eval_blob, eval_feeds, lambda t: {}, 1, index)

    blob = bytearray()
    for sched, part in ((step_s, step_blob), (eval_s, eval_blob)):
        blob += bytes(-len(blob) % 256)
        sched["base"] = len(blob)
        blob += part
    persistent = []
    initial = [*param_feeds, *running_feeds, *state_feeds]
    for (role, name), arr in zip(persistent_roles, initial):
        sizes = [e["size"] for s in (step_s, eval_s) for e in s["inputs"] if e["name"] == name]
        entry: dict[str, Any] = {"name": name, "role": role, "shape": list(arr.shape), "size": max(sizes)}
        if role != "state":  # optimizer state starts at zero
            blob += bytes(-len(blob) % WEIGHT_ALIGN)
            entry["offset"], entry["bytes"] = len(blob), arr.nbytes
            blob += arr.tobytes()
        persistent.append(entry)
    metadata = burn.record.read_metadata(burn.record.to_bytes(model))
    trainer = {
        "format": 1,
        "name": title,
        "weights": {"file": "weights.bin", "size": len(blob)},
        "optimizer": {
            "name": type(optimizer).__name__,
            "lr": float(lr),
            "beta1": getattr(c, "beta1", 0.0),
            "beta2": getattr(c, "beta2", 0.0),
        },
        "metrics": spec.metrics,
        "persistent": persistent,
        "record": {"metadata": metadata},
        "step": step_s,
        "evaluate": eval_s,
    }
    here = resources.files(__package__)
    files = {
        "trainer.js": page_module("trainer.js", "TRAINER", to_json(trainer)).encode("utf-8"),
        "weights.bin": bytes(blob),
        "index.html": here.joinpath("trainer.html")
        .read_text(encoding="utf-8")
        .replace("{{TITLE}}", _html_escape(title))
        .encode("utf-8"),
    }
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for fname, data in files.items():
        (folder / fname).write_bytes(data)
    infos = [
        TensorInfo(n, tuple(a.shape), dt.name, _STORAGE[dt.name]) for n, a, dt in zip(names, arrays, dtypes)
    ]
    return TrainingExport(
        folder,
        infos,
        list(spec.metrics),
        {"step": step_s["counts"], "evaluate": eval_s["counts"]},
        diffs,
        step_graph,
    )
