"""``CustomOp``: an op a user defines once, with its shape and dtype rules, its kernels per backend, a
composition of burn ops and its backward; ``op(...)`` defines and registers one.

A call ``my_op(x, w, alpha=0.5)`` is one backend call, ``backend.custom(name, tensors, attrs)``, the
same on every backend and decorator: the numpy backend runs the op's numpy function, burn-wgpu and
burn-cuda launch its source kernels, autodiff records it with the op's backward, fusion records it in
its stream as a call, ``burn.ir`` captures it as one record, burn-remote forwards that record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._dtype import DType
from .._errors import DeviceError
from . import _registry
from ._kernels import Cuda, SourceKernel, Wgsl
from ._registry import CustomOpError

if TYPE_CHECKING:
    from .._tensor import Tensor
    from ..backend import Backend

Ints = tuple[int, ...]
Attrs = tuple[tuple[str, Any], ...]  # sorted (name, value) pairs: hashable, and a graph can store them
_ATTR_TYPES = (bool, int, float, str)
# a backend's name -> the key of ``kernels`` it runs without a host round trip
_KEYS = {"ndarray": "cpu"}


def attrs_of(attrs: Mapping[str, Any], name: str) -> Attrs:
    """``attrs`` as the sorted pairs a backend call carries; a value that is not a bool, int, float or
    str (what a graph stores and a remote server receives) is a ``TypeError`` naming the op."""
    for key, value in attrs.items():
        if not isinstance(value, _ATTR_TYPES):
            raise TypeError(
                f"{name}: attribute {key}={value!r} must be a bool, int, float or str, got {type(value).__name__}"
            )
    return tuple(sorted(attrs.items()))


@dataclass
class BackwardCtx:
    """What a custom op's ``backward(ctx, grad)`` sees: the op's ``inputs`` and ``output`` (tensors on
    the device without autodiff), its ``attrs`` and which inputs need a gradient (``needs_grad``).

    >>> def backward(ctx, grad):  # d(x * k)/dx = k
    ...     return [grad * ctx.attrs["k"] if ctx.needs_grad[0] else None]
    >>> scale = burn.custom.op("doc_scale", kernels={"cpu": lambda x, k: x * k}, backward=backward)
    >>> x = burn.tensor([1.0, 2.0], device=burn.device("cpu", autodiff=True)).require_grad()
    >>> x.grad(scale(x, k=3.0).sum().backward()).tolist()
    [3.0, 3.0]
    """

    inputs: tuple[Tensor, ...]
    output: Tensor
    attrs: dict[str, Any]
    needs_grad: tuple[bool, ...]


@dataclass(eq=False)
class CustomOp:
    """A user-defined op (build one with ``burn.custom.op``); call it on tensors: ``op(x, w, alpha=0.5)``.

    ``kernels``: backend name -> kernel: ``"cpu"`` a numpy function ``fn(*arrays, **attrs) -> array``
    (the numpy backend's kernel, the reference, and the fallback of a backend with no kernel),
    ``"wgpu"`` a ``Wgsl`` (or a list of variants, autotuned), ``"cuda"`` a ``Cuda`` (or a list).
    ``compose(*tensors, **attrs)``: the op written with burn ops (a fallback without a host round trip,
    and the source of a composed backward). ``backward(ctx, grad)``: one gradient (or None) per input.

    >>> op = burn.custom.op("doc_neg", kernels={"cpu": lambda x: -x})
    >>> isinstance(op, burn.custom.CustomOp), op.name, op(burn.tensor([1.0, -2.0])).tolist()
    (True, 'doc_neg', [-1.0, 2.0])
    """

    name: str
    shape: Callable[..., Ints] | None = None
    dtype: Callable[..., DType] | None = None
    kernels: Mapping[str, Any] = field(default_factory=dict)
    compose: Callable[..., Tensor] | None = None
    backward: Callable[[BackwardCtx, Tensor], Sequence[Tensor | None]] | None = None
    arity: int | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or len(self.name) > 128:
            raise ValueError(f"burn.custom: an op needs a name of 1 to 128 characters, got {self.name!r}")
        for key, k in self.kernels.items():
            for variant in k if isinstance(k, (list, tuple)) else (k,):
                if key == "cpu" and not callable(variant):
                    raise TypeError(f"{self.name}: kernels['cpu'] must be a numpy function, got {variant!r}")
                if key != "cpu" and not isinstance(variant, (Wgsl, Cuda)):
                    raise TypeError(
                        f"{self.name}: kernels[{key!r}] must be a burn.custom.Wgsl or Cuda kernel (or a list "
                        f"of them), got {type(variant).__name__}"
                    )

    def __repr__(self) -> str:
        return f"<custom op {self.name} kernels={sorted(self.kernels)}>"

    # ------------------------------------------------------------------ rules
    def out_shape(self, shapes: Sequence[Ints], attrs: Attrs) -> Ints:
        """The output's shape for inputs of ``shapes`` (default: the first input's)."""
        if self.shape is None:
            return tuple(shapes[0])
        return tuple(int(s) for s in self.shape(*(tuple(s) for s in shapes), **dict(attrs)))

    def out_dtype(self, dtypes: Sequence[DType], attrs: Attrs) -> DType:
        """The output's dtype for inputs of ``dtypes`` (default: the first input's)."""
        if self.dtype is None:
            return dtypes[0]
        from .._dtype import dtype as as_dtype

        return as_dtype(self.dtype(*dtypes, **dict(attrs)))

    def variants(self, key: str) -> tuple[SourceKernel, ...]:
        """The source kernels given for backend ``key`` (``"wgpu"``, ``"cuda"``), in order."""
        k = self.kernels.get(key)
        if k is None:
            return ()
        return tuple(k) if isinstance(k, (list, tuple)) else (k,)

    @property
    def numpy_fn(self) -> Callable[..., Any] | None:
        """The numpy function (``kernels["cpu"]``), or None."""
        return self.kernels.get("cpu")

    def native_on(self, backend: Backend) -> bool:
        """Whether ``backend`` runs this op with a kernel of its own (no composition, no host trip)."""
        key = _KEYS.get(backend.name, backend.name)
        return key in self.kernels

    # ------------------------------------------------------------------ calling
    def __call__(self, *tensors: Tensor, **attrs: Any) -> Tensor:
        from .. import _tensor as T

        if not tensors:
            raise TypeError(f"{self.name}: expected at least one tensor")
        if self.arity is not None and len(tensors) != self.arity:
            raise TypeError(f"{self.name}: expected {self.arity} tensors, got {len(tensors)}")
        first = tensors[0]
        for i, t in enumerate(tensors):
            if not isinstance(t, T.Tensor):
                raise TypeError(f"{self.name}: input {i} must be a burn.Tensor, got {type(t).__name__}")
            if t._b is not first._b:
                raise DeviceError(f"{self.name}: input 0 is on {first.device} and input {i} on {t.device}")
        b = first._b
        prim = b.custom(self.name, [t._p for t in tensors], attrs_of(attrs, self.name))
        return T._wrap(prim, b)

    def run_composed(self, backend: Backend, xs: Sequence[Any], attrs: Attrs) -> Any:
        """The composition run on ``backend``'s primitives ``xs``: its result's primitive."""
        from ..backend import from_primitive

        assert self.compose is not None
        out = self.compose(*(from_primitive(x, backend) for x in xs), **dict(attrs))
        return out._p

    # ------------------------------------------------------------------ gradients
    def vjp(
        self, backend: Backend, xs: Sequence[Any], out: Any, attrs: Attrs, grad: Any, needs: Sequence[bool]
    ) -> list[Any]:
        """The input gradients (primitives of ``backend``, the device without autodiff; None where not
        needed) for the output gradient ``grad``: the user's ``backward``, else the vector-Jacobian
        product of ``compose`` through autodiff, else a ``CustomOpError``."""
        from ..backend import from_primitive

        if self.backward is not None:
            ctx = BackwardCtx(
                tuple(from_primitive(x, backend) for x in xs),
                from_primitive(out, backend),
                dict(attrs),
                tuple(needs),
            )
            grads = list(self.backward(ctx, from_primitive(grad, backend)))
        elif self.compose is not None:
            grads = self._composed_vjp(backend, xs, attrs, grad, needs)
        else:
            raise CustomOpError(
                f"{self.name}: no gradient: give burn.custom.op a backward= function or a compose= "
                "composition of burn ops to differentiate"
            )
        if len(grads) != len(xs):
            raise CustomOpError(f"{self.name}: backward returned {len(grads)} gradients for {len(xs)} inputs")
        result: list[Any] = []
        for i, (g, x, need) in enumerate(zip(grads, xs, needs)):
            if g is None or not need:
                result.append(None)
                continue
            gshape, xshape = tuple(g.shape), tuple(backend.shape_of(x))
            if gshape != xshape:
                raise CustomOpError(
                    f"{self.name}: backward gave input {i} a gradient of shape {gshape}, not {xshape}"
                )
            result.append(g._p)
        return result

    def _composed_vjp(
        self, backend: Backend, xs: Sequence[Any], attrs: Attrs, grad: Any, needs: Sequence[bool]
    ) -> list[Tensor | None]:
        from .._device import device as make_device
        from ..backend import from_primitive

        inner_dev = getattr(backend, "device", None)
        adb = make_device(inner_dev, autodiff=True).backend if inner_dev is not None else None
        if adb is None or adb.inner is not backend:
            raise CustomOpError(f"{self.name}: a composed backward needs a backend made by burn.device()")
        assert self.compose is not None
        ins = []
        for x, need in zip(xs, needs):
            t = from_primitive(adb.from_inner(x), adb)
            ins.append(t.require_grad() if need else t)
        out = self.compose(*ins, **dict(attrs))
        grads = out.backward(from_primitive(adb.from_inner(grad), adb))
        return [t.grad(grads) if need else None for t, need in zip(ins, needs)]


def op(
    name: str,
    *,
    shape: Callable[..., Ints] | None = None,
    dtype: Callable[..., Any] | None = None,
    kernels: Mapping[str, Any] | None = None,
    compose: Callable[..., Tensor] | None = None,
    backward: Callable[[BackwardCtx, Tensor], Sequence[Tensor | None]] | None = None,
    arity: int | None = None,
    register: bool = True,
) -> CustomOp:
    """Define the custom op ``name``; call the result on tensors (``op(x, w, alpha=0.5)``).

    ``shape(*shapes, **attrs)`` / ``dtype(*dtypes, **attrs)``: the output's shape and dtype (default: the
    first input's). ``kernels``: ``{"cpu": numpy_fn, "wgpu": Wgsl(...), "cuda": Cuda(...)}`` (a list of
    source kernels is autotuned per shape; the first is the default). ``compose``: the op as burn ops.
    ``backward(ctx, grad)``: the input gradients (default: differentiate ``compose``). A backend with no
    kernel runs ``compose``, else the numpy function through the host (with a one-time note).
    ``register=False`` leaves it unregistered (a plugin hands it to ``burn_register_custom_ops``).

    >>> axpy = burn.custom.op("doc_axpy", kernels={"cpu": lambda x, y, a: a * x + y},
    ...                       compose=lambda x, y, a: x * a + y)
    >>> axpy(burn.tensor([1.0, 2.0]), burn.tensor([10.0, 10.0]), a=3.0).tolist()
    [13.0, 16.0]
    """
    made = CustomOp(name, shape, dtype, dict(kernels or {}), compose, backward, arity)
    if not made.kernels and compose is None:
        raise CustomOpError(
            f"{name}: give at least one kernel (kernels={{'cpu': numpy_fn, ...}}) or compose="
        )
    if register:
        _registry.add(made)
    return made
