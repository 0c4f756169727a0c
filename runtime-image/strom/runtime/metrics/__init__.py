"""Metrics: metric groups for user functions, task I/O metrics, the registry, Prometheus export.

    groups.py        metric groups and the metric types user functions register (get_metrics_group())
    task_metrics.py  a subtask's I/O metrics under Flink's names, read from the running task on demand
    registry.py      one process's metric registry, read out as one snapshot
    snapshots.py     picklable snapshots that travel slot worker -> TaskManager -> JobManager
    prometheus.py    the Prometheus exporter: snapshots under Flink's Prometheus names, over HTTP
    uptime.py        Flink's `uptime` job gauge as a pure function of job state and clock

strom.metrics re-exports `groups` under PyFlink's module path.
"""

from strom.runtime.metrics.groups import (
    Counter,
    Distribution,
    Gauge,
    Histogram,
    HistogramStatistics,
    Meter,
    MetricGroup,
    RateView,
)
from strom.runtime.metrics.registry import MetricRegistry, process_registry, process_rss_bytes
from strom.runtime.metrics.snapshots import JobMetrics, MetricsSnapshot, SubtaskMetrics, UserMetric, merge_snapshots
from strom.runtime.metrics.task_metrics import TaskMetrics

__all__ = [
    "Counter", "Distribution", "Gauge", "Histogram", "HistogramStatistics", "Meter", "MetricGroup", "RateView",
    "MetricRegistry", "process_registry", "process_rss_bytes",
    "JobMetrics", "MetricsSnapshot", "SubtaskMetrics", "UserMetric", "merge_snapshots",
    "TaskMetrics",
]
