"""Data-parallel training over real MPI processes (mpiexec from the mpich wheel, 2 and 3 ranks on CPU).

Every run is a fresh ``mpiexec`` job of a small script written to a temporary folder; the single-process
reference runs the same script without MPI. Checked: the collectives against numpy, DDP with 2 and 3
ranks against one process on the same global batches (params within float32 tolerance, identical on
every rank), rank 0's metrics against the single process's, output written by rank 0 only, resume,
and that a hung or killed rank ends the job with a clear error within the timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py", reason="needs mpi4py (pip install 'burn-core[mpi]')")
from burn_train.distributed._info import find_launcher

LAUNCHER = find_launcher()


def _is_hydra(launcher: str | None) -> bool:
    """MPICH's launcher (the mpich wheel's): the tests use its -prepend-rank and -disable-auto-cleanup."""
    if launcher is None:
        return False
    try:
        done = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "HYDRA" in done.stdout.upper()


pytestmark = pytest.mark.skipif(
    not _is_hydra(LAUNCHER), reason="needs MPICH's mpiexec (pip install 'burn-core[mpi]': the mpich wheel)"
)

JOB_TIMEOUT = 60  # seconds: a job that takes longer is a hang, and fails the test


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    env.update(BURN_TRAIN_THREADS="0", BURN_DISABLE_PLUGINS="metrics-cuda", **extra)
    return env


def _mpiexec(
    n: int, script: Path, *args: str, env: dict[str, str] | None = None, timeout: float = JOB_TIMEOUT
) -> subprocess.CompletedProcess:
    cmd = [LAUNCHER, "-prepend-rank", "-n", str(n), sys.executable, str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or _env())


def _write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


# ---------------------------------------------------------------------------- collectives
COLLECTIVES = """
    import numpy as np
    from burn_train.distributed import MpiCollective

    c = MpiCollective(timeout=20.0)
    r, n = c.rank, c.size
    for dtype in (np.float32, np.float64, np.int64):
        x = np.arange(6, dtype=dtype) * (r + 1)
        want = np.arange(6, dtype=dtype) * sum(k + 1 for k in range(n))
        assert np.array_equal(c.all_reduce(x.copy(), "sum"), want), dtype
        assert np.array_equal(c.all_reduce(x.copy(), "max"), np.arange(6, dtype=dtype) * n), dtype
        assert np.array_equal(c.all_reduce(x.copy(), "min"), np.arange(6, dtype=dtype)), dtype
    mean = c.all_reduce(np.full(3, float(r), np.float64), "mean")
    assert np.allclose(mean, (n - 1) / 2), mean
    # two all-reduces in flight at once, completed in reverse order
    a, b = np.full(1000, 1.0, np.float32), np.full(7, r, np.float64)
    wa, wb = c.all_reduce_async(a), c.all_reduce_async(b, "max")
    assert wb.wait() is b and np.all(b == n - 1) and wa.wait() is a and np.all(a == n)
    buf = np.full(4, 10.0 + r, np.float32)
    assert np.array_equal(c.broadcast(buf, root=1), np.full(4, 11.0, np.float32))
    rows = c.all_gather(np.array([r, 2 * r], np.int32))
    assert rows.shape == (n, 2) and rows[:, 1].tolist() == [2 * k for k in range(n)], rows
    c.barrier()
    assert c.broadcast_object({"from": r} if r == 0 else None) == {"from": 0}
    got = c.gather_object(("rank", r, np.ones(r + 1)), root=0)
    if r == 0:
        assert [g[1] for g in got] == list(range(n)) and [len(g[2]) for g in got] == [k + 1 for k in range(n)]
    else:
        assert got is None
    for bad in (np.ones((4, 4), np.float32)[:, 0], [1.0, 2.0]):
        try:
            c.all_reduce(bad)
        except TypeError as exc:
            assert "contiguous numpy array" in str(exc), exc
        else:
            raise AssertionError("a non-contiguous buffer was accepted")
    print(f"collectives ok {r}", flush=True)
