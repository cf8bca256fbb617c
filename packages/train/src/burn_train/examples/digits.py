"""Train a small CNN on the offline 8x8 digits with the live dashboard.

    python -m burn_train.examples.digits                      # numpy backend, dashboard, 8 epochs
    python -m burn_train.examples.digits --backend wgpu --epochs 5 --artifacts /tmp/digits
    python -m burn_train.examples.digits --devices cpu,wgpu   # data-parallel: a model replica per device
    python -m burn_train.examples.digits --backend cuda --mixed-precision float16   # fp16 + loss scaling

Writes under ``--artifacts``: checkpoints, per-epoch CSV logs, summary.txt/json, experiment.log, and
plots/*.png when matplotlib is installed (unless ``--no-plots``). Prints the final validation accuracy.

Stopping and exit codes: Ctrl-C (or ``q`` then ``k`` in the dashboard) interrupts at once, writes the
summary and plots of what was trained, prints one line and exits 130; ``q`` then ``s`` stops after the
current batch and exits 0, like early stopping. Bad arguments, a missing ``--resume`` checkpoint and an
unavailable backend print one line and exit 2 before anything is written; other errors exit 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from burn.plugins import OneLineParser, int_at_least, positive_float

from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput

if TYPE_CHECKING:
    from burn import Device, Tensor
    from burn.data import Dataset
    from burn.data.vision import DigitsItem

BACKENDS = ("cpu", "wgpu", "cuda", "remote", "auto")
MODULE_PROG = "python -m burn_train.examples.digits"
PROG_ENV = "BURN_TRAIN_PROG"  # dev.py sets it so --help reads "usage: python3 dev.py train"

EXIT_INTERRUPTED = 130  # Ctrl-C / SIGINT, or "k" (kill) in the dashboard: 128 + SIGINT, as shells do
EXIT_USAGE = 2  # bad arguments, missing resume checkpoint, unavailable backend (argparse's code)

EXIT_CODES = """exit codes:
  0    training ended: all epochs, early stopping, or "s" (stop) in the dashboard
  1    an error during training (with its traceback)
  2    bad arguments, no checkpoint for --resume, an unavailable backend or dtype (nothing written)
  130  interrupted: Ctrl-C, or "k" (kill) in the dashboard (summary and plots still written)

