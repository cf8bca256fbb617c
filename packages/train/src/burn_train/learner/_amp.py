"""Mixed precision for the Learner (``LearnerBuilder.mixed_precision``): autocast around the steps, a
``burn.amp.GradScaler`` between backward and the optimizer, and the scaler's state in checkpoints.

``train_step`` calls ``loss.backward()`` itself, so the scale enters as the backward seed
(``GradScaler.scaled_backward``) rather than through the model's code: models train unchanged.
With gradient accumulation each batch's gradients are unscaled before they are summed, and the
optimizer step is skipped when any batch of the window had an inf/NaN gradient.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("burn_train")

DTYPES = ("float16", "bfloat16")


@dataclass
class AmpOptions:
    """What ``LearnerBuilder.mixed_precision`` collected."""

    dtype: str
    loss_scaling: bool
    init_scale: float
    growth_factor: float
    backoff_factor: float
    growth_interval: int


class MixedPrecision:
    """The learner's view of mixed precision: ``train()``/``valid()`` contexts and ``unscale``."""

    def __init__(self, options: AmpOptions) -> None:
        import burn

        self.options = options
        self.dtype = burn.dtype(options.dtype)
        self.scaler = burn.amp.GradScaler(
            options.init_scale,
            options.growth_factor,
            options.backoff_factor,
            options.growth_interval,
            enabled=options.loss_scaling,
        )
        self._window_inf = False  # an inf/NaN gradient in the current accumulation window

    def check_devices(self, devices: list[Any]) -> None:
        """A clear error before training when a device lacks the dtype (bfloat16 on wgpu, numpy without
        ml_dtypes or CuPy < 14; float16 on a wgpu adapter without shader-f16)."""
        import burn

        for dev in devices:
            burn.amp.autocast(self.dtype, device=dev)

    @contextlib.contextmanager
    def train(self) -> Iterator[None]:
        """A train step: forward and backward under autocast, backward seeded with the scale. numpy's
        overflow warnings are silenced: an overflowing float16 gradient is what the scaler looks for
        (the step is skipped and logged), not a problem to report."""
        import burn
        import numpy as np

        with burn.amp.autocast(self.dtype), self.scaler.scaled_backward():
            with np.errstate(over="ignore", invalid="ignore"):
                yield

    def valid(self) -> Any:
        import burn

        return burn.amp.autocast(self.dtype)

    def unscale(self, grads: Any) -> Any:
        """This batch's gradients divided by the scale; remembers whether any was inf/NaN."""
        scaler = self.scaler
        grads = scaler.unscale(grads)
        if scaler.enabled and not scaler.all_finite(grads):
            self._window_inf = True
        return grads

    def finish_window(self) -> bool:
        """End of an accumulation window (or a single step): True when the optimizer may step. Adapts
        the scale either way."""
        found_inf, self._window_inf = self._window_inf, False
        scaler = self.scaler
        scaler.last_step_skipped = found_inf
        if found_inf:
            scaler.skipped_steps += 1
            log.info(
                "mixed precision: inf/NaN gradients at scale %g; optimizer step skipped, scale backed off",
                scaler.get_scale(),
            )
        scaler.update(found_inf)
        return not found_inf

    def record(self) -> dict[str, Any]:
        return {"dtype": self.options.dtype, **self.scaler.record()}

    def load_record(self, record: dict[str, Any] | None) -> None:
        if record is None:
            log.warning("mixed precision: the checkpoint has no loss-scaler state; starting from init_scale")
            return
        self.scaler.load_record(record)
