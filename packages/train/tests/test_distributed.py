"""burn_train.distributed in one process: the sampler, the bucket plan, the launch-environment probe,
argument checks, ``burn launch``'s command line, and the DDP strategy on a single MPI rank (which must
train exactly like the plain single-device learner). Multi-rank jobs: test_distributed_mpi.py."""

from __future__ import annotations

import argparse
import sys

import burn
import numpy as np
import pytest
from burn.data import DataLoaderBuilder, InMemDataset
from burn_train import LearnerBuilder
from burn_train.distributed import DistributedOptions, ShardedLoader, plan_buckets, shard_bounds
from burn_train.distributed._env import auto_enabled, launched_size, timeout_from_env
from burn_train.distributed._launch import command, configure, help_line, render_info

from ._models import TinyMlp, adev, loaders


def _ints(n: int, batch: int, seed: int | None = 7, workers: int = 0):
    builder = DataLoaderBuilder(lambda items, device: list(items)).batch_size(batch).num_workers(workers)
    if seed is not None:
        builder = builder.shuffle(seed)
    return builder.build(InMemDataset(list(range(n))))


# ---------------------------------------------------------------------------- sampler
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_shard_bounds_cover_each_batch_once(size):
    for n in range(0, 23):
        parts = [shard_bounds(n, r, size) for r in range(size)]
        assert parts[0][0] == 0 and parts[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))  # contiguous, in rank order
        sizes = [b - a for a, b in parts]
        assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("workers", [0, 2])
def test_ranks_split_every_global_batch(size, workers):
    loader = _ints(23, batch=5, workers=workers)
    for epoch in (0, 1, 4):
        want = loader.batch_indices(epoch)
        ranks = []
        for r in range(size):
            shard = ShardedLoader(loader, r, size)
            shard.set_epoch(epoch)
            ranks.append(list(shard))
        for k, batch in enumerate(want):
            parts = [ranks[r][k] for r in range(size)]
            assert [n for _, n in parts] == [len(b or []) for b, _ in parts]
            assert [i for b, _ in parts for i in (b or [])] == batch  # rank order = batch order
        assert sum(ShardedLoader(loader, r, size).num_items() for r in range(size)) == 23


def test_shards_are_deterministic_per_seed_and_epoch():
    a, b = ShardedLoader(_ints(40, 8), 1, 2), ShardedLoader(_ints(40, 8), 1, 2)
    assert a.shards(3) == b.shards(3)
    assert a.shards(3) != a.shards(4)
    assert ShardedLoader(_ints(40, 8, seed=8), 1, 2).shards(3) != a.shards(3)
    epoch0, epoch1 = list(a), list(a)  # iterating moves to the next epoch, like a DataLoader
    assert [x for x, _ in epoch0] == a.shards(0) and [x for x, _ in epoch1] == a.shards(1)


def test_an_empty_part_is_none():
    # 9 items in batches of 4: the last global batch has 1 item, so ranks 1 and 2 get nothing of it
    parts = [list(ShardedLoader(_ints(9, 4, seed=None), r, 3)) for r in range(3)]
    assert parts[0][-1] == ([8], 1) and parts[1][-1] == (None, 0) and parts[2][-1] == (None, 0)
    assert len(ShardedLoader(_ints(9, 4), 0, 3)) == 3


def test_sharded_loader_checks_its_arguments():
    with pytest.raises(TypeError, match="must be a burn.data.DataLoader"):
        ShardedLoader([[1, 2], [3]], 0, 2)
    with pytest.raises(ValueError, match="0 <= rank < size"):
        ShardedLoader(_ints(4, 2), 2, 2)
    with pytest.raises(ValueError, match="set_epoch"):
        ShardedLoader(_ints(4, 2), 0, 2).set_epoch(-1)


