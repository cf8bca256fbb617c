"""The ``burn`` command (also ``python -m burn``).

``burn info`` prints the installed burn packages (every distribution with a ``burn`` entry point, ours
and third parties' alike), the plugins and the distributions they come from, every backend with its
devices (or the reason it cannot run here), the backend decorators, every metric collector with its
availability, and the plugins that failed to load with their error. A first-party package, backend,
decorator or collector that is not installed is listed with the ``pip install 'burn-core[extra]'`` that
adds it.
``--json`` prints the same as one JSON object. Output is plain text from the standard library only, so
it works on any terminal, in CI logs and in bug reports.

Plugins add subcommands (``burn onnx ...``) through the ``burn_register_commands`` hook; ``burn --help``
lists the installed ones, and a first-party command that is not installed says which extra adds it.

Every probe runs through ``burn.plugins.probe`` with a timeout: a plugin whose check raises, returns
nonsense or hangs becomes a reason in the report, never a crash of the command.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from . import plugins
from ._errors import DeviceError
from ._version import __version__
from .plugins import _discovery, _known

DEFAULT_TIMEOUT = 20.0  # seconds per availability probe; GPU drivers can take a few seconds to answer


def _package_version(dist: str, module: str) -> tuple[bool, str | None, str]:
    """``(installed, version, note)``; falls back to ``<module>.__version__`` when metadata is missing."""
    from importlib import metadata, util

    try:
        return True, metadata.version(dist), ""
    except metadata.PackageNotFoundError:
        pass
    try:
        if util.find_spec(module) is None:
            return False, None, ""
        from importlib import import_module

        version = getattr(import_module(module), "__version__", None)
        return True, version, "importable, but no installed metadata"
    except Exception as exc:  # a half-installed package: say so, keep going
        return False, None, f"{type(exc).__name__}: {exc}"


def _package_row(
    name: str, module: str, installed: bool, version: str | None, note: str = "", install: str = ""
) -> dict[str, Any]:
    return {
        "name": name,
        "module": module,
        "installed": installed,
        "version": version,
        "note": note,
        "install": install,
    }


def _packages() -> list[dict[str, Any]]:
    """burn-core, every distribution with a ``burn`` entry point (ours and third parties'), and the
    first-party ones that are not installed, with the command that installs them."""
    found = {_discovery.normalize(d.name): d for d in _discovery.distributions()}
    core = found.pop(_discovery.CORE_DIST, None)
    if core is not None:
        first = _package_row(core.name, core.module, True, core.version)
    else:  # a source checkout without metadata: burn-core's built-ins still load
        first = _package_row(_discovery.CORE_DIST, "burn", *_package_version(_discovery.CORE_DIST, "burn"))
    rows = [_package_row(d.name, d.module, True, d.version) for d in found.values()]
    rows += [
        _package_row(k.dist, k.module, False, None, install=k.install)
        for k in _known.KNOWN
        if _discovery.normalize(k.dist) not in found
    ]
    return [first, *sorted(rows, key=lambda row: _discovery.normalize(row["name"]))]


def _load_registry() -> tuple[plugins.Registry, str]:
    """The plugin registry; the per-plugin warnings are dropped because ``broken`` lists them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plugins.PluginWarning)
            return plugins.registry(), ""
    except Exception as exc:  # discovery itself failed (a corrupt dist-info, ...): report, keep going
        return plugins.Registry(), f"loading plugins failed: {type(exc).__name__}: {exc}"


def _origin(reg: plugins.Registry, kind: str, name: str) -> dict[str, str]:
    info = reg.provider(kind, name)
    if info is None:
        return {"plugin": "", "dist": "", "version": ""}
    return {"plugin": info.name, "dist": info.dist, "version": info.version}


def _backends(reg: plugins.Registry, timeout: float) -> list[dict[str, Any]]:
    rows = []
    for spec in reg.backends.values():
        ok, reason = plugins.probe(spec.is_available, timeout)
        devices: list[str] = []
        if ok:
            devices, failure = plugins.probe_devices(spec.devices, timeout)
            if failure:
                ok, reason = False, failure
        rows.append(
            {
                "name": spec.name,
                "available": ok,
                "reason": reason,
                "devices": devices,
                "aliases": list(spec.aliases),
                "priority": spec.priority,
                "description": spec.description,
                **_origin(reg, "backend", spec.name),
            }
        )
    return rows


def _decorators(reg: plugins.Registry) -> list[dict[str, Any]]:
    return [
        {
            "name": spec.name,
            "options": list(spec.options),
            "description": spec.description,
            **_origin(reg, "decorator", spec.name),
        }
        for spec in reg.decorators.values()
    ]


