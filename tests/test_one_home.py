"""One home per op rule (issue 33): each shape formula and the "this op gives bool" rule is written once,
in its home module, and every backend, shape check, capture, autodiff rule and importer calls it.

For each rule a regex finds the rule spelled out by hand in the code of ``packages/*/src/**/*.py``
(docstrings and comments may state a formula: only code tokens are searched, joined by single spaces)
and the test asserts it occurs in its home only. ``BURN_ONE_HOME_ROOT`` points the scan at another
checkout (the rules were written against main before the de-duplication, where each of them fails).

``PENDING`` lists copies in files another branch restructures at the same time: the integrator switches
them to the homes when the branches meet, then deletes their entries here (none are left).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("BURN_ONE_HOME_ROOT") or Path(__file__).resolve().parents[1])
SHAPES = "core/src/burn/backend/_shapes.py"
VOCABULARY = "core/src/burn/backend/_vocabulary.py"

# name -> (pattern over a line's code tokens, home file)
RULES: dict[str, tuple[str, str]] = {
    # (size + 2 * p - d * (k - 1) - 1) // st + 1: convolutions, pools, unfold
    "window output size": (r"\* \( [\w\[\]\s]+? - 1 \) - 1\b", SHAPES),
    # (L - 1) * st - 2 * p + d * (k - 1) + op + 1, and the same without padding: the extent out windows span
    "transposed conv output size": (
        r"(\( \w+ - 1 \) \*|\* \( \w+ - 1 \)).*(\( \w+ - 1 \) \*|\* \( \w+ - 1 \)).*\+ 1\b",
        SHAPES,
    ),
    # pool_out_size per spatial dim in a comprehension: pool_out_sizes / conv_out_sizes_padded
    "per-dim window sizes": (r"\bpool_out_size \( .* for .* in zip \(", SHAPES),
    # a hand-rolled broadcast (x == y or y == 1), or numpy's broadcast_shapes in place of burn's
    "broadcast": (r"\b(\w+) == (\w+) or \2 == 1\b|\. broadcast_shapes \(", SHAPES),
    # (1 if d in dims else s for d, s in enumerate(shape)): a reduction's kept shape
    "reduced shape": (r"\b1 if \w+ (in|==) \w+ else \w+ for \w+ , \w+ in enumerate\b", SHAPES),
    # comparisons, isnan/isinf give bool: the vocabulary rows hold it (OpDef.bool_result)
    "bool result": (
        r"\bin (COMPARISON_OPS|UNARY_BOOL_RESULT|BOOL_RESULT)\b|\bBOOL_RESULT = frozenset",
        VOCABULARY,
    ),
}

# known copies in files restructured in parallel branches: removed by the integrator after the merge
PENDING: dict[str, set[str]] = {}

_SKIP = {tokenize.STRING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def _code_lines() -> list[tuple[str, int, str]]:
    """(file relative to packages/, line number, the line's code tokens joined by spaces)."""
    packages = ROOT / "packages"
    out = []
    for path in sorted(packages.glob("*/src/**/*.py")):
        code: dict[int, list[str]] = {}
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            if tok.type not in _SKIP:
                code.setdefault(tok.start[0], []).append(tok.string)
        rel = path.relative_to(packages).as_posix()
        out += [(rel, n, " ".join(t)) for n, t in code.items()]
    return out


@pytest.fixture(scope="module")
def code_lines() -> list[tuple[str, int, str]]:
    return _code_lines()


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_has_one_home(rule: str, code_lines: list[tuple[str, int, str]]) -> None:
    pattern, home = RULES[rule]
    rx = re.compile(pattern)
    hits = [(f, n, line) for f, n, line in code_lines if rx.search(line)]
    strays = [f"{f}:{n}: {line}" for f, n, line in hits if f != home and f not in PENDING.get(rule, ())]
    assert not strays, f"{rule} is written out again; call its home {home} instead:\n  " + "\n  ".join(strays)


def test_window_rules_agree_with_pytorch() -> None:
    import burn

    assert burn.backend.pool_out_size(7, 2, 2, 0, 1, True) == 4  # ceil: the last window starts inside
    assert burn.backend.pool_out_size(6, 2, 2, 1, 1, True) == 4  # ... not in the right padding
    assert burn.backend.conv_transpose_out_sizes((7,), (4,), (2,), (1,), (1,), (1,)) == (15,)
