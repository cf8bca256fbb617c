"""``burn web export MODEL.onnx -o OUT/ [--input NAME=1x3x224x224 ...]`` and ``burn web train-demo digits
-o OUT/`` (registered by burn-onnx's plugin through ``burn_register_commands``; the pages themselves are
burn-wgpu's web export and training demo). Import-light: argparse only until the command runs."""

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

    demo = sub.add_parser(
        "train-demo",
        help="write a page that trains a model in the browser (digits: the digits example's CNN)",
        description="Write OUT/index.html, demo.js, worker.js, trainer.js, weights.bin, digits.bin and "
        "demo.json: a page that trains the digits example's CNN on WebGPU in a Worker, from the data "
        "shipped with it, with a live chart of loss and validation accuracy, step time, items/s, the "
        "adapter, browser metrics, pause/resume and a 'download weights' button (a burn record). Serve "
        "OUT/ over http(s), e.g. python -m http.server -d OUT.",
    )
    demo.add_argument("demo", choices=["digits"], help="which demo (digits)")
    demo.add_argument("-o", "--out", required=True, help="folder to write the page into")
    demo.add_argument("--epochs", type=int, default=5, help="epochs the page trains (default 5)")
    demo.add_argument("--lr", type=float, default=2e-2, help="peak learning rate, cosine-annealed to lr/20")
    demo.add_argument("--batch-size", type=int, default=36, help="batch size (items, default 36)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the initial weights and shuffles")
    demo.add_argument("--adapter", type=int, default=0, help="wgpu adapter index to record on (default 0)")


def _train_demo(args: argparse.Namespace) -> int:
    import os

    from burn.plugins import CommandError

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CommandError(
            f"-o {args.out}: exists and is not a folder, expected a folder to write the page into"
        )
    try:
        from burn_wgpu.web import WebExportError, train_demo
    except ImportError:
        raise CommandError("WebGPU pages need burn-wgpu (pip install 'burn-core[wgpu]')") from None
    from burn import DeviceError

    try:
        demo = train_demo(
            args.demo,
            args.out,
            epochs=args.epochs,
            lr=args.lr,
            batch_size=args.batch_size,
            seed=args.seed,
            index=args.adapter,
        )
    except DeviceError as exc:
        raise CommandError(f"--adapter {args.adapter}: {exc}") from None
    except (WebExportError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"-o {args.out}: cannot write the page: {exc.strerror or exc}") from None
    s, c = demo.settings, demo.export.counts["step"]
    sys.stdout.write(
        f"wrote {demo.out_dir}/index.html, demo.js, worker.js, trainer.js, weights.bin, digits.bin, demo.json\n"
        f"  {s['epochs']} epochs of {s['steps_per_epoch']} steps ({s['batch_size']} items), Adam, lr {s['lr']:g}; "
        f"{c['dispatches']} dispatches, {c['submits']} submit per step\n"
        f"  serve it: python -m http.server -d {demo.out_dir} 8000  (then open http://localhost:8000)\n"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    import os

    from burn.plugins import CommandError

    if args.web_command == "train-demo":
        return _train_demo(args)
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
