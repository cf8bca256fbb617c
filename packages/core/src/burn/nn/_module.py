"""``nn.Module``: the base of every layer. Params, running states, submodules, constant tensors and
lists/tuples/dicts of them are found from the instance's attributes (in assignment order), so a module
is a plain class::

    class Mlp(nn.Module):
        def __init__(self, device):
            self.fc1 = nn.LinearConfig(4, 8).init(device)
            self.fc2 = nn.LinearConfig(8, 1).init(device)
        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

Semantics (Burn's): modules are values. ``to(device)``, ``valid()`` and ``clone()`` return copies;
``opt.step`` and ``load_record`` update params in place and return the module, so both
``model = opt.step(lr, model, grads)`` and a bare call work. Dropout and batch-norm train exactly when
their input lives on an autodiff device; ``valid()`` moves to the inner backend, which turns them off.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._errors import RecordError
from .._tensor import Tensor
from ._param import Param, RunningState

if TYPE_CHECKING:
    import numpy as np

    from .._device import Device, DeviceLike

Entry = Param | RunningState


class Module:
    """Base class of layers; ``m(x)`` calls ``m.forward(x)``.

    >>> class Mlp(nn.Module):
    ...     def __init__(self, device=None):
    ...         self.fc1 = nn.LinearConfig(4, 8).init(device)
    ...         self.fc2 = nn.LinearConfig(8, 1).init(device)
    ...     def forward(self, x):
    ...         return self.fc2(F.relu(self.fc1(x)))
    >>> model = Mlp()
    >>> model(burn.ones((2, 4))).shape, model.num_params()
    ((2, 1), 49)
    >>> [name for name, _ in model.named_params()]
    ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    # ------------------------------------------------------------------ traversal
    def _children(self) -> Iterator[tuple[str, Any]]:
        """(name, value) for each attribute that holds module state, containers flattened."""
        for name, value in vars(self).items():
            yield from _flatten(name, value)

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every submodule, depth first, with dotted names ('' for self)."""
        yield prefix, self
        for name, value in self._children():
            if isinstance(value, Module):
                yield from value.named_modules(_join(prefix, name))

    def named_entries(self, prefix: str = "") -> Iterator[tuple[str, Entry]]:
        """Every Param and RunningState with its dotted name: what a record holds."""
        for name, value in self._children():
            full = _join(prefix, name)
            if isinstance(value, (Param, RunningState)):
                yield full, value
            elif isinstance(value, Module):
                yield from value.named_entries(full)

    def named_params(self) -> list[tuple[str, Param]]:
        """Every Param (trained or frozen) with its dotted name, e.g. ``("fc1.weight", Param)``."""
        out: list[tuple[str, Param]] = []
        _collect_params(self, "", out)
        return out

    def params(self) -> list[Param]:
        return [p for _, p in self.named_params()]

    def num_params(self) -> int:
        """The number of scalar values in all Params (running statistics are not counted)."""
        return sum(p.numel() for p in self.params())

    def param_ids(self) -> dict[str, str]:
        """Dotted name -> stable id of every Param and RunningState (records store these)."""
        return {n: e.id for n, e in self.named_entries()}

    def devices(self) -> list[Device]:
        out: list[Device] = []
        for _, e in self.named_entries():
            if e.value.device not in out:
                out.append(e.value.device)
        return out

    # ------------------------------------------------------------------ copies
    def map(
        self,
        fn: Callable[[Tensor], Tensor],
        constants: Callable[[Tensor], Tensor] | None = None,
    ) -> Module:
        """A copy with every Param/RunningState tensor replaced by ``fn(tensor)`` (ids kept) and every
        constant tensor attribute by ``constants(tensor)`` (default: ``fn``)."""
        constants = constants or fn
        return _map_module(self, fn, constants)

    def to(self, device: DeviceLike) -> Module:
        """A copy on ``device`` (a burn.Device or a name such as ``"cpu"``)."""
        from .._device import device as as_device

        dev = as_device(device)
        return self.map(lambda t: t.to(dev))

    def valid(self) -> Module:
        """A copy on the inner backend: no autodiff, dropout off, batch-norm uses running stats."""
        return self.map(lambda t: t.inner())

    def clone(self) -> Module:
        """An independent copy (same ids, same tensors: tensors are immutable)."""
        return self.map(lambda t: t)

    # ------------------------------------------------------------------ PyTorch spellings
    def parameters(self) -> Iterator[Param]:
        """Every Param, as PyTorch's ``parameters()`` (burn's ``params()`` as an iterator).

        >>> sum(p.numel() for p in nn.LinearConfig(4, 2).init().parameters())
        10
        """
        return iter(self.params())

    def named_parameters(self) -> Iterator[tuple[str, Param]]:
        """(dotted name, Param) pairs, as PyTorch's ``named_parameters()``.

        >>> [n for n, _ in nn.LinearConfig(4, 2).init().named_parameters()]
        ['weight', 'bias']
        """
        return iter(self.named_params())

    def state_dict(self) -> dict[str, Tensor]:
        """Dotted name -> tensor of every Param and running state (batch norm's running mean and
        variance), as PyTorch's ``state_dict()``. Names are burn's attribute paths and layouts burn's:
        a Linear weight is (d_input, d_output), where PyTorch's is (out, in); conv and embedding weights
        are laid out as PyTorch's; norms call their scale and shift ``gamma`` and ``beta`` (PyTorch:
        ``weight`` and ``bias``) and batch norm keeps no ``num_batches_tracked``; attention and recurrent
        layers hold one Linear per projection or gate block (``query.weight``, ``input_transform.weight``),
        not PyTorch's packed ``in_proj_weight`` / ``weight_ih_l0``.

        >>> {k: v.shape for k, v in nn.LinearConfig(4, 2).init().state_dict().items()}
        {'weight': (4, 2), 'bias': (2,)}
        """
        return {n: e.value for n, e in self.named_entries()}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> Module:
        """Load tensors or arrays by dotted name (``state_dict()``'s names and layouts), in place; returns
        the module (burn's ``load_record``). Every name, shape and dtype is checked first and all
        problems are raised in one ``burn.RecordError``, the module untouched. ``strict=False`` skips
        names the module lacks and keeps the current value of names the dict lacks.

        >>> a, b = nn.LinearConfig(4, 2).init(), nn.LinearConfig(4, 2).init()
        >>> _ = b.load_state_dict(a.state_dict())
        >>> bool((a.weight.val() == b.weight.val()).all())
        True
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"load_state_dict: state_dict must be a dict, got {type(state_dict).__name__}")
        arrays = {k: v.numpy() if isinstance(v, Tensor) else v for k, v in state_dict.items()}
        if not strict:
            current = self.record()
            arrays = {k: arrays.get(k, current[k]) for k in current}
        return self.load_record(arrays)

    def eval(self) -> Module:
        """PyTorch's ``eval()``: burn's ``valid()``, a copy on the inner backend (dropout off, batch norm
        on its running statistics). It returns a copy, as every burn module method: ``m = m.eval()``.

        >>> m = nn.LinearConfig(2, 2).init(burn.device("cpu", autodiff=True))
        >>> m.eval().weight.val().device.autodiff
        False
        """
        return self.valid()

    def train(self, mode: bool = True) -> Module:
        """PyTorch's ``train()``: a copy on the autodiff version of this module's device, where dropout
        and batch norm train (burn trains what runs under autodiff); ``train(False)`` is ``eval()``.
        Returns a copy: ``m = m.train()``.

        >>> m = nn.LinearConfig(2, 2).init()
        >>> m.train().weight.val().device.autodiff
        True
        """
        if not mode:
            return self.eval()
        from .._device import device as as_device

        devices = self.devices()
        if not devices:
            return self.clone()
        return self.to(as_device(devices[0], autodiff=True))

    # ------------------------------------------------------------------ records
    def record(self) -> dict[str, np.ndarray]:
        """Dotted name -> numpy array of every Param and RunningState."""
        return {n: e.value.numpy() for n, e in self.named_entries()}

    def load_record(self, record: dict[str, Any], ids: dict[str, str] | None = None) -> Module:
        """Load arrays from ``record`` into this module (in place) and return it.

        Every name, shape and dtype is checked first and all mismatches are raised in one
        ``burn.RecordError``; on error the module is untouched. Float arrays load into float params of
        another width (cast to the param's dtype). ``ids`` (name -> id) restores the Param ids.
        """
        import numpy as np

        record = {k: np.asarray(v) for k, v in record.items()}
        entries = dict(self.named_entries())
        problems = check_record(entries, {k: (tuple(v.shape), v.dtype) for k, v in record.items()})
        if problems:
            raise RecordError(
                f"record does not match {type(self).__name__} ({len(problems)} problem(s)):\n  "
                + "\n  ".join(problems)
            )
        from .._creation import tensor

        for name, entry in entries.items():
            t = tensor(record[name], dtype=entry.dtype, device=entry.value.device)
            entry.set(t)
            if ids and name in ids:
                entry.id = ids[name]
        return self

    # ------------------------------------------------------------------ display
    def _repr_fields(self) -> dict[str, Any]:
        """Hyper-parameters shown by repr: public int/float/bool/str attributes."""
        return {
            k: v
            for k, v in vars(self).items()
            if not k.startswith("_") and isinstance(v, (int, float, bool, str, tuple)) and v is not None
        }

    def __repr__(self) -> str:
        return _render(self, 0)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _flatten(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, (Param, RunningState, Module)):
        yield name, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _flatten(f"{name}.{i}", v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(f"{name}.{k}", v)


# values that never hold a Param: skipped without a call (a conv's stride tuple, a flag, a name)
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _collect_params(value: Any, name: str, out: list[tuple[str, Param]]) -> None:
    """``named_params``' walk in ``named_entries``' order, appending to one list: an optimizer walks
    the model every step, and the chained generators cost a few times this."""
    if isinstance(value, Param):
        out.append((name, value))
    elif isinstance(value, Module):
        for key, v in vars(value).items():
            if type(v) not in _PLAIN:
                _collect_params(v, f"{name}.{key}" if name else key, out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if type(v) not in _PLAIN:
                _collect_params(v, f"{name}.{i}", out)
    elif isinstance(value, dict):
        for k, v in value.items():
            if type(v) not in _PLAIN:
                _collect_params(v, f"{name}.{k}", out)


def _holds_state(value: Any) -> bool:
    if isinstance(value, (Param, RunningState, Module, Tensor)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_state(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_state(v) for v in value.values())
    return False


def _map_value(value: Any, fn: Callable, constants: Callable) -> Any:
    if isinstance(value, Param):
        return value.with_value(fn(value.value))
    if isinstance(value, RunningState):
        return value.with_value(fn(value.value))
    if isinstance(value, Module):
        return _map_module(value, fn, constants)
    if isinstance(value, Tensor):
        return constants(value)
    if isinstance(value, list):
        return [_map_value(v, fn, constants) for v in value]
    if isinstance(value, tuple):
        mapped = [_map_value(v, fn, constants) for v in value]
        return type(value)(*mapped) if hasattr(value, "_fields") else tuple(mapped)
    if isinstance(value, dict):
        return {k: _map_value(v, fn, constants) for k, v in value.items()}
    return value


def _map_module(module: Module, fn: Callable, constants: Callable) -> Module:
    new = copy.copy(module)
    for name, value in vars(module).items():
        if _holds_state(value):
            setattr(new, name, _map_value(value, fn, constants))
    return new


def _kind(np_dtype: Any) -> str:
    if getattr(np_dtype, "name", None) == "bfloat16":  # ml_dtypes' bfloat16 is numpy kind 'V'
        return "float"
    return {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(
        getattr(np_dtype, "kind", "?"), str(np_dtype)
    )


def _dtype_kind(dt: Any) -> str:
    return "float" if dt.is_float else "bool" if dt.is_bool else "int"


def check_record(entries: dict[str, Entry], found: dict[str, tuple[tuple[int, ...], Any]]) -> list[str]:
    """Every mismatch between a module's entries and a record's (name -> (shape, numpy dtype)), as
    lines. Dtypes of one kind (float, int, bool) load into each other; a message names the record's
    real dtype (int32, not "int")."""
    problems = []
    for name, entry in entries.items():
        if name not in found:
            problems.append(f"missing: {name} (expected shape {entry.shape}, dtype {entry.dtype.name})")
            continue
        shape, dtype = found[name]
        if shape != tuple(entry.shape):
            problems.append(f"shape mismatch: {name}: module has {tuple(entry.shape)}, record has {shape}")
        if _kind(dtype) != _dtype_kind(entry.dtype):
            held = getattr(dtype, "name", str(dtype))
            problems.append(f"dtype mismatch: {name}: module has {entry.dtype.name}, record has {held}")
    for name in found:
        if name not in entries:
            problems.append(f"unexpected: {name} (not in the module)")
    return problems


def _render(module: Module, depth: int) -> str:
    pad = "  " * (depth + 1)
    fields = ", ".join(f"{k}: {v}" for k, v in module._repr_fields().items())
    own = [(n, v) for n, v in module._children()]
    subs = [(n, v) for n, v in own if isinstance(v, Module)]
    n_params = module.num_params()
    head = type(module).__name__
    if not subs:
        parts = [fields] if fields else []
        if n_params:
            parts.append(f"params: {n_params}")
        return f"{head} {{{', '.join(parts)}}}" if parts else head
    lines = [f"{head} {{"]
    if fields:
        lines.append(f"{pad}{fields}")
    for n, v in own:
        if isinstance(v, Module):
            lines.append(f"{pad}{n}: {_render(v, depth + 1)}")
        else:
            lines.append(f"{pad}{n}: {v!r}")
    lines.append(f"{pad}params: {n_params}")
    lines.append("  " * depth + "}")
    return "\n".join(lines)


# PyTorch's keyword names that burn's configs spell otherwise: named in the shorthand's error, not
# accepted (one spelling per field)
_TORCH_NAMES: dict[str, tuple[str, ...]] = {
    "eps": ("epsilon",),
    "p": ("prob",),
    "in_features": ("d_input",),
    "out_features": ("d_output",),
    "input_size": ("d_input",),
    "hidden_size": ("d_hidden",),
    "num_embeddings": ("n_embedding",),
    "embedding_dim": ("d_model",),
    "normalized_shape": ("d_model",),
    "embed_dim": ("d_model",),
    "num_heads": ("n_heads",),
    "nhead": ("n_heads",),
    "dim_feedforward": ("d_ff",),
    "num_layers": ("n_layers",),
    "output_padding": ("padding_out",),
    "init": ("alpha",),
    "num_features": ("num_channels",),
    "in_channels": ("channels_in", "channels=(in, out)"),
    "out_channels": ("channels_out", "channels=(in, out)"),
}


def config_shorthand(config_cls: type, takes_device: bool = True) -> Callable[[type], type]:
    """Let a module be built PyTorch's way, ``nn.Linear(16, 64, device=dev)``, as a shorthand for
    ``nn.LinearConfig(16, 64).init(dev)``: arguments that are not a config build one. Arguments the
    config does not take raise a one-line TypeError showing the burn spelling. A config that starts
    with ``channels=(c_in, c_out)`` also takes PyTorch's ``(in_channels, out_channels, kernel_size)``;
    past ``kernel_size`` convs and pools take keywords only (burn's positional order differs)."""
    names = [f.name for f in dataclasses.fields(config_cls)]
    pair = names[0] == "channels"
    last_positional = names.index("kernel_size") if "kernel_size" in names else len(names)

    def decorate(cls: type) -> type:
        init: Callable[..., None] = cls.__init__  # type: ignore[misc]  # the class's own, wrapped once

        def __init__(self: Any, *args: Any, device: Any = None, **kwargs: Any) -> None:
            if args and isinstance(args[0], config_cls):
                if kwargs or len(args) > (2 if takes_device else 1):
                    raise TypeError(f"nn.{cls.__name__}: give either a {config_cls.__name__} or its fields")
                rest = list(args[1:]) or ([device] if takes_device and device is not None else [])
                init(self, args[0], *rest)
                return
            if pair and len(args) >= 2 and all(isinstance(a, int) for a in args[:2]):
                args = ((args[0], args[1]), *args[2:])
            if len(args) > last_positional + 1:
                raise TypeError(
                    f"nn.{cls.__name__}: give the arguments after kernel_size (stride, padding, dilation, "
                    "groups) by keyword: burn's positional order differs from PyTorch's"
                )
            renamed = [
                f"{k} is {n}" for k in kwargs for n in _TORCH_NAMES.get(k, ()) if n.split("=")[0] in names
            ]
            try:
                config = config_cls(*args, **kwargs)
            except TypeError as exc:
                fields = ", ".join(names)
                hint = f" (PyTorch's {', '.join(renamed)} in burn)" if renamed else ""
                raise TypeError(
                    f"nn.{cls.__name__}(...): {exc}{hint}; burn spells it nn.{config_cls.__name__}({fields})"
                    f".init(device)"
                ) from None
            init(self, config, device) if takes_device else init(self, config)

        __init__.__doc__ = init.__doc__
        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = __init__  # type: ignore[misc]
        return cls

    return decorate
