"""FileCheckpointer: model, optimizer and scheduler records per epoch, written atomically.

Layout under ``<artifacts>/checkpoint``: ``model-<e>.safetensors`` (burn.record format, Param ids
included so optimizer state still matches after loading), ``optim-<e>.npz``, ``scheduler-<e>.npz`` and
``state-<e>.json`` (epoch, RNG state, extra). The state file is written last and deleted first, so an
epoch counts as checkpointed only when every part of it is on disk.

``save(..., background=True)`` reads and serializes everything on the calling thread (device reads stay
on the training thread) and writes the files on a worker thread while training goes on; ``wait()``
(called by the next save and at the end of fit) joins it and re-raises its error. The writes stay
atomic and in the same order, and checkpoints the policy drops are deleted only after the new one is
complete, so a crash at any point still leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from ._atomic import atomic_write, remove_stale_temps
from ._policy import CheckpointPolicy, ComposedPolicy, KeepBest, KeepLastN
from ._record_io import check_record_file, record_from_bytes, record_to_bytes

_PARTS = ("model", "optim", "scheduler")
log = logging.getLogger("burn_train")


def _model_to_bytes(model: Any) -> tuple[bytes, str]:
    try:
        from burn.nn import Module
        from burn.record import to_bytes
    except ImportError:  # burn.nn/record not available: fall back to the plain record
        pass
    else:
        if isinstance(model, Module):
            return to_bytes(model), "safetensors"
    record = {"record": model.record()}
    if hasattr(model, "param_ids"):
        record["ids"] = model.param_ids()
    return record_to_bytes(record), "npz"


def _model_from_bytes(model: Any, data: bytes, fmt: str, source: str) -> Any:
    if fmt == "safetensors":
        from burn.record import from_bytes

        loaded = from_bytes(model, data, source)
    else:
        record = record_from_bytes(data, source)
        ids = record.get("ids")
        loaded = model.load_record(record["record"], ids=ids) if ids else model.load_record(record["record"])
    return model if loaded is None else loaded


def checkpoint_epochs(directory: str | os.PathLike[str]) -> list[int]:
    """Epochs with a complete checkpoint (their state file exists) in ``directory``, ascending; ``[]``
    when it does not exist. Reads only: nothing is created or cleaned."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for name in names:
        if name.startswith("state-") and name.endswith(".json"):
            stem = name[len("state-") : -len(".json")]
            if stem.isdigit():
                out.append(int(stem))
    return sorted(out)


def resume_problem(directory: str | os.PathLike[str], epoch: Any) -> str | None:
    """Why training cannot resume from ``epoch``'s checkpoint in ``directory`` (one line naming the
    available epochs), or None when it can."""
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        return f"cannot resume from epoch {epoch!r}: epochs are numbered from 1"
    have = checkpoint_epochs(directory)
    if epoch in have:
        import burn

        where = os.fspath(directory)
        try:
            state = read_state(os.path.join(where, f"state-{epoch}.json"))
            fmt = state.get("model_format", "safetensors")
            check_part(
                os.path.join(where, f"model-{epoch}.{'safetensors' if fmt == 'safetensors' else 'npz'}")
            )
            check_part(os.path.join(where, f"optim-{epoch}.npz"))
            if state.get("scheduler"):
                check_part(os.path.join(where, f"scheduler-{epoch}.npz"))
        except (burn.RecordError, ValueError, OSError) as exc:
            return f"cannot resume from epoch {epoch}: {exc}"
        return None
    where = os.fspath(directory)
    if not have:
        return f"cannot resume from epoch {epoch}: no checkpoint in {where} (train without resuming first)"
    listed = ", ".join(str(e) for e in have)
    return f"cannot resume from epoch {epoch}: no complete checkpoint of it in {where}; available epochs: {listed}"


def check_part(path: str) -> None:
    """Raise ``burn.RecordError`` naming ``path`` when a checkpoint's model, optimizer or scheduler file
    is missing or not one (its header and sizes are read, not its arrays), so ``--resume`` can say so
    before anything is built or written."""
    import burn

    if not os.path.exists(path):
        raise burn.RecordError(f"{path}: missing (the checkpoint is incomplete)")
    if path.endswith(".safetensors"):
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            if n <= 0 or 8 + n > size:
                raise burn.RecordError(
                    f"{path}: not a safetensors record ({size} bytes{f', header length {n}' if n else ''})"
                )
            header = head + handle.read(n)
        burn.record.read_metadata(header, path)
        entries = json.loads(header[8:].decode("utf-8"))
        ends = [
            e["data_offsets"][1] for k, e in entries.items() if k != "__metadata__" and isinstance(e, dict)
        ]
        if 8 + n + max(ends, default=0) > size:
            raise burn.RecordError(
                f"{path}: truncated ({size} bytes, its header describes {8 + n + max(ends)})"
            )
        return
    check_record_file(path)


def read_state(path: str) -> dict[str, Any]:
    """A checkpoint's ``state-N.json``; a file that is not one is a ``burn.RecordError`` naming it."""
    import burn

    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise burn.RecordError(f"{path}: not a checkpoint state (invalid JSON: {exc})") from None
    if not isinstance(state, dict):
        raise burn.RecordError(f"{path}: not a checkpoint state (expected a JSON object)")
    return state


def default_policy() -> CheckpointPolicy:
    """Burn's default: keep the last 2 epochs and the best valid Loss."""
    return ComposedPolicy(KeepLastN(2), KeepBest("Loss", "valid"))


