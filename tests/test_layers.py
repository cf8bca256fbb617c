"""Layers that hold: the import rules between burn-py's packages, checked on the syntax tree.

1. burn-core imports no other burn package: autodiff, backends and the rest reach it through plugins.
2. No package imports another package's private modules or names (a dotted path with a part that starts
   with ``_``: ``burn._dtype``, ``from burn.backend._random import ...``, ``from burn._tensor import
   _wrap``, ``from burn import _dtype``). What another package needs is public (``burn.backend`` for
   backend and decorator authors).
3. No sideways arrows (issue 33): burn-train does not import burn-cuda (a backend offers its collectives
   through ``burn_register_collectives``; training asks ``burn.distributed``), and burn-wgpu does not
   import burn-onnx (the web export takes ``burn.ir`` graphs; burn-onnx registers ``burn web export``).

Every ``.py`` under ``packages/*/src`` and ``examples/`` is parsed; ``import``/``from`` statements
anywhere in a file (inside functions too) and ``importlib.import_module("...")``/``__import__("...")``
calls with a literal name count. A package's tests may use its own private modules; they are not
scanned.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE_SRC = ROOT / "packages" / "core" / "src"
SOURCE_ROOTS = sorted(ROOT.glob("packages/*/src")) + sorted(ROOT.glob("examples/*/src"))


def _first_party() -> frozenset[str]:
    """The top-level modules of the workspace's distributions (and of the example plugin)."""
    found = set()
    for src in SOURCE_ROOTS:
        for child in src.iterdir():
            if (child / "__init__.py").exists():
                found.add(child.name)
            elif child.suffix == ".py":
                found.add(child.stem)
    return frozenset(found)


FIRST_PARTY = _first_party()


@dataclass(frozen=True)
class Import:
    """One import in a file: the line, the dotted module and the imported name (None for ``import x``)."""

    line: int
    module: str
    name: str | None = None

    def __str__(self) -> str:
        return f"from {self.module} import {self.name}" if self.name else f"import {self.module}"


