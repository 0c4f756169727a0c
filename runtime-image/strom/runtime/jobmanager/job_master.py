"""The job master: one job's ExecutionGraph state, scheduling into slots, failover.

Job states are Flink's (CREATED, RUNNING, FAILING, FAILED, CANCELLING, CANCELED, FINISHED,
RESTARTING); subtask states too (SCHEDULED, DEPLOYING, RUNNING, FINISHED, CANCELING,
CANCELED, FAILED). A failed subtask or a lost TaskManager fails the attempt over: every task
of the attempt is cancelled and, if the restart strategy allows, a new attempt is deployed
after its delay. Each attempt has its own channel ids, so data of an old attempt never
reaches a new one. Where the tasks run is the `TaskDeployer`'s (task_deployment.py): slot processes
of TaskManagers over RPC on a cluster, threads of this process for the embedded executor
(local_executor.py) — one JobMaster, whatever the deployment.

With `execution.checkpointing.interval` > 0 the job has a `JobCheckpointing` (its coordinator):
each attempt takes part once deployed, checkpoints are triggered only while the job and every
subtask are RUNNING, and a new attempt after a failure is deployed with the latest completed
checkpoint to restore.

Savepoints go through the same coordinator (`trigger_savepoint`); with `stop` the job ends
FINISHED (cancel-job: CANCELED) once its savepoint completed. A job submitted with
`execution.savepoint.path` is checked against the savepoint's operator uids at submission and
deploys its first attempt (and any attempt before a checkpoint completed) restoring it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from strom.common import config_options as opts
from strom.common.job_status import JobStatus
from strom.graph.job_graph import JobGraph, create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.checkpoint.coordinator import TaskGateway
from strom.runtime.checkpoint.errors import CheckpointStorageError
from strom.runtime.checkpoint.savepoints import (
    STOP_DRAIN,
    STOP_SUSPEND,
    check_savepoint_restore,
    new_savepoint_target,
    savepoint_target_uri,
)
from strom.runtime.jobmanager.checkpointing import JobCheckpointing
from strom.runtime.jobmanager.high_availability import CheckpointPointer
from strom.runtime.jobmanager.resource_manager import SlotRef
from strom.runtime.jobmanager.restart_strategies import restart_strategy_from
from strom.runtime.jobmanager.retention import exceptions_to_keep
from strom.runtime.jobmanager.savepoint_operations import SavepointOperations, SavepointRefused
from strom.runtime.jobmanager.task_deployment import RpcTaskDeployer, TaskDeployer
from strom.runtime.metrics.uptime import uptime_ms
from strom.runtime.rpc import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    DeploySlot,
    RestoreCheckpoint,
    SubtaskRef,
    TaskStateUpdate,
)

if TYPE_CHECKING:
    from strom.runtime.jobmanager.dispatcher import JobManager

log = logging.getLogger("strom.runtime.jobmaster")

# Flink's JobStatus.isTerminalState (FINISHED, FAILED, CANCELED, SUSPENDED), from the one table in strom.common
TERMINAL_JOB_STATES = tuple(s for s in JobStatus if s.is_terminal_state())
TERMINAL_TASK_STATES = ("FINISHED", "FAILED", "CANCELED")
# the longest a stop-with-savepoint waits for the tasks to end after the savepoint (a lost TaskManager)
STOP_TIMEOUT_S = 30.0


@dataclass(slots=True)
class SubtaskStatus:
    state: str = "CREATED"
    tm_id: str = ""
    host: str = ""
    slot: int = -1
    start_time: float = 0.0
    end_time: float = 0.0


@dataclass(frozen=True, slots=True)
class FailureRecord:
    timestamp_ms: int
    task: str
    trace: str
    attempt: int
    # Failures of the same failover noticed after this one (Flink's concurrentExceptions of a root
    # entry): which of several concurrent failures is seen first is a race, so none of them is lost.
    concurrent: tuple[FailureRecord, ...] = ()


@dataclass(eq=False)
class JobMaster:
    jm: JobManager
    job_id: str
    graph: StreamGraph
    state: str = "CREATED"
    attempt: int = 0
    start_time: float = field(default_factory=time.time)
    end_time: float = 0.0
    failures: list[FailureRecord] = field(default_factory=list)
    failures_dropped: int = 0  # older failures than web.exception-history-size keeps
    num_restarts: int = 0
    # high availability: the latest checkpoint a previous JobManager completed for this job
    recovered: CheckpointPointer | None = None
    # the checkpoint (or savepoint) the newest attempt was deployed to restore; None: from scratch
    restored_checkpoint_id: int | None = None
    # who runs the scheduled tasks (task_deployment.py); None: the TaskManagers, over RPC
    deployer: TaskDeployer | None = None

    def __post_init__(self) -> None:
        self.tasks: TaskDeployer = self.deployer if self.deployer is not None else RpcTaskDeployer(self.jm)
        self.name = self.graph.job_name
        self.job_graph: JobGraph = create_job_graph(self.graph)
        self.payload = self.tasks.job_payload(self.graph)
        self.restart = restart_strategy_from(self.graph.config)
        self.subtasks: dict[tuple[str, int], SubtaskStatus] = {}
        # TaskManagers of the attempt that failed last, until the next attempt runs everywhere: the loss
        # of one of them in that time is part of that failover (see on_taskmanager_lost)
        self._failed_over_tms: set[str] = set()
        self.state_times: dict[str, float] = {"CREATED": self.start_time}
        self._loop = asyncio.get_running_loop()
        self.done: asyncio.Future[str] = self._loop.create_future()
        self.savepoints = SavepointOperations(self.jm.config.get(opts.REST_ASYNC_STORE_DURATION))
        self._exception_history_size = int(self.graph.config.get(opts.EXCEPTION_HISTORY_SIZE))
        self.checkpointing: JobCheckpointing | None = None
        if self.recovered is not None:
            # the job restores its latest checkpoint, not the savepoint it was first submitted with
            self.initial_restore: RestoreCheckpoint | None = RestoreCheckpoint(
                self.recovered.checkpoint_id, self.recovered.directory
            )
        else:
            self.initial_restore = self._savepoint_restore()
        # Every job has a coordinator, as in Flink: one without a checkpoint directory takes savepoints
        # into the directory a request names, its state staged in the JobManager (memory_storage.py).
        ha = self.jm.ha
        self.checkpointing = JobCheckpointing(
            self.job_id,
            self.graph.config,
            on_completed=lambda cid, d: ha.checkpoint_completed(self.job_id, CheckpointPointer(cid, d)),
            on_failures_exceeded=self._checkpoint_failures_exceeded,
            recovered=(self.recovered.checkpoint_id, self.recovered.directory) if self.recovered else None,
        )
        stats = self.checkpointing.coordinator.stats if self.checkpointing is not None else None
        self.jm.registry.register_job_gauges(
            self.job_id,
            self.name,
            uptime_ms=lambda: uptime_ms(
                self.state, self.state_times.get("RUNNING"), time.time(), terminal_states=TERMINAL_JOB_STATES
            ),
            num_restarts=lambda: self.num_restarts,
            last_checkpoint_duration_ms=stats.last_duration_ms if stats is not None else None,
            number_of_completed_checkpoints=stats.completed_count if stats is not None else None,
            last_checkpoint_size=stats.last_size if stats is not None else None,
            number_of_failed_checkpoints=stats.failed_count if stats is not None else None,
        )
        self._slots: list[SlotRef] = []
        self._restart_count_lock = threading.Lock()
        self._stop: tuple[str, str, str] | None = None  # (trigger id, savepoint location, final state)
        self._reset_subtasks()

    # -- state ------------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        if state != self.state:
            log.info("Job %s (%s) switched from %s to %s", self.name, self.job_id, self.state, state)
            self.state = state
            self.state_times[state] = time.time()
            if state in TERMINAL_JOB_STATES:
                self.end_time = time.time()
                self.jm.rm.release(self.job_id)
                if self.checkpointing is not None:
                    self.checkpointing.shutdown(state)
                if state != "SUSPENDED":  # a suspended job is recovered by the next JobManager
                    asyncio.get_running_loop().run_in_executor(None, self.jm.ha.job_terminated, self.job_id)
                if self._stop is not None:  # ended otherwise while stopping: the savepoint still exists
                    self._end_stop()
                if not self.done.done():
                    self.done.set_result(state)
                if state != "SUSPENDED":  # globally terminal: the job store keeps it for a bounded time
                    self.jm.job_finished(self.job_id)

    def _reset_subtasks(self) -> None:
        self.subtasks = {(v.id, i): SubtaskStatus() for v in self.job_graph.vertices for i in range(v.parallelism)}

    def _savepoint_restore(self) -> RestoreCheckpoint | None:
        """The savepoint of `execution.savepoint.path` to start from, checked against the job's uids;
        a `ValueError` (the submission fails) when it is unreadable or holds unclaimed state."""
        path = str(self.graph.config.get(opts.SAVEPOINT_PATH) or "").rstrip("/")
        if not path:
            return None
        if path.endswith("/_metadata"):
            path = path[: -len("/_metadata")]
        allow = bool(self.graph.config.get(opts.SAVEPOINT_IGNORE_UNCLAIMED_STATE))
        uids = [n.uid for n in self.graph.nodes.values()]
        try:
            metadata = check_savepoint_restore(path, uids, allow_non_restored=allow, config=self.graph.config)
        except CheckpointStorageError as e:
            raise ValueError(f"cannot restore from savepoint {path}: {e}") from None
        return RestoreCheckpoint(metadata.checkpoint_id, "", storage_uri=path)

    # -- savepoints ---------------------------------------------------------------------------------
    def trigger_savepoint(
        self,
        target_directory: str | None,
        *,
        then: str | None = None,
        drain: bool = False,
        trigger_id: str | None = None,
    ) -> str:
        """Start a savepoint; its trigger id. `then` ('FINISHED' for stop, 'CANCELED' for cancel-job)
        ends the job once the savepoint completed: its sources emit nothing after the savepoint's
        barrier. With `drain` they emit the maximum watermark before it and then end their input, so
        the job finishes as a bounded one does. A client's `trigger_id` makes the request idempotent:
        repeating it (e.g. a restarted operator) returns the same operation, never a second savepoint.
        Raises `SavepointRefused` or `ConfigError`."""
        if trigger_id is not None and self.savepoints.get(trigger_id) is not None:
            return trigger_id
        # the request itself first: a missing target directory is a bad request whatever the job's state
        uri = savepoint_target_uri(target_directory, self.graph.config, self.jm.config)
        if self.checkpointing is None:
            raise SavepointRefused(
                f"job {self.job_id} cannot take a savepoint: its tasks have nowhere to write their state; "
                f"submit it with '{opts.SAVEPOINTS_DIR.key}' or '{opts.CHECKPOINTS_DIR.key}' set (in the job's "
                "or the cluster's configuration)"
            )
        if self.state != "RUNNING":
            raise SavepointRefused(f"job {self.job_id} is {self.state}: only a RUNNING job can take a savepoint")
        op = self.savepoints.start(trigger_id)
        loop = asyncio.get_running_loop()

        def on_done(location: str | None, failure: str | None) -> None:
            # called on the coordinator's threads; the job's state belongs to the loop
            loop.call_soon_threadsafe(self._savepoint_done, op.trigger_id, location, failure, then, drain)

        stop = "" if then is None else STOP_DRAIN if drain else STOP_SUSPEND
        target = new_savepoint_target(self.job_id, uri, self.graph.config, on_done, stop=stop)
        self.checkpointing.trigger_savepoint(target)
        return op.trigger_id

    def _savepoint_done(
        self, trigger_id: str, location: str | None, failure: str | None, then: str | None, drain: bool
    ) -> None:
        if location is None or then is None or self.state != "RUNNING":
            self.savepoints.finish(trigger_id, location, failure)
            return
        # Stop-with-savepoint completes when the job has ended (as Flink's): the tasks first hear of the
        # savepoint and commit what it prepared (e.g. FileSink's pending files); a client that tears the
        # cluster down once the operation completed must not cut that short.
        log.info("Job %s took savepoint %s and stops (%s)", self.job_id, location, then)
        self._stop = (trigger_id, location, then)
        self._loop.call_later(STOP_TIMEOUT_S, self._end_stop)
        if not drain:  # drained sources end their input: the job finishes by itself
            self._cancel_attempt(await_tasks=True)

    def _end_stop(self) -> None:
        """The stopped job's tasks all ended (or STOP_TIMEOUT_S passed): it reaches its state and the
        stop-with-savepoint operation completes with the savepoint's location."""
        if self._stop is None:
            return
        trigger_id, location, then = self._stop
        self._stop = None
        if self.state not in TERMINAL_JOB_STATES:
            self._set_state(then)
        self.savepoints.finish(trigger_id, location, None)

    def root_cause(self) -> FailureRecord | None:
        return self.failures[-1] if self.failures else None

    def _record_failure(self, task: str, trace: str) -> None:
        """Keep a failure for the exception history: the newest `web.exception-history-size` only,
        so a job that fails over for days does not hold every traceback."""
        self.failures.append(FailureRecord(int(time.time() * 1000), task, trace, self.attempt))
        dropped = exceptions_to_keep(len(self.failures), self._exception_history_size).start
        del self.failures[:dropped]
        self.failures_dropped += dropped  # the history says it was truncated, as Flink's does

    def _record_concurrent_failure(self, task: str, trace: str) -> None:
        """A failure that belongs to the newest failover (noticed after its root cause): kept among the
        newest entry's concurrent exceptions, as Flink's exception history groups one failover's failures."""
        if not self.failures:
            return
        root = self.failures[-1]
        if any(c.task == task for c in root.concurrent) or root.task == task:
            return  # the same loss reported twice (connection close and heartbeat timeout)
        log.info("Job %s attempt %d: %s failed during the failover: %s", self.job_id, root.attempt, task, trace)
        concurrent = FailureRecord(int(time.time() * 1000), task, trace, root.attempt)
        self.failures[-1] = replace(root, concurrent=root.concurrent + (concurrent,))

    # -- scheduling --------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.state in TERMINAL_JOB_STATES:  # suspended (the JobManager stopped) before it was scheduled
            return
        try:
            await self._schedule(self.initial_restore)
        except Exception as e:  # noqa: BLE001 - a job that cannot be scheduled fails with the reason
            self._record_failure("scheduler", repr(e))
            self._set_state("FAILED")

    async def _schedule(self, restore: RestoreCheckpoint | None = None) -> None:
        self._set_state("RUNNING")
        self.restored_checkpoint_id = restore.checkpoint_id if restore is not None else None
        required = self.job_graph.required_slots()
        timeout_s = self.graph.config.get(opts.SLOT_REQUEST_TIMEOUT) / 1000.0
        deadline = time.monotonic() + timeout_s
        slots = self.jm.rm.allocate(self.job_id, required)
        while slots is None:
            if self.state != "RUNNING":
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"could not get {required} slots within slot.request.timeout ({timeout_s:.0f} s); "
                    f"{self.jm.rm.free_slot_count()} of {self.jm.rm.total_slots()} are free"
                )
            await self.jm.slots_changed()
            slots = self.jm.rm.allocate(self.job_id, required)
        self._slots = slots
        # slot sharing: group g's subtask i goes to the group's i-th slot
        groups: dict[str, int] = {}
        for v in self.job_graph.vertices:
            groups[v.slot_sharing_group] = max(groups.get(v.slot_sharing_group, 0), v.parallelism)
        offset, base = 0, {}
        for g in groups:
            base[g] = offset
            offset += groups[g]
        placement: dict[int, list[SubtaskRef]] = {}
        locations: dict[tuple[str, int], tuple[str, int]] = {}
        for v in self.job_graph.vertices:
            for i in range(v.parallelism):
                k = base[v.slot_sharing_group] + i
                ref = slots[k]
                tm = self.jm.rm.taskmanagers[ref.tm_id]
                placement.setdefault(k, []).append(SubtaskRef(v.id, i))
                locations[(v.id, i)] = (tm.host, tm.slots[ref.slot_index])
                st = self.subtasks[(v.id, i)]
                st.state, st.tm_id, st.host, st.slot = "DEPLOYING", ref.tm_id, tm.host, ref.slot_index
                st.start_time = time.time()
        for k, refs in placement.items():
            ref = slots[k]
            msg = DeploySlot(self.job_id, self.attempt, ref.slot_index, self.payload, tuple(refs), locations, restore)
            self.tasks.deploy(ref.tm_id, msg)
        if self.checkpointing is not None:
            self.checkpointing.attach(set(self.subtasks), self._task_gateway())

    def _task_gateway(self) -> TaskGateway:
        sources = {v.id for v in self.job_graph.vertices if not v.inputs}
        subtasks, attempt = self.subtasks, self.attempt

        def not_running() -> list[tuple[str, int]]:
            # read from the coordinator's thread: a stale view only delays a trigger by one tick
            if self.state != "RUNNING" or self.attempt != attempt:
                return list(subtasks)
            return [k for k, st in list(subtasks.items()) if st.state != "RUNNING"]

        return self.tasks.checkpoint_gateway(
            job_id=self.job_id,
            attempt=attempt,
            source_tms={st.tm_id for (vid, _), st in subtasks.items() if vid in sources},
            all_tms={st.tm_id for st in subtasks.values()},
            not_running=not_running,
        )

    # -- events ------------------------------------------------------------------------------------
    def on_task_update(self, upd: TaskStateUpdate) -> None:
        if upd.attempt != self.attempt or self.state != "RUNNING":
            return
        st = self.subtasks.get((upd.vertex_id, upd.subtask_index))
        if st is None or st.state in TERMINAL_TASK_STATES:
            return
        st.state = upd.state
        if upd.state in TERMINAL_TASK_STATES:
            st.end_time = time.time()
        if upd.state == "RUNNING" and all(s.state in ("RUNNING", "FINISHED") for s in self.subtasks.values()):
            self._failed_over_tms = set()  # the new attempt is deployed: a later loss is a new failure
        if self._stop is not None:
            # a stop in progress: tasks end cancelled (or finished, when drained); nothing fails over
            if all(s.state in TERMINAL_TASK_STATES for s in self.subtasks.values()):
                self._end_stop()
            return
        if upd.state == "FINISHED" and self.checkpointing is not None:
            self.checkpointing.task_finished((upd.vertex_id, upd.subtask_index))
        if upd.state == "FAILED":
            vertex = next(v for v in self.job_graph.vertices if v.id == upd.vertex_id)
            task = f"{vertex.name} ({upd.subtask_index + 1}/{vertex.parallelism})"
            self.fail_over(task, upd.failure or "unknown failure")
        elif upd.state == "CANCELED":
            self.fail_over(f"subtask {upd.vertex_id}/{upd.subtask_index}", "task was cancelled unexpectedly")
        elif all(s.state == "FINISHED" for s in self.subtasks.values()):
            self._set_state("FINISHED")

    def on_checkpoint_message(self, msg: AcknowledgeCheckpoint | DeclineCheckpoint) -> None:
        if self.checkpointing is not None and msg.attempt == self.attempt:
            self.checkpointing.on_message(msg)

    def on_taskmanager_lost(self, tm_id: str, reason: str) -> None:
        task = f"TaskManager {tm_id}"
        if self.state == "RUNNING" and any(s.tm_id == tm_id for s in self.subtasks.values()):
            self.fail_over(task, reason)
        elif tm_id in self._failed_over_tms:
            # It ran part of the attempt that failed last: a downstream task that lost its connection
            # to it was noticed first (a race). The loss is part of that failover, as in Flink.
            self._record_concurrent_failure(task, reason)

    def _checkpoint_failures_exceeded(self, reason: str) -> None:
        # called on the coordinator's threads; the job's state belongs to the loop
        def fail() -> None:
            if self.state == "RUNNING":
                self.fail_over("checkpoint coordinator", f"CheckpointFailuresExceeded: {reason}")

        self._loop.call_soon_threadsafe(fail)

    def fail_over(self, task: str, trace: str) -> None:
        # One line at WARNING (a `strom run` terminal shows each failure once, the client prints the
        # trace at the end); the whole trace at INFO for the JobManager's log, as Flink logs it.
        log.warning("Job %s attempt %d: %s failed: %s", self.job_id, self.attempt, task, _last_line(trace))
        log.info("Job %s attempt %d: %s failed:\n%s", self.job_id, self.attempt, task, trace)
        self._record_failure(task, trace)
        self._failed_over_tms = {s.tm_id for s in self.subtasks.values() if s.tm_id}
        self._set_state("FAILING")
        if self.checkpointing is not None:
            self.checkpointing.detach(f"{task} failed")
        self._cancel_attempt()
        delay = self.restart.next_restart_delay(int(time.time() * 1000))
        if delay is None:
            self._set_state("FAILED")
            return
        self._set_state("RESTARTING")
        asyncio.get_running_loop().create_task(self._restart_after(delay))

    async def _restart_after(self, delay_ms: int) -> None:
        await asyncio.sleep(delay_ms / 1000.0)
        if self.state != "RESTARTING":
            return
        self.attempt += 1
        self.num_restarts += 1
        self._loop.run_in_executor(None, self._keep_restart_count)
        self._reset_subtasks()
        try:
            restore = await self.checkpointing.restore_point() if self.checkpointing is not None else None
            restore = restore or self.initial_restore
            if restore is not None:
                log.info("Job %s attempt %d restores checkpoint %d", self.job_id, self.attempt, restore.checkpoint_id)
            await self._schedule(restore)
        except Exception as e:  # noqa: BLE001
            self._record_failure("scheduler", repr(e))
            self._set_state("FAILED")

    def _keep_restart_count(self) -> None:
        """On an executor thread: store the current restart count for a JobManager that recovers the
        job. Under a lock and reading the count when it writes, so writes that overtake each other
        never leave an older count behind."""
        with self._restart_count_lock:
            if self.state in TERMINAL_JOB_STATES:
                return  # its HA data is (being) removed
            try:
                self.jm.ha.job_restarted(self.job_id, self.num_restarts)
            except Exception as e:  # noqa: BLE001 - a lost count must not fail the job
                log.warning("job %s: could not keep its restart count for high availability: %s", self.job_id, e)

    def _cancel_attempt(self, *, await_tasks: bool = False) -> None:
        """Cancel the current attempt's tasks. `await_tasks`: their states come from their reports
        (a stop waits for them), instead of being taken as CANCELED now with the slots released."""
        self.tasks.cancel({s.tm_id for s in self._slots}, self.job_id, self.attempt)
        if await_tasks:
            return
        for st in self.subtasks.values():
            if st.state not in TERMINAL_TASK_STATES:
                st.state = "CANCELED"
        self.jm.rm.release(self.job_id)
        self.jm.notify_slots_changed()

    def cancel(self) -> None:
        if self.state in TERMINAL_JOB_STATES:
            return
        self._set_state("CANCELLING")
        self._cancel_attempt()
        self._set_state("CANCELED")

    def suspend(self) -> None:
        """The JobManager shuts down (SIGTERM, the end of a mini-cluster): the tasks stop and the job
        ends SUSPENDED, which keeps its HA entry and checkpoints, so that the next JobManager with the
        same HA storage takes it over from its latest checkpoint (Flink's JobMaster on a shutdown)."""
        if self.state in TERMINAL_JOB_STATES:
            return
        self._cancel_attempt()
        self._set_state("SUSPENDED")

    def result_error(self) -> str | None:
        if self.state == "FINISHED":
            return None
        cause = self.root_cause()
        if self.state == "FAILED" and cause is not None:
            return f"Job '{self.name}' ({self.job_id}) failed: task {cause.task} failed.\n{cause.trace}"
        return f"Job '{self.name}' ({self.job_id}) ended in state {self.state}"

    def describe(self) -> dict[str, Any]:
        return {"jid": self.job_id, "name": self.name, "state": self.state}


def _last_line(trace: str) -> str:
    """The exception line of a formatted traceback (its last non-empty line)."""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else trace
