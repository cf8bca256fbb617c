"""End to end across packages: burn.data digits -> burn.nn CNN on autodiff -> burn_train Learner;
and the example as a user meets it: Ctrl-C and the dashboard's keys in real processes."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("burn_train")
pytest.importorskip("burn_autodiff")


def test_digits_example_trains_and_writes_artifacts(tmp_path, capsys):
    from burn_train.examples.digits import main

    started = time.monotonic()
    accuracy = main(
        [
            "--epochs",
            "2",
            "--limit",
            "320",
            "--artifacts",
            str(tmp_path),
            "--renderer",
            "cli",
            "--batch-size",
            "32",
        ]
    )
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert elapsed < 20, f"the tiny fit took {elapsed:.1f} s"
    assert f"final valid accuracy: {100 * accuracy:.2f} %" in out
    assert accuracy > 0.5  # 2 short epochs on 320 digits: far above chance (0.1)
    with open(tmp_path / "valid" / "epochs.csv", newline="") as handle:
        units = {r["metric"]: r["unit"] for r in csv.DictReader(handle)}
        handle.seek(0)
        rows = {(int(r["epoch"]), r["metric"]): float(r["value"]) for r in csv.DictReader(handle)}
    assert rows[(2, "Accuracy")] == pytest.approx(100 * accuracy)  # written in %
    assert units["Accuracy"] == "%" and units["Loss"] == ""
    assert rows[(2, "Loss")] < rows[(1, "Loss")] * 1.5
    assert sorted(n for n in os.listdir(tmp_path / "checkpoint") if n.startswith("state-"))
    assert (tmp_path / "summary.txt").exists() and (tmp_path / "experiment.log").exists()
    if (tmp_path / "plots").exists():
        assert "loss.png" in os.listdir(tmp_path / "plots")


ROOT = Path(__file__).resolve().parents[1]
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="process groups and pseudo-terminals are POSIX")
QUICK = ["--epochs", "500", "--limit", "160"]  # runs until stopped; an epoch takes a fraction of a second


def _dev_venv_is_current() -> bool:
    """dev.py would re-run pip when its stamp is stale; the test must not install anything."""
    spec = importlib.util.spec_from_file_location("_burn_dev_script", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return (
        dev._venv_python().exists()
        and dev.STAMP.exists()
        and dev.STAMP.read_text() == dev._requirements_hash()
    )


@POSIX_ONLY
def test_dev_py_train_help_names_dev_py():
    if not _dev_venv_is_current():
        pytest.skip("the .venv of dev.py is missing or out of date (dev.py would reinstall it)")
    out = subprocess.run(
        [sys.executable, "dev.py", "train", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.startswith("usage: python3 dev.py train [-h]"), out.stderr
    assert "(default: 8)" in out.stdout and "130" in out.stdout


def _plots_expected() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


@POSIX_ONLY
@pytest.mark.parametrize("launcher", ["dev.py", "script"])
def test_ctrl_c_ends_training_with_summary_plots_and_exit_130(tmp_path, launcher):
    if launcher == "dev.py":
        if not _dev_venv_is_current():
            pytest.skip("the .venv of dev.py is missing or out of date (dev.py would reinstall it)")
        cmd, prog = [sys.executable, "dev.py", "train"], "python3 dev.py train"
    else:
        cmd, prog = [sys.executable, "examples/train_digits.py"], "python examples/train_digits.py"
    env = {k: v for k, v in os.environ.items() if k != "BURN_TRAIN_PROG"}
    proc = subprocess.Popen(
        [*cmd, *QUICK, "--renderer", "cli", "--artifacts", str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    for line in proc.stdout:
        if line.startswith("[train] epoch 2/"):  # training is under way
            break
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in out + err
    last = err.splitlines()[-1]
    assert last.startswith(
        f"{prog}: training interrupted (Ctrl-C); summary and plots of the epochs so far are in {tmp_path}; "
    )
    # interrupted in epoch 2 or later: the completed, checkpointed epochs and the exact command to go on
    summary = json.loads((tmp_path / "summary.json").read_text())
    done, kept = summary["completed_epochs"], summary["checkpointed_epochs"]
    assert done >= 1 and kept and max(kept) == done
    assert f"--artifacts {tmp_path} --resume {done} --epochs 500`" in last
    assert "(interrupted by Ctrl-C)" in (tmp_path / "summary.txt").read_text().splitlines()[0]
    if _plots_expected():
        assert "loss.png" in os.listdir(tmp_path / "plots")
        assert "[status] writing plots…" in out


def _run_in_terminal(cmd: list[str], keys: str, ready: str, width: int = 80, height: int = 24):
    """Run ``cmd`` on a pseudo-terminal of ``width`` x ``height``; type ``keys`` once the regular
    expression ``ready`` matches what it wrote. Returns (exit code, everything it wrote)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(width), LINES=str(height))
    env.pop("BURN_TRAIN_PROG", None)
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    output, typed, deadline = b"", False, time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the process closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
            if not typed and re.search(ready.encode(), output):
                typed = True
                for key in keys:
                    os.write(master, key.encode())
                    time.sleep(0.3)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.wait(timeout=30), output.decode("utf-8", "replace")


@POSIX_ONLY
@pytest.mark.parametrize("keys,code", [("qk", 130), ("qs", 0)])
def test_dashboard_kill_and_stop_keys_exit_without_a_traceback(tmp_path, keys, code):
    pytest.importorskip("rich")
    cmd = [sys.executable, "examples/train_digits.py", *QUICK, "--artifacts", str(tmp_path)]
    returncode, output = _run_in_terminal(cmd, keys, ready=r"Epoch +: [2-9]\d*/500")  # in epoch 2 or later
    assert returncode == code, output[-2000:]
    assert "Traceback" not in output
    assert "←→ metric" in output and "↑↓ plot" in output  # the key hints fit 80 columns
    if _plots_expected():
        assert "writing plots…" in output  # said on screen while the plots are written
        assert "loss.png" in os.listdir(tmp_path / "plots")
    summary = (tmp_path / "summary.txt").read_text().splitlines()[0]
    if keys == "qk":
        assert summary.endswith("(killed from the dashboard)")
        assert (
            "python examples/train_digits.py: training killed from the dashboard (k); summary and plots of "
            "the epochs so far are in" in output
        )
    else:
        assert summary.endswith("(interrupted: stopped from the dashboard)")
        assert "training ended early (interrupted: stopped from the dashboard)" in output
        # the stdout line and summary.json agree; the best epoch is one that completed and was saved
        saved = json.loads((tmp_path / "summary.json").read_text())
        assert (saved["reason"], saved["detail"]) == ("interrupted", "stopped from the dashboard")
        assert saved["best"]["epoch"] is None or saved["best"]["epoch"] in saved["checkpointed_epochs"]
        assert "final valid accuracy:" in output