"""


def test_mpi_collectives_two_ranks(tmp_path):
    script = _write(tmp_path, "collectives.py", COLLECTIVES)
    done = _mpiexec(2, script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "collectives ok 0" in done.stdout and "collectives ok 1" in done.stdout


def _summary_values(folder: Path) -> dict[tuple[str, str], float]:
    summary = json.loads((folder / "summary.json").read_text())
    return {(split, m["name"]): m["last"] for split, rows in summary["splits"].items() for m in rows}


@pytest.mark.parametrize("ranks", [2, 3])
def test_burn_launch_trains_the_digits_example_like_one_process(tmp_path, ranks):
    """The digits example, unchanged, as 2 or 3 ranks through `burn launch`: the same epoch losses and
    accuracies as one process (the same global batches), one summary, from rank 0."""
    args = ["--epochs", "1", "--limit", "100", "--batch-size", "24", "--renderer", "none"]
    one = subprocess.run(
        [sys.executable, "-m", "burn_train.examples.digits", *args, "--artifacts", str(tmp_path / "one")],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        env=_env(),
    )
    assert one.returncode == 0, one.stdout + one.stderr
    cmd = [
        sys.executable,
        "-m",
        "burn",
        "launch",
        "-n",
        str(ranks),
        "--timeout",
        "30",
        "-m",
        "burn_train.examples.digits",
    ]
    two = subprocess.run(
        [*cmd, *args, "--artifacts", str(tmp_path / "two")],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        env=_env(),
    )
    assert two.returncode == 0, two.stdout + two.stderr
    # the job says it runs as ranks, and rank 0's start line and summary name its rank
    assert f"as ranks 0..{ranks - 1} ({ranks} processes" in two.stdout
    assert f"rank 0 of {ranks}" in json.loads((tmp_path / "two" / "summary.json").read_text())["device"]
    want, got = _summary_values(tmp_path / "one"), _summary_values(tmp_path / "two")
    # the model's metrics; system metrics (CPU usage, memory) appear once a collector has sampled,
    # which depends on timing, and differ between runs anyway
    model = ("Loss", "Accuracy", "Top-2 Accuracy", "F1 Score (macro)")
    want = {k: v for k, v in want.items() if k[1] in model}
    got = {k: v for k, v in got.items() if k[1] in model}
    assert got.keys() == want.keys() and ("train", "Loss") in want
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert two.stdout.count("Training summary") == 1
    assert two.stdout.count("final valid accuracy") == 1  # rank 0 only


# ---------------------------------------------------------------------------- training
TRAIN = """
    import json, os, sys
    import burn
    from burn import nn
    from burn.data import DataLoaderBuilder, PartialDataset
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher
    from burn.nn import functional as F
    from burn_train import LearnerBuilder
    from burn_train.examples.digits import _ClassifierSteps
    from burn_train.metric import AccuracyMetric, LossMetric

    class Mlp(_ClassifierSteps, nn.Module):
        def __init__(self, device):
            self.fc1 = nn.LinearConfig(64, 24).init(device)
            self.fc2 = nn.LinearConfig(24, 10).init(device)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    RUN = {}  # how the last fit ran: its collective (None in one process) and the model's devices

    def fit(directory, epochs, resume=None):
        burn.seed(0)
        dev = burn.device(os.environ.get("BURN_TEST_DEVICE", "cpu"), autodiff=True)
        b = ImageClassificationBatcher()
        # 141 items in global batches of 20: the last batch has 1 item, so some ranks get none of it
        train_ds = PartialDataset(DigitsDataset("train"), 0, 141)
        train = DataLoaderBuilder(b).batch_size(20).shuffle(3).set_device(dev).build(train_ds)
        valid_ds = PartialDataset(DigitsDataset("test"), 0, 45)
        valid = DataLoaderBuilder(b).batch_size(16).set_device(dev.inner).build(valid_ds)
        builder = (
            LearnerBuilder(directory).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .metric_valid_numeric(AccuracyMetric()).with_file_checkpointer(keep_last=5, keep_best=None)
            .num_epochs(epochs).renderer("cli").system_metrics(False).metric_logs(plots=False).summary()
        )
        if resume:
            builder = builder.checkpoint(resume)
        learner = builder.build(Mlp(dev), burn.optim.SgdConfig(momentum=0.9).init(), 0.05)
        model = learner.fit(train, valid)
        values = learner.store.values
        store = {s: {m: {str(e): v for e, v in ser.items()} for m, ser in d.items()} for s, d in values.items()}
        collective = getattr(getattr(learner, "strategy", None), "collective", None)
        RUN.update(collective=getattr(collective, "name", None), devices=[str(d) for d in model.devices()])
        return {k: v.tolist() for k, v in model.record().items()}, store

    out, per_rank_dirs, mode = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
    rank = int(os.environ.get("PMI_RANK", "0"))
    directory = os.path.join(out, f"rank{rank}" if per_rank_dirs else "artifacts")
    first, store = fit(directory, 2)
    if mode == "resume":  # continue the run above from its epoch-2 checkpoint to epoch 3
        last, _ = fit(directory, 3, resume=2)
    else:  # the reference: 3 epochs in one go
        last, _ = fit(os.path.join(out, "straight"), 3)
    result = {"first": first, "last": last, "store": store, "run": RUN}
    with open(os.path.join(out, f"result-{rank}.json"), "w") as handle:
        json.dump(result, handle)
