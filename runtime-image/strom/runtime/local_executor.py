"""The embedded executor: a job under the real JobMaster, its subtasks threads of this process.

This is what `env.execute()` uses when no cluster client is installed (tests, `python job.py`,
`strom run --threads`). As Flink's MiniCluster runs the real JobMaster, so does this: scheduling,
failover and the restart strategy (`restart-strategy.*`; with checkpointing, fixed-delay without
limit as in Flink), the checkpoint coordinator (`execution.checkpointing.interval` > 0; into
`state.checkpoints.dir`, or a temporary directory removed at the end when unset), restoring the
latest completed checkpoint or the savepoint the job started from (`execution.savepoint.path`),
and savepoints through the JobClient are the JobMaster's (jobmanager/job_master.py). Only the
deployment differs: the `ThreadTaskDeployer` runs each attempt's tasks as threads wired by
in-process channels, where a cluster's `RpcTaskDeployer` sends them to TaskManagers.

A job that fails for good raises `JobExecutionError` carrying the failing task's name and the
user's traceback.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import threading
import time
import uuid
from typing import Any

from strom.common import config_options as opts
from strom.datastream.stream_execution_environment import JobExecutionResult
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.execution_graph import ExecutionVertex
from strom.runtime.jobmanager.client_savepoints import take_savepoint
from strom.runtime.jobmanager.embedded import EmbeddedJobManager, EmbeddedLoop
from strom.runtime.jobmanager.job_master import TERMINAL_JOB_STATES, JobMaster
from strom.runtime.metrics import MetricRegistry, MetricsSnapshot
from strom.runtime.thread_deployment import ThreadTaskDeployer, loop_reporter

# the longest the end of a job waits for a task thread that ignores its cancellation (user code blocked)
TASK_END_TIMEOUT_S = 30.0


class JobExecutionError(RuntimeError):
    """The job failed; the message carries the failing task and the user's traceback."""

    def __init__(self, message: str, *, job_id: str, task: str | None = None, trace: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.task = task
        self.trace = trace


class LocalJob:
    """One job of this process: the JobMaster on its own event loop, the tasks threads."""

    def __init__(self, graph: StreamGraph, *, clock: Any = None) -> None:
        # the job's own copy: the temporary checkpoint directory below is this run's, not the program's
        graph = copy.copy(graph)
        graph.config = graph.config.copy()
        self.graph = graph
        self.job_id = uuid.uuid4().hex
        self.job_graph = create_job_graph(graph)
        self._temp_checkpoint_dir: str | None = None
        if graph.config.get(opts.CHECKPOINT_INTERVAL) > 0 and not graph.config.get(opts.CHECKPOINTS_DIR):
            # Flink would keep the state in the JobManager's memory; a private directory does the same job
            self._temp_checkpoint_dir = tempfile.mkdtemp(prefix="strom-checkpoints-")
            graph.config.set(opts.CHECKPOINTS_DIR.key, self._temp_checkpoint_dir)
        # The job's own registry (not the process one): its figures stay readable after it ends.
        self.metric_registry = MetricRegistry(config=graph.config)
        self._done = threading.Event()
        self.start_time = 0.0
        self._loop = EmbeddedLoop(f"jobmaster {self.job_id[:8]}")
        self._deployer = ThreadTaskDeployer(
            graph,
            self.job_graph,
            registry=self.metric_registry,
            report=loop_reporter(self._loop.loop, lambda: self.master),
            clock=clock,
        )
        jm = EmbeddedJobManager(graph.config, slots=self.job_graph.required_slots(), registry=self.metric_registry)

        def create() -> JobMaster:
            master = JobMaster(jm, self.job_id, graph, deployer=self._deployer)  # type: ignore[arg-type]
            master.done.add_done_callback(lambda _: self._ended())
            return master

        try:
            self.master = self._loop.call(create)
        except BaseException:
            self._loop.stop()
            self._remove_temp_dir()
            raise

    # -- the JobMaster's view ------------------------------------------------------------------------
    @property
    def status(self) -> str:
        return self.master.state

    @property
    def restarts(self) -> int:
        return self.master.num_restarts

    @property
    def restored_checkpoint_id(self) -> int | None:
        """The checkpoint (or savepoint) the newest attempt restored; None: it started from scratch."""
        return self.master.restored_checkpoint_id

    @property
    def checkpoint_coordinator(self) -> Any:
        return self.master.checkpointing.coordinator if self.master.checkpointing is not None else None

    @property
    def vertices(self) -> list[ExecutionVertex]:
        """The subtasks of the newest attempt that was built."""
        return self._deployer.tasks()

    def metrics_snapshot(self) -> MetricsSnapshot:
        """Task I/O metrics, user metrics and job gauges of this job, read now."""
        return self.metric_registry.snapshot()

    # -- the job's end -------------------------------------------------------------------------------
    def _ended(self) -> None:
        """On the loop, once the JobMaster reached a terminal state: the rest off the loop."""
        threading.Thread(target=self._finish, name=f"end of job {self.job_id[:8]}", daemon=True).start()

    def _finish(self) -> None:
        # the job has ended when its task threads have: nothing of it writes after wait() returned
        self._deployer.join(TASK_END_TIMEOUT_S)
        self._deployer.shutdown()
        if self.master.checkpointing is not None:
            self.master.checkpointing.await_shutdown()  # retained and orphaned checkpoint files dealt with
        self._loop.stop()
        self._remove_temp_dir()
        self._done.set()

    def _remove_temp_dir(self) -> None:
        if self._temp_checkpoint_dir is not None:
            shutil.rmtree(self._temp_checkpoint_dir, ignore_errors=True)

    # -- public ------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule the job; returns once its tasks were deployed (their metrics registered) or it ended."""
        self.start_time = time.time()
        master = self.master

        async def start() -> None:
            await master.start()

        self._loop.loop.call_soon_threadsafe(lambda: self._loop.loop.create_task(start()))
        while not self._deployer.first_started.wait(0.05) and not self._done.is_set():
            pass

    def cancel(self) -> None:
        try:
            self._loop.loop.call_soon_threadsafe(self.master.cancel)
        except RuntimeError:
            pass  # the job has ended: its loop is closed

    def trigger_savepoint(self, directory: str | None = None, *, timeout: float | None = None) -> str:
        """A savepoint of the running job; its location (Flink's JobClient.triggerSavepoint)."""
        return take_savepoint(self._loop.loop, self.master, directory, timeout=timeout)

    def stop_with_savepoint(
        self, drain: bool = False, directory: str | None = None, *, timeout: float | None = None
    ) -> str:
        """A savepoint, then the job ends FINISHED; the savepoint's location (Flink's stopWithSavepoint)."""
        return take_savepoint(self._loop.loop, self.master, directory, then="FINISHED", drain=drain, timeout=timeout)

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still running after {timeout} s")
        master = self.master
        if master.state == "FINISHED":
            return JobExecutionResult(self.job_id, int((master.end_time - master.start_time) * 1000))
        if master.state == "FAILED":
            cause = master.root_cause()
            failure = self._deployer.failure_of(cause.task) if cause is not None else None
            raise JobExecutionError(
                master.result_error() or f"Job '{self.graph.job_name}' ({self.job_id}) failed",
                job_id=self.job_id,
                task=cause.task if cause is not None else None,
                trace=cause.trace if cause is not None else None,
            ) from failure
        assert master.state in TERMINAL_JOB_STATES
        raise JobExecutionError(f"Job '{self.graph.job_name}' ({self.job_id}) was cancelled", job_id=self.job_id)


class LocalJobClient:
    """PyFlink's JobClient for a job started with execute_async."""

    def __init__(self, job: LocalJob) -> None:
        self._job = job

    def get_job_id(self) -> str:
        return self._job.job_id

    def get_job_status(self) -> str:
        return self._job.status

    def cancel(self) -> None:
        self._job.cancel()

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> str:
        return self._job.trigger_savepoint(savepoint_directory)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> str:
        return self._job.stop_with_savepoint(advance_to_end_of_event_time, savepoint_directory)

    def get_job_execution_result(self, timeout: float | None = None) -> JobExecutionResult:
        return self._job.wait(timeout)

    wait = get_job_execution_result


class LocalExecutor:
    """The embedded executor: every subtask a thread of this process."""

    def __call__(self, graph: StreamGraph) -> JobExecutionResult:
        return execute_locally(graph)

    def start_job(self, graph: StreamGraph) -> LocalJobClient:
        return submit_locally(graph)


def execute_locally(graph: StreamGraph) -> JobExecutionResult:
    job = LocalJob(graph)
    job.start()
    try:
        return job.wait()
    except KeyboardInterrupt:
        job.cancel()
        try:
            job.wait(10)
        except Exception:  # noqa: BLE001, S110 - "was cancelled" is the expected end; the interrupt is the news
            pass
        raise


def submit_locally(graph: StreamGraph) -> LocalJobClient:
    job = LocalJob(graph)
    job.start()
    return LocalJobClient(job)
