"""Metrics for user functions (`pyflink.metrics`): MetricGroup, Counter, Meter, Distribution, Gauge.

These are the runtime's own metric types (strom.runtime.metrics.groups), under PyFlink's module
path: `get_runtime_context().get_metrics_group()` returns a `MetricGroup`, whose `counter(name)`,
`gauge(name, fn)`, `meter(name, time_span_in_seconds)`, `distribution(name)` and `histogram(name)`
register metrics that the TaskManager exports to Prometheus under Flink's names, labelled with the
group's scope (`add_group(name)`, `add_group(key, value)` for a user variable).
"""

from strom.runtime.metrics.groups import (
    Counter,
    Distribution,
    Gauge,
    Histogram,
    Meter,
    Metric,
    MetricGroup,
)

__all__ = ["Counter", "Distribution", "Gauge", "Histogram", "Meter", "Metric", "MetricGroup"]
