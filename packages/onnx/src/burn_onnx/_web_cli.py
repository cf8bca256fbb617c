"""``burn web export MODEL.onnx -o OUT/ [--input NAME=1x3x224x224 ...]`` (registered by burn-onnx's plugin
through ``burn_register_commands``; the page itself is burn-wgpu's web export). Import-light: argparse
only until the command runs."""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="web_command", metavar="SUBCOMMAND", required=True)
    export = sub.add_parser(
        "export",
        help="write an ONNX model as a static WebGPU page (model.js, weights.bin, index.html)",
        description="Write OUT/model.js (an ES module running burn-wgpu's WGSL kernels on navigator.gpu), "
        "OUT/weights.bin and a demo OUT/index.html. Input shapes are fixed at export: dims the model "
        "leaves open default to 1 unless --input sets them. Serve OUT/ over http(s) (WebGPU needs a "
        "secure context: https or localhost), e.g. python -m http.server -d OUT.",
    )
    export.add_argument("model", help="path of the .onnx file")
    export.add_argument("-o", "--out", required=True, help="folder to write the page into")
    export.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=SHAPE",
        help="fix an input's shape, e.g. --input pixel_values=1x3x224x224 (repeatable)",
    )
    export.add_argument("--title", default=None, help="page title (default: the file's name)")
    export.add_argument("--adapter", type=int, default=0, help="wgpu adapter index to record on (default 0)")
    export.add_argument(
        "--no-fusion",
        dest="fusion",
        action="store_false",
        help="one dispatch per op (default: element-wise chains fused into one kernel each, as burn-wgpu "
        "runs natively)",
    )


def run(args: argparse.Namespace) -> int:
    import os

    from burn.plugins import CommandError

    if args.web_command != "export":
        raise SystemExit(f"burn web: unknown subcommand {args.web_command!r}")
    from ._web import export_web, parse_shapes

    try:
        shapes = parse_shapes(args.input)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if args.adapter < 0:
        raise CommandError(f"--adapter: expected a wgpu adapter index >= 0, got {args.adapter}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CommandError(
            f"-o {args.out}: exists and is not a folder, expected a folder to write the page into"
        )
    try:
        from burn_wgpu.web import WebExportError
    except ImportError:
        raise CommandError("WebGPU pages need burn-wgpu (pip install 'burn-core[wgpu]')") from None
    from burn import DeviceError

    from ._errors import OnnxError

    try:
        result = export_web(
            args.model, args.out, shapes, title=args.title, index=args.adapter, fusion=args.fusion
        )
    except DeviceError as exc:  # no such adapter, or no WebGPU adapter at all
        raise CommandError(f"--adapter {args.adapter}: {exc}") from None
    except (OnnxError, WebExportError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:  # the model is read by burn-onnx (an OnnxError): writing the page failed
        raise CommandError(f"-o {args.out}: cannot write the page: {exc.strerror or exc}") from None
    c = result.counts
    ins = ", ".join(f"{i.name} {i.dtype}{list(i.shape)}" for i in result.inputs)
    outs = ", ".join(f"{o.name} {o.dtype}{list(o.shape)}" for o in result.outputs)
    sys.stdout.write(
        f"wrote {result.out_dir}/model.js, weights.bin, index.html\n"
        f"  inputs: {ins}\n  outputs: {outs}\n"
        f"  {c['dispatches']} dispatches, {c['pipelines']} pipelines, {c['submits']} submit per run; "
        f"{c['buffers']} buffers, {c['buffer_bytes'] / 1048576:.2f} MiB\n"
        f"  serve it: python -m http.server -d {result.out_dir} 8000  (then open http://localhost:8000)\n"
    )
    return 0
