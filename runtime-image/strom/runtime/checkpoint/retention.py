"""Retained checkpoints: which completed checkpoints are kept, and deleting the rest.

After checkpoint n completes, the newest `state.checkpoints.num-retained` (default 1) completed
checkpoints are kept and older ones are subsumed: their `_metadata` is deleted first (so a
half-deleted checkpoint is never taken for a restorable one), then their exclusive files
(everything under `chk-<n>/`), then shared files (`<job-id>/shared/`) that no retained checkpoint
references any more. Shared files are counted by a `SharedStateRegistry`; a new checkpoint is
registered before older ones are released, so a file it re-uses is never deleted.

When the job ends, `execution.checkpointing.externalized-checkpoint-retention` decides what
happens to the retained checkpoints (Flink's CheckpointProperties): DELETE_ON_CANCELLATION keeps
them only when the job FAILED, RETAIN_ON_CANCELLATION keeps them always, NO_EXTERNALIZED_CHECKPOINTS
never. A job that is only suspended (JobManager failover) keeps them in every mode. Savepoints are
never retained or subsumed here: they belong to the user. `taskowned/` is never touched. When the
job ended for good, shared files no retained checkpoint references (uploaded for checkpoints that
never completed) are deleted too.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from strom.common.config_options import ConfigLookup, read_option
from strom.common.ids import CheckpointId
from strom.common.job_status import JobStatus
from strom.runtime.checkpoint import options
from strom.runtime.checkpoint.errors import CheckpointStorageError
from strom.runtime.checkpoint.layout import metadata_path, normalize_prefix, shared_dir
from strom.runtime.checkpoint.metadata import CheckpointMetadata, resolve_files
from strom.runtime.checkpoint.storage import CheckpointStorage

log = logging.getLogger(__name__)



def _is_globally_terminal(job_status: JobStatus | str) -> bool:
    """Flink's JobStatus.isGloballyTerminalState for a status or its name (any case); unknown names are not."""
    name = str(job_status).upper()
    return name in JobStatus.__members__ and JobStatus[name].is_globally_terminal_state()


class ExternalizedCheckpointRetention(StrEnum):
    NO_EXTERNALIZED_CHECKPOINTS = "NO_EXTERNALIZED_CHECKPOINTS"
    DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
    RETAIN_ON_CANCELLATION = "RETAIN_ON_CANCELLATION"


def subsumed_checkpoints(completed_ids: Iterable[CheckpointId], num_retained: int) -> list[CheckpointId]:
    """The ids, oldest first, that fall out when only the newest `num_retained` are kept."""
    if num_retained < 1:
        raise ValueError(f"invalid value {num_retained} for 'state.checkpoints.num-retained': expected >= 1")
    ordered = sorted(set(completed_ids))
    return ordered[: max(0, len(ordered) - num_retained)]


def discard_on_shutdown(retention: ExternalizedCheckpointRetention | str, job_status: JobStatus | str) -> bool:
    """Whether the retained checkpoints are deleted when the job reaches `job_status` (Flink's table)."""
    mode = ExternalizedCheckpointRetention(str(retention).upper())
    if not _is_globally_terminal(job_status):
        return False  # SUSPENDED etc.: another JobManager recovers the job from these checkpoints
    if mode is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION:
        return False
    if mode is ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION:
        return str(job_status).upper() != JobStatus.FAILED  # kept after a failure, so the user can restart from them
    return True


def num_retained_from(config: ConfigLookup | None) -> int:
    """`state.checkpoints.num-retained` of a `Configuration`, a mapping or None."""
    return read_option(config, options.NUM_RETAINED)


def retention_from(config: ConfigLookup | None) -> ExternalizedCheckpointRetention:
    """`execution.checkpointing.externalized-checkpoint-retention` of a configuration."""
    return ExternalizedCheckpointRetention(read_option(config, options.EXTERNALIZED_RETENTION))


