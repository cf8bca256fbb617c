"""burn.autotune's tuner and cache: picks the fastest correct candidate, drops wrong ones, persists
across tuners and processes, honours BURN_AUTOTUNE, survives a corrupt cache and concurrent tuners."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from burn import autotune
from burn.autotune import Autotuner, Candidate, Family
from burn.testing._events import autotune_events


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BURN_AUTOTUNE", raising=False)
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # these test the tuning run itself, made at once
    return tmp_path


@pytest.fixture
def events():
    with autotune_events() as seen:
        yield seen


def _sleepy(seconds: float, wrong: bool = False, fail: bool = False):
    def fn(x):
        if fail:
            raise RuntimeError("no such kernel here")
        time.sleep(seconds)
        return x * 2 + (1 if wrong else 0)

    return fn


def _family(**extra) -> Family:
    return Family(
        name="double",
        candidates=(
            Candidate("reference", _sleepy(0.004)),
            Candidate("quick", _sleepy(0.0), fast=False),
            Candidate("medium", _sleepy(0.002)),
            Candidate("wrong", _sleepy(0.0, wrong=True)),
            Candidate("broken", _sleepy(0.0, fail=True)),
        ),
        key=lambda x: f"n={autotune.bucket(x.size)}",
        reference="reference",
        **extra,
    )


def _tuner(fp: str = "test-device|driver 1") -> Autotuner:
    return Autotuner(fp, "test:0", autotune.median_timer(lambda: None, warmup=1, reps=3), np.asarray)


def test_tuning_keeps_the_fastest_correct_candidate(cache, events):
    fam = _family()
    x = np.arange(5.0)
    with pytest.warns(RuntimeWarning, match="candidate 'wrong' dropped") as caught:
        out = _tuner().run(fam, x)
    assert any("'broken' dropped" in str(w.message) for w in caught)
    np.testing.assert_array_equal(out, x * 2)
    assert [e.step for e in events if not e.done] == [1, 2, 3, 4, 5]
    done = events[-1]
    assert done.done and done.best == "quick" and done.key == "n=5" and done.kind == "autotune"
    entry = json.loads(next(cache.glob("autotune/*.json")).read_text())["entries"]["double|n=5"]
    assert entry["best"] == "quick"
    assert set(entry["dropped"]) == {"wrong", "broken"}
    assert "RuntimeError: no such kernel here" in entry["dropped"]["broken"]
    assert min(entry["seconds"], key=entry["seconds"].get) == "quick"


def test_a_second_tuner_uses_the_cache_and_tunes_nothing(cache, events):
    fam = _family()
    with pytest.warns(RuntimeWarning):
        _tuner().run(fam, np.ones(3))
    events.clear()
    assert _tuner().choice(fam, np.ones(3)) == "quick"
    assert [(e.kind, e.best) for e in events] == [("cache", "quick")]
    with pytest.warns(RuntimeWarning, match="dropped"):  # another device: its own cache, tuned again
        _tuner("another-gpu|driver 1").choice(fam, np.ones(3))
    assert events[-1].kind == "autotune" and events[-1].done


def test_every_candidate_is_checked_before_any_is_timed_and_keeps_its_faster_timing(cache):
    """Compiles and reads leave a GPU at idle clocks: the checks come first, then two timing passes
    back to back, each candidate keeping its faster figure, so a slow first timing does not decide."""
    log: list[str] = []
    first = {"reference": 0.5, "early": 0.9, "late": 0.45}  # "early" timed cold: alone it would lose
    second = {"reference": 0.4, "early": 0.1, "late": 0.2}

    def cand(name: str):
        def fn(x):
            log.append(name)
            return x * 2

        return fn

    def timer(fn) -> float:
        log.append("time")
        fn()
        name = log[-1]
        return first.pop(name) if name in first else second[name]

    fam = Family(
        name="order",
        candidates=tuple(Candidate(name, cand(name)) for name in ("reference", "early", "late")),
        key=lambda x: "k",
        reference="reference",
    )
    assert Autotuner("order-device", "t:0", timer, np.asarray).choice(fam, np.ones(2)) == "early"
    assert log[: log.index("time")] == ["reference", "early", "late"]  # the checks (the reference once)
    timed = [log[i + 1] for i, entry in enumerate(log) if entry == "time"]
    assert timed == ["reference", "early", "late"] * 2


def test_keys_bucket_large_dims():
    assert [autotune.bucket(n) for n in (1, 64, 65, 1000, 1024, 1025)] == [1, 64, 128, 1024, 1024, 2048]


@pytest.mark.parametrize(
    ("value", "expected"), [("off", "reference"), ("cache-only", "reference"), ("fast", "medium")]
)
def test_modes(cache, events, monkeypatch, value, expected):
    monkeypatch.setenv("BURN_AUTOTUNE", value)
    with pytest.warns(RuntimeWarning) if value == "fast" else _no_warning():
        assert _tuner().choice(_family(), np.ones(2)) == expected
    if value != "fast":
        assert events == []  # no benchmarking at all
    else:
        assert max(e.total for e in events) == 4  # "quick" is not in the fast set


def test_default_candidate_when_off(cache, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "off")
    fam = _family(default="medium")
    assert _tuner().choice(fam, np.ones(2)) == "medium"


def test_bad_mode_is_a_clear_error(cache, monkeypatch):
    monkeypatch.setenv("BURN_AUTOTUNE", "sometimes")
    with pytest.raises(ValueError, match=r"BURN_AUTOTUNE: expected one of full, fast, cache-only, off"):
        _tuner().choice(_family(), np.ones(2))


def test_corrupt_cache_warns_retunes_and_rewrites(cache, events):
    fam = _family()
    tuner = _tuner()
    path = tuner.cache.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{ not json")
    fresh = _tuner()
    with pytest.warns(RuntimeWarning, match="is corrupt"):
        fresh.cache  # noqa: B018 - reading the cache is what warns
    with pytest.warns(RuntimeWarning, match="dropped"):
        assert fresh.choice(fam, np.ones(2)) == "quick"
    assert json.loads(path.read_text())["entries"]["double|n=2"]["best"] == "quick"


def test_family_definition_errors():
    with pytest.raises(ValueError, match="reference 'nope' is not a candidate"):
        Family("f", (Candidate("a", abs),), key=str, reference="nope")
    with pytest.raises(ValueError, match="duplicate candidate names"):
        Family("f", (Candidate("a", abs), Candidate("a", abs)), key=str, reference="a")


_CHILD = textwrap.dedent(
    """
    import sys, time, numpy as np, warnings
    from burn import autotune
    warnings.simplefilter("ignore")
    seen = []
    autotune.subscribe(seen.append)
    slow = lambda x: (time.sleep(0.003), x + 1)[1]
    fam = autotune.Family(
        "inc", (autotune.Candidate("ref", slow), autotune.Candidate("fast", lambda x: x + 1)),
        key=lambda x: f"n={x.size}", reference="ref")
    tuner = autotune.Autotuner("shared-gpu", "t:0", autotune.median_timer(lambda: None), np.asarray)
    for n in map(int, sys.argv[1:]):
        tuner.run(fam, np.ones(n))
    print(",".join(sorted({e.kind for e in seen})))
    """
)


def _child(*sizes: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, *map(str, sizes)], stdout=subprocess.PIPE, text=True
    )


def test_two_processes_tuning_at_once_keep_both_and_a_third_tunes_nothing(cache):
    a, b = _child(*range(1, 9)), _child(*range(9, 17))
    assert a.communicate(timeout=60)[0].strip() == "autotune"
    assert b.communicate(timeout=60)[0].strip() == "autotune"
    entries = json.loads(next(cache.glob("autotune/*.json")).read_text())["entries"]
    assert sorted(entries) == sorted(f"inc|n={n}" for n in range(1, 17))
    third = _child(*range(1, 17))
    assert third.communicate(timeout=60)[0].strip() == "cache"  # zero tuning in a later process


def test_list_and_clear(cache):
    with pytest.warns(RuntimeWarning):
        _tuner().run(_family(), np.ones(2))
    listed = autotune.list_caches()
    assert len(listed) == 1 and "double|n=2" in listed[0]["entries"]
    assert listed[0]["fingerprint"].startswith("test-device")
    assert autotune.clear_caches() == 1 and autotune.list_caches() == []


class _no_warning:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def test_cli_show_and_clear(cache, capsys):
    from burn._cli import main

    with pytest.warns(RuntimeWarning):
        _tuner().run(_family(), np.ones(4))
    assert main(["autotune", "show"]) == 0
    text = capsys.readouterr().out
    assert (
        "test-device|driver 1" in text and "double|n=4: quick (" in text and "dropped: broken, wrong" in text
    )
    assert main(["autotune", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["caches"][0]["entries"]["double|n=4"]["best"] == "quick"
    assert main(["autotune", "status"]) == 0
    assert "1 key(s) tuned, 0 still tuning in the background" in capsys.readouterr().out
    assert main(["autotune", "clear"]) == 0
    assert "removed 1 autotune cache file(s)" in capsys.readouterr().out
    assert main(["autotune", "show"]) == 0 and "nothing tuned yet" in capsys.readouterr().out
