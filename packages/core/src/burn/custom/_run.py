"""Running a custom op on a backend: its source kernel (autotuned among variants), its numpy function,
its composition of burn ops, or its numpy function through the host, in that order of preference.

``dispatch`` is ``Backend.custom``'s body. A backend that launches source kernels overrides ``custom``
to call it with ``key`` (its ``kernels`` key: ``"wgpu"``, ``"cuda"``), ``launch(backend, kernel, xs,
launch_info) -> primitive`` and ``tuner(backend) -> burn.autotune.Autotuner`` for op with several
variants.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._kernels import Launch, SourceKernel
from ._op import _KEYS, Attrs, CustomOp
from ._registry import CustomOpError, lookup

if TYPE_CHECKING:
    from ..autotune import Autotuner, Family
    from ..backend import Backend

Launcher = Callable[[Any, SourceKernel, Sequence[Any], Launch], Any]
_noted: set[tuple[str, str]] = set()
_families: dict[tuple[Any, ...], Family] = {}


def launch_info(op: CustomOp, backend: Backend, xs: Sequence[Any], attrs: Attrs) -> Launch:
    """The ``Launch`` of a call: the inputs' shapes and dtypes, the output's, the attributes."""
    shapes = tuple(tuple(backend.shape_of(x)) for x in xs)
    dtypes = tuple(backend.dtype_of(x) for x in xs)
    return Launch(
        shapes, dtypes, op.out_shape(shapes, attrs), op.out_dtype(dtypes, attrs), dict(attrs), op.name
    )


def dispatch(
    backend: Backend,
    name: str,
    xs: Sequence[Any],
    attrs: Attrs,
    *,
    key: str | None = None,
    launch: Launcher | None = None,
    tuner: Callable[[Any], Autotuner] | None = None,
) -> Any:
    """Run custom op ``name`` on ``backend``'s primitives ``xs``: a source kernel for ``key`` through
    ``launch`` (several variants tuned with ``tuner(backend)``), else the numpy function where the
    primitives are numpy arrays, else ``compose``, else the numpy function through the host (noted once
    per op and backend).

    >>> op = burn.custom.op("doc_twice", kernels={"cpu": lambda x: 2 * x})
    >>> b = burn.device("cpu").backend
    >>> burn.custom.dispatch(b, "doc_twice", [np.ones(2, np.float32)], ()).tolist()
    [2.0, 2.0]
    """
    op = lookup(name)
    key = key or _KEYS.get(backend.name, backend.name)
    if launch is not None:
        variants = op.variants(key)
        if variants:
            info = launch_info(op, backend, xs, attrs)
            fit = tuple(v for v in variants if v.applies(info))
            if len(fit) > 1 and tuner is not None:
                return tuner(backend).run(_family(op, key, fit, launch), backend, xs, info)
            if fit:
                return launch(backend, fit[0], xs, info)
    fn = op.numpy_fn
    if fn is not None and key == "cpu":
        return run_numpy(op, backend, xs, attrs)
    if op.compose is not None:
        return op.run_composed(backend, xs, attrs)
    if fn is None:
        raise CustomOpError(
            f"{name}: no way to run on {backend.name}: no kernel for it (kernels for {sorted(op.kernels)}), "
            "no numpy function (kernels['cpu']) and no compose="
        )
    if (name, backend.name) not in _noted:
        _noted.add((name, backend.name))
        warnings.warn(
            f"custom op {name!r} has no {key} kernel and no composition: it runs its numpy function on "
            f"{backend.name} through the host (a copy each way per call)",
            UserWarning,
            stacklevel=2,
        )
    return run_numpy(op, backend, xs, attrs)


def run_numpy(op: CustomOp, backend: Backend, xs: Sequence[Any], attrs: Attrs) -> Any:
    """The numpy function on the host values of ``xs``, its result checked against the op's shape rule
    and stored as the op's dtype on ``backend``."""
    import numpy as np

    info = launch_info(op, backend, xs, attrs)
    read_many = getattr(backend, "read_many", None)
    arrays = read_many(list(xs)) if read_many is not None else [backend.to_numpy(x) for x in xs]
    fn = op.numpy_fn
    assert fn is not None
    out = np.asarray(fn(*arrays, **dict(attrs)))
    if tuple(out.shape) != info.shape:
        raise CustomOpError(
            f"{op.name}: the numpy function returned shape {tuple(out.shape)}, the op's shape rule says {info.shape}"
        )
    return backend.from_numpy(out, info.dtype)


def _family(op: CustomOp, key: str, variants: Sequence[SourceKernel], launch: Launcher) -> Family:
    """The autotune family of ``op``'s variants for ``key``: the first variant is the reference and the
    default; each key is a call's shapes, dtypes and attributes."""
    from ..autotune import Candidate, Family

    slot = (id(op), key, id(launch), tuple(map(id, variants)))
    made = _families.get(slot)
    if made is None:
        names = [v.name or f"v{i}" for i, v in enumerate(variants)]
        if len(set(names)) != len(names):
            raise CustomOpError(f"{op.name}: the {key} kernel variants need distinct names, got {names}")

        def candidate(v: SourceKernel) -> Callable[..., Any]:
            return lambda b, xs, info: launch(b, v, xs, info)

        def case(b: Any, xs: Sequence[Any], info: Launch) -> str:
            dts = ",".join(d.name for d in info.dtypes)
            return f"{info.shapes} {dts} {sorted(info.attrs.items())}"

        made = _families[slot] = Family(
            f"custom:{op.name}:{key}",
            tuple(Candidate(n, candidate(v)) for n, v in zip(names, variants)),
            case,
            reference=names[0],
            close=_close,
        )
    return made


def _close(out: Any, ref: Any) -> bool:
    """Equal up to summation order: within 1e-3 of the reference's largest magnitude."""
    import numpy as np

    out, ref = np.asarray(out, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return False
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return bool(np.allclose(out, ref, rtol=1e-3, atol=1e-3 * max(scale, 1.0), equal_nan=True))
