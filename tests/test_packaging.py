"""Every package builds a wheel whose metadata says what the workspace promises.

All nine wheels are built once per session with one ``pip wheel --no-deps --no-build-isolation`` call
(offline, with the hatchling installed in the dev environment); each test reads the built files. The
release script (scripts/release) is exercised on one package: sdist + wheel + ``twine check``.
"""

from __future__ import annotations

import configparser
import email.parser
import importlib.machinery
import importlib.util
import re
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = sorted(p.parent for p in ROOT.glob("packages/*/pyproject.toml"))

# dist -> import module; the nine distributions of the design
EXPECTED = {
    "burn-core": "burn",
    "burn-autodiff": "burn_autodiff",
    "burn-wgpu": "burn_wgpu",
    "burn-cuda": "burn_cuda",
    "burn-train": "burn_train",
    "burn-metrics-cuda": "burn_metrics_cuda",
    "burn-metrics-web": "burn_metrics_web",
    "burn-onnx": "burn_onnx",
    "burn-remote": "burn_remote",
}

# burn-core extra -> distributions it must pull in
CORE_EXTRAS = {
    "autodiff": {"burn-autodiff"},
    "wgpu": {"burn-wgpu"},
    "cuda": {"burn-cuda"},
    "train": {"burn-train"},
    "metrics-basic": {"psutil"},
    "metrics-cuda": {"burn-metrics-cuda"},
    "metrics-wasm": {"burn-metrics-web"},
    "metrics-web": {"burn-metrics-web"},
    "onnx": {"burn-onnx"},
    "remote": {"burn-remote"},
}


@dataclass
class Built:
    folder: Path
    pyproject: dict
    wheel: Path
    files: list[str]
    metadata: Message
    entry_points: configparser.ConfigParser

    @property
    def name(self) -> str:
        return self.pyproject["project"]["name"]

    def requires(self, extra: str | None = None) -> list[Requirement]:
        """Requirements of the base install (``extra=None``) or of one extra."""
        out = []
        for line in self.metadata.get_all("Requires-Dist") or []:
            req = Requirement(line)
            if extra is None and req.marker is None:
                out.append(req)
            elif extra is not None and req.marker is not None and req.marker.evaluate({"extra": extra}):
                out.append(req)
        return out


