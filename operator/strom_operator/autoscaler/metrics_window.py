"""The sliding window of metric samples that a scaling decision averages over.

A window belongs to one run of the job: its id, its start time and the parallelism of each vertex.
Samples taken at another parallelism describe another job, so a restart (an upgrade, a rescale) or a
changed topology starts an empty window. Samples from the stabilization period after a start are
not taken at all (start-up and catch-up distort the rates); the caller decides that (scaling.py).
A window is full when its samples span `metrics_window` (less one sampling interval, the timer's slack).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from strom_operator.autoscaler.metrics_sample import MetricsSample, VertexMetrics
from strom_operator.autoscaler.topology import VertexId


@dataclass(frozen=True, slots=True)
class MetricsWindow:
    job_id: str | None = None
    job_start: float | None = None  # seconds since the epoch
    parallelism: Mapping[VertexId, int] = field(default_factory=dict)
    samples: tuple[MetricsSample, ...] = ()

    def belongs_to(self, job_id: str, job_start: float, parallelism: Mapping[VertexId, int]) -> bool:
        return self.job_id == job_id and self.job_start == job_start and dict(self.parallelism) == dict(parallelism)

    def add(self, sample: MetricsSample, *, window_s: float) -> MetricsWindow:
        """The window with `sample` added and samples older than `window_s` before it dropped.
        A sample not newer than the last one (a repeated timer tick) is ignored."""
        if self.samples and sample.time <= self.samples[-1].time:
            return self
        horizon = sample.time - window_s
        kept = tuple(s for s in self.samples if s.time >= horizon)
        return replace(self, samples=kept + (sample,))

    def span_s(self) -> float:
        return self.samples[-1].time - self.samples[0].time if self.samples else 0.0

    def is_full(self, *, window_s: float, interval_s: float) -> bool:
        return bool(self.samples) and self.span_s() >= window_s - interval_s

    def values(self, vid: VertexId, metric: str) -> list[tuple[float, float]]:
        """(time, value) of one metric of one vertex over the window, where reported."""
        out = []
        for s in self.samples:
            m = s.vertices.get(vid)
            value = getattr(m, metric) if m is not None else None
            if value is not None:
                out.append((s.time, value))
        return out

    def average(self, vid: VertexId, metric: str) -> float | None:
        """Mean of a metric (a VertexMetrics field name) over the samples reporting it; None if none do."""
        values = [v for _, v in self.values(vid, metric)]
        return sum(values) / len(values) if values else None

    # -- persistence (configmap_store.py) ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Compact JSON form: each sample as {"t": time, "v": {vertex: [busy, backPressured, in, out, pending]}}."""
        return {
            "jobId": self.job_id,
            "jobStart": self.job_start,
            "parallelism": dict(self.parallelism),
            "samples": [{"t": s.time, "v": {vid: m.to_list() for vid, m in s.vertices.items()}}
                        for s in self.samples],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricsWindow:
        samples = tuple(
            MetricsSample(float(s["t"]), {VertexId(vid): VertexMetrics.from_list(list(m)) for vid, m in s["v"].items()})
            for s in d.get("samples") or ()
        )
        start = d.get("jobStart")
        return cls(d.get("jobId"), None if start is None else float(start),
                   {VertexId(k): int(v) for k, v in (d.get("parallelism") or {}).items()}, samples)