class SharedStateRegistry:
    """Reference counts of shared state files (root-relative paths) by the checkpoints retaining them."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._by_checkpoint: dict[CheckpointId, frozenset[str]] = {}

    def register(self, checkpoint_id: CheckpointId, paths: Iterable[str]) -> None:
        """Checkpoint `checkpoint_id` references `paths` (counted once per checkpoint)."""
        if checkpoint_id in self._by_checkpoint:
            raise ValueError(f"checkpoint {checkpoint_id} is already registered with the shared state registry")
        refs = frozenset(paths)
        self._by_checkpoint[checkpoint_id] = refs
        self._counts.update(refs)

    def release(self, checkpoint_id: CheckpointId) -> list[str]:
        """Drop the references of a checkpoint; returns the paths no checkpoint references any more."""
        unreferenced: list[str] = []
        for path in sorted(self._by_checkpoint.pop(checkpoint_id, frozenset())):
            self._counts[path] -= 1
            if self._counts[path] <= 0:
                del self._counts[path]
                unreferenced.append(path)
        return unreferenced

    def reference_count(self, path: str) -> int:
        return self._counts.get(path, 0)


@dataclass(frozen=True, slots=True)
class RetainedCheckpoint:
    checkpoint_id: CheckpointId
    directory: str  # root-relative, e.g. '<job-id>/chk-7'
    metadata: CheckpointMetadata


class CompletedCheckpointStore:
    """The retained completed checkpoints of one job, oldest first (Flink's CompletedCheckpointStore)."""

    def __init__(
        self,
        storage: CheckpointStorage,
        *,
        num_retained: int = options.NUM_RETAINED.default,
        registry: SharedStateRegistry | None = None,
    ) -> None:
        subsumed_checkpoints((), num_retained)  # validates num_retained
        self._storage = storage
        self._num_retained = num_retained
        self._registry = registry or SharedStateRegistry()
        self._checkpoints: list[RetainedCheckpoint] = []
        self._shared_dirs: set[str] = set()  # `<job-id>/shared/` of the checkpoints added

    @property
    def checkpoints(self) -> list[RetainedCheckpoint]:
        return list(self._checkpoints)

    @property
    def latest(self) -> RetainedCheckpoint | None:
        return self._checkpoints[-1] if self._checkpoints else None

    @property
    def shared_state_registry(self) -> SharedStateRegistry:
        return self._registry

    def add(self, directory: str, metadata: CheckpointMetadata) -> list[CheckpointId]:
        """Retain a just-completed checkpoint; deletes the subsumed ones and returns their ids."""
        if metadata.is_savepoint:
            raise ValueError(
                f"savepoint {metadata.checkpoint_id} cannot be retained as a checkpoint: savepoints are never subsumed"
            )
        if any(c.checkpoint_id >= metadata.checkpoint_id for c in self._checkpoints):
            raise ValueError(
                f"checkpoint {metadata.checkpoint_id} completed after checkpoint {self._checkpoints[-1].checkpoint_id}:"
                " completed checkpoints must have increasing ids"
            )
        directory = directory.strip("/")
        self._shared_dirs.add(shared_dir(directory.rpartition("/")[0]))
        self._registry.register(metadata.checkpoint_id, _shared_files(directory, metadata))
        self._checkpoints.append(RetainedCheckpoint(metadata.checkpoint_id, directory, metadata))
        gone = set(subsumed_checkpoints((c.checkpoint_id for c in self._checkpoints), self._num_retained))
        for checkpoint in [c for c in self._checkpoints if c.checkpoint_id in gone]:
            self._checkpoints.remove(checkpoint)
            self._discard(checkpoint)
        return sorted(gone)

    def shutdown(
        self, job_status: JobStatus | str, retention: ExternalizedCheckpointRetention | str
    ) -> list[CheckpointId]:
        """The job ended with `job_status`: delete the retained checkpoints if `retention` says so.

        Returns the ids deleted; the store is empty afterwards either way.
        """
        checkpoints, self._checkpoints = self._checkpoints, []
        discard = discard_on_shutdown(retention, job_status)
        if discard:
            for checkpoint in checkpoints:
                self._discard(checkpoint)
        if _is_globally_terminal(job_status):
            self._delete_orphaned_shared_files()
        return [c.checkpoint_id for c in checkpoints] if discard else []

    def _delete_orphaned_shared_files(self) -> None:
        """Shared files no retained checkpoint references: uploaded for checkpoints that never
        completed (aborted, or a savepoint's staging). While the job runs a task may still re-use
        them in its next checkpoint; once it ended for good, nothing can."""
        for shared in sorted(self._shared_dirs):
            try:
                for path in self._storage.list(shared):
                    if self._registry.reference_count(path) == 0:
                        self._storage.delete(path)
            except CheckpointStorageError as exc:
                log.warning("could not delete unreferenced shared state files under %s: %s", shared, exc)

    def _discard(self, checkpoint: RetainedCheckpoint) -> None:
        """Delete one checkpoint. A failed deletion is logged, not raised: it must not fail the job,
        and what is left behind is garbage only (its `_metadata` goes first)."""
        unreferenced = self._registry.release(checkpoint.checkpoint_id)
        try:
            self._storage.delete(metadata_path(checkpoint.directory))
            self._storage.delete_prefix(checkpoint.directory)
            for path in unreferenced:
                self._storage.delete(path)
        except CheckpointStorageError as exc:
            log.warning("could not delete all files of checkpoint %d: %s", checkpoint.checkpoint_id, exc)


def _shared_files(directory: str, metadata: CheckpointMetadata) -> list[str]:
    """Root-relative state files of a checkpoint that lie outside its own directory."""
    own = normalize_prefix(directory)
    return [p for p in resolve_files(directory, metadata) if not p.startswith(own)]


__all__ = [
    "CompletedCheckpointStore",
    "ExternalizedCheckpointRetention",
    "RetainedCheckpoint",
    "SharedStateRegistry",
    "discard_on_shutdown",
    "num_retained_from",
    "retention_from",
    "subsumed_checkpoints",
]
