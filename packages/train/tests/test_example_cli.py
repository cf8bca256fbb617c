"""The digits example as a command: --help, argument checks, and errors that exit 2 in one line."""

from __future__ import annotations

import os

import burn
import pytest
from burn_train.examples import digits


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        digits.main(list(argv), prog="train")
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_help_names_the_command_shows_defaults_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as exited:
        digits.parse_args(["--help"], prog="python3 dev.py train")
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps at the terminal width
    assert text.startswith("usage: python3 dev.py train [-h]")
    for option, default in [
        ("--epochs EPOCHS number of epochs", "8"),
        ("--batch-size BATCH_SIZE training batch size", "32"),
        ("--lr LR peak learning rate", "0.01"),
        ("--seed SEED random seed", "0"),
        ("--renderer {auto,tui,cli,none} auto:", "auto"),
        ("--backend {cpu,wgpu,cuda,remote,auto} device to train on", "cpu"),
    ]:
        start = text.index(option)
        assert f"(default: {default})" in text[start : text.index("--", start + 2)], option
    assert "(default: None)" not in text and "(default: )" not in text
    for code in ("0 training ended", "1 an error", "2 bad arguments", "130 interrupted"):
        assert code in text


def test_prog_follows_how_the_example_was_started(monkeypatch):
    monkeypatch.delenv(digits.PROG_ENV, raising=False)
    monkeypatch.setattr("sys.argv", ["examples/train_digits.py", "--epochs", "1"])
    assert digits._prog() == "python examples/train_digits.py"
    monkeypatch.setattr("sys.argv", [digits.__file__])  # python -m burn_train.examples.digits
    assert digits._prog() == "python -m burn_train.examples.digits"
    monkeypatch.setenv(digits.PROG_ENV, "python3 dev.py train")  # set by dev.py
    assert digits._prog() == "python3 dev.py train"


def _previous_run(directory) -> dict[str, bytes]:
    """Artifacts of an earlier run whose epoch-1 checkpoint was pruned."""
    (directory / "checkpoint").mkdir(parents=True)
    for epoch in (2, 3):
        (directory / "checkpoint" / f"state-{epoch}.json").write_text("{}")
    (directory / "summary.txt").write_text("Training summary: 3 epoch(s) in 9.0 s (completed)\n")
    (directory / "experiment.log").write_text("the previous run\n")
    return {name: (directory / name).read_bytes() for name in os.listdir(directory) if "." in name}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--resume", "1"], "cannot resume from epoch 1: no complete checkpoint of it in {ckpt}; available epochs: 2, 3"),
        (["--resume", "3", "--epochs", "3"], "nothing to train: --resume 3 continues at epoch 4 but --epochs is 3 (raise --epochs)"),
        (["--resume", "-1"], "argument --resume: expected an integer >= 1 (omit --resume to train from scratch), got -1"),
        (["--resume", "0"], "argument --resume: expected an integer >= 1 (omit --resume to train from scratch), got 0"),
        (["--epochs", "0"], "argument --epochs: expected an integer >= 1, got 0"),
        (["--lr", "0"], "argument --lr: expected a finite number > 0, got 0"),
    ],
)  # fmt: skip
def test_bad_resume_and_arguments_exit_2_before_anything_is_written(tmp_path, capsys, argv, message):
    before = _previous_run(tmp_path)
    code, out, err = _run(capsys, "--artifacts", str(tmp_path), "--renderer", "none", *argv)
    assert code == 2 and out == ""
    lines = err.splitlines()
    expected = "train: error: " + message.format(ckpt=tmp_path / "checkpoint")
    assert lines[-1] in (expected, f"{expected} (see train --help)")  # argparse's errors name --help
    assert len(lines) == 1  # one line, no usage block
    after = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path) if "." in name}
    assert after == before  # the previous run's summary and log are untouched
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "experiment.log", "summary.txt"]


def test_an_unavailable_backend_is_one_line_with_the_install_hint(tmp_path, capsys, monkeypatch):
    message = (
        "device cuda:0: backend 'cuda' is unavailable: cupy is not installed "
        "(pip install 'burn-cuda[cuda12]' or 'burn-cuda[cuda13]')"
    )

    def unavailable(name, **kwargs):
        raise burn.BackendUnavailableError(message)

    monkeypatch.setattr(burn, "device", unavailable)
    code, out, err = _run(capsys, "--backend", "cuda", "--artifacts", str(tmp_path / "run"))
    assert (code, out, err) == (2, "", f"train: error: {message}\n")
    assert not (tmp_path / "run").exists()
