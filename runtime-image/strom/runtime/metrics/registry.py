"""The metric registry of one process: what it runs and what it knows, as one snapshot.

Subtasks are registered per (job id, task name, subtask index) with their task and metric
group; the JobManager registers per-job and cluster gauges, a TaskManager its Status gauges
(slots, memory). `snapshot()` reads them all into a plain `MetricsSnapshot` that can be
pickled to another process, merged, exported to Prometheus or served over REST.

Rates use a sliding window of `metrics.meter.time-span` (default 60 s, as Flink's MeterView).
"""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Callable
from typing import Any

from strom.common.config_options import option
from strom.runtime.metrics.groups import MetricGroup
from strom.runtime.metrics.snapshots import (
    JobMetrics,
    MetricsSnapshot,
    SubtaskMetrics,
    as_number,
    collect_user_metrics,
)
from strom.runtime.metrics.task_metrics import TaskMetrics

METER_TIME_SPAN = option(
    "metrics.meter.time-span",
    "duration",
    60_000,
    "Window of the per-second rates (numRecordsInPerSecond, busyTimeMsPerSecond, ...); Flink's MeterView uses 60 s.",
    minimum=1,
)

Gauges = dict[str, Callable[[], Any]]


def meter_span_seconds(config: Any) -> float:
    """`metrics.meter.time-span` of a configuration, in seconds (parsed here: `metrics.*` keys
    pass the configuration unparsed when this module was not imported yet)."""
    raw = config.get(METER_TIME_SPAN.key) if config is not None else None
    if raw is None:
        return METER_TIME_SPAN.default / 1000.0
    return METER_TIME_SPAN.parse(raw) / 1000.0


