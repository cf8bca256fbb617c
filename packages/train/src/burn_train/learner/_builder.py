"""LearnerBuilder: Burn 0.16's builder, every setter returns the builder.

>>> learner = (LearnerBuilder("artifacts")
...            .metric_train_numeric(LossMetric()).metric_valid_numeric(AccuracyMetric())
...            .with_file_checkpointer().devices([adev]).num_epochs(10)
...            .early_stopping(metric="Loss", patience=3)
...            .renderer("auto").summary().build(model, opt, 1e-3))       # doctest: +SKIP
>>> model = learner.fit(train_loader, valid_loader)                       # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .._interrupter import TrainingInterrupter
from ..checkpoint import CheckpointPolicy, ComposedPolicy, KeepBest, KeepLastN
from ._early_stopping import EarlyStopping


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"LearnerBuilder.{name}: expected an int >= 1, got {value!r}")
    return value


@dataclass
class LearnerConfig:
    """Everything the builder collected (read by ``Learner``)."""

    directory: str
    metrics: dict[str, list[tuple[Any, bool]]] = field(default_factory=lambda: {"train": [], "valid": []})
    num_epochs: int = 1
    grads_accumulation: int = 1
    devices: list[Any] = field(default_factory=list)
    checkpointer: bool = False
    policy: CheckpointPolicy | None = None
    resume_epoch: int | None = None
    early_stopping: EarlyStopping | None = None
    renderer: Any = "auto"
    interrupter: TrainingInterrupter = field(default_factory=TrainingInterrupter)
    summary: bool = False
    processor: str = "auto"
    system_metrics: bool = True
    system_interval: float = 1.0
    app_log: str | None = "experiment.log"
    csv_logs: bool = True
    plots: bool = True
    sync_items: str = "auto"
    read_interval: float = 0.1  # seconds between batched reads of device items (0: every step)
    # burn_train.distributed.DistributedOptions; None: data-parallel when an MPI launcher started several ranks
    distributed: Any = None
    writes: bool = True  # False on ranks other than 0 of a distributed job: no file, no terminal output
    mixed_precision: Any = None  # learner._amp.AmpOptions; None: float32 training
    run_id: str | None = None  # written into every checkpoint: a resume can check it is the same run


class LearnerBuilder:
    """Configures a ``Learner``; ``directory`` receives checkpoints, logs, plots and the summary."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._c = LearnerConfig(os.fspath(directory))
        self._early_stopping_split_given = False

    # ---------------------------------------------------------------- metrics
    def _metric(self, split: str, metric: Any, numeric: bool) -> LearnerBuilder:
        if not all(hasattr(metric, a) for a in ("update", "clear", "name", "epoch_value")):
            raise TypeError(
                f"LearnerBuilder.metric_{split}: expected a burn_train metric (update/clear/epoch_value), "
                f"got {type(metric).__name__}"
            )
        if any(m is metric for m, _ in self._c.metrics[split]):
            raise ValueError(
                f"LearnerBuilder.metric_{split}: this {type(metric).__name__} instance is already added"
            )
        self._c.metrics[split].append((metric, numeric))
        return self

    def metric_train(self, metric: Any) -> LearnerBuilder:
        """A train metric shown as text only."""
        return self._metric("train", metric, False)

    def metric_valid(self, metric: Any) -> LearnerBuilder:
        """A valid metric shown as text only."""
        return self._metric("valid", metric, False)

    def metric_train_numeric(self, metric: Any) -> LearnerBuilder:
        """A train metric that is also plotted, logged and usable for early stopping / keep-best."""
        return self._metric("train", metric, True)

    def metric_valid_numeric(self, metric: Any) -> LearnerBuilder:
        """A valid metric that is also plotted, logged and usable for early stopping / keep-best."""
        return self._metric("valid", metric, True)

    # ---------------------------------------------------------------- loop
    def num_epochs(self, n: int) -> LearnerBuilder:
        self._c.num_epochs = _positive_int("num_epochs", n)
        return self

    def grads_accumulation(self, n: int) -> LearnerBuilder:
        """Sum gradients over ``n`` batches before each optimizer step."""
        self._c.grads_accumulation = _positive_int("grads_accumulation", n)
        return self

    def devices(self, devices: list[Any]) -> LearnerBuilder:
        """Devices to train on (``burn.Device`` or names). The model lives on the first; with several,
        training is data-parallel: the train loader is split into one part per device, each device runs
        ``train_step`` on a replica, and their gradients are averaged on the first before each step."""
        from burn import device as as_device

        devices = list(devices)
        if not devices:
            raise ValueError("LearnerBuilder.devices: give at least one device")
        try:
            devices = [as_device(d) for d in devices]
        except TypeError as exc:
            raise TypeError(f"LearnerBuilder.devices: {exc}") from None
        repeated = [str(d) for i, d in enumerate(devices) if d in devices[:i]]
        if repeated:
            raise ValueError(
                f"LearnerBuilder.devices: expected each device once, got {', '.join(repeated)} more than once "
                f"in {[str(d) for d in devices]} (use 'cpu:1', 'wgpu:1', ... for distinct devices of one backend)"
            )
        self._c.devices = devices
        return self

    def distributed(
        self,
        enabled: bool | None = None,
        *,
        collective: str = "auto",
        timeout: float | None = None,
        bucket_mb: float = 25.0,
        overlap: bool = True,
    ) -> LearnerBuilder:
        """Data-parallel training over processes (MPI ranks: ``mpirun -n N`` or ``burn launch -n N``).

        ``enabled=None`` (the default, also without calling this) trains data-parallel whenever an MPI
        launcher started more than one rank; True forces it (one rank included), False turns it off.
        ``collective``: ``"auto"`` (NCCL on CUDA devices, MPI otherwise), ``"mpi"`` or ``"nccl"``.
        ``timeout``: seconds a rank waits for the others before the job is aborted (default
        ``BURN_DDP_TIMEOUT`` or 600). ``bucket_mb``: gradient bucket size in MiB. ``overlap``: each
        bucket starts its all-reduce as soon as backward has finished its gradients, while backward
        computes the rest (``train_step`` must return the gradients ``backward()`` gave; pass False
        to change them inside ``train_step``). The train loader's batch size is the global batch:
        each rank takes its part of every batch.
        """
        from ..distributed._options import DistributedOptions

        if isinstance(bucket_mb, bool) or not isinstance(bucket_mb, (int, float)) or not bucket_mb > 0:
            raise ValueError(f"LearnerBuilder.distributed: bucket_mb must be a number > 0, got {bucket_mb!r}")
        try:
            self._c.distributed = DistributedOptions(
                enabled, collective, timeout, max(1, int(bucket_mb * 2**20)), overlap
            )
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"LearnerBuilder.{exc}") from None
        return self

    def early_stopping(
        self,
        metric: str = "Loss",
        patience: int = 3,
        split: str | None = None,
        min_delta: float = 0.0,
        higher_is_better: bool | None = None,
    ) -> LearnerBuilder:
        """Stop when ``metric`` (its epoch value on ``split``) has not improved for ``patience`` epochs.

        ``split`` defaults to ``"valid"``, or to ``"train"`` when only train metrics carry that name
        (API.md's snippet registers Loss on train and Accuracy on valid); resolved in ``build``."""
        self._c.early_stopping = EarlyStopping(
            metric, patience, split or "valid", min_delta, higher_is_better
        )
        self._early_stopping_split_given = split is not None
        return self

    def interrupter(self, interrupter: TrainingInterrupter) -> LearnerBuilder:
        """Use this interrupter (call ``interrupter.stop()`` from anywhere to stop training)."""
        if not hasattr(interrupter, "should_stop"):
            raise TypeError(
                f"LearnerBuilder.interrupter: expected a TrainingInterrupter, got {interrupter!r}"
            )
        self._c.interrupter = interrupter
        return self

    def mixed_precision(
        self,
        dtype: str | None = "float16",
        *,
        loss_scaling: bool | None = None,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
    ) -> LearnerBuilder:
        """Train in mixed precision: ``train_step`` and ``valid_step`` run under
        ``burn.amp.autocast(dtype)`` (matmul, linear and conv in ``dtype``; softmax, losses, norms and
        sums in float32), params and optimizer state stay float32, and a ``burn.amp.GradScaler``
        scales the backward seed, unscales the gradients and skips the optimizer step on inf/NaN.

        ``dtype``: ``"float16"`` or ``"bfloat16"`` (None: off). ``loss_scaling`` defaults to on for
        float16 and off for bfloat16 (float32's range). The scaler's other arguments are
        ``GradScaler``'s; its state is saved in every checkpoint and restored on resume. A device
        without ``dtype`` (bfloat16 on wgpu, on numpy without ml_dtypes or CuPy < 14; float16 on a
        wgpu adapter without ``shader-f16``) is an error when ``fit`` starts.
        """
        from ._amp import DTYPES, AmpOptions

        if dtype is None:
            self._c.mixed_precision = None
            return self
        name = getattr(dtype, "name", dtype)
        if name not in DTYPES:
            raise ValueError(
                f"LearnerBuilder.mixed_precision: dtype must be 'float16', 'bfloat16' or None, got {dtype!r}"
            )
        if loss_scaling is None:
            loss_scaling = name == "float16"
        options = AmpOptions(
            name, bool(loss_scaling), init_scale, growth_factor, backoff_factor, growth_interval
        )
        from burn.amp import GradScaler

        try:  # the scaler's own checks, now rather than at fit
            GradScaler(init_scale, growth_factor, backoff_factor, growth_interval)
        except ValueError as exc:
            raise ValueError(f"LearnerBuilder.mixed_precision: {exc}") from None
        self._c.mixed_precision = options
        return self

    # ---------------------------------------------------------------- checkpoints
    def with_file_checkpointer(
        self, keep_last: int | None = 2, keep_best: str | None = "Loss"
    ) -> LearnerBuilder:
        """Checkpoint model, optimizer and scheduler every epoch under ``<directory>/checkpoint``,
        keeping the last ``keep_last`` epochs and the best valid ``keep_best`` (None disables either)."""
        policies: list[CheckpointPolicy] = []
        if keep_last is not None:
            policies.append(KeepLastN(keep_last))
        if keep_best is not None:
            policies.append(KeepBest(keep_best, "valid"))
        self._c.checkpointer = True
        self._c.policy = ComposedPolicy(*policies) if policies else CheckpointPolicy()
        return self

    def checkpointing_strategy(self, policy: CheckpointPolicy) -> LearnerBuilder:
        """Replace the keep policy (``KeepLastN``, ``KeepBest``, ``ComposedPolicy``)."""
        if not hasattr(policy, "keep"):
            raise TypeError(f"LearnerBuilder.checkpointing_strategy: expected a policy, got {policy!r}")
        self._c.checkpointer = True
        self._c.policy = policy
        return self

    def checkpoint(self, epoch: int) -> LearnerBuilder:
        """Resume from the checkpoint of ``epoch``: training continues at ``epoch + 1``."""
        self._c.resume_epoch = _positive_int("checkpoint", epoch)
        self._c.checkpointer = True
        return self

    def run_id(self, run_id: str) -> LearnerBuilder:
        """Name the run: every checkpoint's state records it (``checkpoint_run_id``), so a script can
        check that ``--resume`` continues the run it means (``examples/digits.py`` keeps it in
        ``run.json``)."""
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"run_id: expected a non-empty string, got {run_id!r}")
        self._c.run_id = run_id
        return self

    # ---------------------------------------------------------------- output
    def renderer(self, kind: Any = "auto") -> LearnerBuilder:
        """``"auto"`` (TUI on a terminal, CLI lines otherwise), ``"tui"``, ``"cli"``, ``"none"``, or a Renderer."""
        if isinstance(kind, str) and kind not in ("auto", "tui", "cli", "none"):
            from burn.plugins import registry

            if kind not in registry().renderers:
                raise ValueError(
                    f"LearnerBuilder.renderer: expected 'auto', 'tui', 'cli' or 'none', got {kind!r}"
                )
        self._c.renderer = kind
        return self

    def summary(self, enabled: bool = True) -> LearnerBuilder:
        """Print and save (summary.txt/json) a table of metrics per split and the best epoch at the end."""
        self._c.summary = bool(enabled)
        return self

    def event_processor(self, mode: str) -> LearnerBuilder:
        """``"auto"`` (worker thread where threads exist), ``"thread"`` or ``"inline"``."""
        if mode not in ("auto", "thread", "inline"):
            raise ValueError(
                f"LearnerBuilder.event_processor: expected 'auto', 'thread' or 'inline', got {mode!r}"
            )
        self._c.processor = mode
        return self

    def system_metrics(self, enabled: bool = True, interval: float = 1.0) -> LearnerBuilder:
        """Sample every available metric collector (CPU, GPU, ...) at most every ``interval`` seconds."""
        self._c.system_metrics, self._c.system_interval = bool(enabled), float(interval)
        return self

    def application_logger(self, filename: str | None = "experiment.log") -> LearnerBuilder:
        """Log file (relative to the directory) for ``burn``/``burn_train`` log records; None disables."""
        self._c.app_log = filename
        return self

    def metric_logs(self, csv: bool = True, plots: bool = True) -> LearnerBuilder:
        """Per-epoch CSV metric logs and PNG plots at the end (plots need matplotlib)."""
        self._c.csv_logs, self._c.plots = bool(csv), bool(plots)
        return self

    def sync_items(self, where: str, interval: float | None = None) -> LearnerBuilder:
        """Where items are read back to the host: ``"processor"`` (off the training thread),
        ``"train"`` (on the training thread, several steps' items with one device sync), or ``"auto"``
        (processor for the numpy backend, train for device backends whose command streams are not
        thread-safe). ``interval``: on the training thread, seconds between reads (default 0.1; the
        first items of each epoch, an epoch's end and big outputs are read sooner); 0 reads every
        step. Metrics get the same items in the same order either way."""
        if where not in ("auto", "processor", "train"):
            raise ValueError(
                f"LearnerBuilder.sync_items: expected 'auto', 'processor' or 'train', got {where!r}"
            )
        if interval is not None:
            if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
                raise ValueError(
                    f"LearnerBuilder.sync_items: interval must be a number of seconds >= 0, got {interval!r}"
                )
            self._c.read_interval = float(interval)
        self._c.sync_items = where
        return self

    def build(self, model: Any, optim: Any, lr_or_scheduler: Any) -> Any:
        """The Learner for ``model``, optimizer ``optim`` and a float lr or an lr scheduler."""
        from ._learner import Learner

        if not hasattr(model, "train_step"):
            raise TypeError(
                f"LearnerBuilder.build: the model ({type(model).__name__}) must define train_step(batch)"
            )
        if not hasattr(optim, "step"):
            raise TypeError(
                f"LearnerBuilder.build: optim must have step(lr, model, grads), got {type(optim).__name__}"
            )
        if isinstance(lr_or_scheduler, bool) or not (
            isinstance(lr_or_scheduler, (int, float)) or hasattr(lr_or_scheduler, "step")
        ):
            raise TypeError(
                f"LearnerBuilder.build: expected a float lr or an lr scheduler, got {type(lr_or_scheduler).__name__}"
            )
        if isinstance(lr_or_scheduler, (int, float)) and not lr_or_scheduler >= 0:
            raise ValueError(f"LearnerBuilder.build: lr must be >= 0, got {lr_or_scheduler!r}")
        stop = self._c.early_stopping
        if stop is not None and not self._early_stopping_split_given:
            named = {
                split for split, ms in self._c.metrics.items() if any(m.name == stop.metric for m, _ in ms)
            }
            stop.split = "train" if named == {"train"} else "valid"
        return Learner(self._c, model, optim, lr_or_scheduler)
