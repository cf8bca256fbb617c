"""Element-wise custom ops declared by an expression over their inputs, in the vocabulary the fusion
renderers spell (``burn.backend.UNARY_OPS`` and ``BINARY_OPS`` by name, ``where``, ``clamp``).

``elementwise("swish_beta", "x * sigmoid(beta * x)", inputs=("x",))`` parses the expression once (a
name it does not know is an error then, not at the first call). A call expands it into burn's own
element-wise ops on the caller's device, so it is every path's first-class citizen at no cost: fusion
fuses it with its neighbours into one generated kernel (WGSL, CUDA C, or op by op on ``cpu+fusion``),
autodiff differentiates each op, ``burn.ir`` captures, exports and forwards those ops.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..backend import BINARY_OPS, UNARY_OPS, broadcast_shape
from . import _registry
from ._op import CustomOp, attrs_of
from ._registry import CustomOpError

if TYPE_CHECKING:
    from .._tensor import Tensor

_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.Pow: "pow",
    ast.Mod: "remainder",
    ast.FloorDiv: "floor_div",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
}
_COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_UNARYOPS = {ast.USub: "neg", ast.Invert: "not", ast.Not: "not"}
_SPECIAL = {"where": 3, "clamp": 3}  # function name -> argument count
_DEVICE = "@device"  # the env entry holding the inputs' device (no expression name can spell it)


def _check(node: ast.AST, expr: str, free: list[str]) -> None:
    """Every node of the expression is in the vocabulary; free names are collected in order."""
    if isinstance(node, ast.Expression):
        _check(node.body, expr, free)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        _check(node.left, expr, free)
        _check(node.right, expr, free)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARYOPS | {ast.UAdd: ""}:
        _check(node.operand, expr, free)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        _check(node.left, expr, free)
        _check(node.comparators[0], expr, free)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn, n = node.func.id, len(node.args)
        want = _SPECIAL.get(fn, 1 if fn in UNARY_OPS else 2 if fn in BINARY_OPS else None)
        if want is None:
            raise CustomOpError(
                f"elementwise {expr!r}: unknown function {fn!r} (burn's unary, binary ops, where, clamp)"
            )
        if n != want:
            raise CustomOpError(f"elementwise {expr!r}: {fn} takes {want} arguments, got {n}")
        for a in node.args:
            _check(a, expr, free)
    elif isinstance(node, ast.Name):
        if node.id not in free:
            free.append(node.id)
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        pass
    else:
        raise CustomOpError(f"elementwise {expr!r}: {ast.unparse(node)!r} is not an element-wise expression")


def _binary(op: str, a: Any, b: Any, env: dict[str, Any]) -> Any:
    from .._tensor import Tensor

    if isinstance(a, Tensor):
        return a._binary(op, b)
    if isinstance(b, Tensor):
        return b._binary(op, a, reverse=True)
    return _const(a, env)._binary(op, b)  # two numbers: burn's op on a 0-d tensor of the inputs' device


def _const(value: Any, env: dict[str, Any]) -> Tensor:
    """A number as a 0-d tensor on the device of the call's inputs (the op computes it as burn does)."""
    from .. import tensor

    return tensor(value, device=env[_DEVICE])


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    """The expression on ``env``'s tensors and numbers, as burn ops through the frontend (dtype
    promotion and broadcasting as for any burn op)."""
    from .. import where
    from .._tensor import Tensor

    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.BinOp):
        return _binary(_BINOPS[type(node.op)], _eval(node.left, env), _eval(node.right, env), env)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        if isinstance(node.op, ast.UAdd):
            return v
        op = _UNARYOPS[type(node.op)]
        return (v if isinstance(v, Tensor) else _const(v, env))._unary(op)
    if isinstance(node, ast.Compare):
        left, right = _eval(node.left, env), _eval(node.comparators[0], env)
        return _binary(_COMPARE[type(node.ops[0])], left, right, env)
    if isinstance(node, ast.Call):
        fn = node.func.id  # type: ignore[attr-defined]  # checked by _check
        args = [_eval(a, env) for a in node.args]
        if fn == "where":
            return where(*args)
        if fn == "clamp":
            return args[0].clamp(args[1], args[2])
        if fn in UNARY_OPS:
            x = args[0]
            return (x if isinstance(x, Tensor) else _const(x, env))._unary(fn)
        return _binary(fn, args[0], args[1], env)
    if isinstance(node, ast.Name):
        return env[node.id]
    return node.value  # type: ignore[attr-defined]  # an ast.Constant (checked)


