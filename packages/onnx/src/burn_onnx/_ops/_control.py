"""Control flow: If, Loop and Scan run their subgraphs (which see the enclosing graph's values)."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import op, requires
from ._common import axis


def _outputs(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else tuple(values)


@op("If", host=(0,), dynamic=True)
def if_(ctx: Any, node: Node, cond: Any) -> Any:
    branch = node.attrs["then_branch"] if bool(ctx.scalar(cond)) else node.attrs["else_branch"]
    return _outputs(ctx.run(branch, []))


@op("Loop", host=(0, 1), dynamic=True)
def loop(ctx: Any, node: Node, trip: Any = None, cond: Any = None, *carried: Any) -> Any:
    body = node.attrs["body"]
    max_trips = int(ctx.scalar(trip)) if trip is not None else None
    keep_going = bool(ctx.scalar(cond)) if cond is not None else True
    state = list(carried)
    n_state = len(state)
    scans: list[list[Any]] = [[] for _ in range(len(body.outputs) - 1 - n_state)]
    i = 0
    while keep_going and (max_trips is None or i < max_trips):
        counter = ctx.tensor(np.array(i, dtype=np.int64))
        flag = ctx.tensor(np.array(keep_going))
        outs = ctx.run(body, [counter, flag, *state])
        keep_going = bool(ctx.scalar(outs[0]))
        state = list(outs[1 : 1 + n_state])
        for k, v in enumerate(outs[1 + n_state :]):
            scans[k].append(v)
        i += 1
    stacked = []
    for k, parts in enumerate(scans):
        if parts:
            stacked.append(burn.stack(parts, 0))
        else:
            info = body.outputs[1 + n_state + k]
            shape = [0] + [d if isinstance(d, int) else 0 for d in (info.shape or ())]
            dt = (
                burn.dtype(info.dtype)
                if info.dtype in ("float32", "int64", "bool", "int32", "float64")
                else burn.float32
            )
            stacked.append(burn.zeros(tuple(shape), dtype=ctx.fit(dt), device=ctx.device))
    return _outputs(state + stacked)


@op("Scan", since=9, dynamic=True, check=requires("body", "num_scan_inputs"))
def scan(ctx: Any, node: Node, *inputs: Any) -> Any:
    """The body once per step along each scan input's axis (backwards where its direction is 1),
    carrying the state values; each scan output is the steps' slices stacked along its axis."""
    body = node.attrs["body"]
    m = int(node.attrs["num_scan_inputs"])
    n = len(inputs) - m
    state, xs = list(inputs[:n]), inputs[n:]
    in_axes = [axis(int(a), x.ndim, node) for a, x in zip(node.attrs.get("scan_input_axes", [0] * m), xs)]
    in_dirs = list(node.attrs.get("scan_input_directions", [0] * m))
    k = len(body.outputs) - n
    steps = xs[0].shape[in_axes[0]] if xs else 0
    parts: list[list[Any]] = [[] for _ in range(k)]
    for t in range(steps):
        slices = [
            x.narrow(a, steps - 1 - t if d else t, 1).squeeze([a]) for x, a, d in zip(xs, in_axes, in_dirs)
        ]
        outs = ctx.run(body, [*state, *slices])
        state = list(outs[:n])
        for j, v in enumerate(outs[n:]):
            parts[j].append(v)
    out_dirs = list(node.attrs.get("scan_output_directions", [0] * k))
    out_axes = list(node.attrs.get("scan_output_axes", [0] * k))
    stacked = []
    for j, values in enumerate(parts):
        if not values:
            raise ValueError(f"Scan node {node.label!r}: no steps, so scan output {j} has no shape")
        values = values[::-1] if out_dirs[j] else values
        stacked.append(burn.stack(values, axis(int(out_axes[j]), values[0].ndim + 1, node)))
    return _outputs(state + stacked)