def _collectors(reg: plugins.Registry, timeout: float) -> list[dict[str, Any]]:
    rows = []
    for spec in reg.collectors.values():
        ok, reason = plugins.probe(spec.is_available, timeout)
        rows.append(
            {
                "name": spec.name,
                "available": ok,
                "reason": reason,
                "group": spec.group,
                "description": spec.description,
                **_origin(reg, "collector", spec.name),
            }
        )
    return rows


def _cpu_kernels() -> dict[str, Any]:
    """How the cpu device's fused kernels run: compiled C (``burn._native``) or numpy, and why."""
    from . import _native

    try:
        return _native.describe()
    except Exception as e:  # a report must not fail on a broken toolchain
        return {"native": False, "compiler": "", "flags": [], "openmp": False, "reason": repr(e), "cache": ""}


def _cpu_kernels_line(row: dict[str, Any]) -> str:
    if not row["native"]:
        return f"  numpy (no compiled kernels: {row['reason']})"
    extras = ", ".join(x for x, on in (("OpenMP", row["openmp"]), ("libmvec", row.get("mvec"))) if on)
    flags = " ".join(f for f in row["flags"] if not f.startswith("-D"))
    line = (
        f"  compiled C: {row['compiler']} {flags}{f' ({extras})' if extras else ''}, cached in {row['cache']}"
    )
    plain = row.get("plain_ops")
    if plain:  # the plain cpu device (no fusion) runs these op by op compiled, past a size threshold
        line += f"\n  plain cpu, compiled: {', '.join(plain)}; numpy for the rest"
    return line


def collect_info(timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Everything ``burn info`` reports, as plain JSON-ready data."""
    reg, load_error = _load_registry()
    return {
        "burn_version": __version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": _packages(),
        "plugins": [
            {"name": p.name, "value": p.value, "dist": p.dist, "version": p.version, "provides": p.provides}
            for p in reg.plugins
        ],
        "backends": _backends(reg, timeout),
        "cpu_kernels": _cpu_kernels(),
        "decorators": _decorators(reg),
        "collectors": _collectors(reg, timeout),
        "renderers": sorted(reg.renderers),
        "commands": [
            {"name": spec.name, "help": spec.help, **_origin(reg, "command", spec.name)}
            for spec in reg.commands.values()
        ],
        "missing": _known.missing(reg),
        "broken": [
            {
                "name": b.name,
                "value": b.value,
                "dist": b.dist,
                "version": b.version,
                "stage": b.stage,
                "error": b.error,
                "traceback": b.traceback,
            }
            for b in reg.broken
        ],
        "disabled": list(reg.disabled),
        "autoload": reg.autoload,
        "load_error": load_error,
    }


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns; the last column is free-running text."""
    if not rows:
        return [f"{indent}(none)"]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1]).rstrip()
        for r in rows
    ]


def _from(row: dict[str, Any]) -> str:
    return f"{row['dist']} {row['version']}".strip() if row.get("dist") else ""


def _missing_rows(info: dict[str, Any], kind: str) -> list[list[str]]:
    """First-party ``kind``s that are not here: the install command, or why an installed one is off."""
    return [
        [
            m["name"],
            "not installed" if not m["installed"] else "not loaded",
            m["dist"],
            m["install"] or m["reason"],
        ]
        for m in info["missing"]
        if m["kind"] == kind
    ]