_IMPORT_CALLS = frozenset({"import_module", "__import__"})


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def imports(source: str, filename: str = "<source>") -> list[Import]:
    """Every absolute import of ``source``, at any depth; relative imports stay inside their package."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [Import(node.lineno, node.module, alias.name) for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and _call_name(node.func) in _IMPORT_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            found.append(Import(node.lineno, node.args[0].value))
    return found


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


# package -> the burn packages it must not import, and why (rule 3)
FORBIDDEN = {
    "burn_train": {"burn_cuda": "collectives come from backend plugins (burn_register_collectives)"},
    "burn_wgpu": {"burn_onnx": "the web export takes burn.ir graphs; burn-onnx registers `burn web`"},
}


def violations(source: str, owner: str, in_core: bool, filename: str = "<source>") -> list[str]:
    """The imports of ``source`` (a module of top-level package ``owner``) that break the rules."""
    problems = []
    for imp in imports(source, filename):
        parts = imp.module.split(".")
        top = parts[0]
        if top not in FIRST_PARTY and not top.startswith("burn_"):
            continue  # the standard library and third parties
        if in_core and top != "burn":
            problems.append(f"{filename}:{imp.line}: `{imp}`: burn-core imports another burn package")
        why = FORBIDDEN.get(owner, {}).get(top)
        if why is not None:
            problems.append(f"{filename}:{imp.line}: `{imp}`: {owner} must not import {top}: {why}")
        if top != owner and any(_private(p) for p in parts + ([imp.name] if imp.name else [])):
            problems.append(f"{filename}:{imp.line}: `{imp}`: a private module or name of {top}")
    return problems


def _owner(path: Path) -> tuple[str, bool]:
    """The top-level package a file belongs to, and whether it is part of burn-core. An example
    project's tests belong to the project's package (tests may use their own package's privates)."""
    for src in SOURCE_ROOTS:
        if path.is_relative_to(src):
            return path.relative_to(src).parts[0].removesuffix(".py"), src == CORE_SRC
        if src.parent.parent == ROOT / "examples" and path.is_relative_to(src.parent):
            (package,) = [p.name for p in src.iterdir() if (p / "__init__.py").exists()]
            return package, False
    return "examples", False  # scripts under examples/ belong to no package


def _files() -> list[Path]:
    files = {p for src in ROOT.glob("packages/*/src") for p in src.rglob("*.py")}
    files |= set((ROOT / "examples").rglob("*.py"))
    return sorted(files)


def _scan() -> list[str]:
    problems = []
    for path in _files():
        owner, in_core = _owner(path)
        problems += violations(path.read_text(), owner, in_core, str(path.relative_to(ROOT)))
    return problems


def test_the_scan_sees_every_package():
    assert {"burn", "burn_autodiff", "burn_wgpu", "burn_cuda", "burn_train"} <= FIRST_PARTY
    assert len(_files()) > 100


def test_core_imports_no_other_burn_package_and_no_package_imports_private_modules():
    problems = _scan()
    assert not problems, (
        "imports across package layers (use the public names, burn.backend for backend and decorator "
        "authors; burn-core reaches other packages through plugins only; no sideways arrows, rule 3):\n  "
        + "\n  ".join(problems)
    )


# ---------------------------------------------------------------- the checker itself


OLD_DEVICE = """\
from ._errors import BackendUnavailableError

def _build_backend(dev):
    if dev.autodiff:
        from burn_autodiff import Autodiff
        return Autodiff(dev.inner.backend)
"""


def test_core_importing_autodiff_inside_a_function_is_caught():
    (problem,) = violations(OLD_DEVICE, "burn", in_core=True, filename="burn/_device.py")
    assert problem == (
        "burn/_device.py:5: `from burn_autodiff import Autodiff`: burn-core imports another burn package"
    )


@pytest.mark.parametrize(
    "line",
    [
        "from burn import _dtype as D",
        "import burn._dtype",
        "import burn._ndarray._backend as nd",
        "from burn._errors import DeviceError",
        "from burn._tensor import _wrap",
        "from burn.backend._random import host_rng",
        "from burn.backend import _optable",
        "from burn_train._events import StartEvent",
        "importlib.import_module('burn._gradients')",
        "__import__('burn_autodiff._backend')",
    ],
)
def test_private_imports_of_another_package_are_caught(line):
    source = f"import importlib\n\ndef f():\n    {line}\n"
    (problem,) = violations(source, "burn_wgpu", in_core=False, filename="x.py")
    assert problem.startswith("x.py:4: `") and problem.endswith(
        "`: a private module or name of "
        + ("burn_train" if "burn_train" in line else "burn_autodiff" if "burn_autodiff" in line else "burn")
    )


@pytest.mark.parametrize(
    "line",
    [
        "from burn import DType, Gradients, __version__",
        "from burn.backend import NUMPY_DTYPES, from_primitive",
        "from burn.plugins import DecoratorSpec, hookimpl",
        "from burn_wgpu._device import probe",  # its own private module
        "from ._backend import WgpuBackend",
        "from numpy import _core",  # not a burn package
        "import_module(f'{name}._version')",  # not a literal: not resolved
    ],
)
def test_public_and_own_imports_pass(line):
    assert violations(f"def f():\n    {line}\n", "burn_wgpu", in_core=False) == []


@pytest.mark.parametrize(
    ("owner", "line", "target"),
    [
        ("burn_train", "import burn_cuda", "burn_cuda"),
        ("burn_train", "from burn_cuda import as_cupy", "burn_cuda"),
        ("burn_train", "importlib.import_module('burn_cuda')", "burn_cuda"),
        ("burn_wgpu", "import burn_onnx", "burn_onnx"),
        ("burn_wgpu", "from burn_onnx import OnnxError", "burn_onnx"),
        ("burn_wgpu", "__import__('burn_onnx')", "burn_onnx"),
    ],
)
def test_sideways_imports_are_caught(owner, line, target):
    source = f"import importlib\n\ndef f():\n    {line}\n"
    (problem,) = violations(source, owner, in_core=False, filename="x.py")
    assert problem.startswith("x.py:4: `") and f"`: {owner} must not import {target}: " in problem


def test_the_allowed_directions_pass():
    assert (
        violations("import burn_train\nfrom burn.distributed import Collective\n", "burn_cuda", False) == []
    )
    assert violations("def f():\n    import burn_wgpu.web\n", "burn_onnx", False) == []


def test_core_may_use_its_own_privates_but_no_burn_package():
    assert violations("from burn._dtype import DType\nfrom ._tensor import _wrap\n", "burn", True) == []
    assert len(violations("import burn_wgpu\n", "burn", True)) == 1
