"""Plugin discovery end to end: real wheels installed into a fresh virtual environment.

The venv is created without pip and without system site-packages, so it sees none of the workspace's
editable burn packages. burn-core, the plugin template (examples/plugin-template) and a deliberately
broken plugin distribution are built as wheels with the workspace's pip (``--no-build-isolation``: works
offline with the hatchling already installed) and installed into the venv with ``pip --python``. The
third-party runtime dependencies (numpy, pluggy, and pytest for the template's own tests) are linked
into the venv's site-packages by import name only, without their metadata, so no burn distribution or
entry point can leak in. Everything runs in subprocesses: ``burn info --json`` there must show the
template, the broken plugins must be reported without hiding the good ones, and the conformance suite
must run from the burn-core wheel on the template's backend with the one command its README gives.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "examples" / "plugin-template"

# distributions the venv needs from the workspace environment: burn-core's and the template's runtime
# dependencies, and pytest for the template's own tests (their requirements are followed below)
LINKED_DISTS = ("numpy", "pluggy", "pytest")


BROKEN_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.18"]
build-backend = "hatchling.build"

[project]
name = "burn-test-broken"
version = "0.0.1"
requires-python = ">=3.11"

[project.entry-points.burn]
import-error = "burn_test_broken.import_error"
hook-error = "burn_test_broken.hook_error"

[tool.hatch.build.targets.wheel]
packages = ["src/burn_test_broken"]
"""

BROKEN_MODULES = {
    "__init__.py": "",
    "import_error.py": 'raise RuntimeError("burn-test-broken fails on import on purpose")\n',
    "hook_error.py": textwrap.dedent(
        """\
        from burn.plugins import BackendSpec, hookimpl


        @hookimpl
        def burn_register_backends(register):
            register(BackendSpec(name="half-registered", factory=lambda index: None))
            raise RuntimeError("burn-test-broken hook fails on purpose")
        """
    ),
}


def _run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _check(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"{proc.args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _import_names(roots: tuple[str, ...]) -> set[str]:
    """Top-level import names of ``roots`` and of everything they require here (markers evaluated)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        dist = _canon(todo.pop())
        if dist in seen:
            continue
        seen.add(dist)
        for line in metadata.requires(dist) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    names = {
        imp for imp, dists in metadata.packages_distributions().items() if seen & set(map(_canon, dists))
    }
    assert not any(n.startswith("burn") for n in names), names
    return names


def _link(name: str, site: Path) -> None:
    """Make the workspace's import package or module ``name`` importable in the venv (no metadata)."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    locations = spec.submodule_search_locations
    source = Path(next(iter(locations))) if locations else Path(spec.origin)
    sources = [source]
    vendored = source.parent / f"{name}.libs"  # shared libraries auditwheel puts next to a package
    if vendored.is_dir():
        sources.append(vendored)
    for src in sources:
        target = site / src.name
        try:
            target.symlink_to(src, target_is_directory=src.is_dir())
        except OSError:  # no symlink rights (Windows without developer mode): copy instead
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, target)