# ---------------------------------------------------------------------------- buckets
def test_buckets_group_by_dtype_and_size():
    f32, f64 = burn.float32, burn.float64
    params = [("a", (10,), f32), ("b", (3, 4), f64), ("c", (5,), f32), ("d", (100,), f32), ("e", (2,), f32)]
    buckets = plan_buckets(params, bucket_bytes=64)
    layout = [(b.dtype.name, [s.pid for s in b.slots], b.numel) for b in buckets]
    # in the order buckets fill: b (96 B of float64) is full at once; a (40 B) + c (20 B) fit in 64 B
    # and close when d (400 B, alone) comes; e starts a new bucket, closed at the end
    assert layout == [
        ("float64", ["b"], 12),
        ("float32", ["a", "c"], 15),
        ("float32", ["d"], 100),
        ("float32", ["e"], 2),
    ]
    (c,) = [s for b in buckets for s in b.slots if s.pid == "c"]
    assert (c.offset, c.size, c.index) == (10, 5, 2)
    with pytest.raises(ValueError, match="bucket_bytes"):
        plan_buckets(params, bucket_bytes=0)


# ---------------------------------------------------------------------------- environment, options
def test_launch_environment():
    assert launched_size({}) is None and not auto_enabled({})
    assert launched_size({"PMI_SIZE": "4", "PMI_RANK": "1"}) == 4
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    assert launched_size({"PMIX_RANK": "0", "SLURM_NTASKS": "8"}) == 8
    assert launched_size({"SLURM_NTASKS": "8"}) is None  # a Slurm job step without an MPI launch
    assert auto_enabled({"PMI_SIZE": "2"}) and not auto_enabled({"PMI_SIZE": "1"})
    assert not auto_enabled({"PMI_SIZE": "2", "BURN_DISTRIBUTED": "0"})
    assert timeout_from_env({}) == 600.0 and timeout_from_env({"BURN_DDP_TIMEOUT": "2.5"}) == 2.5
    with pytest.raises(ValueError, match="BURN_DDP_TIMEOUT"):
        timeout_from_env({"BURN_DDP_TIMEOUT": "soon"})


def test_distributed_options_are_checked():
    b = LearnerBuilder("unused")
    with pytest.raises(ValueError, match="collective must be one of auto, mpi, nccl"):
        b.distributed(collective="gloo")
    with pytest.raises(ValueError, match="timeout must be"):
        b.distributed(timeout=0)
    with pytest.raises(ValueError, match="bucket_mb"):
        b.distributed(bucket_mb=-1)
    with pytest.raises(TypeError, match="enabled must be None, True or False"):
        DistributedOptions(enabled="yes")  # type: ignore[arg-type]
    assert b.distributed(True, bucket_mb=1)._c.distributed.bucket_bytes == 2**20


# ---------------------------------------------------------------------------- burn launch
def _launch_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    return parser.parse_args(list(argv))


def test_launch_command_line():
    args = _launch_args("-n", "4", "--launcher-args=-hosts a,b", "train.py", "--epochs", "3")
    assert command(args, "/x/mpiexec") == [
        "/x/mpiexec",
        "-n",
        "4",
        "-hosts",
        "a,b",
        sys.executable,
        "train.py",
        "--epochs",
        "3",
    ]
    args = _launch_args("-n", "2", "-m", "burn_train.examples.digits", "--epochs", "1")
    assert command(args, "mpiexec")[-4:] == ["-m", "burn_train.examples.digits", "--epochs", "1"]
    with pytest.raises(SystemExit):
        _launch_args("-n", "0", "train.py")


