"""Replay a recorded graph on any backend: each record becomes the backend method call it stands for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._graph import Graph, IrError


def replay(
    graph: Graph, inputs: dict[str, Any] | Sequence[Any], device: Any = None, check: bool = True
) -> Any:
    """Run ``graph`` on ``device`` (default: the inputs' device) with ``inputs`` (tensors by input
    name, or in the graph's input order). Returns the output tensor, or a tuple of them.

    ``check`` compares every op's result shape and dtype with the recorded ones (an ``IrError`` names
    the first op that differs); replaying on a backend with other default dtypes needs ``check=False``.

    >>> g = burn.ir.capture(lambda x: (x * 2).sum(0), {"x": ((2, 2), "float32")})
    >>> burn.ir.replay(g, [burn.ones((2, 2))]).tolist()
    [4.0, 4.0]
    """
    from .. import _tensor as T
    from .._creation import tensor
    from .._device import default_device
    from .._device import device as make_device
    from ..backend._numpy_dtypes import FROM_NUMPY

    names = list(graph.inputs)
    given = inputs if isinstance(inputs, dict) else dict(zip(names, inputs))
    if len(given) != len(names) or set(given) != set(names):
        raise IrError(f"replay: the graph takes inputs {names}, got {sorted(given)}")
    if device is None:
        first = next(iter(given.values()), None)
        device = first.device if isinstance(first, T.Tensor) else default_device()
    elif not hasattr(device, "backend"):
        device = make_device(device)
    b = device.backend
    env: dict[int, Any] = {}
    for name, ref in graph.inputs.items():
        t = given[name]
        if not isinstance(t, T.Tensor):  # a numpy array or nested list: a tensor of the recorded dtype
            t = tensor(t, dtype=ref.dtype, device=device)
        if t.device != device:
            t = t.to(device)
        if check and (tuple(t.shape) != ref.shape or t.dtype is not ref.dtype):
            raise IrError(
                f"replay: input {name!r} is {t.dtype.name}{list(t.shape)}, the graph expects "
                f"{ref.dtype.name}{list(ref.shape)}"
            )
        env[ref.id] = t._p
    for cid, arr in graph.constants.items():
        env[cid] = b.from_numpy(arr, FROM_NUMPY[arr.dtype])

    for i, op in enumerate(graph.ops):
        for prim, ref in zip(op.run(b, env), op.outputs):
            if check:
                shape, dtype = tuple(b.shape_of(prim)), b.dtype_of(prim)
                if shape != ref.shape or dtype is not ref.dtype:
                    raise IrError(
                        f"replay: op {i} ({op.kind}) gave {dtype.name}{list(shape)}, the graph recorded "
                        f"{ref.dtype.name}{list(ref.shape)}"
                    )
            env[ref.id] = prim
    results = tuple(T._wrap(env[ref.id], b, ref.dtype if check else None) for ref in graph.outputs)
    return results[0] if len(results) == 1 else results
