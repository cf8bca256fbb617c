"""How each burn module's entries are named and laid out in PyTorch's equivalent module: one rule per
module class (``_RULES``), so adding a layer is one row.

A rule gives the fields whose layout differs (``Field``: burn entries <- PyTorch keys with a conversion
each way, e.g. a Linear weight transposed, MultiHeadAttention's packed ``in_proj_weight`` split in three),
renames of its own entries and children (``gamma`` -> ``weight``, ``mha`` -> ``self_attn``; '' folds a
child into its parent's names), PyTorch keys with no burn counterpart (``num_batches_tracked``: ignored on
load, written on save). Everything a rule does not mention keeps its name and layout, so a user's module
whose attributes are named as in its PyTorch twin needs no rule at all.

``plan(module)`` walks the module and returns one ``Slot`` per group of entries: the alternatives that
may fill it (the first is PyTorch's usual spelling, also what ``torch_state_dict`` writes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

Arrays = list["np.ndarray"]  # numpy is imported where an array is made (import burn.record stays light)


@dataclass(frozen=True)
class Field:
    """Burn entries (relative names) filled from PyTorch keys; ``to_burn`` / ``to_torch`` convert."""

    burn: tuple[str, ...]
    torch: tuple[str, ...]
    to_burn: Callable[[Arrays], Arrays]
    to_torch: Callable[[Arrays], Arrays]


@dataclass(frozen=True)
class Rule:
    fields: tuple[tuple[Field, ...], ...] = ()  # each: alternatives for one group of entries
    rename: Callable[[str], str] | dict[str, str] = field(default_factory=dict)
    torch_only: dict[str, Callable[[], np.ndarray]] = field(default_factory=dict)


@dataclass(frozen=True)
class Slot:
    """Full burn entry names and the alternatives (full PyTorch keys) that fill them."""

    burn: tuple[str, ...]
    choices: tuple[Field, ...]


@dataclass
class Plan:
    slots: list[Slot]
    torch_only: dict[str, Callable[[], np.ndarray]]  # full PyTorch key -> value written on save


def _same(arrays: Arrays) -> Arrays:
    return arrays


def _transpose(arrays: Arrays) -> Arrays:
    return [a.T for a in arrays]


def _split3(arrays: Arrays) -> Arrays:
    """PyTorch's packed (3 d, d) in_proj_weight -> query, key, value (d, d) in burn's (in, out)."""
    import numpy as np

    return [part.T for part in np.split(arrays[0], 3, axis=0)]


def _pack3(arrays: Arrays) -> Arrays:
    import numpy as np

    return [np.concatenate([a.T for a in arrays], axis=0)]


def _split3_bias(arrays: Arrays) -> Arrays:
    import numpy as np

    return list(np.split(arrays[0], 3, axis=0))


def _pack3_bias(arrays: Arrays) -> Arrays:
    import numpy as np

    return [np.concatenate(arrays, axis=0)]


def _one(
    burn: str, torch: str, to_burn: Callable[[Arrays], Arrays], to_torch: Callable[[Arrays], Arrays]
) -> Field:
    return Field((burn,), (torch,), to_burn, to_torch)


def _linear_t(burn: str, torch: str) -> Field:
    return _one(burn, torch, _transpose, _transpose)


_NORM = {"gamma": "weight", "beta": "bias"}


def _mha() -> Rule:
    qkv_w = ("query.weight", "key.weight", "value.weight")
    qkv_b = ("query.bias", "key.bias", "value.bias")
    packed_w = Field(qkv_w, ("in_proj_weight",), _split3, _pack3)
    # PyTorch keeps three weights when key/value dims differ from the query's (kdim, vdim)
    separate_w = Field(qkv_w, ("q_proj_weight", "k_proj_weight", "v_proj_weight"), _transpose, _transpose)
    packed_b = Field(qkv_b, ("in_proj_bias",), _split3_bias, _pack3_bias)
    # one Linear per projection under burn's names (what a key_map from Hugging Face's q/k/v gives)
    linear_w = Field(qkv_w, qkv_w, _transpose, _transpose)
    linear_b = Field(qkv_b, qkv_b, _same, _same)
    return Rule(
        fields=((packed_w, separate_w, linear_w), (packed_b, linear_b)), rename={"output": "out_proj"}
    )


def _recurrent() -> Rule:
    return Rule(
        fields=(
            (_linear_t("input_transform.weight", "weight_ih_l0"),),
            (_linear_t("hidden_transform.weight", "weight_hh_l0"),),
            (_one("input_transform.bias", "bias_ih_l0", _same, _same),),
            (_one("hidden_transform.bias", "bias_hh_l0", _same, _same),),
        )
    )


def _sequential_child(name: str) -> str:
    return name.removeprefix("layers.")  # burn's Sequential keeps its layers in a list, PyTorch's by index


def _int64_zero() -> np.ndarray:
    import numpy as np

    return np.zeros((), dtype=np.int64)


@functools.cache
def _rules() -> dict[type, Rule]:
    from .. import nn
    from ..nn._transformer import PositionWiseFeedForward

    return {
        nn.Linear: Rule(fields=((_linear_t("weight", "weight"),),)),
        nn.BatchNorm: Rule(rename=_NORM, torch_only={"num_batches_tracked": _int64_zero}),
        nn.LayerNorm: Rule(rename=_NORM),
        nn.GroupNorm: Rule(rename=_NORM),
        nn.InstanceNorm: Rule(rename=_NORM),
        nn.RmsNorm: Rule(rename=_NORM),
        nn.PRelu: Rule(rename={"alpha": "weight"}),
        nn.MultiHeadAttention: _mha(),
        PositionWiseFeedForward: Rule(rename={"linear_inner": "linear1", "linear_outer": "linear2"}),
        nn.TransformerEncoderLayer: Rule(
            rename={"mha": "self_attn", "pwff": "", "norm_1": "norm1", "norm_2": "norm2"}
        ),
        nn.Lstm: _recurrent(),
        nn.Gru: _recurrent(),
        nn.Sequential: Rule(rename=_sequential_child),
    }


def _rule(module: Any) -> Rule:
    rules = _rules()
    for cls in type(module).__mro__:
        if cls in rules:
            return rules[cls]
    return Rule()


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix and name else prefix or name


def plan(module: Any) -> Plan:
    """Every entry of ``module`` with the PyTorch keys that fill it (see the module docstring)."""
    entries = dict(module.named_entries())
    out = Plan([], {})
    _walk(module, "", "", entries, set(), out)
    return out


def _walk(
    module: Any, burn_prefix: str, torch_prefix: str, entries: dict[str, Any], done: set[str], out: Plan
) -> None:
    from ..nn._module import Module
    from ..nn._param import Param, RunningState

    rule = _rule(module)
    for choices in rule.fields:
        names = tuple(_join(burn_prefix, n) for n in choices[0].burn)
        if not all(n in entries for n in names) or any(n in done for n in names):
            continue  # an optional entry this instance lacks (a Linear without bias), or one a parent's rule filled
        full = tuple(
            Field(names, tuple(_join(torch_prefix, t) for t in c.torch), c.to_burn, c.to_torch)
            for c in choices
        )
        out.slots.append(Slot(names, full))
        done.update(names)
    for key, make in rule.torch_only.items():
        out.torch_only[_join(torch_prefix, key)] = make
    rename = rule.rename
    for name, value in module._children():
        torch_name = rename(name) if callable(rename) else rename.get(name, name)
        burn_name, torch_key = _join(burn_prefix, name), _join(torch_prefix, torch_name)
        if isinstance(value, (Param, RunningState)):
            if burn_name not in done:
                out.slots.append(Slot((burn_name,), (_one(burn_name, torch_key, _same, _same),)))
                done.add(burn_name)
        elif isinstance(value, Module):
            _walk(value, burn_name, torch_key, entries, done, out)
