"""Every public method and property of ``burn.Tensor``, every top-level function of ``burn`` and
``burn.Transaction`` carry a ``>>>`` example that the doctest runner collects (issue 14).

The examples run in ``tests/test_doctests.py`` (one test per module whose source holds ``>>>``); this
file checks what that runner cannot: that nothing public lacks an example, that each example calls the
thing it documents, and that the runner's ``DocTestFinder`` over the defining module (``burn._tensor_math``
for ``Tensor.exp``, whose docstring its ``_un`` factory builds) really finds it.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import burn
import pytest


def _doc(attr: object) -> str:
    return (attr.fget if isinstance(attr, property) else attr).__doc__ or ""  # type: ignore[union-attr]


def _tensor_members() -> dict[str, object]:
    return {n: inspect.getattr_static(burn.Tensor, n) for n in dir(burn.Tensor) if not n.startswith("_")}


def _top_level() -> dict[str, object]:
    found: dict[str, object] = {
        n: getattr(burn, n) for n in burn.__all__ if inspect.isfunction(getattr(burn, n))
    }
    found["Tensor"] = burn.Tensor
    found["Transaction"] = burn.Transaction
    for n in ("register", "execute"):
        found[f"Transaction.{n}"] = getattr(burn.Transaction, n)
    return found


def _defining_module(attr: object) -> str:
    fn = attr.fget if isinstance(attr, property) else attr  # type: ignore[union-attr]
    return fn.__module__  # type: ignore[union-attr]


def _collected(module_name: str) -> dict[str, int]:
    """Docstring -> number of examples, for each docstring the runner's finder collects in the module."""
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder().find(module, module_name, extraglobs={"burn": burn})
    return {t.docstring: len(t.examples) for t in tests if t.docstring}


def test_every_public_tensor_member_has_an_example() -> None:
    members = _tensor_members()
    assert len(members) > 100  # the walk found the surface (methods, aliases and properties)
    missing = sorted(n for n, a in members.items() if ">>>" not in _doc(a))
    assert not missing, f"burn.Tensor members without a >>> example: {missing}"


def test_every_top_level_function_has_an_example() -> None:
    missing = sorted(n for n, obj in _top_level().items() if ">>>" not in (obj.__doc__ or ""))
    assert not missing, f"burn functions without a >>> example: {missing}"


def test_tensor_examples_call_what_they_document() -> None:
    # an alias (``equal``) shares its target's docstring, so any name bound to the same object counts
    members = _tensor_members()
    names: dict[int, list[str]] = {}
    for n, a in members.items():
        names.setdefault(id(a), []).append(n)
    wrong = sorted(n for n, a in members.items() if not any(f".{alias}" in _doc(a) for alias in names[id(a)]))
    assert not wrong, f"burn.Tensor examples that never call the member they document: {wrong}"
    functions = {n: obj for n, obj in _top_level().items() if inspect.isfunction(obj) and "." not in n}
    top = [n for n, obj in functions.items() if f"burn.{n}(" not in (obj.__doc__ or "")]
    assert not top, f"burn function examples that never call the function: {top}"


@pytest.mark.parametrize("group", ["tensor", "top_level"])
def test_the_doctest_runner_collects_every_example(group: str) -> None:
    items = _tensor_members() if group == "tensor" else _top_level()
    by_module: dict[str, dict[str, int]] = {}
    lost, examples = [], 0
    for n, attr in items.items():
        mod = _defining_module(attr)
        collected = by_module.setdefault(mod, _collected(mod))
        count = collected.get(_doc(attr), 0)
        if not count:
            lost.append(f"{n} ({mod})")
        examples += count
    assert not lost, f"examples the doctest runner does not collect: {lost}"
    assert examples >= len(items)
