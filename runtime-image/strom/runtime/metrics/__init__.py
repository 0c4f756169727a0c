"""Metrics: metric groups for user functions, task I/O metrics, the registry, Prometheus export.

`groups` has what user functions register (get_metrics_group()); `task_metrics` measures a
subtask under Flink's names; `registry` collects one process's metrics into picklable
`snapshots`; `prometheus` serves snapshots under Flink's Prometheus names.
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