"""


def _one_process(
    script: Path, folder: Path, env: dict[str, str], timeout: float
) -> tuple[Path, subprocess.CompletedProcess]:
    """The training script as one process without MPI (3 epochs straight): the reference run."""
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, str(script), str(folder), "0", "straight"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder, done


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The single-process reference and the 2- and 3-rank jobs (each: fit 2 epochs, then resume to 3)."""
    folder = tmp_path_factory.mktemp("ddp")
    script = _write(folder, "train.py", TRAIN)
    out = {1: _one_process(script, folder / "one", _env(), JOB_TIMEOUT)}
    for n, per_rank in ((2, "1"), (3, "0")):
        job = folder / f"n{n}"
        job.mkdir()
        started = time.monotonic()
        done = _mpiexec(n, script, str(job), per_rank, "resume")
        assert done.returncode == 0, done.stdout + done.stderr
        out[n] = (job, done)
        print(f"{n} ranks: {time.monotonic() - started:.1f} s")
    return out


def _result(folder: Path, rank: int) -> dict:
    return json.loads((folder / f"result-{rank}.json").read_text())


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_matches_one_process_on_the_global_batch(runs, n):
    ref = _result(runs[1][0], 0)
    for rank in range(n):
        got = _result(runs[n][0], rank)
        for name, want in ref["first"].items():
            np.testing.assert_allclose(
                got["first"][name], want, rtol=1e-5, atol=1e-6, err_msg=f"{name} rank {rank}"
            )
        if rank:  # every rank applies the same averaged step: the replicas stay bit-identical
            rank0 = _result(runs[n][0], 0)
            for name in ref["first"]:
                assert np.array_equal(got["first"][name], rank0["first"][name]), name


@pytest.mark.parametrize("n", [2, 3])
def test_rank0_metrics_are_global(runs, n):
    ref, got = _result(runs[1][0], 0)["store"], _result(runs[n][0], 0)["store"]
    for split, metrics in ref.items():
        for name, series in metrics.items():
            assert got[split][name].keys() == series.keys(), (split, name)
            for epoch, value in series.items():
                assert got[split][name][epoch] == pytest.approx(value, rel=1e-6), (split, name, epoch)


@pytest.mark.parametrize("n", [2, 3])
def test_resume_continues_like_an_uninterrupted_run(runs, n):
    want = _result(runs[1][0], 0)["last"]  # 3 epochs in one go, one process
    for rank in range(n):
        got = _result(runs[n][0], rank)["last"]  # 2 epochs, then resumed from the epoch-2 checkpoint
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=f"{name} rank {rank}")