def test_launch_cli_errors_and_info(tmp_path, capsys):
    from burn._cli import main

    assert main(["launch", "-n", "2", str(tmp_path / "nope.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert main(["launch", "-n", "3", "--dry-run", str(script), "--lr", "0.1"]) == 0
    assert f"-n 3 {sys.executable} {script} --lr 0.1" in capsys.readouterr().out
    assert main(["launch", str(script)]) == 2  # no -n
    assert "-n/--np" in capsys.readouterr().err
    assert main(["launch", "--info"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == {"mpi", "nccl"}
    assert (" unavailable " in lines["nccl"]) == (not _has_gpu())
    from burn.plugins import registry

    assert "launch" in registry().commands  # so `burn info` lists it, with its availability line


def test_launch_help_line_and_info_rendering():
    pytest.importorskip("mpi4py")
    assert "mpi available" in help_line()
    text = render_info(
        [
            {"name": "mpi", "available": True, "reason": "ok"},
            {"name": "nccl", "available": False, "reason": "no GPU"},
        ]
    )
    assert "mpi   available    ok" in text and "nccl  unavailable  no GPU" in text


def _has_gpu() -> bool:
    """Whether the nccl collective (burn-cuda's plugin) can run here: CuPy with NCCL and a GPU."""
    from burn.plugins import registry

    spec = registry().collectives.get("nccl")
    return spec is not None and spec.is_available()[0]


# ---------------------------------------------------------------------------- one rank, in this process
def _fit(
    directory,
    distributed: bool | None,
    device=None,
    epochs: int = 2,
    collective: str = "auto",
    bucket_mb: float = 25.0,
    overlap: bool = True,
    model_cls=TinyMlp,
):
    burn.seed(1)
    dev = device or adev()
    train, valid = loaders(dev, n_train=70, n_valid=20, batch_size=16)
    builder = (
        LearnerBuilder(directory)
        .num_epochs(epochs)
        .renderer("none")
        .system_metrics(False)
        .metric_logs(plots=False)
        .with_file_checkpointer(keep_best=None)
    )
    if distributed is not None:
        builder = builder.distributed(
            distributed, collective=collective, timeout=30, bucket_mb=bucket_mb, overlap=overlap
        )
    model = model_cls(dev, dropout=0.0)
    learner = builder.build(model, burn.optim.AdamConfig().init(), 1e-2)
    return learner, learner.fit(train, valid)


def test_one_rank_ddp_trains_like_a_single_device(tmp_path):
    pytest.importorskip("mpi4py")
    plain_learner, plain = _fit(tmp_path / "plain", None)
    ddp_learner, ddp = _fit(tmp_path / "ddp", True)
    assert type(ddp_learner.strategy).__name__ == "DistributedDataParallel"
    assert type(plain_learner.strategy).__name__ == "SingleDevice"
    for name, value in plain.record().items():
        np.testing.assert_allclose(ddp.record()[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    assert (tmp_path / "ddp" / "checkpoint" / "model-2.safetensors").exists()  # rank 0 writes


def test_a_launcher_of_another_mpi_is_a_clear_error(monkeypatch):
    """mpiexec of one MPI starting processes whose mpi4py loaded another: each process is a job of its
    own (rank 0 of 1) while the launcher's environment says N ranks. World refuses that, naming both."""
    pytest.importorskip("mpi4py")
    from burn_train.distributed import DistributedError, World

    for name in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMI_SIZE", "3")  # what MPICH's launcher sets for a 3-rank job
    with pytest.raises(DistributedError, match=r"launcher started 3 ranks, but MPI sees a job of 1 \(.+\)"):
        World(5.0)
    monkeypatch.setenv("PMI_SIZE", "1")
    assert World(5.0).size == 1  # a launcher of one rank agrees with this process's MPI


def test_one_rank_reducer_returns_the_gradients():
    pytest.importorskip("mpi4py")
    from burn.optim import GradientsParams
    from burn_train.distributed import GradientReducer, world

    dev = adev()
    model = TinyMlp(dev, dropout=0.0)
    x = burn.randn((5, 1, 8, 8), device=dev)
    grads = GradientsParams.from_grads((model(x) ** 2).mean().backward(), model)
    for mode in ("host", "device"):
        reducer = GradientReducer(world().mpi, model, dev.inner, bucket_bytes=1024)
        reducer.mode = mode  # "device": one cat and one read per bucket (what GPU backends use)
        assert len(reducer.buckets) > 1
        step = reducer.start(weight=5)
        skipped = model.fc1.bias.id  # a param without a gradient stays without one
        for pid, g in grads.items():
            if pid != skipped:
                step.add(pid, g)
        out, total, stop = step.finish()
        assert total == 5 and not stop and skipped not in out.ids()
        for pid, g in grads.items():
            if pid != skipped:
                np.testing.assert_allclose(out.get(pid).numpy(), g.numpy(), rtol=1e-6, atol=1e-7)


class _HostBackedDeviceCollective:
    """A plugin offering a device collective for the numpy backend (``ndarray``), over MPI host copies:
    what burn-cuda's NCCL is for ``cuda``, so the plugin route is tested without a GPU."""

    def __init__(self) -> None:
        self.made: list = []

    @burn.plugins.hookimpl
    def burn_register_collectives(self, register):
        from burn.distributed import DeviceCollective

        made = self.made

        class HostBacked(DeviceCollective):
            name = "hostbacked"

            def __init__(self, host, device):
                self.mpi, self.device = host, device
                self.rank, self.size, self.timeout = host.rank, host.size, host.timeout
                self.packed = 0
                made.append(self)

            @property
            def host(self):
                return self.mpi

            def all_reduce_async(self, buf, op="sum"):
                return self.mpi.all_reduce_async(buf, op)

            def broadcast_async(self, buf, root=0):
                return self.mpi.broadcast_async(buf, root)

            def all_gather(self, buf):
                return self.mpi.all_gather(buf)

            def barrier(self):
                self.mpi.barrier()

            def pack(self, flat, scale):
                self.packed += 1
                return np.array(flat.numpy(), dtype=np.float32) * np.float32(scale)

            def unpack(self, buf, scale, parts, device):
                buf *= scale
                return [
                    burn.from_numpy(buf[o : o + n].reshape(shape), device=device) for o, n, shape in parts
                ]

        register(
            burn.plugins.CollectiveSpec(
                name="hostbacked",
                backends=("ndarray",),
                factory=lambda host, device: HostBacked(host, device),
            )
        )


def test_a_collective_a_backend_plugin_registers_is_picked_and_trains_like_one_device(tmp_path):
    """``collective="auto"`` takes the collective a plugin registered for the device's backend (as
    burn-cuda's NCCL for cuda), gradients go through its pack/unpack, and training is unchanged."""
    pytest.importorskip("mpi4py")
    from burn.distributed import device_collectives
    from burn_train.distributed import DistributedError, world

    plugin = _HostBackedDeviceCollective()
    burn.plugins.register_plugin(plugin, name="hostbacked-test")
    try:
        assert [s.name for s in device_collectives(burn.device("cpu"))] == ["hostbacked"]
        assert world().collective_for(burn.device("cpu"), "mpi") is world().mpi
        _, plain = _fit(tmp_path / "plain", None, epochs=1)
        learner, ddp = _fit(tmp_path / "ddp", True, epochs=1)
        assert learner.strategy.collective.name == "hostbacked" and plugin.made[-1].packed > 0
        for name, value in plain.record().items():
            np.testing.assert_allclose(ddp.record()[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        with pytest.raises(DistributedError, match="the HOSTBACKED collective needs a ndarray device"):
            world().collective_for(None, "hostbacked")
    finally:
        burn.plugins.unregister_plugin(plugin)
        world()._collectives.clear()


def test_buckets_start_reducing_during_backward(tmp_path, monkeypatch):
    """Overlap: with small buckets, the first buckets' all-reduce starts while backward still runs
    (its frames are on the stack), and training equals a single device either way."""
    pytest.importorskip("mpi4py")
    import inspect

    from burn_train.distributed import MpiCollective

    launched_in_backward = []
    real = MpiCollective.all_reduce_async

    def spy(self, buf, op="sum"):
        launched_in_backward.append(any(f.function == "run_backward" for f in inspect.stack()))
        return real(self, buf, op)

    monkeypatch.setattr(MpiCollective, "all_reduce_async", spy)
    plain_learner, plain = _fit(tmp_path / "plain", None, epochs=1)
    runs = {}
    for overlap in (True, False):
        _, runs[overlap] = _fit(tmp_path / f"ddp{overlap}", True, epochs=1, bucket_mb=0.0005, overlap=overlap)
        assert launched_in_backward and any(launched_in_backward) is overlap
        launched_in_backward.clear()
    for name, value in plain.record().items():
        for overlap in (True, False):
            np.testing.assert_allclose(
                runs[overlap].record()[name], value, rtol=1e-5, atol=1e-6, err_msg=name
            )


def test_overlap_refuses_gradients_changed_inside_train_step(tmp_path):
    pytest.importorskip("mpi4py")
    from burn_train import TrainOutput

    class Scaled(TinyMlp):
        def train_step(self, batch):
            out = super().train_step(batch)
            from burn.optim import GradientsParams

            grads = GradientsParams.from_grads(out.grads, self)
            scaled = GradientsParams()
            for pid, g in grads.items():
                scaled.register(pid, g * 0.5)
            return TrainOutput(self, item=out.item, grads=scaled)

    with pytest.raises(Exception, match="overlap=False"):
        _fit(tmp_path / "on", True, epochs=1, model_cls=Scaled)
    _, trained = _fit(tmp_path / "off", True, epochs=1, model_cls=Scaled, overlap=False)
    assert trained is not None


# ---------------------------------------------------------------------------- NCCL (GPU only)
def test_nccl_one_rank_all_reduce_and_ddp(tmp_path):
    if not _has_gpu():
        pytest.skip("needs CuPy with NCCL and an NVIDIA GPU")
    pytest.importorskip("mpi4py", reason="NCCL ranks rendezvous over MPI: pip install 'burn-core[mpi]'")
    import cupy
    from burn_train.distributed import world

    c = world().collective_for(burn.device("cuda"), "nccl")
    assert c.name == "nccl"
    buf = cupy.arange(8, dtype=cupy.float32)
    assert cupy.asnumpy(c.all_reduce(buf, "sum")).tolist() == list(range(8))
    assert cupy.asnumpy(c.broadcast(buf, 0)).tolist() == list(range(8))
    assert c.all_gather(buf).shape == (1, 8)
    c.barrier()
    cuda = burn.device("cuda", autodiff=True)
    _, plain = _fit(tmp_path / "plain", None, cuda)
    learner, ddp = _fit(tmp_path / "ddp", True, cuda, collective="nccl")
    assert learner.strategy.collective.name == "nccl"
    for name, value in plain.record().items():
        np.testing.assert_allclose(ddp.record()[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_nccl_step_leaves_its_reduction_on_the_stream(tmp_path):
    """An NCCL step's finish() does not wait for its own all-reduces (they run on burn-cuda's stream,
    before the kernels that read them): it keeps them pending and waits for them in the next step's
    finish (or in wait()). The averaged gradients are right all the same."""
    if not _has_gpu():
        pytest.skip("needs CuPy with NCCL and an NVIDIA GPU")
    pytest.importorskip("mpi4py", reason="NCCL ranks rendezvous over MPI: pip install 'burn-core[mpi]'")
    from burn.nn import functional as F
    from burn.optim import GradientsParams
    from burn_train.distributed import GradientReducer, world

    dev = burn.device("cuda", autodiff=True)
    model = TinyMlp(dev)
    reducer = GradientReducer(world().collective_for(dev.inner, "nccl"), model, dev.inner, 64)
    assert len(reducer.buckets) > 1  # several buckets, so several operations in flight
    x = burn.randn((8, 1, 8, 8), device=dev)
    previous = None
    for _ in range(2):
        grads = GradientsParams.from_grads(
            F.mse_loss(model(x), burn.zeros((8, 10), device=dev)).backward(), model
        )
        reduction = reducer.start(3.0)  # one rank: the weighted average is the gradient itself
        for pid, _, _ in reducer.params:
            reduction.add(pid, grads.get(pid))
        reduced, total, _ = reduction.finish()
        assert total == 3.0
        assert len(reducer.pending) == len(reducer.buckets)  # this step's, still on the stream
        assert previous is None or not set(map(id, previous)) & set(map(id, reducer.pending))
        previous = list(reducer.pending)
        for pid, _, _ in reducer.params:
            np.testing.assert_allclose(reduced.get(pid).numpy(), grads.get(pid).numpy(), rtol=1e-6, atol=1e-7)
    reducer.wait()
    assert reducer.pending == [] and all(w.done() for w in previous)