@dataclass(eq=False)
class ElementwiseOp(CustomOp):
    """A custom op declared by an element-wise expression (build one with ``burn.custom.elementwise``):
    ``inputs`` name its tensors in call order, ``params`` its scalar attributes.

    >>> op = burn.custom.elementwise("doc_mix", "a * t + b * (1 - t)", inputs=("a", "b"), params=("t",))
    >>> op.inputs, op.params, op(burn.tensor([1.0]), burn.tensor([3.0]), t=0.25).tolist()
    (('a', 'b'), ('t',), [2.5])
    """

    expr: str = ""
    inputs: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    tree: ast.Expression | None = None

    def __call__(self, *tensors: Tensor, **attrs: Any) -> Tensor:
        if len(tensors) != len(self.inputs):
            raise TypeError(
                f"{self.name}: expected {len(self.inputs)} tensors ({', '.join(self.inputs)}), got {len(tensors)}"
            )
        if set(attrs) != set(self.params):
            raise TypeError(f"{self.name}: expected attributes {sorted(self.params)}, got {sorted(attrs)}")
        attrs_of(attrs, self.name)
        return self.evaluate(tensors, attrs)

    def evaluate(self, tensors: Sequence[Tensor], attrs: dict[str, Any]) -> Tensor:
        """The expression on ``tensors`` with ``attrs``, as burn ops."""
        assert self.tree is not None
        env = {**dict(zip(self.inputs, tensors)), **attrs, _DEVICE: tensors[0].device}
        out = _eval(self.tree, env)
        out = out if hasattr(out, "_p") else _const(out, env)
        shape = broadcast_shape(*(tuple(t.shape) for t in tensors))
        return out if tuple(out.shape) == shape else out.expand(*shape)  # a part of the inputs read


def elementwise(
    name: str,
    expr: str,
    *,
    inputs: Sequence[str] | None = None,
    params: Sequence[str] = (),
    register: bool = True,
) -> ElementwiseOp:
    """Define the element-wise custom op ``name`` by ``expr``, a Python expression over its inputs in
    burn's element-wise vocabulary: ``+ - * / ** % //``, comparisons, ``& | ^ ~`` on bools, numbers,
    any unary or binary op by name (``exp(x)``, ``sigmoid(x)``, ``maximum(a, b)``), ``where(c, a, b)``
    and ``clamp(x, lo, hi)``. ``inputs``: the tensor names in call order (default: the free names in
    order of appearance, less ``params``); ``params``: names given as scalar keywords at each call. A
    call runs burn's own ops, so fusion fuses it into its neighbours' kernel on every backend.

    >>> swish = burn.custom.elementwise("doc_swish", "x * sigmoid(beta * x)", params=("beta",))
    >>> [round(v, 4) for v in swish(burn.tensor([0.0, 1.0]), beta=1.0).tolist()]
    [0.0, 0.7311]
    """
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise CustomOpError(f"elementwise {name}: {expr!r} is not an expression: {exc.msg}") from None
    free: list[str] = []
    _check(tree, expr, free)
    ins = tuple(inputs) if inputs is not None else tuple(n for n in free if n not in params)
    unknown = [n for n in free if n not in ins and n not in params]
    if unknown:
        raise CustomOpError(f"elementwise {name}: {expr!r} uses {unknown}, neither inputs nor params")
    if not ins:
        raise CustomOpError(f"elementwise {name}: {expr!r} reads no tensor input")
    made = ElementwiseOp(name, expr=expr, inputs=ins, params=tuple(params), tree=tree, arity=len(ins))
    made.compose = _composer(made)
    if register:
        _registry.add(made)
    return made


def _composer(op: ElementwiseOp) -> Callable[..., Tensor]:
    """``compose`` of an expression op: the expression itself (a backend asked for the op by name, as a
    remote server or a replayed graph may, runs it through this)."""

    def compose(*tensors: Tensor, **attrs: Any) -> Tensor:
        return op.evaluate(tensors, attrs)

    return compose
