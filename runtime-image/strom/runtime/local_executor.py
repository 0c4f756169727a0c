"""The embedded executor: runs a StreamGraph's subtasks as threads of this process.

This is what `env.execute()` uses when no cluster client is installed (tests,
`python job.py`). Job failure cancels every task and raises `JobExecutionError` with
the failing task's name and the user's traceback.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from strom.datastream.stream_execution_environment import JobExecutionResult
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.execution_graph import build_tasks
from strom.runtime.metrics import MetricRegistry, MetricsSnapshot
from strom.runtime.tasks.stream_task import FAILED, FINISHED


class JobExecutionError(RuntimeError):
    """The job failed; the message carries the failing task and the user's traceback."""

    def __init__(self, message: str, *, job_id: str, task: str | None = None, trace: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.task = task
        self.trace = trace


class LocalJob:
    def __init__(self, graph: StreamGraph, *, clock: Any = None) -> None:
        self.graph = graph
        self.job_id = uuid.uuid4().hex
        self.job_graph = create_job_graph(graph)
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._remaining = 0
        self.status = "CREATED"
        self.start_time = 0.0
        self.end_time = 0.0
        self.failed_task: Any = None
        self.vertices = build_tasks(
            self.job_graph, config=graph.config, clock=clock, on_done=self._task_done
        )
        # The job's own registry (not the process one): its figures stay readable after it ends.
        self.metric_registry = MetricRegistry(config=graph.config)
        for ev in self.vertices:
            self.metric_registry.register_task(
                ev.task, job_id=self.job_id, job_name=graph.job_name, vertex_id=ev.vertex.id,
                metric_group=ev.metric_group,
            )
        self.metric_registry.register_job_gauges(
            self.job_id, graph.job_name, uptime_ms=self._uptime_ms, num_restarts=lambda: 0
        )

    def _uptime_ms(self) -> float:
        # Flink's uptime gauge: 0 before running, -1 once the job reached a terminal state.
        if self.status in ("FINISHED", "FAILED", "CANCELED"):
            return -1
        return (time.time() - self.start_time) * 1000 if self.start_time else 0

    def metrics_snapshot(self) -> MetricsSnapshot:
        """Task I/O metrics, user metrics and job gauges of this job, read now."""
        return self.metric_registry.snapshot()

    def _task_done(self, task: Any) -> None:
        with self._lock:
            self._remaining -= 1
            if task.state == FAILED and self.failed_task is None:
                self.failed_task = task
                self.status = "FAILING"
                for ev in self.vertices:
                    if ev.task is not task:
                        ev.task.cancel()
            if self._remaining == 0:
                self.end_time = time.time()
                if self.failed_task is not None:
                    self.status = "FAILED"
                elif all(ev.task.state == FINISHED for ev in self.vertices):
                    self.status = "FINISHED"
                else:
                    self.status = "CANCELED"
                self._done.set()

    def start(self) -> None:
        self.start_time = time.time()
        self.status = "RUNNING"
        self._remaining = len(self.vertices)
        for ev in self.vertices:
            ev.task.start()

    def cancel(self) -> None:
        with self._lock:
            if self.status in ("FINISHED", "FAILED", "CANCELED"):
                return
            self.status = "CANCELLING"
        for ev in self.vertices:
            ev.task.cancel()

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        if not self._done.wait(timeout):
            raise TimeoutError(f"job {self.job_id} still running after {timeout} s")
        if self.status == "FAILED":
            t = self.failed_task
            raise JobExecutionError(
                f"Job '{self.graph.job_name}' ({self.job_id}) failed: task {t.display_name} failed.\n"
                f"{t.failure_trace}",
                job_id=self.job_id,
                task=t.display_name,
                trace=t.failure_trace,
            ) from t.failure
        if self.status == "CANCELED":
            raise JobExecutionError(f"Job '{self.graph.job_name}' ({self.job_id}) was cancelled", job_id=self.job_id)
        return JobExecutionResult(self.job_id, int((self.end_time - self.start_time) * 1000))


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
        job.wait(10)
        raise


def submit_locally(graph: StreamGraph) -> LocalJobClient:
    job = LocalJob(graph)
    job.start()
    return LocalJobClient(job)
