"""``burn autotune show|status|clear``: the autotune cache from the command line (a burn-core command
plugin).

``show`` lists every cache file (one per device fingerprint) with its tuned keys, the winner and the
timing that chose it; ``--json`` prints the same as JSON. ``status`` sums each device up: how many keys
are tuned, and which are still tuning in the background (a process ended before their job did: the
next process that calls them goes on from the candidates checked and timed so far), with what is left
of each, and the compiled-kernel caches kept beside the autotune cache (burn-cuda's CuPy modules in
``cuda-kernels``: every other folder under ``BURN_CACHE_DIR``) with their files and bytes. ``clear``
deletes the autotune cache files, so the next run tunes again (compiled kernels stay: they depend on the
source alone).
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
    status = sub.add_parser(
        "status", help="per device: keys tuned, and keys still tuning in the background with their progress"
    )
    status.add_argument("--json", action="store_true", help="print JSON instead of text")
    sub.add_parser("clear", help="delete the autotune cache: kernels are tuned again on next use")


def _run(args: argparse.Namespace) -> int:
    from . import autotune_dir, clear_caches, list_caches

    if args.autotune_command == "clear":
        removed = clear_caches()
        print(f"removed {removed} autotune cache file(s) from {autotune_dir()}")
        return 0
    caches = list_caches()
    if args.autotune_command == "status":
        return _status(caches, args.json)
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


def _progress(entry: dict[str, Any]) -> dict[str, Any]:
    """What a partial entry has done: candidates checked and dropped, timings made."""
    return {
        "checked": len(entry.get("checked", ())),
        "dropped": len(entry.get("dropped", {})),
        "timed": len(entry.get("timed", {})),
    }


def kernel_caches() -> list[dict[str, Any]]:
    """The folders under burn's cache folder other than the autotune one (compiled kernels: burn-cuda's
    ``cuda-kernels``), each with its path, file count and bytes."""
    from . import cache_dir

    root = cache_dir()
    out = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if not folder.is_dir() or folder.name == "autotune":
            continue
        files = [f for f in folder.rglob("*") if f.is_file()]
        size = 0
        for f in files:
            try:
                size += f.stat().st_size
            except OSError:  # removed meanwhile (another process cleaning up)
                pass
        out.append({"name": folder.name, "path": str(folder), "files": len(files), "bytes": size})
    return out


def _status(caches: list[dict[str, Any]], as_json: bool) -> int:
    rows = []
    for cache in caches:
        entries = cache.get("entries", {})
        tuning = {k: _progress(e) for k, e in sorted(entries.items()) if e.get("partial")}
        rows.append(
            {
                "fingerprint": cache["fingerprint"],
                "path": cache["path"],
                "tuned": sum(1 for e in entries.values() if not e.get("partial")),
                "tuning": tuning,
                **({"error": cache["error"]} if "error" in cache else {}),
            }
        )
    compiled = kernel_caches()
    if as_json:
        json.dump(
            {"folder": str(_folder()), "devices": rows, "kernel_caches": compiled}, sys.stdout, indent=2
        )
        print()
        return 0
    print(f"autotune cache: {_folder()}")
    if not rows:
        print("  (empty: nothing tuned yet)")
    for row in rows:
        print(f"\n{row['fingerprint']}")
        if "error" in row:
            print(f"  unreadable: {row['error']}")
            continue
        print(f"  {row['tuned']} key(s) tuned, {len(row['tuning'])} still tuning in the background")
        for key, p in row["tuning"].items():
            print(f"  {key}: {p['checked']} checked, {p['dropped']} dropped, {p['timed']} timed so far")
    for folder in compiled:
        print(f"\ncompiled kernels ({folder['name']}): {folder['path']}")
        print(f"  {folder['files']} file(s), {folder['bytes'] / 1e6:.1f} MB")
    return 0


def _folder() -> Any:
    from . import autotune_dir

    return autotune_dir()


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
            help="list, sum up or clear the tuned kernels (the autotune cache)",
        )
    )
