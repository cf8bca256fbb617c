"""``burn autotune show|clear``: the autotune cache from the command line (a burn-core command plugin).

``show`` lists every cache file (one per device fingerprint) with its tuned keys, the winner and the
timing that chose it; ``--json`` prints the same as JSON. ``clear`` deletes them all, so the next run
tunes again.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..plugins import CommandSpec, hookimpl


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="autotune_command", metavar="ACTION", required=True)
    show = sub.add_parser(
        "show", help="list the tuned kernels of every device (the cache under BURN_CACHE_DIR)"
    )
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    sub.add_parser("clear", help="delete the autotune cache: kernels are tuned again on next use")


def _run(args: argparse.Namespace) -> int:
    from . import autotune_dir, clear_caches, list_caches

    if args.autotune_command == "clear":
        removed = clear_caches()
        print(f"removed {removed} autotune cache file(s) from {autotune_dir()}")
        return 0
    caches = list_caches()
    if args.json:
        json.dump({"folder": str(autotune_dir()), "caches": caches}, sys.stdout, indent=2)
        print()
        return 0
    print(f"autotune cache: {autotune_dir()}")
    if not caches:
        print("  (empty: nothing tuned yet)")
    for cache in caches:
        print(f"\n{cache['fingerprint']}\n  {cache['path']}")
        if "error" in cache:
            print(f"  unreadable: {cache['error']}")
        for key, entry in sorted(cache["entries"].items()):
            print(f"  {key}: {_describe(entry)}")
    return 0


def _describe(entry: dict[str, Any]) -> str:
    if entry.get("partial"):
        checked, timed = len(entry.get("checked", ())), len(entry.get("timed", {}))
        return f"tuning in the background ({checked} checked, {timed} timed so far)"
    best = entry.get("best", "?")
    seconds = entry.get("seconds", {})
    text = f"{best}"
    if best in seconds:
        text += f" ({seconds[best] * 1e6:.1f} us"
        others = sorted(v for k, v in seconds.items() if k != best)
        if others:
            text += f"; next {others[0] / seconds[best]:.2f}x slower"
        text += ")"
    if entry.get("dropped"):
        text += f", dropped: {', '.join(sorted(entry['dropped']))}"
    return text


@hookimpl
def burn_register_commands(register: Any) -> None:
    register(
        CommandSpec(
            name="autotune",
            configure=_configure,
            run=_run,
            help="list or clear the tuned kernels (the autotune cache)",
        )
    )