def render_text(info: dict[str, Any], verbose: bool = False) -> str:
    """The human-readable report of ``collect_info()``."""
    lines = [
        f"burn-py {info['burn_version']} on {info['implementation']} {info['python']} ({info['platform']})",
        "",
        "Packages:",
    ]
    lines += _table(
        [
            [p["name"], p["version"] or "-" if p["installed"] else "not installed", p["note"] or p["install"]]
            for p in info["packages"]
        ]
    )
    autoload = "on" if info["autoload"] else "off (BURN_DISABLE_PLUGIN_AUTOLOAD)"
    lines += ["", f"Plugins (entry-point group '{plugins.ENTRY_POINT_GROUP}', autoload {autoload}):"]
    lines += _table([[p["name"], p["value"], _from(p), ", ".join(p["provides"])] for p in info["plugins"]])
    if info["disabled"]:
        lines.append(f"  disabled by BURN_DISABLE_PLUGINS: {', '.join(info['disabled'])}")
    lines += ["", "Backends:"]
    lines += _table(
        [
            [
                b["name"],
                "available" if b["available"] else "unavailable",
                _from(b),
                ("devices: " + (", ".join(b["devices"]) or "none")) if b["available"] else b["reason"],
            ]
            for b in info["backends"]
        ]
        + _missing_rows(info, "backend")
    )
    if "cpu_kernels" in info:
        lines += ["", "CPU fused kernels (cpu+fusion; BURN_CPU_NATIVE=0 turns compiling off):"]
        lines.append(_cpu_kernels_line(info["cpu_kernels"]))
    lines += ["", "Decorators:"]
    lines += _table(
        [
            [d["name"], _from(d), ("options: " + ", ".join(d["options"])) if d["options"] else ""]
            for d in info["decorators"]
        ]
        + [[r[0], r[2], f"{r[1]}: {r[3]}"] for r in _missing_rows(info, "decorator")]
    )
    lines += ["", "Metric collectors:"]
    lines += _table(
        [
            [
                c["name"],
                "available" if c["available"] else "unavailable",
                c["group"] or "-",
                _from(c),
                c["reason"],
            ]
            for c in info["collectors"]
        ]
        + [[r[0], r[1], "-", r[2], r[3]] for r in _missing_rows(info, "collector")]
    )
    lines += ["", "Commands (burn COMMAND --help):"]
    lines += _table(
        [["info", "burn-core", "versions, plugins, backends, devices and metric collectors"]]
        + [[c["name"], _from(c), c["help"]] for c in info.get("commands", [])]
        + [[r[0], r[2], f"{r[1]}: {r[3]}"] for r in _missing_rows(info, "command")]
    )
    lines += ["", "Broken plugins:"]
    lines += _table([[b["name"], b["value"], _from(b), b["error"]] for b in info["broken"]])
    if verbose:
        for b in info["broken"]:
            lines += ["", f"Traceback of plugin {b['name']!r}:", b["traceback"].rstrip()]
    if info["load_error"]:
        lines += ["", f"ERROR: {info['load_error']}"]
    return "\n".join(lines) + "\n"


def _parser(commands: Sequence[plugins.CommandSpec] = ()) -> argparse.ArgumentParser:
    """The ``burn`` parser: burn-core's ``info`` and the ``commands`` plugins registered."""
    # one-line usage errors (``burn launch: error: argument -n/--np: ...``), exit 2; subcommand parsers
    # (plugins' included) are of the same class
    parser = plugins.OneLineParser(prog="burn", description="burn-py command line tools.")
    parser.add_argument("--version", action="version", version=f"burn-py {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser(
        "info",
        help="versions, plugins, backends, devices, metric collectors and broken plugins",
        description="Report the burn packages, plugins, backends, devices and metric collectors here.",
    )
    info.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    info.add_argument("-v", "--verbose", action="store_true", help="show the traceback of broken plugins")
    info.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on an availability probe after this long (default {DEFAULT_TIMEOUT:g})",
    )
    info.add_argument("--strict", action="store_true", help="exit with status 1 if a plugin is broken")
    info.set_defaults(_info_parser=info)  # so a bad --timeout is reported as `burn info: ...`
    for spec in commands:
        command = sub.add_parser(spec.name, help=spec.help, description=spec.description or spec.help)
        command.set_defaults(_plugin_command=spec)
        spec.configure(command)
    return parser


def _plugin_commands() -> list[plugins.CommandSpec]:
    """The commands plugins registered; none (and no crash) when plugin loading itself fails."""
    reg, _ = _load_registry()
    return list(reg.commands.values())


def _missing_command(argv: Sequence[str], commands: Sequence[plugins.CommandSpec]) -> str | None:
    """For ``burn onnx ...`` without burn-onnx: the line that says how to install it."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first == "info" or any(c.name == first for c in commands):
        return None
    reg, _ = _load_registry()
    return _known.missing_reason("command", first, reg)


def _command_prog(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """``burn remote serve``: the words of ``argv`` that name the (sub)command that ran."""
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if word.startswith("-") or not subs or word not in subs[0].choices:
            continue
        parser = subs[0].choices[word]
    return parser.prog


def _usage_line(prog: str, exc: Exception) -> str:
    """One line on stderr: ``burn onnx check: model.onnx: not a valid ONNX model ...``."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    for word in reversed(prog.split()[1:]):  # a message that starts with the command's own name
        message = message.removeprefix(f"{word}: ")
    return f"{prog}: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``burn`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _plugin_commands()
    missing = _missing_command(argv, commands)
    if missing is not None:
        sys.stderr.write(f"burn: {missing}\n")
        return 2
    parser = _parser(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    spec = getattr(args, "_plugin_command", None)
    if spec is not None:
        try:
            status = spec.run(args)
        except (plugins.CommandError, DeviceError) as exc:  # a usage error, or an unavailable device
            sys.stderr.write(_usage_line(_command_prog(parser, argv), exc))
            return 2
        return 0 if status is None else int(status)
    if args.timeout <= 0:
        args._info_parser.error(f"--timeout: expected a positive number of seconds, got {args.timeout:g}")
    info = collect_info(timeout=args.timeout)
    if args.json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(info, verbose=args.verbose))
    return 1 if args.strict and (info["broken"] or info["load_error"]) else 0
