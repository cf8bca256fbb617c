"""Learner.fit: the training loop of Burn 0.16 (train epoch, valid epoch, checkpoint, early stop).

The loop only computes and hands events to the processor; it never waits on it per batch. At each
epoch end it flushes the processor on its own thread (draining what is left, see
``processor._processors``) so that epoch values exist for checkpoint keep-best and early stopping.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from burn import autotune
from burn.autotune import tune_pending
from burn.fusion import fusion_of
from burn.optim import Optimizer

from .._events import EndEpochEvent, EndEvent, ItemEvent, Progress, StartEvent, StatusEvent, TrainingProgress
from .._interrupter import sigint_deferred
from ..processor import MetricsHub, MetricSlot, make_processor
from ..renderer import make_renderer
from ..renderer._state import Points
from ._builder import LearnerConfig
from ._reads import BatchedReads
from ._strategy import DataParallel, SingleDevice, Strategy
from ._summary import LearnerSummary

log = logging.getLogger("burn_train")


class _Sizes:
    """Items per batch and per epoch of a loader, for progress and ETA (batches when unknown)."""

    def __init__(self, loader: Any) -> None:
        self.batches = len(loader) if hasattr(loader, "__len__") else 0
        batch_size = getattr(loader, "batch_size", None)
        items = loader.num_items() if hasattr(loader, "num_items") else None
        if isinstance(batch_size, int) and isinstance(items, int) and batch_size > 0:
            self.batch_size, self.total = batch_size, min(items, self.batches * batch_size)
        else:
            self.batch_size, self.total = 1, self.batches

    def done_after(self, batch_index: int) -> int:
        return min((batch_index + 1) * self.batch_size, self.total) if self.total else batch_index + 1


def _point(loader: Any, device: Any) -> None:
    """Make ``loader`` batch onto ``device`` (loaders with a ``device`` attribute: burn.data's)."""
    if loader is not None and hasattr(loader, "device") and loader.device != device:
        log.info("pointing a data loader at %s (was %s)", device, loader.device)
        loader.device = device


def _host_rng_state() -> Any:
    from burn.backend import host_rng

    return host_rng().bit_generator.state


def _set_host_rng_state(state: Any) -> None:
    from burn.backend import host_rng

    host_rng().bit_generator.state = state


class Learner:
    """Built by ``LearnerBuilder.build``; ``fit(train_loader, valid_loader)`` returns the trained model."""

    def __init__(self, config: LearnerConfig, model: Any, optim: Any, lr_or_scheduler: Any) -> None:
        self.config = config
        self.model = model
        self.optim = optim
        self.scheduler = None if isinstance(lr_or_scheduler, (int, float)) else lr_or_scheduler
        self.lr = float(lr_or_scheduler) if self.scheduler is None else None
        self.summary: LearnerSummary | None = None
        self.device_description = ""  # what fit trains on, in words (set by fit)
        self._completed: int | None = None  # the last epoch fit ran to its end
        # start-up costs: when fit began, tuning and fusion seconds then, and when the first step returned
        self._start: tuple[float, float, dict[str, float]] = (0.0, 0.0, {})
        self._first_step_s: float | None = None
        self._compiled = 0.0  # compile seconds (``burn.autotune.compile_seconds``) when fit began
        self._devices: list[Any] = []  # the devices fit trains on
        self.store: Any = None
        self.processor: Any = None
        self.checkpointer: Any = None
        self.strategy: Strategy | None = None  # set by fit: SingleDevice, or DataParallel on several devices
        self._world: Any = None  # burn_train.distributed.World when fit trains over MPI ranks
        self.amp: Any = None  # learner._amp.MixedPrecision with LearnerBuilder.mixed_precision
        if config.mixed_precision is not None:
            from ._amp import MixedPrecision

            self.amp = MixedPrecision(config.mixed_precision)

    @property
    def scaler(self) -> Any:
        """The ``burn.amp.GradScaler`` of mixed-precision training (None without it)."""
        return None if self.amp is None else self.amp.scaler

    @property
    def interrupter(self) -> Any:
        """Call ``learner.interrupter.stop()`` (from any thread or callback) to stop after the batch."""
        return self.config.interrupter

    # ---------------------------------------------------------------- setup
    def _metric_slots(self) -> dict[str, list[MetricSlot]]:
        slots = {
            split: [MetricSlot(m, numeric) for m, numeric in pairs]
            for split, pairs in self.config.metrics.items()
        }
        for slot in (s for split in slots.values() for s in split):
            check = getattr(slot.metric, "check_available", None)
            if check is not None:
                ok, reason = check()
                if not ok:
                    raise RuntimeError(f"metric {slot.metric.name!r} cannot run here: {reason}")
        if self.config.system_metrics:
            from ..metric._system import CollectorMetric, CpuMemory, CpuUse, available_collectors

            special = {"cpu-use": CpuUse, "cpu-memory": CpuMemory}
            for name, ok, reason in available_collectors():
                if not ok:
                    log.info("metric collector %s unavailable: %s", name, reason)
                    continue
                for split in ("train", "valid"):
                    taken = {getattr(s.metric, "collector_name", None) for s in slots[split]}
                    if name not in taken:
                        cls = special.get(name)
                        metric = (
                            cls(self.config.system_interval)
                            if cls
                            else CollectorMetric(name, interval=self.config.system_interval)
                        )
                        metric.known_available = True  # probed just above: not again at its start
                        slots[split].append(MetricSlot(metric, True))
        return slots

    def _loggers(self) -> list[Any]:
        if not self.config.csv_logs:
            return []
        from ..logger import CsvMetricLogger

        return [CsvMetricLogger(self.config.directory)]

    def _strategy(self, train_loader: Any, valid_loader: Any) -> Strategy:
        """Move the model to the main device, point the loaders at it, and pick the strategy."""
        c = self.config
        if self._world is not None:  # one process per device, launched by MPI
            from ..distributed._strategy import make_strategy

            return make_strategy(self, train_loader, self._world)
        if not c.devices:  # the model stays where it is
            found = self.model.devices() if hasattr(self.model, "devices") else []
            return SingleDevice(found[0] if found else None, train_loader, c.sync_items)
        device = c.devices[0]
        if hasattr(self.model, "devices") and hasattr(self.model, "to") and self.model.devices() != [device]:
            moved = self.model.to(device)
            self.model = self.model if moved is None else moved
        if len(c.devices) > 1:
            # the user's loader stays as it is: each device gets a part of it, batching onto that device
            strategy: Strategy = DataParallel(c.devices, train_loader, c.sync_items)
        else:
            _point(train_loader, device)
            strategy = SingleDevice(device, train_loader, c.sync_items)
        _point(valid_loader, device.inner)
        return strategy

    def _resume(self) -> int:
        epoch = self.config.resume_epoch
        if epoch is None:
            return 1
        self.model, self.optim, self.scheduler, state = self.checkpointer.load(
            epoch, self.model, self.optim, self.scheduler
        )
        if state.get("rng") is not None:
            _set_host_rng_state(state["rng"])
        if self.amp is not None:
            self.amp.load_record(state.get("amp"))
        self._restore_history(epoch)
        log.info("resumed from the checkpoint of epoch %d", epoch)
        return epoch + 1

    def _restore_history(self, epoch: int) -> None:
        """Epoch values of the run being resumed (for the summary, keep-best and early stopping)."""
        from ..logger import read_epochs_csv
        from ..logger._csv import truncate_epochs_csv

        scales = {name: scale for name, (_, scale) in self.hub.units().items()}
        values: dict[str, dict[str, dict[int, float]]] = {}
        for split in ("train", "valid"):
            path = os.path.join(self.config.directory, split, "epochs.csv")
            if not os.path.exists(path):
                continue
            if self.config.writes:  # rows after the checkpoint are retrained: never two rows of one epoch
                truncate_epochs_csv(path, epoch)
            for name, series in read_epochs_csv(path, scales).items():
                for e, value in series.items():
                    if e <= epoch:
                        values.setdefault(split, {}).setdefault(name, {})[e] = value
        self.store.restore(values)

    # ---------------------------------------------------------------- fit
    def fit(self, train_loader: Any, valid_loader: Any = None) -> Any:
        """Train for the configured epochs; returns the trained model (also ``learner.model``).

        A missing resume checkpoint raises ``FileNotFoundError`` before anything is written. On
        KeyboardInterrupt (Ctrl-C, or ``k`` in the dashboard) the summary and plots of what was trained
        are written, then the KeyboardInterrupt propagates (a script decides how to exit).
        """
        from ..distributed._strategy import active_world, rank_config

        self._world = active_world(self.config.distributed)  # None unless launched over MPI ranks
        if self._world is not None:  # ranks other than 0 train the same but write nothing
            self.config = rank_config(self.config, self._world.rank)
        c = self.config
        self.summary = None
        if c.resume_epoch is not None:
            from ..checkpoint._file import resume_problem

            problem = resume_problem(os.path.join(c.directory, "checkpoint"), c.resume_epoch)
            if problem is not None:
                raise FileNotFoundError(problem)
        if self.amp is not None and c.devices:
            self.amp.check_devices(c.devices)  # before anything is written
        if c.writes:
            os.makedirs(c.directory, exist_ok=True)
        self.device_description = self._describe()
        app_log = None
        if c.app_log:
            from ..logger import AppLogger
            from ..logger._app import run_separator

            details = f"on {self.device_description}"
            if c.resume_epoch:
                details += f"; resuming from the checkpoint of epoch {c.resume_epoch}"
            app_log = AppLogger(os.path.join(c.directory, c.app_log), header=run_separator(details))
        started = time.monotonic()
        self._start, self._first_step_s = (started, autotune.seconds(), {}), None
        self._compiled = autotune.compile_seconds()
        self.hub = MetricsHub(self._metric_slots(), make_renderer(c.renderer), self._loggers(), c.interrupter)
        self.store = self.hub.store
        self.processor = make_processor(self.hub, c.processor)
        self._reads = BatchedReads(self.processor.submit, c.read_interval)
        if c.checkpointer:
            from ..checkpoint import FileCheckpointer

            self.checkpointer = FileCheckpointer(os.path.join(c.directory, "checkpoint"), c.policy)
        reason, trained = "failed", False
        try:
            self.strategy = self._strategy(train_loader, valid_loader)
            found = getattr(self.strategy, "device", None)  # the model's device when none was given
            self._devices = list(c.devices) or ([found] if found is not None else [])
            self._start = (started, self._start[1], _fusion_seconds(self._devices))
            if self.amp is not None and not c.devices and found is not None:
                self.amp.check_devices([found])
            first = self.strategy.start(self, self._resume())
            log.info(
                "training epochs %d..%d with the %s event processor", first, c.num_epochs, self.processor.mode
            )
            self.processor.start()
            sizes = {"train": sum(_Sizes(loader).total for loader in self.strategy.loaders)}
            if valid_loader is not None:
                sizes["valid"] = _Sizes(valid_loader).total
            self.processor.submit(StartEvent(c.num_epochs, first, sizes, self.device_description))
            trained = True  # from here on, the summary and plots describe this run
            self.processor.flush()  # the first frame is drawn now, before the first batch
            reason = self._epochs(first, valid_loader)
        except KeyboardInterrupt:
            killed = c.interrupter.reason.startswith("killed")
            reason = "killed" if killed else "interrupted by Ctrl-C"
            raise
        finally:
            with sigint_deferred():
                self._finish(reason, started, app_log, trained)
        return self.model

    def _describe(self) -> str:
        """What this fit trains on, in words (devices, adapter, precision, rank)."""
        from ._describe import describe_run

        devices = list(self.config.devices)
        if not devices and hasattr(self.model, "devices"):
            devices = list(self.model.devices())[:1]
        amp = self.config.mixed_precision
        precision = amp.dtype if amp is not None else "float32"
        world = self._world
        return describe_run(devices, precision, world.rank if world else 0, world.size if world else 1)

    def _epochs(self, first: int, valid_loader: Any) -> str:
        c = self.config
        self._completed = first - 1
        for epoch in range(first, c.num_epochs + 1):
            self._train_epoch(epoch)
            if self._fitting().should_stop(c.interrupter):
                self.processor.submit(StatusEvent(f"interrupted in epoch {epoch}: {c.interrupter.reason}"))
                log.info("training interrupted in epoch %d: %s", epoch, c.interrupter.reason)
                return "interrupted"
            if valid_loader is not None:
                self._valid_epoch(epoch, valid_loader)
                if self._fitting().should_stop(c.interrupter):
                    log.info("training interrupted in validation of epoch %d", epoch)
                    return "interrupted"
            self.processor.flush()  # epoch values now in the store
            self._fitting().share_epoch_values(self.store)
            if self.checkpointer is not None:
                self._checkpoint(epoch)
            self._completed = epoch
            if c.early_stopping is not None and self._fitting().decide(
                functools.partial(c.early_stopping.should_stop, epoch, self.store)
            ):
                best = c.early_stopping.best_epoch(epoch, self.store)
                text = f"early stopping at epoch {epoch}: no improvement of {c.early_stopping.metric} since epoch {best}"
                self.processor.submit(StatusEvent(text))
                log.info(text)
                return "early stopped"
        return "completed"

    def _next_lr(self) -> float:
        if self.scheduler is not None:
            return float(self.scheduler.step())
        assert self.lr is not None  # a float lr when there is no scheduler (__init__)
        return self.lr

    def _fitting(self) -> Strategy:
        """The strategy ``fit`` picked (set before the first epoch)."""
        assert self.strategy is not None, "the strategy is picked by fit()"
        return self.strategy

    def _startup(self, devices: Any) -> dict[str, float]:
        """What starting cost this run: seconds until the first training step returned, and the host
        seconds fit spent tuning kernels, waiting for kernel compiles and, on fused devices, planning streams (first launches and
        compiles included) and capturing graphs."""
        if self._first_step_s is None:
            return {}
        _, tuned, fused = self._start
        out = {"first_step_s": self._first_step_s, "tune_s": autotune.seconds() - tuned}
        out["compile_s"] = autotune.compile_seconds() - self._compiled
        for k, v in _fusion_seconds(devices).items():
            out[f"{k}_s"] = v - fused.get(k, 0.0)
        return {k: round(v, 3) for k, v in out.items()}

    def _train_epoch(self, epoch: int) -> None:
        c = self.config
        strategy = self._fitting()
        strategy.set_epoch(epoch - 1)  # epoch e's order depends on e only: resuming replays it exactly
        sizes = [_Sizes(part) for part in strategy.loaders]
        total = sum(s.total for s in sizes)
        accumulator = None
        if c.grads_accumulation > 1:
            from burn.optim import GradientsAccumulator

            accumulator = GradientsAccumulator()
        batches = [0] * len(sizes)  # batches done per device, for progress
        iteration = 0
        for step in strategy.steps():
            lr = self._next_lr()
            with self.amp.train() if self.amp is not None else contextlib.nullcontext():
                outs, model, grads = strategy.train_step(self.model, step)
            if self._optimize(lr, model, grads, accumulator):
                strategy.stepped()
                if not isinstance(self.optim, Optimizer):  # burn.optim's ran the queued tuning already
                    tune_pending()
            else:  # no optimizer step (accumulating, or skipped): the step ends here all the same
                tune_pending()
            if self._first_step_s is None:
                self._first_step_s = time.monotonic() - self._start[0]
            for k, out in outs:
                batches[k] += 1
                iteration += 1
                done = sum(s.done_after(b - 1) for s, b in zip(sizes, batches) if b)
                self._emit(
                    "train", out.item, Progress(done, total), iteration, epoch, lr, strategy.sync_here[k]
                )
            if self._fitting().should_stop(c.interrupter):
                break
        self._reads.flush()  # the epoch's last items reach the metrics before its end
        self.processor.submit(EndEpochEvent("train", epoch))

    def _optimize(self, lr: float, model: Any, grads: Any, accumulator: Any) -> bool:
        """Step the optimizer (or accumulate until ``grads_accumulation`` batches); True when it stepped.

        With mixed precision the gradients are unscaled first, and a window with an inf/NaN gradient
        skips the step (the params stay as they are; the scale backs off)."""
        amp = self.amp
        if amp is not None:
            grads = amp.unscale(grads)
        if accumulator is None:
            if amp is not None and not amp.finish_window():
                self.model = model
                return False
            self.model = self.optim.step(lr, model, grads)
            return True
        accumulator.accumulate(model, grads)
        self.model = model
        if accumulator.count >= self.config.grads_accumulation:
            summed = accumulator.grads()
            if amp is not None and not amp.finish_window():
                return False
            self.model = self.optim.step(lr, model, summed)
            return True
        return False

    def _valid_epoch(self, epoch: int, loader: Any) -> None:
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch - 1)
        sizes = _Sizes(loader)
        sync_here = self._fitting().sync_here[0]  # validation runs on the main device
        model = self.model.valid() if hasattr(self.model, "valid") else self.model
        if not hasattr(model, "valid_step"):
            raise TypeError(f"the model ({type(model).__name__}) must define valid_step(batch) to validate")
        strategy = self._fitting()
        for i, batch in enumerate(strategy.valid_batches(loader)):
            progress = Progress(sizes.done_after(i), sizes.total)
            with self.amp.valid() if self.amp is not None else contextlib.nullcontext():
                items = strategy.valid_items(model, batch)
            for item in items:
                self._emit("valid", item, progress, i + 1, epoch, None, sync_here)
            tune_pending()  # kernels first met in validation tune between its batches
            if strategy.should_stop(self.config.interrupter):
                break
        self._reads.flush()
        self.processor.submit(EndEpochEvent("valid", epoch))

    def _emit(
        self, split: str, item: Any, progress: Progress, iteration: int, epoch: int, lr: Any, sync_here: bool
    ) -> None:
        if hasattr(item, "detach"):
            item = item.detach()  # drop the autodiff graph now; no device sync
        where = TrainingProgress(progress, epoch, self.config.num_epochs, iteration)
        # device items are read here, on the training thread, a few steps at a time (see _reads)
        self._reads.add(ItemEvent(split, item, where, lr), sync_here and hasattr(item, "sync"))
        self.processor.raise_pending_error()

    def _checkpoint(self, epoch: int) -> None:
        extra = {"rng": _host_rng_state(), "time": time.time()}
        if self.config.run_id is not None:
            extra["run_id"] = self.config.run_id
        if self.amp is not None:
            extra["amp"] = self.amp.record()
        # written on a worker thread while the next epoch trains (the files stay atomic); old ones the
        # policy drops are deleted after the new one is complete
        self.checkpointer.save(
            epoch, self.model, self.optim, self.scheduler, extra, store=self.store, background=True
        )

    def _finish(self, reason: str, started: float, app_log: Any, trained: bool) -> None:
        """End of fit: summary first (cheap, and what matters most), then plots while the dashboard
        still shows "writing plots…", then the renderer gives the terminal back and the summary is
        printed. A fit that failed before training started writes neither (the previous run's stay)."""
        c = self.config
        try:
            self._flush_reads(reason)
            self.processor.submit(EndEvent(reason))
            if trained:
                self.processor.flush(raise_errors=False)
                duration = time.monotonic() - started
                self.summary = LearnerSummary.from_store(
                    self.store,
                    duration,
                    reason,
                    self._best_metric(),
                    c.resume_epoch,
                    self.hub.units(),
                    completed=self._completed,
                )
                self.summary.detail = c.interrupter.reason
                self.summary.device = self.device_description
                self.summary.startup = self._startup(self._devices)
                if self.checkpointer is not None:
                    self.checkpointer.join()  # the epochs it lists are on disk (an error is raised below)
                    self.summary.checkpointed = self.checkpointer.epochs()
                if c.summary:
                    self.summary.save(c.directory)
                if c.plots:
                    self._save_plots()
        finally:
            try:
                self._wait_checkpoint(reason)  # its files were written while the summary and plots were
            finally:
                try:
                    self.processor.close()
                finally:
                    if trained and c.summary and self.summary is not None:
                        print(self.summary, flush=True)
                    log.info("training %s after %.1f s", reason, time.monotonic() - started)
                    if app_log is not None:
                        app_log.close()

    @staticmethod
    def _ending_with_error(reason: str) -> bool:
        """Whether fit is ending because an exception is propagating (failure, Ctrl-C, kill)."""
        return reason == "failed" or reason.startswith(("killed", "interrupted by Ctrl-C"))

    def _wait_checkpoint(self, reason: str) -> None:
        """Join the last background checkpoint write; its error is raised unless fit is already
        ending with one (then it is logged: the previous checkpoint is intact either way)."""
        if self.checkpointer is None:
            return
        if not self._ending_with_error(reason):
            self.checkpointer.wait()
            return
        try:
            self.checkpointer.wait()
        except Exception as exc:
            log.error("the last checkpoint could not be written: %s: %s", type(exc).__name__, exc)

    def _flush_reads(self, reason: str) -> None:
        """Hand the processor the items still waiting for their read. When fit ends with an error
        the device may be unable to read them: they are dropped then (that error is what matters)."""
        if not self._ending_with_error(reason):
            self._reads.flush()
            return
        try:
            self._reads.flush()
        except Exception as exc:
            log.info("dropped %d unread items after a failure: %s", self._reads.drop(), exc)

    def _best_metric(self) -> tuple[str, str] | None:
        c = self.config
        if c.early_stopping is not None:
            return (c.early_stopping.metric, c.early_stopping.split)
        if c.policy is not None:
            policies = getattr(c.policy, "policies", [c.policy])
            return next(((p.metric, p.split) for p in policies if hasattr(p, "metric")), None)
        return None

    def _save_plots(self) -> None:
        from ..logger import plots_available, save_plots

        ok, reason = plots_available()
        if not ok:
            log.info("no plots: %s", reason)
            return
        self.processor.submit(StatusEvent("writing plots…"))
        self.processor.flush(raise_errors=False)  # on screen before the ~1 s matplotlib takes
        history: dict[str, Mapping[str, Points]] = {}
        for name in self.hub.state.snapshot().numeric:
            history.update(self.hub.state.snapshot(history_of=name).history)
        folder = os.path.join(self.config.directory, "plots")
        paths = save_plots(self.store, history, folder, units=self.hub.state.units)
        self.processor.submit(StatusEvent(f"plots written to {folder}"))
        log.info("plots written: %s", ", ".join(paths) or "none")


def _fusion_seconds(devices: Any) -> dict[str, float]:
    """Planning and graph-capture seconds of the fusion decorators under ``devices``, summed."""
    total: dict[str, float] = {}
    for dev in devices or ():
        fusion = fusion_of(dev)
        for k, v in fusion.seconds.items() if fusion is not None else ():
            total[k] = total.get(k, 0.0) + v
    return total
