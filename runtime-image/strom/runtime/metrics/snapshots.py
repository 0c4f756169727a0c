"""Metric snapshots: plain, picklable values that travel between processes.

A slot worker snapshots its subtasks and sends them to its TaskManager; the TaskManager
merges them with its own gauges and forwards them to the JobManager; exporters and the
REST API read snapshots, never live metric objects. Everything here is frozen data plus
the pure functions that build and merge it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from strom.runtime.metrics.groups import Counter, Gauge, Histogram, Meter, MetricGroup

COUNTER, GAUGE, METER, HISTOGRAM = "counter", "gauge", "meter", "histogram"


@dataclass(frozen=True, slots=True)
class UserMetric:
    """One metric a user function registered through get_metrics_group().

    `name` is the scope below the operator joined with "_" plus the metric's name, where a key/value
    group contributes its key and its value becomes one of the `labels` (Flink's Prometheus reporter:
    `KafkaSourceReader_topic_partition_currentOffset{topic=..,partition=..}`); `identifier` is Flink's
    REST id below the operator, every scope part joined with "." (`KafkaSourceReader.topic.t.partition.0
    .currentOffset`), so metrics that differ only in a key/value group stay apart. `value` is the
    count of a counter, the value of a gauge, the rate of a meter, or the number of values of a
    histogram/distribution; `stats` holds the rest (a meter's count; a histogram's
    sum/min/max/mean/stddev and quantiles as ("p0.5", v), ...).
    """

    operator_name: str
    name: str
    kind: str
    value: float
    labels: tuple[tuple[str, str], ...] = ()
    stats: tuple[tuple[str, float], ...] = ()
    identifier: str = ""


@dataclass(frozen=True, slots=True)
class SubtaskMetrics:
    """The task I/O metrics (Flink's names, e.g. numRecordsInPerSecond) and user metrics of one subtask."""

    job_id: str
    job_name: str
    vertex_id: str
    task_name: str
    subtask_index: int
    attempt: int
    tm_id: str
    task: dict[str, float]
    user: tuple[UserMetric, ...] = ()


@dataclass(frozen=True, slots=True)
class JobMetrics:
    """JobManager-side gauges of one job: uptime, numRestarts, checkpoint figures."""

    job_id: str
    job_name: str
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """Everything one process (or, merged, a whole cluster) knows at one moment.

    `jobmanager`: cluster gauges (numRegisteredTaskManagers, taskSlotsTotal, ...);
    `taskmanagers`: tm_id -> that TaskManager's Status gauges.
    """

    subtasks: tuple[SubtaskMetrics, ...] = ()
    jobs: tuple[JobMetrics, ...] = ()
    jobmanager: dict[str, float] = field(default_factory=dict)
    taskmanagers: dict[str, dict[str, float]] = field(default_factory=dict)

    def subtask(self, task_name: str, subtask_index: int = 0) -> SubtaskMetrics:
        """The subtask of the task (vertex) whose name is or starts with `task_name`."""
        for s in self.subtasks:
            if s.subtask_index == subtask_index and s.task_name == task_name:
                return s
        for s in self.subtasks:
            if s.subtask_index == subtask_index and s.task_name.startswith(task_name):
                return s
        names = sorted({s.task_name for s in self.subtasks})
        raise KeyError(f"no subtask {subtask_index} of task {task_name!r}; tasks: {names}")


def merge_snapshots(parts: Iterable[MetricsSnapshot]) -> MetricsSnapshot:
    """One snapshot of several processes'. A later part wins where two describe the same
    subtask, job or TaskManager (it is the newer report)."""
    subtasks: dict[tuple[str, str, int], SubtaskMetrics] = {}
    jobs: dict[str, JobMetrics] = {}
    jobmanager: dict[str, float] = {}
    taskmanagers: dict[str, dict[str, float]] = {}
    for p in parts:
        for s in p.subtasks:
            subtasks[(s.job_id, s.task_name, s.subtask_index)] = s
        for j in p.jobs:
            jobs[j.job_id] = j
        jobmanager.update(p.jobmanager)
        taskmanagers.update(p.taskmanagers)
    return MetricsSnapshot(tuple(subtasks.values()), tuple(jobs.values()), jobmanager, taskmanagers)


def as_number(value: Any) -> float | None:
    """A gauge's value as a float, or None when it is not a number (such gauges are not exported)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def _user_metric(
    operator_name: str, name: str, labels: tuple[tuple[str, str], ...], m: Any, identifier: str
) -> UserMetric | None:
    if isinstance(m, Counter):
        return UserMetric(operator_name, name, COUNTER, float(m.count), labels, (), identifier)
    if isinstance(m, Meter):
        return UserMetric(operator_name, name, METER, m.get_rate(), labels, (("count", float(m.count)),), identifier)
    if isinstance(m, Histogram):
        s = m.get_statistics()
        stats = (("sum", s.sum), ("min", s.min), ("max", s.max), ("mean", s.mean), ("stddev", s.stddev))
        stats = tuple((k, float(v)) for k, v in stats + tuple((f"p{q}", v) for q, v in s.quantiles))
        return UserMetric(operator_name, name, HISTOGRAM, float(s.count), labels, stats, identifier)
    if isinstance(m, Gauge):
        try:
            value = as_number(m.get_value())
        except Exception:  # noqa: BLE001 - a failing user gauge must not break every report
            return None
        return None if value is None else UserMetric(operator_name, name, GAUGE, value, labels, (), identifier)
    return None


def collect_user_metrics(subtask_group: MetricGroup) -> tuple[UserMetric, ...]:
    """User metrics under a subtask's group: one `operator` key/value group per chained operator."""
    out: list[UserMetric] = []

    def walk(
        g: MetricGroup, op: str, path: tuple[str, ...], labels: tuple[tuple[str, str], ...], scope: tuple[str, ...]
    ) -> None:
        for name, m in g.registered_metrics():
            um = _user_metric(op, "_".join(path + (name,)), labels, m, ".".join(scope + (name,)))
            if um is not None:
                out.append(um)
        for child in g.child_groups():
            if child.value is None:
                walk(child, op, path + (child.name,), labels, scope + (child.name,))
            else:
                walk(child, op, path + (child.name,), labels + ((child.name, child.value),),
                     scope + (child.name, child.value))

    for g in subtask_group.child_groups():
        if g.name == "operator" and g.value is not None:
            walk(g, g.value, (), (), ())
    return tuple(out)
