"""Checkpoints and savepoints: taking them, storing them, keeping the right ones, restoring from them.

Flink's checkpointing, in three groups. The contract (ARCHITECTURE.md): barriers numbered by the
coordinator, state addressed by (operator uid, key group), Flink's layout `<dir>/<job-id>/chk-<n>/_metadata`.

Taking them (JobManager side, and the task side of the I/O)
    coordinator.py     CheckpointCoordinator: triggers checkpoint n through a `TaskGateway`, collects
                       acknowledgements, writes `_metadata`, aborts on decline/timeout, turns a checkpoint
                       into a savepoint when one was asked for
    task_snapshots.py  task side: writes a task's operator snapshots asynchronously and reads them back to restore
    channel_state.py   unaligned checkpoints: the in-flight records a task stores with its snapshot
    stats.py           CheckpointStatsTracker: what `/jobs/:jobid/checkpoints` and the checkpoint metrics report
    options.py         retention options (`state.checkpoints.num-retained`, externalized retention) and how a
                       job's configuration turns into checkpoint settings (staging dir, barrier alignment);
                       the coordinator declares its own timing options (timeout, min pause, tolerable failures)

Storing them
    storage.py         the `CheckpointStorage` protocol and `checkpoint_storage_for(uri)`: file:// or s3://
    file_storage.py    local (or mounted) directories, written atomically (temp file, fsync, rename)
    s3_storage.py      an S3 bucket through boto3 (imported only when used)
    memory_storage.py  in memory, for jobs that name no checkpoint directory
    layout.py          Flink's directory names inside a storage root (chk-<n>, shared/, taskowned/, savepoint-...)
    metadata.py        the versioned JSON `_metadata` of one checkpoint or savepoint, validated both ways
    errors.py          storage and metadata errors, each naming the object's URI (never credentials)

Keeping and restoring
    retention.py       which completed checkpoints are kept (num-retained, externalized retention on job end,
                       reference-counted shared files); the job-end rule uses `JobStatus` (strom.common)
    savepoints.py      savepoint targets, copying a checkpoint into a self-contained savepoint, restore checks
                       (unclaimed operator uids), disposal

Ids are `JobId` and `CheckpointId` (strom.common.ids). State itself (backends, key groups, snapshots of one
operator) is `strom.runtime.state`'s; this package only moves and names the bytes.
"""
