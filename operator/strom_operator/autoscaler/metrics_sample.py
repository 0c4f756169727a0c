"""One sample of a job's scaling metrics, read from the JobManager REST API's aggregated subtask metrics.

Per job vertex the autoscaler asks
`/jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=<SCALING_METRICS>&agg=max,sum`, which answers
`[{"id": name, "max": .., "sum": ..}, ...]` with only the metrics some subtask reports. Busy and
back-pressured time take the busiest subtask (max), as Flink's autoscaler does by default: the
slowest subtask bounds the vertex. Rates and the backlog add up over subtasks (sum). A metric that
no subtask reports stays None: "no figure yet", never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from strom_operator.autoscaler.topology import JobTopology, VertexId

BUSY = "busyTimeMsPerSecond"
BACK_PRESSURED = "backPressuredTimeMsPerSecond"
RECORDS_IN = "numRecordsInPerSecond"
RECORDS_OUT = "numRecordsOutPerSecond"
PENDING = "pendingRecords"
SCALING_METRICS = (BUSY, BACK_PRESSURED, RECORDS_IN, RECORDS_OUT, PENDING)
_MAX_OVER_SUBTASKS = (BUSY, BACK_PRESSURED)


@dataclass(frozen=True, slots=True)
class VertexMetrics:
    """A vertex's figures at one moment; None where no subtask reported the metric."""

    busy_ms_per_s: float | None = None
    back_pressured_ms_per_s: float | None = None
    records_in_per_s: float | None = None
    records_out_per_s: float | None = None
    pending_records: float | None = None

    def to_list(self) -> list[float | None]:
        return [self.busy_ms_per_s, self.back_pressured_ms_per_s, self.records_in_per_s, self.records_out_per_s,
                self.pending_records]

    @classmethod
    def from_list(cls, values: list[float | None]) -> VertexMetrics:
        return cls(*(None if v is None else float(v) for v in values[:5]))


@dataclass(frozen=True, slots=True)
class MetricsSample:
    """The figures of every vertex at `time` (seconds since the epoch)."""

    time: float
    vertices: Mapping[VertexId, VertexMetrics]


def subtask_metrics_path(job_id: str, vertex_id: str) -> str:
    """The REST path (with query) that answers what `vertex_metrics_from_rest` reads."""
    return (f"/jobs/{quote(job_id)}/vertices/{quote(vertex_id)}/subtasks/metrics"
            f"?get={','.join(SCALING_METRICS)}&agg=max,sum")


def vertex_metrics_from_rest(aggregated: list[Mapping[str, Any]]) -> VertexMetrics:
    """A vertex's figures from the aggregated subtask metrics JSON; unknown ids are ignored."""
    values: dict[str, float] = {}
    for entry in aggregated:
        name = entry.get("id")
        if name not in SCALING_METRICS:
            continue
        agg = "max" if name in _MAX_OVER_SUBTASKS else "sum"
        value = entry.get(agg)
        if value is None:
            continue
        try:
            values[name] = float(value)  # Flink may send numbers as strings
        except (TypeError, ValueError):
            continue
    return VertexMetrics(values.get(BUSY), values.get(BACK_PRESSURED), values.get(RECORDS_IN),
                         values.get(RECORDS_OUT), values.get(PENDING))


def sample_from_rest(topology: JobTopology, metrics: Mapping[str, list[Mapping[str, Any]]], *,
                     time: float) -> MetricsSample:
    """A sample from each vertex's aggregated subtask metrics JSON (vertex id -> list); a vertex the
    JobManager gave no answer for has no figures."""
    return MetricsSample(time, {v.id: vertex_metrics_from_rest(metrics.get(v.id) or []) for v in topology.vertices})