keys in the dashboard: q then s (stop after this batch), k (kill now) or c (cancel);
left/right pick the plotted metric, up/down switch recent/full history."""


__all__ = ["build", "main", "make_model_class", "parse_args"]


class _ClassifierSteps:
    """The learner's steps for a classifier on ``(images, targets)`` batches: cross-entropy of
    ``self.forward(images)`` (logits (N, classes)) against the int targets (N,). A mixin, so that this
    module needs no ``burn.nn`` at import."""

    if TYPE_CHECKING:  # the model class's

        def forward(self, images: Tensor) -> Tensor: ...

    def _output(self, batch: Any) -> ClassificationOutput:
        from burn.nn import functional as F

        images, targets = batch
        logits = self.forward(images)
        return ClassificationOutput(F.cross_entropy(logits, targets), logits, targets)

    def train_step(self, batch: Any) -> TrainOutput:
        item = self._output(batch)
        return TrainOutput(self, item=item, grads=item.loss.backward())

    def valid_step(self, batch: Any) -> ClassificationOutput:
        return self._output(batch)


def make_model_class() -> type:
    """The CNN class (built lazily so importing this module stays light)."""
    from burn import nn
    from burn.nn import functional as F

    class DigitsCnn(_ClassifierSteps, nn.Module):
        """Conv2d(1->16, 3x3, pad 1) -> relu -> max-pool 2 -> Conv2d(16->32) -> relu -> max-pool 2 -> Linear(128->10).

        Input (N, 1, 8, 8) float32, output logits (N, 10).
        """

        def __init__(self, device: Device) -> None:
            self.conv1 = nn.Conv2dConfig((1, 16), 3, padding=1).init(device)
            self.conv2 = nn.Conv2dConfig((16, 32), 3, padding=1).init(device)
            self.pool = nn.MaxPool2dConfig(2, stride=2).init(device)
            self.fc = nn.LinearConfig(32 * 2 * 2, 10).init(device)

        def forward(self, images: Tensor) -> Tensor:
            x = self.pool(F.relu(self.conv1(images)))
            x = self.pool(F.relu(self.conv2(x)))
            return self.fc(x.flatten(1))

    return DigitsCnn


def build(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(learner, train loader, valid loader) for the parsed arguments."""
    import burn
    from burn.data import DataLoaderBuilder
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher

    from burn_train.metric import (
        AccuracyMetric,
        FBetaScoreMetric,
        IterationSpeedMetric,
        LearningRateMetric,
        LossMetric,
        TopKAccuracyMetric,
    )

    burn.seed(args.seed)
    if getattr(args, "remote_url", None):  # the remote backend reads its server from the environment
        os.environ["BURN_REMOTE_URL"] = args.remote_url
    names = args.devices.split(",") if args.devices else [args.backend]
    devices = [burn.device(name.strip(), autodiff=True) for name in names]
    if "auto" in names:
        print(_auto_choice(devices[names.index("auto")]), flush=True)
    adev = devices[0]  # the main device: model, optimizer and validation live here
    batcher = ImageClassificationBatcher(mean=0.3, std=0.4)
    train_ds: Dataset[DigitsItem] = DigitsDataset("train")
    valid_ds: Dataset[DigitsItem] = DigitsDataset("test")
    if args.limit:
        from burn.data import PartialDataset

        train_ds = PartialDataset(train_ds, 0, min(args.limit, len(train_ds)))
        valid_ds = PartialDataset(valid_ds, 0, min(args.limit, len(valid_ds)))
    train = (
        DataLoaderBuilder(batcher)
        .batch_size(args.batch_size)
        .shuffle(args.seed)
        .set_device(adev)
        .build(train_ds)
    )
    valid = DataLoaderBuilder(batcher).batch_size(128).set_device(adev.inner).build(valid_ds)
    # one scheduler step per optimizer step: with several devices, one per step of the longest part
    steps = args.epochs * max(len(part) for part in train.split(len(devices)))
    scheduler = burn.lr_scheduler.CosineAnnealingLrSchedulerConfig(args.lr, steps, min_lr=args.lr / 20).init()
    model = make_model_class()(adev)
    optim = burn.optim.AdamConfig().init()
    builder = (
        LearnerBuilder(args.artifacts)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_valid_numeric(TopKAccuracyMetric(2))
        .metric_valid_numeric(FBetaScoreMetric(1.0, average="macro"))
        .metric_train_numeric(LearningRateMetric())
        .metric_train(IterationSpeedMetric())
        .with_file_checkpointer(keep_last=2, keep_best="Loss")
        .devices(devices)
        .num_epochs(args.epochs)
        .renderer(args.renderer)
        .summary()
    )
    if getattr(args, "no_plots", False):
        builder = builder.metric_logs(csv=True, plots=False)
    if args.patience:
        builder = builder.early_stopping(metric="Loss", patience=args.patience)
    if args.mixed_precision:
        for dev in devices:  # an unsupported dtype is a usage error now, before anything is written
            burn.amp.autocast(args.mixed_precision, device=dev)
        builder = builder.mixed_precision(args.mixed_precision)
    if args.resume is not None:
        builder = builder.checkpoint(args.resume)
    if getattr(args, "run_id", None):
        builder = builder.run_id(args.run_id)
    return builder.build(model, optim, scheduler), train, valid


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each help text (but not the empty/None "off" ones); the epilog kept as is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == "":
            return action.help
        return super()._get_help_string(action)


