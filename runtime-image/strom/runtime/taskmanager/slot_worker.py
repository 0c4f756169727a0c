"""A slot: one worker process of a TaskManager, so that N slots use N cores.

The worker receives DeploySlot/CancelJob/Shutdown messages from its TaskManager over a pipe,
runs the slot's subtasks as task threads (one mailbox loop each), serves its remote input
channels on its own data port, and reports every task state change back.

With checkpointing on, each deployed attempt gets an `AsyncSnapshotWriter` over the job's
`state.checkpoints.dir`: tasks hand it their snapshots, it writes them and acknowledges (or
declines) through the pipe. A deployment carrying a checkpoint to restore reads its `_metadata`
and restores every operator before any task starts.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import cloudpickle

from strom.common import config_options as opts
from strom.common.python_environment import dependencies_of, enter_working_directory
from strom.common.tls import InternalTls, StoreSettings, internal_contexts
from strom.graph.job_graph import create_job_graph
from strom.runtime.checkpoint.channel_state import restore_channel_state
from strom.runtime.checkpoint.memory_storage import JobManagerCheckpointStorage
from strom.runtime.checkpoint.metadata import read_metadata
from strom.runtime.checkpoint.options import snapshot_staging_dir
from strom.runtime.checkpoint.storage import checkpoint_storage_for
from strom.runtime.checkpoint.task_snapshots import AsyncSnapshotWriter, OperatorStateHandle, restore_operators
from strom.runtime.execution_graph import RemoteChannels, build_subtasks
from strom.runtime.log_files import add_log_file_handler
from strom.runtime.metrics import MetricGroup
from strom.runtime.metrics.registry import MetricRegistry
from strom.runtime.rpc import (
    AcknowledgeCheckpoint,
    CancelJob,
    DeclineCheckpoint,
    DeploySlot,
    MetricsReport,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    Shutdown,
    TaskStateUpdate,
    TriggerCheckpoint,
    WorkerReady,
)

log = logging.getLogger("strom.runtime.slot")


class SlotWorker:
    def __init__(
        self,
        conn: Any,
        *,
        slot_index: int,
        host: str,
        data_port: int,
        secret: bytes,
        tls: InternalTls | None = None,
        tm_id: str = "",
        report_interval_s: float = 1.0,
    ) -> None:
        from strom.runtime.network.tcp_channels import DataServer

        self.conn = conn
        self.slot_index = slot_index
        self.host = host
        self.secret = secret  # the cluster secret, from the TaskManager over the (local, inherited) pipe
        self._send_lock = threading.Lock()
        self.tls = tls  # internal TLS contexts (built in this process from the TaskManager's settings)
        self.data_server = DataServer(host, data_port, secret=secret, tls=tls)
        self.data_port = self.data_server.start()
        self.tasks: dict[tuple[str, int], list[Any]] = {}
        self._writers: dict[tuple[str, int], AsyncSnapshotWriter] = {}
        self.metrics = MetricGroup()
        self.registry = MetricRegistry(tm_id=tm_id)
        self.report_interval_s = report_interval_s
        self._stopped = threading.Event()

    def send(self, message: Any) -> None:
        with self._send_lock:
            self.conn.send(message)

    def _report_metrics(self) -> None:
        while not self._stopped.wait(self.report_interval_s):
            try:
                self.send(MetricsReport(str(self.slot_index), self.registry.snapshot()))
            except (OSError, ValueError):
                return

    def serve(self) -> None:
        self.send(WorkerReady(self.slot_index, self.data_port))
        threading.Thread(target=self._report_metrics, name="metrics-report", daemon=True).start()
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                break  # our TaskManager is gone: stop with it
            if isinstance(msg, DeploySlot):
                self.deploy(msg)
            elif isinstance(msg, CancelJob):
                self.cancel(msg.job_id, msg.attempt)
            elif isinstance(msg, TriggerCheckpoint):
                for task in self.tasks.get((msg.job_id, msg.attempt), ()):
                    if task.gate is None:  # sources start it; barriers carry it to the rest
                        task.submit(
                            partial(task.trigger_checkpoint, msg.checkpoint_id, msg.timestamp, msg.stop, msg.savepoint)
                        )
            elif isinstance(msg, NotifyCheckpointComplete):
                for task in self.tasks.get((msg.job_id, msg.attempt), ()):
                    task.submit(partial(task.notify_checkpoint_complete, msg.checkpoint_id))
            elif isinstance(msg, NotifyCheckpointAborted):
                for task in self.tasks.get((msg.job_id, msg.attempt), ()):
                    task.submit(partial(task.notify_checkpoint_aborted, msg.checkpoint_id))
            elif isinstance(msg, Shutdown):
                break
        self._stopped.set()
        for key in list(self.tasks):
            self.cancel(*key)
        self.data_server.close()

    def deploy(self, msg: DeploySlot) -> None:
        from strom.runtime.network.tcp_channels import ChannelId, RemoteOutputChannel

        key = (msg.job_id, msg.attempt)
        try:
            graph = cloudpickle.loads(msg.payload)  # extracts the job's python.* files first (python_environment)
            enter_working_directory(dependencies_of(graph))  # PyFlink: functions run in the job's working dir
            job_graph = create_job_graph(graph)
            segment_size = graph.config.get(opts.SEGMENT_SIZE)
            remote = RemoteChannels(
                expect=lambda key, ch: self.data_server.expect(ChannelId(*key), ch),
                connect=lambda key, host, port: RemoteOutputChannel(
                    ChannelId(*key), host, port, secret=self.secret, tls=self.tls, segment_size=segment_size
                ),
                locations=msg.locations,
            )
            built = build_subtasks(
                job_graph,
                [(ref.vertex_id, ref.subtask_index) for ref in msg.subtasks],
                job_id=msg.job_id,
                attempt=msg.attempt,
                config=graph.config,
                channels=remote,
                metrics=self.metrics,
                on_done=self._task_done,
            )
            writer = self._checkpointing(msg, graph.config)
            if writer is not None:
                for ev in built:
                    ev.task.enable_checkpointing(writer, (ev.vertex.id, ev.subtask_index))
            if msg.restore is not None:
                # a savepoint names its own storage; a checkpoint lives in the job's checkpoint storage
                root = msg.restore.storage_uri or graph.config.get(opts.CHECKPOINTS_DIR)
                storage = checkpoint_storage_for(root, graph.config)
                metadata = read_metadata(storage, msg.restore.directory)
                operators = (op for ev in built for op in ev.task.operators)
                restore_operators(storage, msg.restore.directory, metadata, operators)
                restore_channel_state(storage, msg.restore.directory, metadata, (ev.task for ev in built))
        except BaseException:  # noqa: BLE001 - a deployment that cannot be built fails its tasks
            import traceback

            trace = traceback.format_exc()
            writer = self._writers.pop(key, None)
            if writer is not None:
                writer.shutdown()
            for ref in msg.subtasks:
                self.send(TaskStateUpdate(msg.job_id, msg.attempt, ref.vertex_id, ref.subtask_index, "FAILED", trace))
            return
        tasks = []
        self.registry.configure(config=graph.config)
        for ev in built:
            vertex, index, task = ev.vertex, ev.subtask_index, ev.task
            task.job_key = (msg.job_id, msg.attempt, vertex.id, index)  # type: ignore[attr-defined]
            self.registry.register_task(
                task, job_id=msg.job_id, job_name=graph.job_name, vertex_id=vertex.id,
                metric_group=ev.metric_group,
                attempt=msg.attempt,
            )
            tasks.append(task)
        self.tasks[key] = tasks
        for task in tasks:
            # RUNNING is reported before the thread starts, so it can never overtake the
            # task's own terminal state
            self.send(TaskStateUpdate(msg.job_id, msg.attempt, task.job_key[2], task.job_key[3], "RUNNING"))
            task.start()

    def _checkpointing(self, msg: DeploySlot, config: Any) -> AsyncSnapshotWriter | None:
        """The attempt's snapshot writer, acknowledging through the pipe. Every job can take a savepoint,
        as in Flink: without a checkpoint directory its state travels to the JobManager in the acks."""
        staging = snapshot_staging_dir(config)
        storage = checkpoint_storage_for(staging, config) if staging else JobManagerCheckpointStorage(msg.job_id)
        job_id, attempt = msg.job_id, msg.attempt

        def acknowledge(cid: int, key: tuple[str, int], handles: list[OperatorStateHandle]) -> None:
            self._send_quietly(AcknowledgeCheckpoint(job_id, attempt, cid, key[0], key[1], handles))

        def decline(cid: int, key: tuple[str, int], reason: str) -> None:
            self._send_quietly(DeclineCheckpoint(job_id, attempt, cid, key[0], key[1], reason))

        writer = self._writers[(job_id, attempt)] = AsyncSnapshotWriter(
            storage, job_id, acknowledge=acknowledge, decline=decline
        )
        return writer

    def _send_quietly(self, message: Any) -> None:
        try:
            self.send(message)
        except (OSError, ValueError):
            pass  # the TaskManager is gone; so is the checkpoint

    def _task_done(self, task: Any) -> None:
        job_id, attempt, vertex_id, index = task.job_key
        self.send(TaskStateUpdate(job_id, attempt, vertex_id, index, task.state, task.failure_trace))
        tasks = self.tasks.get((job_id, attempt), ())
        if tasks and all(t.state in ("FINISHED", "FAILED", "CANCELED") for t in tasks):
            # nothing of this attempt can complete a checkpoint any more
            writer = self._writers.pop((job_id, attempt), None)
            if writer is not None:
                writer.shutdown()

    def cancel(self, job_id: str, attempt: int) -> None:
        for task in self.tasks.pop((job_id, attempt), []):
            task.cancel()
        writer = self._writers.pop((job_id, attempt), None)
        if writer is not None:
            writer.shutdown()
        self.data_server.forget(job_id)
        self.registry.unregister_job(job_id)


def worker_main(
    conn: Any,
    slot_index: int,
    host: str,
    data_port: int,
    secret: bytes,
    log_level: str = "WARNING",
    tm_id: str = "",
    tls_settings: StoreSettings | None = None,
    log_file: str = "",
) -> None:
    """Entry point of the worker process (multiprocessing spawn target). `tls_settings` are the
    TaskManager's internal TLS settings (contexts cannot be pickled; the material is read again here)."""
    # Ctrl-C reaches the whole foreground process group: the TaskManager stops its slots (Shutdown, or
    # the pipe's end when it is gone), so a slot never prints a KeyboardInterrupt traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=log_level, format=f"%(asctime)s slot-{slot_index} pid-{os.getpid()} %(levelname)s %(message)s"
    )
    if log_file:  # the TaskManager's log file (env.log.dir / log.file): user functions' records land there too
        add_log_file_handler(Path(log_file), prefix=f"slot-{slot_index} pid-{os.getpid()} ")
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr] # a print() reaches .out at once
    tls = internal_contexts(tls_settings) if tls_settings is not None else None
    SlotWorker(conn, slot_index=slot_index, host=host, data_port=data_port, secret=secret, tls=tls, tm_id=tm_id).serve()
