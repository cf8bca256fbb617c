"""Control flow: If and Loop run their subgraphs (which see the enclosing graph's values)."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import op


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