def _prog() -> str:
    """How the user started this: ``python3 dev.py train``, ``python examples/train_digits.py``, or
    the module form."""
    if os.environ.get(PROG_ENV):
        return os.environ[PROG_ENV]
    script = sys.argv[0] if sys.argv else ""
    if script.endswith(".py") and os.path.basename(script) != "digits.py":
        return f"python {script}"
    return MODULE_PROG


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The options (``prog`` names the command in ``--help``; by default how it was started)."""
    p = OneLineParser(
        prog=prog or _prog(),
        description=__doc__.split("\n")[0],
        epilog=EXIT_CODES,
        formatter_class=_HelpFormatter,
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="cpu",
        help="device to train on (auto: cuda, else a hardware wgpu adapter, else cpu; remote: a "
        "`burn remote serve` server at REMOTE_URL)",
    )
    p.add_argument(
        "--remote-url",
        default=None,
        metavar="URL",
        help="server of --backend remote, e.g. ws://gpu-box:3000 (default: BURN_REMOTE_URL); its token "
        "comes from BURN_REMOTE_TOKEN",
    )
    p.add_argument(
        "--devices",
        default="",
        help="comma-separated devices for data-parallel training, e.g. cpu,wgpu or cpu,cpu:1 (overrides --backend)",
    )
    p.add_argument("--epochs", type=int_at_least(1), default=8, help="number of epochs to train in all")
    p.add_argument("--batch-size", type=int_at_least(1), default=32, help="training batch size (items)")
    p.add_argument(
        "--lr", type=positive_float(), default=1e-2, help="peak learning rate (cosine-annealed to lr/20)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed for the init and the data order")
    p.add_argument(
        "--artifacts",
        default="artifacts/digits",
        help="output folder; a run owns it: a new run refuses a folder holding another run's files "
        "(continue that run with --resume, or pass --overwrite)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="start a new run in an --artifacts folder that holds another run: the old run is moved "
        "aside to ARTIFACTS.previous-N first (nothing is deleted)",
    )
    p.add_argument(
        "--renderer",
        choices=("auto", "tui", "cli", "none"),
        default="auto",
        help="auto: the dashboard (tui) in a terminal, plain lines (cli) otherwise",
    )
    p.add_argument(
        "--patience", type=int_at_least(0), default=0, help="early stopping patience on valid loss (0: off)"
    )
    p.add_argument(
        "--resume",
        type=int_at_least(1, note=" (omit --resume to train from scratch)"),
        default=None,
        metavar="EPOCH",
        help="continue from the checkpoint of this epoch (in ARTIFACTS/checkpoint), at EPOCH + 1; "
        "without it training starts from scratch",
    )
    p.add_argument(
        "--limit", type=int_at_least(0), default=0, help="use only the first N train/valid items (0: all)"
    )
    p.add_argument(
        "--no-plots",
        action="store_true",
        help="skip the PNG plots at the end (a fixed ~0.5 s of matplotlib; the CSV logs keep every value)",
    )
    p.add_argument(
        "--mixed-precision",
        choices=("float16", "bfloat16"),
        default=None,
        help="train in mixed precision: conv/linear in this dtype, float32 master weights, "
        "dynamic loss scaling for float16 (none for bfloat16; off: float32)",
    )
    return p.parse_args(argv)


def _auto_choice(device: Any) -> str:
    """``--backend auto: cpu (skipped cuda: cupy is not installed; wgpu: only software adapters (...):
    slower than cpu)``: what auto picked and why not the backends ranked above it."""
    import burn.plugins

    name = str(getattr(device, "inner", device)).split("+")[0]
    specs = burn.plugins.registry().backends
    kind = name.split(":")[0]
    chosen = next((s for s in specs.values() if kind == s.name or kind in s.aliases), None)
    skipped = []
    for spec in sorted(specs.values(), key=lambda s: -s.priority):
        if chosen is None or spec.priority <= chosen.priority:
            break
        try:
            ok, why = (spec.auto_available or spec.is_available)()
        except Exception as exc:  # a third-party probe that raises: not available
            ok, why = False, f"{type(exc).__name__}: {exc}"
        if not ok:
            skipped.append(f"{spec.name}: {why}")
    return f"--backend auto: {name}" + (f" (skipped {'; '.join(skipped)})" if skipped else "")


def _fail(prog: str, message: str, code: int = EXIT_USAGE) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


RUN_FILE = "run.json"  # in the artifacts folder: which run owns it


def _run_info(artifacts: str) -> dict[str, Any] | None:
    path = os.path.join(artifacts, RUN_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"run_id": None, "error": f"{path}: not readable ({type(exc).__name__}: {exc})"}
    return info if isinstance(info, dict) else {"run_id": None, "error": f"{path}: not a JSON object"}


def _check_resume(args: argparse.Namespace) -> str | None:
    """Why ``--resume`` cannot work (checked before anything is built or written), or None: no such
    checkpoint, nothing left to train, or a checkpoint of another run than the folder's."""
    if args.resume is None:
        return None
    from burn_train.checkpoint._file import checkpoint_epochs, read_state, resume_problem

    folder = os.path.join(args.artifacts, "checkpoint")
    problem = resume_problem(folder, args.resume)
    # an argument error before what the checkpoint's files hold, once the checkpoint is there at all
    if args.epochs <= args.resume and (problem is None or args.resume in checkpoint_epochs(folder)):
        problem = (
            f"nothing to train: --resume {args.resume} continues at epoch {args.resume + 1} "
            f"but --epochs is {args.epochs} (raise --epochs)"
        )
    if problem is None:
        info = _run_info(args.artifacts) or {}
        if info.get("error"):  # a run.json that cannot be read: whose checkpoint this is is unknown
            return f"cannot resume from epoch {args.resume}: {info['error']}"
        problem = _unreadable_logs(args.artifacts)
    if problem is None:
        owner = info.get("run_id")
        saved = read_state(os.path.join(folder, f"state-{args.resume}.json")).get("run_id")
        if owner and saved and owner != saved:
            problem = (
                f"the checkpoint of epoch {args.resume} belongs to run {saved}, not to run {owner} that owns "
                f"{args.artifacts} ({RUN_FILE}); it cannot continue this run"
            )
    return problem