def process_rss_bytes() -> int:
    """Resident memory of this process: current from /proc (Linux), else the peak getrusage reports."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _RegisteredSubtask:
    __slots__ = ("job_id", "job_name", "vertex_id", "task_name", "subtask_index", "attempt", "metrics", "group")

    def __init__(
        self,
        job_id: str,
        job_name: str,
        vertex_id: str,
        task_name: str,
        subtask_index: int,
        attempt: int,
        metrics: TaskMetrics,
        group: MetricGroup | None,
    ) -> None:
        self.job_id = job_id
        self.job_name = job_name
        self.vertex_id = vertex_id
        self.task_name = task_name
        self.subtask_index = subtask_index
        self.attempt = attempt
        self.metrics = metrics
        self.group = group

    def snapshot(self, tm_id: str) -> SubtaskMetrics:
        return SubtaskMetrics(
            job_id=self.job_id,
            job_name=self.job_name,
            vertex_id=self.vertex_id,
            task_name=self.task_name,
            subtask_index=self.subtask_index,
            attempt=self.attempt,
            tm_id=tm_id,
            task=self.metrics.snapshot(),
            user=collect_user_metrics(self.group) if self.group is not None else (),
        )


def _read(gauges: Gauges) -> dict[str, float]:
    values: dict[str, float] = {}
    for name, fn in gauges.items():
        try:
            v = as_number(fn())
        except Exception:  # noqa: BLE001 - one failing gauge must not hide the others
            continue
        if v is not None:
            values[name] = v
    return values


class MetricRegistry:
    """Metrics of one process. Thread-safe: tasks register from their threads, readers snapshot
    from theirs."""

    def __init__(self, *, config: Any = None, meter_span_s: float | None = None, tm_id: str = "") -> None:
        self.meter_span_s = meter_span_s if meter_span_s is not None else meter_span_seconds(config)
        self.tm_id = tm_id
        self._lock = threading.Lock()
        self._subtasks: dict[tuple[str, str, int], _RegisteredSubtask] = {}
        self._jobs: dict[str, tuple[str, Gauges]] = {}
        self._jobmanager: Gauges = {}
        self._taskmanagers: dict[str, Gauges] = {}

    def configure(self, *, config: Any = None, meter_span_s: float | None = None, tm_id: str | None = None) -> None:
        """Settings of the process registry, once the process knows its configuration and id."""
        if meter_span_s is not None or config is not None:
            self.meter_span_s = meter_span_s if meter_span_s is not None else meter_span_seconds(config)
        if tm_id is not None:
            self.tm_id = tm_id

    # -- subtasks --------------------------------------------------------------------------------------
    def register_task(
        self,
        task: Any,
        *,
        job_id: str,
        job_name: str,
        vertex_id: str,
        metric_group: MetricGroup | None,
        attempt: int = 0,
    ) -> TaskMetrics:
        """Track a StreamTask (before it starts, so its first watermark is seen). A task registered
        again under the same (job, task name, subtask) replaces the earlier attempt."""
        tm = TaskMetrics(task, meter_span_s=self.meter_span_s)
        entry = _RegisteredSubtask(
            job_id, job_name, str(vertex_id), task.name, task.subtask_index, attempt, tm, metric_group
        )
        with self._lock:
            self._subtasks[(job_id, task.name, task.subtask_index)] = entry
        return tm

    def unregister_task(self, job_id: str, task_name: str, subtask_index: int) -> None:
        with self._lock:
            self._subtasks.pop((job_id, task_name, subtask_index), None)

    def unregister_job(self, job_id: str) -> None:
        """Forget a job's subtasks and job gauges (it ended or moved away)."""
        with self._lock:
            for key in [k for k in self._subtasks if k[0] == job_id]:
                del self._subtasks[key]
            self._jobs.pop(job_id, None)

    # -- JobManager and TaskManager gauges ------------------------------------------------------------
    def register_job_gauges(
        self,
        job_id: str,
        job_name: str,
        *,
        uptime_ms: Callable[[], float],
        num_restarts: Callable[[], int],
        last_checkpoint_duration_ms: Callable[[], float] | None = None,
        number_of_completed_checkpoints: Callable[[], int] | None = None,
        last_checkpoint_size: Callable[[], int] | None = None,
        number_of_failed_checkpoints: Callable[[], int] | None = None,
    ) -> None:
        """Flink's job gauges on the JobManager. Uptime follows Flink: ms since the job started
        running, -1 once it reached a terminal state. Checkpoint figures are 0 until given."""
        gauges: Gauges = {
            "uptime": uptime_ms,
            "numRestarts": num_restarts,
            "lastCheckpointDuration": last_checkpoint_duration_ms or (lambda: 0),
            "numberOfCompletedCheckpoints": number_of_completed_checkpoints or (lambda: 0),
            "lastCheckpointSize": last_checkpoint_size or (lambda: 0),
            "numberOfFailedCheckpoints": number_of_failed_checkpoints or (lambda: 0),
        }
        with self._lock:
            self._jobs[job_id] = (job_name, gauges)

    def register_jobmanager_gauges(
        self,
        *,
        num_registered_taskmanagers: Callable[[], int],
        task_slots_total: Callable[[], int],
        task_slots_available: Callable[[], int],
        num_running_jobs: Callable[[], int] | None = None,
        rss_bytes: Callable[[], int] = process_rss_bytes,
    ) -> None:
        """The JobManager's cluster gauges (Flink's names: numRegisteredTaskManagers, taskSlotsTotal, ...)."""
        gauges: Gauges = {
            "numRegisteredTaskManagers": num_registered_taskmanagers,
            "taskSlotsTotal": task_slots_total,
            "taskSlotsAvailable": task_slots_available,
            "Status.Process.Memory.RSS": rss_bytes,
        }
        if num_running_jobs is not None:
            gauges["numRunningJobs"] = num_running_jobs
        with self._lock:
            self._jobmanager = gauges

    def register_taskmanager_gauges(
        self,
        tm_id: str,
        *,
        slots_total: Callable[[], int],
        slots_free: Callable[[], int],
        rss_bytes: Callable[[], int] = process_rss_bytes,
    ) -> None:
        """A TaskManager's Status gauges. `rss_bytes` should cover its slot worker processes too."""
        gauges: Gauges = {
            "Status.TaskSlots.Total": slots_total,
            "Status.TaskSlots.Free": slots_free,
            "Status.Process.Memory.RSS": rss_bytes,
        }
        with self._lock:
            self._taskmanagers[tm_id] = gauges

    def unregister_taskmanager(self, tm_id: str) -> None:
        with self._lock:
            self._taskmanagers.pop(tm_id, None)

    # -- reading ---------------------------------------------------------------------------------------
    def snapshot(self, job_id: str | None = None) -> MetricsSnapshot:
        """Everything registered (or one job's part) read now, as plain picklable data."""
        with self._lock:
            subtasks = [s for k, s in self._subtasks.items() if job_id is None or k[0] == job_id]
            jobs = [(jid, name, g) for jid, (name, g) in self._jobs.items() if job_id is None or jid == job_id]
            jobmanager = dict(self._jobmanager)
            taskmanagers = {tm: dict(g) for tm, g in self._taskmanagers.items()}
        return MetricsSnapshot(
            subtasks=tuple(s.snapshot(self.tm_id) for s in subtasks),
            jobs=tuple(JobMetrics(jid, name, _read(g)) for jid, name, g in jobs),
            jobmanager=_read(jobmanager),
            taskmanagers={tm: _read(g) for tm, g in taskmanagers.items()},
        )


_process_registry: MetricRegistry | None = None
_process_registry_lock = threading.Lock()


def process_registry() -> MetricRegistry:
    """The registry of this process (a slot worker's, a TaskManager's, the JobManager's)."""
    global _process_registry
    with _process_registry_lock:
        if _process_registry is None:
            _process_registry = MetricRegistry()
        return _process_registry