class Venv:
    def __init__(self, root: Path) -> None:
        bindir = root / ("Scripts" if os.name == "nt" else "bin")
        self.python = str(bindir / "python")
        self.burn = str(bindir / "burn")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "BURN_DEVICE"}
            and not k.startswith("BURN_DISABLE")
        }
        self.env["PYTHONNOUSERSITE"] = "1"

    def run(self, *args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
        return _run(list(args), {**self.env, **env}, cwd=cwd)

    def info(self, **env: str) -> dict:
        return json.loads(_check(self.run(self.burn, "info", "--json", **env)).stdout)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    tmp = tmp_path_factory.mktemp("plugin-discovery")
    broken = tmp / "broken"
    (broken / "src" / "burn_test_broken").mkdir(parents=True)
    (broken / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    for name, text in BROKEN_MODULES.items():
        (broken / "src" / "burn_test_broken" / name).write_text(text)

    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _check(
        _run(
            [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels)]
            + [str(ROOT / "packages" / "core"), str(TEMPLATE), str(broken)]
        )
    )
    _check(_run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")]))
    env = Venv(tmp / "venv")
    _check(
        _run(
            [*pip, "--python", env.python, "install", "-q", "--no-deps", "--no-index"]
            + sorted(map(str, wheels.glob("*.whl")))
        )
    )
    site = Path(
        _check(
            env.run(env.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
        ).stdout.strip()
    )
    for name in sorted(_import_names(LINKED_DISTS)):
        _link(name, site)
    return env


def test_fresh_venv_sees_only_what_was_installed(venv: Venv) -> None:
    info = venv.info()
    packages = {p["name"]: p for p in info["packages"]}
    installed = {name for name, p in packages.items() if p["installed"]}
    # the workspace's editable burn packages did not leak in; third parties are listed like ours
    assert installed == {"burn-core", "burn-plugin-template", "burn-test-broken"}
    assert info["packages"][0]["name"] == "burn-core"
    template = packages["burn-plugin-template"]
    assert (template["version"], template["module"], template["install"]) == (
        "0.1.0",
        "burn_plugin_template",
        "",
    )
    not_installed = {name: p["install"] for name, p in packages.items() if not p["installed"]}
    # every first-party distribution (burn.plugins._known.KNOWN) is missing from this venv
    assert len(not_installed) == 8 and not_installed["burn-autodiff"] == "pip install 'burn-core[autodiff]'"
    assert not_installed["burn-onnx"] == "pip install 'burn-core[onnx]'"


def test_template_plugin_is_discovered(venv: Venv) -> None:
    info = venv.info()
    plugins = {p["name"]: p for p in info["plugins"]}
    assert plugins["trace"]["dist"] == "burn-plugin-template"
    assert plugins["trace"]["version"] == "0.1.0"
    assert plugins["trace"]["provides"] == ["backend:trace"]
    assert plugins["ndarray"]["dist"] == "burn-core"
    backends = {b["name"]: b for b in info["backends"]}
    assert backends["trace"]["available"] is True
    assert backends["trace"]["devices"] == ["trace:0"]
    assert backends["trace"]["dist"] == "burn-plugin-template"
    assert backends["ndarray"]["devices"] == ["cpu"]


def test_broken_plugins_are_reported_without_hiding_the_good_ones(venv: Venv) -> None:
    info = venv.info()
    broken = {b["name"]: b for b in info["broken"]}
    assert set(broken) == {"import-error", "hook-error"}
    assert broken["import-error"]["stage"] == "import"
    assert broken["import-error"]["error"] == "RuntimeError: burn-test-broken fails on import on purpose"
    assert broken["import-error"]["dist"] == "burn-test-broken"
    assert broken["hook-error"]["stage"] == "register"
    assert "hook fails on purpose" in broken["hook-error"]["error"]
    assert "Traceback" in broken["hook-error"]["traceback"]
    # the good plugins loaded, and the backend registered before the hook raised was not kept
    assert {"ndarray", "trace"} <= {p["name"] for p in info["plugins"]}
    assert "half-registered" not in {b["name"] for b in info["backends"]}


def test_text_report_and_strict_exit_status(venv: Venv) -> None:
    proc = venv.run(venv.burn, "info", "-v")
    assert proc.returncode == 0, proc.stderr
    broken_section = proc.stdout.split("Broken plugins:")[1]
    assert "import-error" in broken_section and "burn-test-broken 0.0.1" in broken_section
    assert "Traceback of plugin 'hook-error'" in broken_section
    assert "trace    available" in proc.stdout.split("Backends:")[1]
    assert venv.run(venv.burn, "info", "--strict").returncode == 1


def test_disable_env_vars_in_a_real_install(venv: Venv) -> None:
    info = venv.info(BURN_DISABLE_PLUGINS="import-error, hook-error")
    assert info["broken"] == []
    assert sorted(info["disabled"]) == ["hook-error", "import-error"]
    assert venv.run(venv.burn, "info", "--strict", BURN_DISABLE_PLUGINS="burn-test-broken").returncode == 0
    info = venv.info(BURN_DISABLE_PLUGIN_AUTOLOAD="1")
    assert [p["name"] for p in info["plugins"]] == [
        "ndarray",
        "autotune",
        "fusion",
    ]  # burn-core's built-ins load
    assert info["autoload"] is False


def test_python_m_burn_and_tensors_on_the_template_backend(venv: Venv) -> None:
    assert json.loads(_check(venv.run(venv.python, "-m", "burn", "info", "--json")).stdout)["plugins"]
    script = textwrap.dedent(
        """\
        import json, warnings
        import numpy as np
        import burn
        warnings.simplefilter("ignore", burn.plugins.PluginWarning)
        dev = burn.device("trace")
        a = np.array([[1.5, -2.0], [3.25, 4.0]], dtype=np.float32)
        out = burn.from_numpy(a, device=dev) + burn.tensor([10.0, 20.0], device=dev)
        print(json.dumps({"device": str(out.device), "dtype": out.dtype.name,
                          "value": out.numpy().tolist(), "ref": (a + np.float32([10, 20])).tolist(),
                          "adds": dev.backend.ops["add"]}))
        """
    )
    result = json.loads(_check(venv.run(venv.python, "-c", script)).stdout)
    assert result["device"] == "trace:0"
    assert result["dtype"] == "float32"
    assert result["value"] == result["ref"]  # exact: one float32 add per element
    assert result["adds"] == 1


def test_template_own_tests_pass_in_the_venv(venv: Venv) -> None:
    proc = venv.run(
        venv.python,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", str(TEMPLATE / "tests")),
        BURN_DISABLE_PLUGINS="burn-test-broken",  # the broken plugins would only add warnings here
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " passed" in proc.stdout


def test_conformance_suite_runs_from_the_wheel_on_the_template_backend(venv: Venv, tmp_path: Path) -> None:
    """The third-party path: burn-core from its wheel, the template's backend, and the one command of the
    template's README, run in an empty folder (no checkout, pytest config or conftest of burn-py around).
    burn-core's ``pytest11`` entry point brings the plugin; ``--pyargs`` collects the shipped suite.
    The whole suite runs: about 960 cases, a few seconds on a numpy-based backend."""
    command = ["pytest", "--pyargs", "burn.testing", "--burn-backend", "trace"]  # the README's
    proc = venv.run(
        venv.python,
        *("-m", *command, "-q", "-rA", "-p", "no:cacheprovider"),  # -rA: a "PASSED <test id>" line each
        cwd=tmp_path,
        BURN_DISABLE_PLUGINS="burn-test-broken",  # the broken plugins would only add warnings here
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and not any(w in summary for w in ("failed", "error", "skipped")), summary
    ran = [line.split(" ")[1] for line in proc.stdout.splitlines() if line.startswith("PASSED ")]
    assert all(test.startswith("_suite/test_") for test in ran), ran[:3]  # ids relative to burn/testing
    cases = [test.split("[", 1)[1] for test in ran if "::test_op_matches_numpy_backend[" in test]
    assert len(cases) > 500 and all(case.startswith("trace-") for case in cases), cases[:5]
    assert any("test_index_errors.py::test_out_of_range_index_is_an_error[trace-gather]" in t for t in ran)
    assert " ".join(command) in (TEMPLATE / "README.md").read_text()
    where = _check(venv.run(venv.python, "-c", "import burn.testing; print(burn.testing.__file__)")).stdout
    assert Path(where.strip()).is_relative_to(Path(venv.python).parents[1])  # the wheel in the venv
