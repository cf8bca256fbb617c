#!/usr/bin/env python3
"""Annotation coverage of every package under packages/*/src (a report, not a check; mypy is the check).

    python scripts/annotation_coverage.py [REPO_ROOT]

Per package (test modules left out): public functions (name without a leading underscore, dunders
other than ``__init__`` excluded, not nested in a function, not in a class whose name starts with ``_``) that are fully
annotated (every parameter but ``self``/``cls``, and the return), and the share of all annotations
(parameters and returns, of every function) that are ``Any`` or mention ``Any`` (a module-level alias
of ``Any``, such as ``Prim = Any``, counts as ``Any``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]


def _any_names(tree: ast.Module) -> set[str]:
    """Names a module binds to ``Any`` (``Prim = Any``): they count as ``Any``."""
    names = {"Any"}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (isinstance(value, ast.Name) and value.id == "Any") or (
                isinstance(value, ast.Attribute) and value.attr == "Any"
            ):
                names.add(node.targets[0].id)
    return names


def _imported_any_names(tree: ast.Module, module: str, aliases: dict[str, set[str]]) -> set[str]:
    """Names imported from a module of this repository that binds them to ``Any``."""
    names: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + [node.module])
            for alias in node.names:
                if alias.name in aliases.get(base, ()) and alias.name != "Any":
                    names.add(alias.asname or alias.name)
    return names


def _text(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    return node


def _mentions_any(node: ast.expr, any_names: set[str]) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in any_names) or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(_text(node))
    )


def _is_any(node: ast.expr, any_names: set[str]) -> bool:
    node = _text(node)
    return (isinstance(node, ast.Name) and node.id in any_names) or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def _functions(tree: ast.Module):
    """(function, is_method, public) for every def not nested in another def."""

    def walk(body, in_class: bool, class_public: bool):
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name
                public = class_public and (not name.startswith("_") or name == "__init__")
                yield node, in_class, public
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, True, class_public and not node.name.startswith("_"))
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    yield from walk(getattr(node, part, []), in_class, class_public)
            elif isinstance(node, ast.ExceptHandler):
                yield from walk(node.body, in_class, class_public)

    yield from walk(tree.body, False, True)


def _annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool):
    """(annotation or None) per parameter that needs one, then the return's."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if is_method and not static and positional:
        positional = positional[1:]
    params = [*positional, *args.kwonlyargs]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    out = [p.annotation for p in params]
    out.append(fn.returns)
    return out


def _module_name(path: Path) -> str:
    src = next(p for p in path.parents if p.name == "src")
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.append("")  # relative imports of a package start at the package itself
    return ".".join(parts)


def _all_aliases() -> dict[str, set[str]]:
    aliases = {}
    for path in (ROOT / "packages").glob("*/src/**/*.py"):
        aliases[_module_name(path).rstrip(".")] = _any_names(ast.parse(path.read_text(encoding="utf-8")))
    return aliases


def measure(src: Path, aliases: dict[str, set[str]]) -> dict[str, float]:
    public = full = total_ann = any_ann = mention_any = 0
    for path in sorted(src.rglob("*.py")):
        if path.name.startswith("test_"):  # test modules shipped in a package (burn.testing's suite)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        any_names = _any_names(tree) | _imported_any_names(tree, _module_name(path), aliases)
        for fn, is_method, is_public in _functions(tree):
            anns = _annotations(fn, is_method)
            if fn.name == "__init__" and anns[-1] is None:
                anns = anns[:-1]  # mypy does not need `-> None` on an __init__ with annotated arguments
            if is_public:
                public += 1
                full += all(a is not None for a in anns)
            for a in anns:
                if a is not None:
                    total_ann += 1
                    any_ann += _is_any(a, any_names)
                    mention_any += _mentions_any(a, any_names)
    return {
        "public": public,
        "full_pct": 100.0 * full / max(public, 1),
        "annotations": total_ann,
        "any_pct": 100.0 * any_ann / max(total_ann, 1),
        "mentions_any_pct": 100.0 * mention_any / max(total_ann, 1),
    }


def main() -> int:
    print(f"{'package':<16} {'public fns':>10} {'fully ann.':>10} {'annots':>7} {'Any':>6} {'has Any':>8}")
    totals = {"public": 0, "full": 0.0, "annotations": 0, "any": 0.0, "mention": 0.0}
    aliases = _all_aliases()
    for pkg in sorted((ROOT / "packages").iterdir()):
        src = pkg / "src"
        if not src.is_dir():
            continue
        m = measure(src, aliases)
        print(
            f"{pkg.name:<16} {m['public']:>10} {m['full_pct']:>9.0f}% {m['annotations']:>7}"
            f" {m['any_pct']:>5.0f}% {m['mentions_any_pct']:>7.0f}%"
        )
        totals["public"] += m["public"]
        totals["full"] += m["full_pct"] * m["public"] / 100
        totals["annotations"] += m["annotations"]
        totals["any"] += m["any_pct"] * m["annotations"] / 100
        totals["mention"] += m["mentions_any_pct"] * m["annotations"] / 100
    print(
        f"{'all':<16} {totals['public']:>10} {100 * totals['full'] / totals['public']:>9.0f}%"
        f" {totals['annotations']:>7} {100 * totals['any'] / totals['annotations']:>5.0f}%"
        f" {100 * totals['mention'] / totals['annotations']:>7.0f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
