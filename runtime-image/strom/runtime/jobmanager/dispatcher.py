"""The JobManager process core: dispatcher (jobs), resource manager (TaskManagers, slots,
heartbeats) and the RPC endpoint TaskManagers connect to. Runs on one asyncio loop; other
threads (application mode's job script, `strom run`) submit through the *_threadsafe methods.

The RPC endpoint binds `jobmanager.bind-host` (unset: `jobmanager.rpc.address`). A connection to it
is read only after mutual TLS (`security.ssl.internal.enabled`) and peer authentication with the
cluster secret (`network.secure_connections`). A registering
TaskManager is taken only if this process can reach its advertised data address; otherwise it gets
a `RegistrationRefused` naming the address and `taskmanager.host`, and exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from concurrent.futures import Future
from typing import Any

import cloudpickle

from strom.common import config_options as opts
from strom.common.tls import internal_tls
from strom.graph.connector_checks import connector_problem
from strom.graph.stream_graph import StreamGraph
from strom.runtime.jobmanager.checkpointing import validate_cluster_checkpointing
from strom.runtime.jobmanager.high_availability import CheckpointPointer, HaServices, ha_services_for
from strom.runtime.jobmanager.job_configuration import effective_job_configuration
from strom.runtime.jobmanager.job_master import TERMINAL_JOB_STATES, JobMaster
from strom.runtime.jobmanager.log_requests import DispatcherLogs, TaskManagerLogRequests
from strom.runtime.jobmanager.resource_manager import ResourceManager, TaskManagerRecord
from strom.runtime.jobmanager.retention import FinishedJob, jobs_to_drop
from strom.runtime.log_files import process_log_file
from strom.runtime.metrics.registry import MetricRegistry
from strom.runtime.metrics.snapshots import merge_snapshots
from strom.runtime.network.addresses import check_bindable, metrics_bind, reachability_problem, rpc_bind
from strom.runtime.network.cluster_secret import resolve_cluster_secret
from strom.runtime.network.peer_auth import RPC
from strom.runtime.network.secure_connections import secure_accept_async
from strom.runtime.rpc import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    Heartbeat,
    LogAnswer,
    MetricsReport,
    RegisterTaskManager,
    RegistrationAccepted,
    RegistrationRefused,
    SlotsChanged,
    TaskStateUpdate,
    encode_message,
    read_message,
)

log = logging.getLogger("strom.runtime.jobmanager")


class JobManager:
    def __init__(self, config: Any) -> None:
        # Set by whoever stops the cluster before its TaskManagers go: their disconnects are then expected.
        self.stopping = False
        self.config = config
        self.heartbeat_interval_ms = config.get(opts.HEARTBEAT_INTERVAL)
        self.heartbeat_timeout_ms = config.get(opts.HEARTBEAT_TIMEOUT)
        self.rm = ResourceManager(heartbeat_timeout_s=self.heartbeat_timeout_ms / 1000.0)
        self.jobs: dict[str, JobMaster] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.rpc_port = 0
        self.rest_port = 0
        self.start_time = time.time()
        self._slots_changed: asyncio.Event | None = None
        self._rpc_server: asyncio.AbstractServer | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.registry = MetricRegistry(config=config)
        self.registry.register_jobmanager_gauges(
            num_registered_taskmanagers=lambda: len(self.rm.taskmanagers),
            task_slots_total=self.rm.total_slots,
            task_slots_available=self.rm.free_slot_count,
            num_running_jobs=lambda: len(self.running_jobs()),
        )
        self.metrics_port = 0
        self.ha: HaServices = ha_services_for(config)
        # every RPC connection proves it before its first frame is read (ConfigError when unusable)
        self.secret = resolve_cluster_secret(config)
        # internal TLS contexts, built now so that bad material stops the process at its start
        self.tls = internal_tls(config)
        self.recovered_job_ids: list[str] = []
        self.log_requests = TaskManagerLogRequests(self.send_to)  # REST /taskmanagers/:id/logs, over RPC

    def cluster_logs(self) -> DispatcherLogs:
        """The log files the REST endpoint serves: this process's (env.log.dir / log.file), each TaskManager's."""
        return DispatcherLogs(
            process_log_file(self.config, "jobmanager"), self.log_requests, self.rm.taskmanagers.__contains__
        )

    def metrics_snapshot(self) -> Any:
        reports = [tm.metrics for tm in self.rm.taskmanagers.values() if tm.metrics]
        return merge_snapshots([*reports, self.registry.snapshot()])

    def start_exporter(self) -> None:
        from strom.runtime.metrics.prometheus import start_exporter

        host, port = metrics_bind(self.config, rpc_bind(self.config)).host, self.config.get(opts.PROM_PORT)
        try:
            self.metrics_port = start_exporter(self.registry.snapshot, host, port)
            log.info("Prometheus metrics of the JobManager on http://%s:%d/metrics", host, self.metrics_port)
        except OSError as e:
            log.error("%s; JobManager metrics are not exported", e.strerror or e)  # without "[Errno N]"

    # -- lifecycle ----------------------------------------------------------------------------------
    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._slots_changed = asyncio.Event()
        bind = rpc_bind(self.config)
        check_bindable(bind)  # a line naming jobmanager.bind-host, not a bind traceback
        check_bindable(metrics_bind(self.config, bind))
        port = self.config.get(opts.RPC_PORT)
        try:
            self._rpc_server = await asyncio.start_server(self._handle_taskmanager, bind.host, port)
        except OSError as e:  # one line naming the keys to change, as the REST endpoint's
            why = os.strerror(e.errno) if e.errno else str(e)
            raise OSError(
                e.errno, f"cannot bind the RPC endpoint to {bind.host}:{port} ({bind.key}, {opts.RPC_PORT.key}): {why}"
            ) from None
        self.rpc_port = self._rpc_server.sockets[0].getsockname()[1]
        log.info("JobManager RPC endpoint listening on %s:%d", bind.host, self.rpc_port)
        self._tasks.append(asyncio.create_task(self._check_heartbeats()))
        self.start_exporter()
        await self._recover_jobs()

    async def _recover_jobs(self) -> None:
        """High availability: take over the jobs a previous JobManager ran, each from its latest
        completed checkpoint (its TaskManagers register again and the jobs are deployed on them)."""
        loop = asyncio.get_running_loop()
        for recovered in await loop.run_in_executor(None, self.ha.recover_jobs):
            try:
                graph = cloudpickle.loads(recovered.payload)
                await self.submit(graph, recovered.job_id, recovered=recovered.checkpoint, _persist=False)
                # numRestarts goes on from the count the previous JobManager kept (the failover itself is
                # not a restart, as in Flink); set before the job's first event runs on this loop
                self.jobs[recovered.job_id].num_restarts = recovered.num_restarts
            except Exception as e:  # noqa: BLE001 - one unrecoverable job must not keep the others down
                log.error("could not recover job %s: %s", recovered.job_id, e)
                continue
            where = f"checkpoint {recovered.checkpoint.checkpoint_id}" if recovered.checkpoint else "its start"
            log.info("Recovered job %s from %s", recovered.job_id, where)
            self.recovered_job_ids.append(recovered.job_id)

    async def stop(self) -> None:
        self.stopping = True
        for t in self._tasks:
            t.cancel()
        for job in self.jobs.values():
            job.suspend()  # as Flink's Dispatcher on shutdown: the job stays recoverable, never CANCELED
        if self._rpc_server is not None:
            self._rpc_server.close()
        for tm in list(self.rm.taskmanagers.values()):
            tm.writer.close()

    # -- slots ----------------------------------------------------------------------------------------
    def notify_slots_changed(self) -> None:
        if self._slots_changed is not None:
            self._slots_changed.set()

    async def slots_changed(self) -> None:
        assert self._slots_changed is not None
        self._slots_changed.clear()
        try:
            await asyncio.wait_for(self._slots_changed.wait(), 1.0)
        except TimeoutError:
            pass

    # -- RPC ---------------------------------------------------------------------------------------------
    def send_to(self, tm_id: str, message: Any) -> None:
        self.send_raw(tm_id, encode_message(message))

    def send_raw(self, tm_id: str, frame: bytes) -> None:
        tm = self.rm.taskmanagers.get(tm_id)
        if tm is not None and not tm.writer.is_closing():
            tm.writer.write(frame)

    async def _handle_taskmanager(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        record: TaskManagerRecord | None = None
        try:
            # nothing is unpickled from a peer without the cluster's certificate (TLS on) and secret
            if not await secure_accept_async(reader, writer, secret=self.secret, tls=self.tls, purpose=RPC):
                return
            hello = await read_message(reader)
            if not isinstance(hello, RegisterTaskManager):
                writer.close()
                return
            refusal = await self._unreachable(hello, writer)
            if refusal is not None:
                log.warning("%s", refusal)
                writer.write(encode_message(RegistrationRefused(hello.tm_id, refusal)))
                await writer.drain()
                return
            record = TaskManagerRecord(hello.tm_id, hello.host, dict(hello.slots), writer)
            replaced = self.rm.register(record)
            if replaced is not None:
                self._taskmanager_lost(replaced, "TaskManager registered again (it restarted or lost its connection)")
                replaced.writer.close()
            writer.write(
                encode_message(RegistrationAccepted(hello.tm_id, self.heartbeat_interval_ms, self.heartbeat_timeout_ms))
            )
            log.info("TaskManager %s registered from %s with %d slots", hello.tm_id, hello.host, len(hello.slots))
            self.notify_slots_changed()
            while True:
                msg = await read_message(reader)
                if isinstance(msg, Heartbeat):
                    self.rm.heartbeat(msg.tm_id)
                elif isinstance(msg, SlotsChanged):
                    record.slots = dict(msg.slots)
                    self.notify_slots_changed()
                elif isinstance(msg, MetricsReport):
                    self.rm.heartbeat(msg.source)
                    tm = self.rm.taskmanagers.get(msg.source)
                    if tm is not None:
                        tm.metrics = msg.snapshot
                elif isinstance(msg, TaskStateUpdate):
                    job = self.jobs.get(msg.job_id)
                    if job is not None:
                        job.on_task_update(msg)
                elif isinstance(msg, LogAnswer):
                    self.log_requests.answered(record.tm_id, msg)
                elif isinstance(msg, AcknowledgeCheckpoint | DeclineCheckpoint):
                    job = self.jobs.get(msg.job_id)
                    if job is not None:
                        job.on_checkpoint_message(msg)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            if record is not None and self.rm.taskmanagers.get(record.tm_id) is record:
                self.rm.remove(record.tm_id)
                self._taskmanager_lost(record, f"connection to TaskManager {record.tm_id} ({record.host}) was lost")
            writer.close()

    async def _unreachable(self, hello: RegisterTaskManager, writer: asyncio.StreamWriter) -> str | None:
        """Why this JobManager cannot reach the TaskManager's advertised address (its first data port),
        or None. Awaited on the loop (heartbeats go on); a few seconds at most."""
        if not hello.slots:
            return None
        peer = writer.get_extra_info("peername")
        first_port = min(hello.slots)[1]
        return await reachability_problem(hello.tm_id, hello.host, first_port, peer[0] if peer else None)

    def _taskmanager_lost(self, record: TaskManagerRecord, reason: str) -> None:
        log.log(logging.INFO if self.stopping else logging.WARNING, "%s", reason)
        self.log_requests.lost(record.tm_id)
        if self.stopping:  # the cluster is going down (SIGTERM reaches every process at once): no failover
            return
        for job in list(self.jobs.values()):
            job.on_taskmanager_lost(record.tm_id, reason)
        self.notify_slots_changed()

    async def _check_heartbeats(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.heartbeat_interval_ms / 1000.0))
            for tm_id in self.rm.expired():
                record = self.rm.remove(tm_id)
                if record is not None:
                    self._taskmanager_lost(
                        record, f"heartbeat of TaskManager {tm_id} timed out after {self.heartbeat_timeout_ms} ms"
                    )
                    record.writer.close()

    # -- jobs ---------------------------------------------------------------------------------------------
    async def submit(
        self,
        graph: StreamGraph,
        job_id: str | None = None,
        *,
        recovered: CheckpointPointer | None = None,
        _persist: bool = True,
    ) -> str:
        job_id = job_id or uuid.uuid4().hex
        if job_id in self.jobs:
            raise ValueError(f"job {job_id} already exists")
        # Flink's layering: the cluster's configuration, the job's own settings over it (every key:
        # checkpointing, state backend, restart strategy, savepoint directory, ...)
        graph.config = effective_job_configuration(self.config, graph.config)
        problem = validate_cluster_checkpointing(graph.config) or connector_problem(graph, graph.config)
        if problem is not None:
            raise ValueError(problem)
        job = JobMaster(self, job_id, graph, recovered=recovered)
        if _persist:
            # kept before the job runs: a JobManager that dies from now on leaves it to its successor
            await asyncio.get_running_loop().run_in_executor(None, self.ha.job_submitted, job_id, job.payload)
        if self.stopping:  # the shutdown ran while the job was persisted: it stays for the next JobManager
            raise RuntimeError(f"the JobManager is shutting down; job {job_id} was not started")
        self.jobs[job_id] = job
        log.info("Submitting job '%s' (%s)", job.name, job_id)
        asyncio.get_running_loop().create_task(job.start())
        return job_id

    def submit_threadsafe(self, graph: StreamGraph) -> str:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(self.submit(graph), self.loop).result()

    def wait_threadsafe(self, job_id: str, timeout: float | None = None) -> JobMaster:
        assert self.loop is not None
        job = self.jobs[job_id]

        async def wait() -> JobMaster:
            await asyncio.shield(job.done)
            return job

        fut: Future[JobMaster] = asyncio.run_coroutine_threadsafe(wait(), self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()  # the waiter goes; the job does not (it is shielded)
            raise

    def cancel_threadsafe(self, job_id: str) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.jobs[job_id].cancel)

    def running_jobs(self) -> list[JobMaster]:
        return [j for j in self.jobs.values() if j.state not in TERMINAL_JOB_STATES]

    # -- the job store: finished jobs are kept for a bounded time and number (Flink's jobstore.*) -----------
    def job_finished(self, job_id: str) -> None:
        """A job reached a globally terminal state (called by its JobMaster on the loop): drop what the
        store no longer keeps now (capacity) and once this job's expiration time has passed. Deferred,
        because the caller may be iterating the jobs."""
        loop = asyncio.get_running_loop()
        loop.call_soon(self.drop_finished_jobs)
        loop.call_later(float(self.config.get(opts.JOBSTORE_EXPIRATION_TIME)) + 0.001, self.drop_finished_jobs)

    def drop_finished_jobs(self, now: float | None = None) -> list[str]:
        """Forget finished jobs past `jobstore.expiration-time` or beyond `jobstore.max-capacity`,
        oldest first (their REST paths then answer 404, as Flink's); the ids dropped."""
        finished = [
            FinishedJob(j.job_id, j.end_time)
            for j in self.jobs.values()
            if j.state in TERMINAL_JOB_STATES and j.state != "SUSPENDED"
        ]
        dropped = jobs_to_drop(
            finished,
            now=time.time() if now is None else now,
            expiration_s=float(self.config.get(opts.JOBSTORE_EXPIRATION_TIME)),
            max_capacity=int(self.config.get(opts.JOBSTORE_MAX_CAPACITY)),
        )
        for job_id in dropped:
            del self.jobs[job_id]
            self.registry.unregister_job(job_id)
            log.info("Job %s left the job store (jobstore.expiration-time / jobstore.max-capacity)", job_id)
        return dropped

    # -- metrics (reported by TaskManagers every metrics.fetcher.update-interval) ---------------------------
    def subtask_metrics(self, job_id: str, task_name: str, parallelism: int) -> dict[int, dict[str, float]]:
        """Latest task and user metrics per subtask index, as the TaskManagers last reported them."""
        out: dict[int, dict[str, float]] = {i: {} for i in range(parallelism)}
        for tm in self.rm.taskmanagers.values():
            for s in getattr(tm.metrics, "subtasks", ()):
                if s.job_id == job_id and s.task_name == task_name and s.subtask_index in out:
                    values = dict(s.task)
                    for u in s.user:
                        if isinstance(u.value, int | float):
                            values[f"{u.operator_name}.{u.identifier or u.name}"] = float(u.value)  # Flink's REST id
                    out[s.subtask_index] = values
        return out