class FileCheckpointer:
    """Saves and restores training state per epoch under ``directory``."""

    def __init__(self, directory: str | os.PathLike[str], policy: CheckpointPolicy | None = None) -> None:
        self.directory = os.fspath(directory)
        self.policy = policy if policy is not None else default_policy()
        os.makedirs(self.directory, exist_ok=True)
        remove_stale_temps(self.directory)
        self._writer: Any = None  # the thread writing the last background save
        self._error: BaseException | None = None

    def _path(self, part: str, epoch: int, ext: str) -> str:
        return os.path.join(self.directory, f"{part}-{epoch}.{ext}")

    def epochs(self) -> list[int]:
        """Epochs with a complete checkpoint (their state file exists), ascending."""
        return checkpoint_epochs(self.directory)

    def save(
        self,
        epoch: int,
        model: Any,
        optim: Any,
        scheduler: Any = None,
        extra: dict | None = None,
        *,
        store: Any = None,
        background: bool = False,
    ) -> None:
        """Write every part of ``epoch`` atomically, the state file last.

        ``store``: also delete the checkpoints the policy does not keep once this one is written (the
        policy sees this epoch among the saved ones). ``background``: write on a worker thread where
        threads exist (see the module doc); ``wait()`` for it."""
        self.wait()  # one save at a time, in order
        model_bytes, model_fmt = _model_to_bytes(model)
        ext = "safetensors" if model_fmt == "safetensors" else "npz"
        files = [
            (self._path("model", epoch, ext), model_bytes),
            (self._path("optim", epoch, "npz"), record_to_bytes(optim.record())),
        ]
        has_scheduler = scheduler is not None and hasattr(scheduler, "record")
        if has_scheduler:
            files.append((self._path("scheduler", epoch, "npz"), record_to_bytes(scheduler.record())))
        state = {"epoch": epoch, "model_format": model_fmt, "scheduler": has_scheduler, **(extra or {})}
        files.append((self._path("state", epoch, "json"), json.dumps(state).encode("utf-8")))
        drop: list[int] = []
        if store is not None:
            saved = sorted({*self.epochs(), epoch})
            keep = self.policy.keep(saved, store)  # decided now: the store keeps changing meanwhile
            drop = [e for e in saved if e not in keep and e != epoch]
        if background:
            from .._sync import threads_available

            if threads_available():
                import threading

                self._writer = threading.Thread(
                    target=self._write_logged, args=(epoch, files, drop), name="burn-train-checkpoint"
                )
                self._writer.start()
                return
        self._write(epoch, files, drop)

    def _write(self, epoch: int, files: list[tuple[str, bytes]], drop: list[int]) -> None:
        for path, data in files:
            atomic_write(path, data)
        for old in drop:
            self.delete(old)
        log.info("checkpoint of epoch %d saved; pruned %s", epoch, drop or "nothing")

    def _write_logged(self, epoch: int, files: list[tuple[str, bytes]], drop: list[int]) -> None:
        try:
            self._write(epoch, files, drop)
        except BaseException as exc:  # handed to the training thread by wait()
            self._error = exc

    def join(self) -> None:
        """Wait for a background save to finish, keeping its error for ``wait`` to raise."""
        writer = self._writer
        if writer is not None:
            writer.join()

    def wait(self) -> None:
        """Wait for a background save to finish; re-raise its error (the previous checkpoint is intact)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def prune(self, store: Any) -> list[int]:
        """Delete the checkpoints the policy does not keep; returns the epochs deleted."""
        epochs = self.epochs()
        keep = self.policy.keep(epochs, store)
        deleted = [e for e in epochs if e not in keep]
        for epoch in deleted:
            self.delete(epoch)
        return deleted

    def delete(self, epoch: int) -> None:
        state = self._path("state", epoch, "json")
        if os.path.exists(state):
            os.unlink(state)  # first: the epoch stops counting as checkpointed at once
        for part in _PARTS:
            for ext in ("safetensors", "npz"):
                path = self._path(part, epoch, ext)
                if os.path.exists(path):
                    os.unlink(path)

    def state(self, epoch: int) -> dict[str, Any]:
        path = self._path("state", epoch, "json")
        if not os.path.exists(path):
            raise FileNotFoundError(resume_problem(self.directory, epoch))
        return read_state(path)

    def load(self, epoch: int, model: Any, optim: Any, scheduler: Any = None) -> tuple[Any, Any, Any, dict]:
        """``(model, optim, scheduler, state)`` restored from ``epoch``'s checkpoint."""
        state = self.state(epoch)
        fmt = state.get("model_format", "safetensors")
        ext = "safetensors" if fmt == "safetensors" else "npz"
        model_path = self._path("model", epoch, ext)
        with open(model_path, "rb") as handle:
            model = _model_from_bytes(model, handle.read(), fmt, model_path)
        optim_path = self._path("optim", epoch, "npz")
        with open(optim_path, "rb") as handle:
            loaded = optim.load_record(record_from_bytes(handle.read(), optim_path))
        optim = optim if loaded is None else loaded
        if state.get("scheduler") and scheduler is not None and hasattr(scheduler, "load_record"):
            path = self._path("scheduler", epoch, "npz")
            with open(path, "rb") as handle:
                loaded = scheduler.load_record(record_from_bytes(handle.read(), path))
            scheduler = scheduler if loaded is None else loaded
        return model, optim, scheduler, state
