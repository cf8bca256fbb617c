"""Entry point of burn_onnx (group ``burn``): registers the ``burn onnx`` and ``burn web`` commands.

Import-light: argparse set-up only; onnx, numpy, the op tables and burn-wgpu (``burn web export``) load
when a command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from burn.plugins import CommandSpec, hookimpl


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="onnx_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser(
        "check",
        help="inputs, outputs, op histogram and what burn-onnx cannot run",
        description="Read an ONNX file and report its inputs, outputs, operators and unsupported nodes "
        "(exit status 1 when something is unsupported or the file is malformed).",
    )
    check.add_argument("model", help="path of the .onnx file")
    check.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    codegen = sub.add_parser(
        "codegen",
        help="write a model as readable burn code plus a safetensors record of its weights",
        description="Write OUT/<name>.py (a burn.nn.Module subclass) and OUT/<name>.safetensors (its weights); "
        "exit status 1 when some node has no code emitter (all such nodes are listed).",
    )
    codegen.add_argument("model", help="path of the .onnx file")
    codegen.add_argument("-o", "--out", required=True, help="folder to write the module and record into")
    codegen.add_argument("--name", default="Net", help="class name (the files are its lower-case name)")
    suite = sub.add_parser(
        "conformance",
        help="run the ONNX backend conformance suite (the installed onnx's node cases) on a device",
        description="Run the node test cases the installed onnx generates through burn_onnx.load on DEVICE, "
        "judged as onnx's backend test runner judges them, and print the counts per status (pass, "
        "unsupported, wrong, crash) and each case that does not pass.",
    )
    suite.add_argument("--device", default="cpu", help="burn device to run on (cpu, wgpu, cuda)")
    suite.add_argument("--case", action="append", help="run only this case (repeatable), e.g. test_abs")
    suite.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _run(args: argparse.Namespace) -> int:
    from ._cli import run

    return run(args)


@hookimpl
def burn_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="onnx",
            configure=_configure,
            run=_run,
            help="ONNX tools: check a model, generate burn code, run the conformance suite (burn-onnx)",
            description="ONNX tools of burn-onnx.",
        )
    )
    register(
        CommandSpec.lazy(
            "web",
            "burn_onnx._web_cli",
            help="export an ONNX model to a static WebGPU web page, or write a page that trains in the "
            "browser (burn-onnx, burn-wgpu)",
            description="WebGPU web pages of burn-wgpu's kernels, from ONNX files (burn-onnx): "
            "burn web export MODEL.onnx -o OUT/; a page training the digits CNN: "
            "burn web train-demo digits -o OUT/",
        )
    )
