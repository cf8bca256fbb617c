"""``burn launch``: run a training script as N MPI ranks through the installed MPI launcher.

``burn launch -n 4 train.py --epochs 10`` runs ``mpiexec -n 4 <this python> train.py --epochs 10``:
a thin wrapper, so everything ``mpirun`` does (hosts files, Slurm allocations) stays available through
``--launcher-args``. ``--timeout`` sets ``BURN_DDP_TIMEOUT`` for the ranks; ``--info`` reports which
collectives can run here and why not.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from burn.plugins import int_at_least, positive_float


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--np",
        dest="ranks",
        type=int_at_least(1, "a number of ranks"),
        help="number of ranks (processes) to start",
    )
    parser.add_argument(
        "-m", dest="module", action="store_true", help="run the first argument as a module (like python -m)"
    )
    parser.add_argument(
        "--launcher", help="the MPI launcher to run (default: the mpiexec beside this Python, or on PATH)"
    )
    parser.add_argument(
        "--launcher-args",
        default="",
        metavar="ARGS",
        help="more arguments for the launcher, e.g. --launcher-args='-hosts a,b'",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float("number of seconds"),
        metavar="SECONDS",
        help="seconds a rank waits for the others (BURN_DDP_TIMEOUT)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument(
        "--info",
        action="store_true",
        help="report which collectives (MPI, and those of the backends: NCCL) can run here, and why not",
    )
    parser.add_argument(
        "target", nargs=argparse.REMAINDER, help="the script (with -m: the module) and its arguments"
    )


def command(args: argparse.Namespace, launcher: str) -> list[str]:
    """The launcher command line for parsed ``burn launch`` arguments."""
    target = ["-m", *args.target] if args.module else list(args.target)
    return [launcher, "-n", str(args.ranks), *shlex.split(args.launcher_args), sys.executable, *target]


def render_info(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["Collectives (burn launch / LearnerBuilder.distributed):"]
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        state = "available  " if r["available"] else "unavailable"
        lines.append(f"  {r['name'].ljust(width)}  {state}  {r['reason']}")
    return "\n".join(lines) + "\n"


def _launcher(args: argparse.Namespace) -> str:
    """The launcher to run: ``--launcher`` (a path, or a name on PATH), else the one found here."""
    import shutil

    from burn.plugins import CommandError

    from ._info import find_launcher

    if args.launcher:
        found = shutil.which(args.launcher)
        if found is None:
            raise CommandError(
                f"--launcher {args.launcher}: no such program (expected an MPI launcher such as mpiexec: "
                "a path to it, or a name on PATH)"
            )
        return found
    launcher = find_launcher()
    if launcher is None:
        raise CommandError(
            "no MPI launcher (mpiexec) found beside this Python or on PATH: "
            "pip install 'burn-core[mpi]' (mpi4py and the mpich wheel), or give --launcher PATH"
        )
    return launcher


def _check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before anything runs or prints (each a ``CommandError``: one line, exit 2)."""
    from burn.plugins import CommandError

    if not args.target:
        raise CommandError("give the script to run (burn launch -n 4 train.py) or -m MODULE")
    if args.ranks is None:
        raise CommandError("-n/--np: give the number of ranks to start")
    try:
        shlex.split(args.launcher_args)
    except ValueError as exc:
        raise CommandError(f"--launcher-args {args.launcher_args!r}: {exc} (expected shell words)") from None
    script = args.target[0]
    if args.module or script.startswith("-"):
        return
    if not os.path.exists(script):
        raise CommandError(f"script {script}: no such file")
    if os.path.isdir(script) and not os.path.isfile(os.path.join(script, "__main__.py")):
        raise CommandError(f"script {script}: a folder without __main__.py, expected a Python file")


def run(args: argparse.Namespace) -> int:
    from ._info import collectives_info

    if args.info:
        sys.stdout.write(render_info(collectives_info(probe=True)))
        if not args.target:
            return 0
    _check(args)
    launcher = _launcher(args)
    cmd = command(args, launcher)
    if args.dry_run:
        sys.stdout.write(shlex.join(cmd) + "\n")
        return 0
    import subprocess

    env = dict(os.environ)
    if args.timeout is not None:
        env["BURN_DDP_TIMEOUT"] = repr(args.timeout)
    target = f"-m {args.target[0]}" if args.module else args.target[0]
    sys.stdout.write(
        f"burn launch: {target} as ranks 0..{args.ranks - 1} ({args.ranks} processes, {os.path.basename(launcher)}); "
        "rank 0 prints and writes the outputs\n"
    )
    sys.stdout.flush()
    try:
        return subprocess.run(cmd, env=env, check=False).returncode
    except OSError as exc:  # found a moment ago, gone or not executable now
        from burn.plugins import CommandError

        raise CommandError(f"--launcher {launcher}: cannot run it: {exc.strerror or exc}") from None
    except KeyboardInterrupt:  # the launcher got the same Ctrl-C and ends the ranks
        return 130


def help_line() -> str:
    """The command's line in ``burn --help`` and ``burn info``: what it does and, cheaply (nothing is
    imported), whether MPI is installed. It is made while plugins load, before the collectives other
    plugins offer are known: ``burn launch --info`` lists those."""
    from ._info import mpi_status

    ok, reason = mpi_status(versions=False)
    mpi = "mpi available" if ok else f"mpi unavailable: {reason}"
    return f"run a script as N MPI ranks for data-parallel training (burn-train); {mpi}; more: burn launch --info"