def test_only_rank0_writes(runs):
    folder, done = runs[2]  # each rank was given its own directory: only rank 0's may exist
    assert (folder / "rank0" / "checkpoint" / "model-3.safetensors").exists()
    assert (folder / "rank0" / "train" / "epochs.csv").exists()
    assert not (folder / "rank1").exists()
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith("[0]") for line in lines), done.stdout[:2000]
    assert sum("Training summary" in line for line in lines) == 2  # one per fit, from rank 0
    folder, done = runs[3]  # a shared directory: checkpoints of each epoch once
    names = sorted(p.name for p in (folder / "artifacts" / "checkpoint").iterdir())
    assert names == sorted(
        f"{kind}-{e}.{ext}"
        for e in (1, 2, 3)
        for kind, ext in (("model", "safetensors"), ("optim", "npz"), ("state", "json"))
    )
    assert not any(line.startswith(("[1]", "[2]")) for line in done.stdout.splitlines())


# ---------------------------------------------------------------------------- interrupt
INTERRUPT = """
    import json, os, sys
    import burn
    from burn import nn
    from burn.data import DataLoaderBuilder, InMemDataset
    from burn.nn import functional as F
    from burn_train import LearnerBuilder, RegressionOutput, TrainOutput, TrainingInterrupter

    STOP = TrainingInterrupter()
    RANK = int(os.environ.get("PMI_RANK", "0"))

    class Line(nn.Module):
        def __init__(self, device):
            self.fc = nn.LinearConfig(2, 1).init(device)
            self.steps = 0

        def train_step(self, batch):
            x, y = batch
            self.steps += 1
            if RANK == 1 and self.steps == 3:  # rank 1 alone is interrupted, inside its third step
                STOP.stop("interrupted on rank 1")
            out = self.fc(x)
            loss = F.mse_loss(out, y)
            return TrainOutput(self, RegressionOutput(loss, out, y), loss.backward())

    dev = burn.device("cpu", autodiff=True)
    batch = lambda items, device: (
        burn.tensor([[float(i), 1.0] for i in items], device=device),
        burn.tensor([[2.0 * i] for i in items], device=device),
    )
    loader = DataLoaderBuilder(batch).batch_size(4).set_device(dev).build(InMemDataset(list(range(40))))
    model = Line(dev)
    learner = (
        LearnerBuilder(sys.argv[1]).num_epochs(3).renderer("none").system_metrics(False)
        .metric_logs(csv=False, plots=False).interrupter(STOP).summary().build(model, burn.optim.SgdConfig().init(), 1e-3)
    )
    learner.fit(loader)
    result = {"steps": learner.model.steps, "reason": STOP.reason, "summary": learner.summary and learner.summary.reason}
    with open(os.path.join(sys.argv[1], f"..", f"interrupt-{RANK}.json"), "w") as handle:
        json.dump(result, handle)
"""


def test_an_interrupt_on_one_rank_stops_every_rank_after_the_same_step(tmp_path):
    script = _write(tmp_path, "interrupt.py", INTERRUPT)
    done = _mpiexec(2, script, str(tmp_path / "artifacts"), env=_env(BURN_DDP_TIMEOUT="20"))
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads((tmp_path / f"interrupt-{r}.json").read_text()) for r in range(2)]
    assert [r["steps"] for r in results] == [3, 3]  # 10 steps per epoch, 3 epochs: stopped at step 3
    assert (
        results[0]["reason"] == "stopped on another rank" and results[1]["reason"] == "interrupted on rank 1"
    )
    assert results[0]["summary"] == "interrupted"


# ---------------------------------------------------------------------------- failures
FAILING = """
    import os, signal, sys, time
    import numpy as np
    from burn_train.distributed import world

    w = world()
    for step in range(50):
        if w.rank == 1 and step == 3:
            if sys.argv[1] == "hang":
                time.sleep(300)
            os.kill(os.getpid(), signal.SIGKILL)
        w.mpi.all_reduce(np.ones(100, np.float32))
    print(f"finished {w.rank}", flush=True)
"""