def _read_wheel(folder: Path, wheel: Path) -> Built:
    with zipfile.ZipFile(wheel) as zf:
        files = zf.namelist()
        info = next(n.split("/")[0] for n in files if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # keep names as written
        if f"{info}/entry_points.txt" in files:
            entry_points.read_string(zf.read(f"{info}/entry_points.txt").decode())
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
    return Built(folder, pyproject, wheel, files, metadata, entry_points)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    out = tmp_path_factory.mktemp("wheels")
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-q", "--no-deps"]
    cmd += ["--no-build-isolation", "--no-index", "-w", str(out), *map(str, PACKAGE_DIRS)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = {}
    for folder in PACKAGE_DIRS:
        name = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]
        stem = canonicalize_name(name).replace("-", "_")
        (wheel,) = out.glob(f"{stem}-*.whl")
        result[name] = _read_wheel(folder, wheel)
    return result


def _source_version(folder: Path) -> str:
    """The version in the package's ``_version.py`` (what hatch puts into the wheel)."""
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
    path = folder / pyproject["tool"]["hatch"]["version"]["path"]
    return re.search(r"""__version__\s*=\s*["']([^"']+)["']""", path.read_text()).group(1)


def test_the_nine_packages_build(built):
    assert set(built) == set(EXPECTED)


@pytest.mark.parametrize("dist", sorted(EXPECTED))
def test_wheel_metadata(built, dist):
    b = built[dist]
    assert b.metadata["Name"] == dist
    assert b.metadata["Version"] == _source_version(b.folder)
    Version(b.metadata["Version"])  # a valid PEP 440 version
    assert b.metadata["Requires-Python"] == ">=3.11"
    assert b.metadata["License-Expression"] == "Apache-2.0"
    assert b.metadata["Summary"]
    module = EXPECTED[dist]
    assert f"{module}/__init__.py" in b.files and f"{module}/py.typed" in b.files
    # only the module and its metadata: no package tests (the conformance suite is part of burn:
    # burn.testing), no sources of other packages
    info_dir = next(f.split("/")[0] for f in b.files if f.endswith(".dist-info/METADATA"))
    assert {f.split("/")[0] for f in b.files} == {module, info_dir}


@pytest.mark.parametrize("dist", sorted(EXPECTED))
def test_burn_entry_points_match_pyproject(built, dist):
    b = built[dist]
    declared = b.pyproject["project"].get("entry-points", {}).get("burn", {})
    found = dict(b.entry_points["burn"]) if b.entry_points.has_section("burn") else {}
    assert found == declared
    for value in declared.values():  # each entry module exists in the wheel
        assert value.split(":")[0].replace(".", "/") + ".py" in b.files


def test_plugin_packages_have_burn_entry_points(built):
    with_plugin = {d for d, b in built.items() if b.entry_points.has_section("burn")}
    assert with_plugin == {
        "burn-core",
        "burn-autodiff",
        "burn-wgpu",
        "burn-cuda",
        "burn-train",
        "burn-metrics-cuda",
        "burn-metrics-web",
        "burn-onnx",
        "burn-remote",
    }
    assert dict(built["burn-core"].entry_points["burn"]) == {
        "ndarray": "burn._ndarray._plugin",
        "autotune": "burn.autotune._commands",
        "fusion": "burn.fusion._plugin",
    }
    assert dict(built["burn-autodiff"].entry_points["burn"]) == {"autodiff": "burn_autodiff._plugin"}


def test_burn_core_console_script(built):
    assert dict(built["burn-core"].entry_points["console_scripts"]) == {"burn": "burn._cli:main"}


def test_burn_core_ships_the_conformance_suite_as_a_pytest_plugin(built):
    """``pytest --pyargs burn.testing --burn-backend NAME`` from the wheel: the plugin, the table and
    the test modules are in it, and the ``pytest11`` entry point names the plugin (no other wheel has one)."""
    core = built["burn-core"]
    assert dict(core.entry_points["pytest11"]) == {"burn": "burn.testing._plugin"}
    shipped = {f for f in core.files if f.startswith("burn/testing/")}
    assert {
        "burn/testing/__init__.py",
        "burn/testing/_plugin.py",
        "burn/testing/_specs.py",
        "burn/testing/_core_only.py",
        "burn/testing/_suite/__init__.py",
        "burn/testing/_suite/test_conformance.py",
        "burn/testing/_suite/test_index_errors.py",
    } <= shipped
    assert [d for d, b in built.items() if b.entry_points.has_section("pytest11")] == ["burn-core"]


def test_burn_core_extras(built):
    core = built["burn-core"]
    extras = set(core.metadata.get_all("Provides-Extra"))
    assert set(CORE_EXTRAS) | {"all"} <= extras
    for extra, dists in CORE_EXTRAS.items():
        assert {canonicalize_name(r.name) for r in core.requires(extra)} >= dists, extra
    everything = {canonicalize_name(r.name) for r in core.requires("all")}
    assert set().union(*CORE_EXTRAS.values()) <= everything
    assert "pynvml" not in everything  # the deprecated distribution; nvidia-ml-py provides pynvml


def test_sibling_dependencies_admit_the_current_core(built):
    core_version = built["burn-core"].metadata["Version"]
    for dist, b in built.items():
        if dist == "burn-core":
            continue
        (req,) = [r for r in b.requires() if r.name == "burn-core"]
        assert req.specifier.contains(core_version), f"{dist} requires {req}, core is {core_version}"
    for extra in CORE_EXTRAS:  # and burn-core's extras admit the current sibling versions
        for req in built["burn-core"].requires(extra):
            if req.name in built:
                assert req.specifier.contains(built[req.name].metadata["Version"]), f"[{extra}] {req}"


def test_nvml_through_nvidia_ml_py(built):
    names = {canonicalize_name(r.name) for b in built.values() for r in b.requires()}
    assert "nvidia-ml-py" in {canonicalize_name(r.name) for r in built["burn-metrics-cuda"].requires()}
    assert "pynvml" not in names


def test_train_extra_brings_the_dashboard(built):
    # `burn-core[train]` promises the Learner *and* its live dashboard, which needs rich (burn-train[tui])
    core, train = built["burn-core"], built["burn-train"]
    for extra in ("train", "all"):
        (req,) = [r for r in core.requires(extra) if canonicalize_name(r.name) == "burn-train"]
        assert req.extras == {"tui"}, f"burn-core[{extra}]: {req}"
    assert {canonicalize_name(r.name) for r in train.requires("tui")} == {"rich"}


def _release_module():
    """scripts/release imported as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("burn_release_script", str(ROOT / "scripts" / "release"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_release_script_finds_build_and_twine(tmp_path, monkeypatch):
    release = _release_module()
    assert release.missing_modules(sys.executable, ["json", "burnfake_no_such_module"]) == [
        "burnfake_no_such_module"
    ]
    assert release.missing_modules(str(tmp_path / "no-python"), ["json"]) == ["json"]

    venv_python = tmp_path / ".venv" / "bin" / "python"
    have = {sys.executable: {"build", "twine"}}
    ran = []

    def dev_py_setup(cmd):
        ran.append(cmd)
        venv_python.parent.mkdir(parents=True)
        venv_python.touch()
        have[str(venv_python)] = {"build", "twine"}

    monkeypatch.setattr(release, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(release, "_venv_python", lambda: venv_python)
    monkeypatch.setattr(
        release, "missing_modules", lambda py, mods: [m for m in mods if m not in have.get(py, ())]
    )
    monkeypatch.setattr(release, "_run", dev_py_setup)
    assert release.tool_python(["build", "twine"]) == sys.executable  # this interpreter has them
    have[sys.executable] = set()  # a system Python without build: a fresh clone gets .venv from dev.py
    assert release.tool_python(["build", "twine"]) == str(venv_python)
    assert ran == [[sys.executable, str(ROOT / "dev.py"), "setup"]]
    assert release.tool_python(["build"]) == str(venv_python) and len(ran) == 1  # an existing .venv is used
    have[str(venv_python)] = {"build"}
    with pytest.raises(
        release.ReleaseError,
        match=r"^build, twine not installed for .* nor in .*; install them with .* -m pip install build twine",
    ):
        release.tool_python(["build", "twine"])


def _bare_python(tmp_path: Path) -> str:
    """A Python without build and twine (a fresh venv without pip), when the project's .venv has them to
    fall back on; else this interpreter (CI installs the tools here and has no .venv)."""
    release = _release_module()
    venv = str(release._venv_python())
    if not Path(venv).exists() or release.missing_modules(venv, ["build", "twine", "hatchling"]):
        return sys.executable
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    return str(tmp_path / "bare" / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))


def test_release_script_builds_and_checks_one_package(tmp_path):
    script = ROOT / "scripts" / "release"
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            _bare_python(tmp_path),
            str(script),
            "burn-autodiff",
            "--no-isolation",
            "--out",
            str(out),
            "--tag",
            "burn-autodiff-v" + _source_version(ROOT / "packages" / "autodiff"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout  # twine check
    assert sorted(p.suffix for p in out.iterdir()) == [".gz", ".whl"]
    bad = subprocess.run(
        [
            sys.executable,
            str(script),
            "burn-autodiff",
            "--tag",
            "burn-autodiff-v99.0.0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "does not match burn-autodiff" in bad.stderr
    assert len(list(out.iterdir())) == 2  # a tag mismatch builds nothing
