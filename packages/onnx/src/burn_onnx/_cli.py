"""``burn onnx ...``: the command line of burn-onnx (registered through ``burn_register_commands``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._check import histogram, newest_opset, unsupported
from ._errors import OnnxLoadError, UnsupportedOnnxError
from ._graph import read_model


def check_report(path: str) -> dict[str, Any]:
    """What ``burn onnx check`` prints, as JSON-ready data."""
    model = read_model(path)
    graph = model.graph
    problems = unsupported(model)
    return {
        "model": path,
        "ir_version": model.ir_version,
        "producer": model.producer,
        "opsets": {domain or "ai.onnx": v for domain, v in model.opsets.items()},
        "newest_known_opset": newest_opset(),
        "inputs": [_info(v) for v in graph.inputs],
        "outputs": [_info(v) for v in graph.outputs],
        "initializers": len(graph.initializers),
        "parameters": int(sum(a.size for a in graph.initializers.values())),
        "ops": histogram(graph),
        "unsupported": [
            {"op_type": p.op_type, "domain": p.domain, "opset": p.opset, "name": p.name, "reason": p.reason}
            for p in problems
        ],
    }


def _info(v: Any) -> dict[str, Any]:
    return {
        "name": v.name,
        "shape": None if v.shape is None else list(v.shape),
        "dtype": v.dtype,
        "kind": v.kind,
    }


def _dims(shape: list[Any] | None) -> str:
    if shape is None:
        return "unknown rank"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def render(report: dict[str, Any]) -> str:
    opsets = ", ".join(f"{d} {v}" for d, v in report["opsets"].items())
    lines = [
        f"{report['model']}: IR {report['ir_version']}, opsets {opsets}"
        + (f", produced by {report['producer']}" if report["producer"] else ""),
        f"{report['initializers']} initializers, {report['parameters']:,} values",
        "",
        "Inputs:",
    ]
    lines += [f"  {v['name']}  {v['dtype']}  {_dims(v['shape'])}" for v in report["inputs"]] or ["  (none)"]
    lines += ["", "Outputs:"]
    lines += [f"  {v['name']}  {v['dtype']}  {_dims(v['shape'])}" for v in report["outputs"]] or ["  (none)"]
    lines += ["", f"Ops ({sum(report['ops'].values())} nodes):"]
    width = max((len(k) for k in report["ops"]), default=0)
    lines += [f"  {name.ljust(width)}  {count}" for name, count in report["ops"].items()]
    bad = report["unsupported"]
    lines += [""]
    if bad:
        lines.append(f"Unsupported ({len(bad)} node(s)):")
        for p in bad:
            domain = p["domain"] or "ai.onnx"
            lines.append(
                f"  {p['op_type']} ({domain} opset {p['opset']}) {p['name'] or '<unnamed>'!r}: {p['reason']}"
            )
    else:
        lines.append("Supported: every node can run with burn_onnx.load")
    return "\n".join(lines) + "\n"


def _out_folder(flag: str, path: str) -> None:
    """Refuse an output path that is a file before anything is read or written."""
    import os

    from burn.plugins import CommandError

    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{flag} {path}: exists and is not a folder, expected a folder to write into")


def run(args: argparse.Namespace) -> int:
    from burn.plugins import CommandError

    if args.onnx_command == "check":
        try:
            report = check_report(args.model)
        except OnnxLoadError as exc:  # a file that cannot be read: a usage error (1 means unsupported ops)
            raise CommandError(str(exc)) from None
        sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.json else render(report))
        return 1 if report["unsupported"] else 0
    if args.onnx_command == "codegen":
        import keyword

        from ._codegen import codegen

        if not args.name.isidentifier() or keyword.iskeyword(args.name):
            raise CommandError(f"--name {args.name!r}: expected a Python class name such as Net")
        _out_folder("-o", args.out)
        try:
            path = codegen(args.model, args.out, name=args.name)
        except (OnnxLoadError, UnsupportedOnnxError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:  # the model was read (that is an OnnxLoadError): writing failed
            raise CommandError(f"-o {args.out}: cannot write into it: {exc.strerror or exc}") from None
        sys.stdout.write(f"wrote {path} and {path.with_suffix('.safetensors')}\n")
        return 0
    if args.onnx_command == "conformance":
        return _conformance(args)
    raise SystemExit(f"burn onnx: unknown subcommand {args.onnx_command!r}")


def _conformance(args: argparse.Namespace) -> int:
    import warnings

    from burn.plugins import CommandError

    from ._conformance import counts, run_suite, suite_cases

    known = {c.name for c in suite_cases()}
    unknown = sorted(set(args.case or ()) - known)
    if unknown:
        raise CommandError(f"--case {', '.join(unknown)}: not a case of onnx's node test suite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run_suite(args.device, names=args.case)
    totals = counts(results)
    if args.json:
        cases = {n: {"status": r.status, "detail": r.detail} for n, r in results.items()}
        sys.stdout.write(
            json.dumps({"device": args.device, "counts": totals, "cases": cases}, indent=2) + "\n"
        )
    else:
        for name, r in results.items():
            if r.status != "pass":
                sys.stdout.write(f"{r.status:<11}  {name}: {r.detail}\n")
        line = ", ".join(f"{n} {s}" for s, n in totals.items())
        sys.stdout.write(f"{args.device}: {len(results)} cases: {line}\n")
    return 0 if totals["wrong"] == totals["crash"] == 0 else 1
