"""``DistributedDataParallel``: the Learner strategy for one process per device (Burn's DDP).

Each rank builds the same model; ``start`` makes every rank equal to rank 0 (params with their ids,
optimizer and scheduler state, the starting epoch: what rank 0 resumed from its checkpoint). Each step
every rank runs ``train_step`` on its part of the global batch (``ShardedLoader``), the gradients are
averaged over all ranks weighted by items (``GradientReducer``), and every rank applies the same
optimizer step, so the replicas stay identical without sending params again.

Only rank 0 writes: its Learner renders, logs, checkpoints and prints the summary; the other ranks run
with a silent configuration (``rank_config``) and create no file. Each rank's items (loss, outputs,
targets read to the host) are gathered to rank 0, whose metrics therefore see every item of the global
batch: the epoch values it shows, logs and stops on are those of one process on the same data.
Decisions only rank 0 can take (early stopping) are broadcast; an interrupt on any rank (Ctrl-C, the
dashboard's key) is agreed in the step's small all-reduce so every rank stops after the same step.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from burn.distributed import DistributedError

from .._output import TrainOutput
from ..learner._strategy import Step, Strategy, _checked
from ._buckets import GradientReducer
from ._context import World, world
from ._env import auto_enabled
from ._options import DistributedOptions
from ._sampler import ShardedLoader


def active_world(options: Any) -> World | None:
    """The ``World`` when a fit with ``options`` (a ``DistributedOptions`` or None) trains over ranks."""
    opts = options if options is not None else DistributedOptions()
    if opts.enabled is False or (opts.enabled is None and not auto_enabled()):
        return None
    return world(opts.timeout)


def rank_config(config: Any, rank: int) -> Any:
    """``config`` for rank 0; for the others the same training with every output off (no file, no
    terminal output, no resume read: rank 0 sends the resumed state)."""
    if rank == 0:
        return config
    return dataclasses.replace(
        config,
        renderer="none",
        app_log=None,
        csv_logs=False,
        plots=False,
        summary=False,
        checkpointer=False,
        policy=None,
        resume_epoch=None,
        system_metrics=False,
        writes=False,
    )


@contextmanager
def _early_gradients(model: Any, reduction: Any, early: dict[str, Any]) -> Iterator[None]:
    """While ``train_step`` runs, hand each param's gradient to ``reduction`` the moment backward has
    it final, so full buckets start reducing while backward computes the rest (overlap)."""
    import burn_autodiff
    from burn.backend import from_primitive

    pid_of: dict[int, str] = {}
    inner = None
    for p in model.params():
        value = p.value
        if getattr(p, "require_grad", True) and value.backend.is_autodiff:
            nid = value.backend.node_id(value.primitive)
            if nid is not None:
                pid_of[nid] = p.id
                inner = value.backend.inner

    def hand_over(leaf: int, grad: Any) -> None:
        pid = pid_of.get(leaf)
        if pid is None or pid in early:  # not a param, or a second backward in the step: at the end
            return
        early[pid] = grad
        reduction.add(pid, from_primitive(grad, inner))

    with burn_autodiff.leaf_gradients(hand_over):
        yield


def _synced(item: Any) -> Any:
    """An item as host data (what travels to rank 0): detached from autodiff, tensors read."""
    if item is None:
        return None
    if hasattr(item, "detach"):
        item = item.detach()
    if hasattr(item, "sync"):
        item = item.sync()
    return item


class DistributedDataParallel(Strategy):
    """One rank of a data-parallel job: ``device`` is this rank's device, ``loader`` the global
    train loader (a ``burn.data.DataLoader`` whose batch size is the global batch)."""

    def __init__(
        self,
        world: World,
        device: Any,
        loader: Any,
        options: DistributedOptions,
        interrupter: Any,
    ) -> None:
        self.world = world
        self.rank, self.size = world.rank, world.size
        self.device = device
        self.options = options
        self.interrupter = interrupter
        self.loaders = [ShardedLoader(loader, r, world.size, device) for r in range(world.size)]
        self.sync_here = (True,) * world.size  # items arrive on rank 0 as host data
        inner = getattr(device, "inner", device)
        self.collective = world.collective_for(inner, options.collective)
        self.reducer: GradientReducer | None = None
        self._stop = False  # agreed by every rank in the last step's reduction (sticky)

    # ---------------------------------------------------------------- start
    def start(self, learner: Any, first: int) -> int:
        """Make every rank's model, optimizer, scheduler and first epoch those of rank 0."""
        host = self.world.mpi
        payload = None
        if self.rank == 0:
            model = learner.model
            scheduler = learner.scheduler
            payload = {
                "record": model.record(),
                "ids": {name: p.id for name, p in model.named_params()},
                "optim": learner.optim.record() if hasattr(learner.optim, "record") else None,
                "scheduler": scheduler.record() if hasattr(scheduler, "record") else None,
                "first": first,
            }
        payload = host.broadcast_object(payload, 0)
        if self.rank != 0:
            loaded = learner.model.load_record(payload["record"], ids=payload["ids"])
            learner.model = learner.model if loaded is None else loaded
            if payload["optim"] is not None:
                loaded = learner.optim.load_record(payload["optim"])
                learner.optim = learner.optim if loaded is None else loaded
            if payload["scheduler"] is not None and learner.scheduler is not None:
                loaded = learner.scheduler.load_record(payload["scheduler"])
                learner.scheduler = learner.scheduler if loaded is None else loaded
        inner = getattr(self.device, "inner", self.device)
        self.reducer = GradientReducer(self.collective, learner.model, inner, self.options.bucket_bytes)
        self._check_same_model(self.reducer.signature())
        return int(payload["first"])

    def _check_same_model(self, signature: str) -> None:
        import numpy as np

        sums = self.world.mpi.all_gather(np.array([zlib.crc32(signature.encode())], dtype=np.int64))[:, 0]
        odd = [r for r, s in enumerate(sums.tolist()) if s != sums[0]]
        if odd:
            raise DistributedError(
                f"distributed: rank(s) {odd} built a model whose trainable params (ids, shapes, dtypes) differ "
                "from rank 0's; every rank must build the same model"
            )

    # ---------------------------------------------------------------- steps
    def steps(self) -> Iterator[Step]:
        epoch = iter(self.loaders[self.rank])
        try:
            for batch, items in epoch:
                yield [(self.rank, (batch, items))]
        finally:
            epoch.close()
        if self.reducer is not None:  # the last step's all-reduces, within the timeout
            self.reducer.wait()

    def train_step(self, model: Any, step: Step) -> tuple[list[tuple[int, TrainOutput]], Any, Any]:
        """This rank's ``train_step``, the averaged gradients, and on rank 0 every rank's item."""
        from burn.optim import GradientsParams

        if self.reducer is None:
            raise DistributedError("DistributedDataParallel.train_step before start()")
        ((_, (batch, items)),) = step
        reduction = self.reducer.start(items)
        out = None
        if batch is not None:
            early: dict[str, Any] = {}  # param id -> the gradient backward handed over as it finished
            if self.options.overlap:
                with _early_gradients(model, reduction, early):
                    out = _checked(model.train_step(batch))
            else:
                out = _checked(model.train_step(batch))
            grads = out.grads
            if not isinstance(grads, GradientsParams):
                grads = GradientsParams.from_grads(grads, out.model)
            for pid, _, _ in self.reducer.params:  # the layout's order: buckets fill one after another
                g = grads.get(pid)
                if pid in early:
                    if g is None or g.primitive is not early[pid]:
                        raise DistributedError(
                            f"distributed: train_step returned a gradient of param {pid} other than the one "
                            "backward() computed (it was already being reduced); to change gradients inside "
                            "train_step, build the learner with .distributed(overlap=False)"
                        )
                elif g is not None:
                    reduction.add(pid, g)
        reduction.stop = self.interrupter.should_stop()  # after this rank's step: a stop inside it counts
        reduced, _, stop = reduction.finish()
        self._agree(stop)
        main = out.model if out is not None else model
        gathered = self.world.mpi.gather_object(_synced(out.item if out is not None else None), 0)
        outs = [
            (r, TrainOutput(main, item=it, grads=reduced))
            for r, it in enumerate(gathered or [])
            if it is not None
        ]
        return outs, main, reduced

    # ---------------------------------------------------------------- validation
    def valid_batches(self, loader: Any) -> Iterator[Any]:
        inner = getattr(self.device, "inner", self.device)
        epoch = iter(ShardedLoader(loader, self.rank, self.size, inner))
        try:
            yield from epoch
        finally:
            epoch.close()

    def valid_items(self, model: Any, batch: Any) -> list[Any]:
        part, _ = batch
        item = _synced(model.valid_step(part)) if part is not None else None
        gathered, stop = self.world.mpi.gather_object_flag(item, self.interrupter.should_stop(), 0)
        self._agree(stop)
        return [it for it in gathered or [] if it is not None]

    def _agree(self, stop: bool) -> None:
        if stop and not self._stop:
            self._stop = True
            if not self.interrupter.should_stop():
                self.interrupter.stop("stopped on another rank")

    def should_stop(self, interrupter: Any) -> bool:
        """The stop agreed by every rank in the last step (a later local stop counts at the next step)."""
        return self._stop

    def share_epoch_values(self, store: Any) -> None:
        """Rank 0's epoch values (of every metric, from every rank's items) into every rank's store, so
        code reading ``learner.store`` after ``fit`` sees the same values on every rank."""
        values = self.world.mpi.broadcast_object(store.values if self.rank == 0 else None, 0)
        if self.rank != 0:
            store.restore(values)

    def decide(self, local: Callable[[], bool]) -> bool:
        """Rank 0's ``local()`` on every rank (the others do not evaluate it)."""
        return bool(self.world.mpi.broadcast_object(bool(local()) if self.rank == 0 else None, 0))


def make_strategy(learner: Any, train_loader: Any, world: World) -> DistributedDataParallel:
    """Pick this rank's device, move the model there, and make the strategy (called by ``Learner.fit``)."""
    c = learner.config
    options = c.distributed if c.distributed is not None else DistributedOptions()
    if len(c.devices) > 1:
        raise DistributedError(
            f"distributed training: give one device per rank (LearnerBuilder.devices), got {len(c.devices)}; "
            "launch one rank per device instead (burn launch -n N)"
        )
    model = learner.model
    found = model.devices() if hasattr(model, "devices") else []
    given = c.devices[0] if c.devices else (found[0] if found else getattr(train_loader, "device", None))
    if given is None:
        raise DistributedError(
            "distributed training: cannot tell the model's device; use LearnerBuilder.devices"
        )
    device = world.device_for(given)  # cuda / cuda:0 -> this rank's GPU on a machine with several ranks
    if hasattr(model, "to") and found and found != [device]:
        moved = model.to(device)
        learner.model = model if moved is None else moved
    return DistributedDataParallel(world, device, train_loader, options, c.interrupter)
