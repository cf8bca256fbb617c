"""Doctests: every ``>>>`` example in the seven distributions runs as part of the normal test command.

One test per module whose source holds ``>>>``, private modules included: doctest finds an object's
examples in the module that defines it (``burn.nn._conv``), not in the package that re-exports it.
Examples run with ``burn``, ``nn`` (burn.nn), ``F`` (burn.nn.functional) and ``np`` (numpy) in scope,
with ELLIPSIS and NORMALIZE_WHITESPACE. An example that needs an NVIDIA GPU (burn_cuda) or a browser
(burn_metrics_web) is marked ``# doctest: +SKIP``; wgpu examples run on Mesa's lavapipe here and in CI,
and the module skips where no wgpu adapter exists.

The coverage tests lock in a runnable ``>>>`` example (not ``+SKIP``) on every public callable of
burn.nn, burn.nn.functional, burn.nn.init, burn.optim, burn.lr_scheduler, burn.data (and .vision),
burn.record, burn.config and burn.quantization. To print the coverage table::

    python tests/test_doctests.py
"""

from __future__ import annotations

import doctest
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# public modules whose every public callable carries a runnable example (issue 14)
DOCUMENTED = (
    "burn.nn",
    "burn.nn.functional",
    "burn.nn.init",
    "burn.optim",
    "burn.lr_scheduler",
    "burn.data",
    "burn.data.vision",
    "burn.record",
    "burn.config",
    "burn.quantization",
    "burn.fusion",
    "burn.custom",
)


def _modules_with_examples() -> list[str]:
    """Dotted names of the modules under packages/*/src whose source holds ``>>>`` (tests excluded)."""
    found = []
    for src in sorted(ROOT.glob("packages/*/src")):
        for path in sorted(src.rglob("*.py")):
            parts = path.relative_to(src).with_suffix("").parts
            if "tests" in parts or ">>>" not in path.read_text(encoding="utf-8"):
                continue
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def _globs() -> dict[str, object]:
    import burn
    import numpy as np

    return {"burn": burn, "nn": burn.nn, "F": burn.nn.functional, "np": np}


@pytest.mark.parametrize("name", _modules_with_examples())
def test_doctests(name: str) -> None:
    if name.startswith("burn_wgpu"):
        import burn

        if not any(b.name == "wgpu" and b.available for b in burn.backends()):
            pytest.skip("no wgpu adapter (install mesa-vulkan-drivers for lavapipe)")
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module, name, extraglobs=_globs()):
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} examples failed in {name}:\n" + "".join(report)


def _public_callables(name: str) -> dict[str, object]:
    module = importlib.import_module(name)
    return {  # stdlib re-exports (burn.config.field is dataclasses.field) are not ours to document
        n: obj
        for n in module.__all__
        if callable(obj := getattr(module, n))
        and not inspect.ismodule(obj)
        and getattr(obj, "__module__", "").startswith("burn")
    }


def _has_runnable_example(obj: object) -> bool:
    # __doc__, not inspect.getdoc: a class without a docstring must not borrow its base class's example
    examples = doctest.DocTestParser().get_examples(obj.__doc__ or "")
    return any(not ex.options.get(doctest.SKIP) for ex in examples)


def coverage(name: str) -> tuple[list[str], list[str]]:
    """(names whose docstring has a ``>>>`` example that runs, names without) among ``name``'s public
    callables; an example marked ``+SKIP`` does not count."""
    items = _public_callables(name)
    have = [n for n, obj in items.items() if _has_runnable_example(obj)]
    return have, [n for n in items if n not in have]


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_public_callable_has_an_example(name: str) -> None:
    _, missing = coverage(name)
    assert not missing, f"{name}: public callables without a >>> example in their docstring: {missing}"


if __name__ == "__main__":
    total = have_total = 0
    for mod in DOCUMENTED:
        have, missing = coverage(mod)
        n = len(have) + len(missing)
        total, have_total = total + n, have_total + len(have)
        print(f"{mod:22} {len(have):3}/{n:3} = {100 * len(have) / n:5.1f}%  {' '.join(missing)}")
    print(f"{'total':22} {have_total:3}/{total:3} = {100 * have_total / total:5.1f}%")