# the options that shape a run, in --help's order: a resume command repeats those not at their default,
# so it goes on with the same data, batches, device and precision (--limit 96 left out trains on all)
_RUN_OPTIONS = (
    "backend",
    "remote_url",
    "devices",
    "batch_size",
    "lr",
    "seed",
    "renderer",
    "patience",
    "limit",
    "no_plots",
    "mixed_precision",
)


def _run_options(args: argparse.Namespace) -> str:
    """`` --backend wgpu --limit 96 --no-plots``: this run's options that differ from the defaults."""
    defaults = parse_args([], prog="-")
    words: list[str] = []
    for name in _RUN_OPTIONS:
        value = getattr(args, name)
        if value == getattr(defaults, name):
            continue
        flag = "--" + name.replace("_", "-")
        words += [flag] if value is True else [flag, shlex.quote(str(value))]
    return "".join(" " + word for word in words)


def _unreadable_logs(artifacts: str) -> str | None:
    """Why the per-epoch logs a resume reads back cannot be read (naming the file), or None."""
    from burn import RecordError

    from burn_train.logger import read_epochs_csv

    for split in ("train", "valid"):
        path = os.path.join(artifacts, split, "epochs.csv")
        try:
            if os.path.exists(path):
                read_epochs_csv(path)
        except (RecordError, OSError, UnicodeDecodeError) as exc:
            return f"cannot resume: {exc}"
    return None


def _resume_hint(prog: str, args: argparse.Namespace, summary: Any) -> str:
    """``; epochs 1-3 completed, checkpoints of epochs 2, 3: continue with `... --resume 3``."""
    if summary is None:
        return ""
    done = (
        f"epochs 1-{summary.epochs} completed" if summary.epochs > 1 else f"{summary.epochs} epoch completed"
    )
    if not summary.checkpointed:
        return f"; {done}, no checkpoint to resume from"
    last = max(summary.checkpointed)
    epochs = ", ".join(str(e) for e in summary.checkpointed)
    kept = (
        f"checkpoints of epochs {epochs}"
        if len(summary.checkpointed) > 1
        else f"checkpoint of epoch {epochs}"
    )
    where = f" --artifacts {shlex.quote(args.artifacts)} --resume {last} --epochs {args.epochs}"
    return f"; {done}, {kept}: continue with `{prog}{_run_options(args)}{where}`"


def _claim_artifacts(args: argparse.Namespace, prog: str) -> str:
    """The run id of this run: the folder's own when resuming; else a new one, after checking that
    ``--artifacts`` holds no other run (a usage error unless ``--overwrite``). Writes nothing."""
    import uuid

    folder = args.artifacts
    if os.path.exists(folder) and not os.path.isdir(folder):
        _fail(prog, f"--artifacts {folder} is a file, expected a folder")
    if args.resume is not None:
        return str((_run_info(folder) or {}).get("run_id") or uuid.uuid4().hex[:12])
    if os.path.isdir(folder) and os.listdir(folder) and not args.overwrite:
        info = _run_info(folder) or {}
        what = f"run {info['run_id']} started {info.get('started', '?')}" if info.get("run_id") else "files"
        _fail(
            prog,
            f"--artifacts {folder} already holds another run ({what}): continue it with --resume EPOCH, "
            "choose another --artifacts, or pass --overwrite to move it aside",
        )
    return uuid.uuid4().hex[:12]