def test_hung_rank_fails_the_others_within_the_timeout(tmp_path):
    script = _write(tmp_path, "fail.py", FAILING)
    started = time.monotonic()
    done = _mpiexec(2, script, "hang", env=_env(BURN_DDP_TIMEOUT="2"))
    elapsed = time.monotonic() - started
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert "CollectiveTimeoutError" in text and "did not complete within 2 s" in text, text
    assert "rank 0/2" in text and "aborting the MPI job" in text, text
    assert "finished" not in text
    assert elapsed < 25, elapsed


@pytest.mark.parametrize("cleanup", ["launcher", "watchdog"])
def test_killed_rank_ends_the_job(tmp_path, cleanup):
    """mpiexec ends the job when a rank dies; with its clean-up off, MPI's own error or the survivors'
    watchdog does (which one depends on where the survivor was when its peer died)."""
    script = _write(tmp_path, "fail.py", FAILING)
    cmd = [LAUNCHER, "-n", "2", sys.executable, str(script), "kill"]
    if cleanup == "watchdog":
        cmd.insert(1, "-disable-auto-cleanup")
    started = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT, env=_env(BURN_DDP_TIMEOUT="2")
    )
    elapsed = time.monotonic() - started
    text = done.stdout + done.stderr
    assert done.returncode != 0, text
    assert "finished" not in text
    # the launcher reports the dead rank (or, when the rank died while its proxy was writing to it, a
    # process-manager error); a survivor that was waiting reports its timed-out collective
    reports = ("Killed (signal 9)", "did not complete within 2 s", "process manager error")
    assert any(r in text for r in reports), text
    assert elapsed < 25, elapsed


# ---------------------------------------------------------------------------- several GPUs (NCCL)
def _nccl_gpus() -> int:
    """The GPUs NCCL ranks can use here: 0 without CuPy, its NCCL or a GPU."""
    burn_cuda = pytest.importorskip("burn_cuda", reason="NCCL comes with burn-cuda")
    if not burn_cuda.nccl_available()[0]:
        return 0

    return burn_cuda.device_count()


GPU_JOB_TIMEOUT = 300  # seconds: kernel compiles and NCCL's start on each rank


def test_nccl_ddp_over_several_gpus_matches_one_gpu(tmp_path):
    """The training script on cuda, one rank per GPU (up to 4) reducing over NCCL, fit 2 epochs then
    resumed to 3: every rank on its own GPU, the same params as one process on one GPU fed the same
    global batches (GPU reductions run in other orders: rtol 1e-4), replicas identical."""
    gpus = _nccl_gpus()
    if gpus < 2:
        pytest.skip(f"needs 2 or more NVIDIA GPUs with CuPy and NCCL (found {gpus})")
    script = _write(tmp_path, "train.py", TRAIN)
    env = _env(BURN_TEST_DEVICE="cuda", NCCL_NVLS_ENABLE="0")  # never NVLink multicast (shared hosts)
    ref, _ = _one_process(script, tmp_path / "one", env, GPU_JOB_TIMEOUT)
    n = min(gpus, 4)
    job = tmp_path / "job"
    job.mkdir()
    done = _mpiexec(n, script, str(job), "1", "resume", env=env, timeout=GPU_JOB_TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    want = _result(ref, 0)
    assert want["run"]["collective"] is None
    rank0 = _result(job, 0)
    for rank in range(n):
        got = _result(job, rank)
        devices = [d.split("+")[0] for d in got["run"]["devices"]]  # the GPU, without its decorators
        assert got["run"]["collective"] == "nccl" and devices == [f"cuda:{rank}"], got["run"]
        for stage in ("first", "last"):
            for name, value in want[stage].items():
                np.testing.assert_allclose(
                    got[stage][name], value, rtol=1e-4, atol=1e-5, err_msg=f"{stage} {name} rank {rank}"
                )
                assert np.array_equal(got[stage][name], rank0[stage][name]), (stage, name, rank)
