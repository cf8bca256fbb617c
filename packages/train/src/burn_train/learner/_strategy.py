"""How a train step runs on the devices (Burn's learning strategies): ``SingleDevice`` and ``DataParallel``.

A strategy owns the train loader(s), the per-step batches, the ``train_step`` call(s) and what the
optimizer receives; the learner owns the loop around it (learning rate, optimizer, events, stopping).
Each step is a list of ``(device index, batch)``; ``train_step`` returns the outputs in that order, the
model the optimizer updates and its gradients.

Whether a device's items are read to the host on the training thread is decided once, when the
strategy is made, from the backend's declared ``host_memory`` (see ``sync_on_train_thread``).

``DataParallel``: the train loader is split into one contiguous part per device (``loader.split(n)``,
each part ``.to_device(dev)``). Each step takes the next batch of every part that still has one; device
``k`` runs ``train_step`` on its own replica of the model; the replicas' gradients are moved to the main
device (the first one) and averaged, weighted by the number of items each replica saw, so that for a
loss that is a mean over items the step equals one step on the union of the batches. The optimizer then
steps once on the main device and the replicas are refreshed from it before their next ``train_step``.

Replicas run one after the other on the training thread, not on a thread per device as in Burn:
Python's GIL serialises the op dispatch that dominates small steps anyway, device backends queue their
work so a sequential dispatch still overlaps device execution, and neither the Autodiff tape nor the
wgpu command recorder is meant to be driven from several threads. It also runs unchanged where threads
do not exist (Pyodide). Nothing here waits on the event processor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._output import TrainOutput

Step = list[tuple[int, Any]]  # (device index, batch) of each device that takes part in a step


def sync_on_train_thread(device: Any, where: str = "auto") -> bool:
    """Whether items of ``device`` are read to the host on the training thread (else on the processor).

    ``where`` is ``LearnerBuilder.sync_items``: ``"train"`` or ``"processor"`` force it; ``"auto"``
    asks the backend: primitives in host memory (numpy) are immutable once made, so the processor's
    thread may read them; device backends batch commands in Python state, so their reads stay on the
    training thread. No device (a model that cannot tell) counts as host memory.
    """
    if where != "auto":
        return where == "train"
    if device is None:
        return False
    return not device.inner.backend.host_memory


def _checked(out: Any) -> TrainOutput:
    if not isinstance(out, TrainOutput):
        raise TypeError(f"train_step must return a TrainOutput, got {type(out).__name__}")
    return out


def _item_count(item: Any) -> int | None:
    """Samples in a replica's batch (``len(item)``), or None when the item cannot tell."""
    try:
        n = len(item)
    except TypeError:
        return None
    return n if isinstance(n, int) and n > 0 else None


class Strategy:
    """The common part: ``loaders`` (one per device), ``sync_here`` (one decision per device)."""

    loaders: list[Any]
    sync_here: tuple[bool, ...]

    def set_epoch(self, epoch: int) -> None:
        """Order the coming epoch by ``epoch`` only (0-based), so resuming replays it exactly."""
        for loader in self.loaders:
            if hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)

    def steps(self) -> Iterator[Step]:
        raise NotImplementedError

    def train_step(self, model: Any, step: Step) -> tuple[list[tuple[int, TrainOutput]], Any, Any]:
        """``(outputs by device index, model to update, its gradients)`` of one step."""
        raise NotImplementedError

    def stepped(self) -> None:
        """The optimizer changed the params."""

    # hooks of multi-process strategies (burn_train.distributed); one process needs none of them
    def start(self, learner: Any, first: int) -> int:
        """Before the first epoch (after a resume): returns the first epoch to train."""
        return first

    def decide(self, local: Callable[[], bool]) -> bool:
        """A decision every process must share (early stopping): here, ``local()``."""
        return local()

    def should_stop(self, interrupter: Any) -> bool:
        """Whether to stop now; processes of one job answer the same after the same step."""
        return bool(interrupter.should_stop())

    def share_epoch_values(self, store: Any) -> None:
        """After an epoch's values are in ``store``: give every process the same values (here: nothing)."""

    def valid_batches(self, loader: Any) -> Iterable[Any]:
        """The validation batches this process runs."""
        return loader

    def valid_items(self, model: Any, batch: Any) -> list[Any]:
        """The items of one validation batch that this process reports to its metrics."""
        return [model.valid_step(batch)]