def _move_aside(folder: str) -> None:
    """``--overwrite``: the previous run's folder becomes ``FOLDER.previous-N`` (nothing is deleted)."""
    if not (os.path.isdir(folder) and os.listdir(folder)):
        return
    n = 1
    while os.path.exists(f"{folder}.previous-{n}"):
        n += 1
    os.replace(folder, f"{folder}.previous-{n}")
    print(f"moved the previous run in {folder} to {folder}.previous-{n}", flush=True)


def _write_run_info(args: argparse.Namespace, run_id: str, device: str) -> None:
    """run.json: the run's id, start, device and command; a resume appends itself to ``resumes`` (and
    says so when it trains on another device than the run did, so a summary is not silently mixed)."""
    info = _run_info(args.artifacts) or {}
    now = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "device": device, "command": " ".join(sys.argv)}
    if info.get("run_id") == run_id:
        before = (info.get("resumes") or [info])[-1].get("device")
        if before and before != device:
            print(
                f"resuming run {run_id} from epoch {args.resume}: it ran on {before}; the epochs from "
                f"{args.resume + 1} run on {device}",
                flush=True,
            )
        record = {**info, "resumes": [*info.get("resumes", []), {"from_epoch": args.resume, **now}]}
    else:
        record = {"run_id": run_id, **now}
    os.makedirs(args.artifacts, exist_ok=True)
    path = os.path.join(args.artifacts, RUN_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2)
    os.replace(f"{path}.tmp", path)


def main(argv: list[str] | None = None, prog: str | None = None) -> float:
    """Train and return the final validation accuracy (a fraction; NaN when no validation epoch ended).

    Exits (``SystemExit``) with 2 on a bad ``--resume`` or an unavailable backend, and with 130 when
    interrupted (Ctrl-C, or ``k`` in the dashboard) after the summary and plots are written.
    """
    from burn import DeviceError, DTypeError

    prog = prog or _prog()
    args = parse_args(argv, prog)
    problem = _check_resume(args)
    if problem is not None:
        _fail(prog, problem)
    from burn_train.distributed._strategy import active_world

    world = active_world(None)  # launched as several ranks: rank 0 owns the folder, the others write nothing
    lead = world is None or world.rank == 0
    args.run_id = _claim_artifacts(args, prog) if lead else None
    try:
        learner, train, valid = build(args)
    except (DeviceError, DTypeError) as exc:  # an unavailable backend or dtype: its message says why
        _fail(prog, str(exc))
    except KeyboardInterrupt:
        print(f"{prog}: interrupted before training started", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    if lead:
        if args.resume is None and args.overwrite:
            _move_aside(args.artifacts)
        _write_run_info(args, args.run_id, learner._describe())
    try:
        learner.fit(train, valid)
    except KeyboardInterrupt:
        how = (
            "killed from the dashboard (k)"
            if learner.interrupter.reason.startswith("killed")
            else "interrupted (Ctrl-C)"
        )
        written = "summary and plots of the epochs so far are in" if learner.summary else "nothing written in"
        hint = _resume_hint(prog, args, learner.summary)
        print(f"{prog}: training {how}; {written} {args.artifacts}{hint}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    if learner.summary is not None and learner.summary.reason == "interrupted":
        print(f"training ended early ({learner.summary.why}){_resume_hint(prog, args, learner.summary)}")
    epochs = learner.store.values["valid"].get("Accuracy", {})
    if not epochs:
        print(f"no validation epoch finished  (artifacts in {args.artifacts})")
        return math.nan
    accuracy = epochs[max(epochs)]
    if lead:  # launched as several ranks, rank 0 speaks for the job
        print(f"final valid accuracy: {100 * accuracy:.2f} %  (artifacts in {args.artifacts})")
    return accuracy


if __name__ == "__main__":
    main(sys.argv[1:])
