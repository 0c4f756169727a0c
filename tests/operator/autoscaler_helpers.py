"""Shared builders for the autoscaler tests: settings, topologies and samples written out by hand."""

from __future__ import annotations

from dataclasses import replace

from strom_operator.autoscaler.metrics_sample import MetricsSample, VertexMetrics
from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.autoscaler.topology import JobTopology, VertexId, VertexInfo

# A prime number of key groups: no parallelism below it divides it, so alignment never interferes
# with tests about something else.
PRIME_KEY_GROUPS = 997

DEFAULTS = AutoscalerSettings(
    enabled=True, mode="scale", metrics_interval_s=60.0, metrics_window_s=600.0, stabilization_s=300.0,
    target_utilization=0.7, utilization_boundary=0.3, catch_up_duration_s=300.0, scale_down_delay_s=3600.0,
    min_parallelism=1, max_parallelism=PRIME_KEY_GROUPS, max_rescales_per_hour=2,
)


def settings(**changes: object) -> AutoscalerSettings:
    return replace(DEFAULTS, **changes)


def vertex(vid: str, parallelism: int, *inputs: str, max_parallelism: int = PRIME_KEY_GROUPS,
           name: str | None = None) -> VertexInfo:
    return VertexInfo(VertexId(vid), name or vid.capitalize(), parallelism, max_parallelism,
                      tuple(VertexId(i) for i in inputs))


def topology(*vertices: VertexInfo) -> JobTopology:
    return JobTopology.of(list(vertices))


def metrics(*, busy: float | None = None, in_rate: float | None = None, out_rate: float | None = None,
            back_pressured: float | None = 0.0, pending: float | None = None) -> VertexMetrics:
    return VertexMetrics(busy, back_pressured, in_rate, out_rate, pending)


def sample(time: float, **by_vertex: VertexMetrics) -> MetricsSample:
    return MetricsSample(time, {VertexId(k): v for k, v in by_vertex.items()})