class SingleDevice(Strategy):
    """One device: ``model.train_step`` on each batch of ``loader``; its gradients go to the optimizer.

    ``device`` is where the model lives (None when nobody can tell).
    """

    def __init__(self, device: Any, loader: Any, sync_items: str = "auto") -> None:
        self.device = device
        self.loaders = [loader]
        self.sync_here = (sync_on_train_thread(device, sync_items),)

    def steps(self) -> Iterator[Step]:
        return ([(0, batch)] for batch in self.loaders[0])

    def train_step(self, model: Any, step: Step) -> tuple[list[tuple[int, TrainOutput]], Any, Any]:
        ((_, batch),) = step
        out = _checked(model.train_step(batch))
        return [(0, out)], out.model, out.grads


class DataParallel(Strategy):
    """Several devices: the per-device loaders, the model replicas and the gradient reduction.

    ``devices[0]`` is the main device: it holds the model the optimizer updates, the optimizer state and
    the summed gradients.
    """

    def __init__(self, devices: list[Any], loader: Any, sync_items: str = "auto") -> None:
        missing = [name for name in ("split", "to_device") if not hasattr(loader, name)]
        if missing:
            raise TypeError(
                f"Learner.fit on {len(devices)} devices: the train loader must be a burn.data.DataLoader "
                f"(with split(n) and to_device(device)); {type(loader).__name__} has no {', '.join(missing)}"
            )
        self.devices = list(devices)
        self.main = self.devices[0]
        self.loaders = [part.to_device(dev) for part, dev in zip(loader.split(len(devices)), devices)]
        self.sync_here = tuple(sync_on_train_thread(dev, sync_items) for dev in self.devices)
        self._replicas: list[Any] | None = None

    # ---------------------------------------------------------------- data
    def steps(self) -> Iterator[Step]:
        """One epoch: per step, ``(device index, batch)`` for every part that still has a batch.

        Parts of unequal length (the last part takes the remainder) end at different steps; the
        remaining devices go on alone, as in Burn.
        """
        iterators: list[Any] = [iter(loader) for loader in self.loaders]
        try:
            while True:
                step = []
                for k, it in enumerate(iterators):
                    if it is None:
                        continue
                    try:
                        step.append((k, next(it)))
                    except StopIteration:
                        iterators[k] = None
                if not step:
                    return
                yield step
        finally:  # an interrupted epoch stops every loader's workers
            for it in iterators:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

    # ---------------------------------------------------------------- model
    def replicas(self, model: Any) -> list[Any]:
        """The model on every device: ``model`` itself on the main one, copies (same param ids) on the
        others, made again only after ``stepped()`` (the optimizer changed the params)."""
        if self._replicas is None:
            if not callable(getattr(model, "to", None)):
                raise TypeError(
                    f"Learner.fit on {len(self.devices)} devices: the model ({type(model).__name__}) must have "
                    "to(device) returning a copy on that device (burn.nn.Module has it) to make its replicas"
                )
            self._replicas = [model] + [model.to(dev) for dev in self.devices[1:]]
        else:
            self._replicas[0] = model
        return self._replicas

    def stepped(self) -> None:
        self._replicas = None  # replicas are copied again before their next step

    def train_step(self, model: Any, step: Step) -> tuple[list[tuple[int, TrainOutput]], Any, Any]:
        """``train_step`` of each device's replica on its batch, in device order; the main replica's
        returned model (it carries its running states; the others only give gradients) and the
        reduced gradients."""
        replicas = self.replicas(model)
        outs = [(k, _checked(replicas[k].train_step(batch))) for k, batch in step]
        main = next((out.model for k, out in outs if k == 0), model)
        return outs, main, self.reduce(main, outs)

    def reduce(self, model: Any, outs: list[tuple[int, TrainOutput]]) -> Any:
        """The replicas' gradients on the main device, averaged with weights ``n_k / sum(n)`` (items per
        replica; equal weights when an item has no ``len``). Returns an ``optim.GradientsParams``."""
        from burn.optim import GradientsParams

        counts = [_item_count(out.item) for _, out in outs]
        if None in counts:
            weights = [1.0 / len(outs)] * len(outs)
        else:
            total = sum(counts)  # type: ignore[arg-type]
            weights = [n / total for n in counts]  # type: ignore[operator]
        target = self.main.inner
        dtypes = {p.id: p.value.dtype for p in model.params()}
        summed: dict[str, Any] = {}
        for (_, out), weight in zip(outs, weights):
            grads = out.grads
            if not isinstance(grads, GradientsParams):
                grads = GradientsParams.from_grads(grads, out.model)
            for pid, g in grads.items():
                g = g.to(target)
                if pid in dtypes:
                    g = g.cast(dtypes[pid])  # wgpu replicas give float32 grads to a float64 main model
                if weight != 1.0:
                    g = g * weight
                summed[pid] = g if pid not in summed else summed[pid] + g
        return GradientsParams(summed)
