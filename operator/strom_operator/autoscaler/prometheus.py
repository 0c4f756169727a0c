"""The autoscaler's figures as Prometheus metrics of the operator (its endpoint serves the registry).

Per job vertex: true processing rate, target rate, utilization, current and recommended
parallelism; per job: a counter of evaluations by action and reason. Labels name the FlinkJob
(namespace, name) and the vertex (id and name), so one operator's registry holds every job.
"""

from __future__ import annotations

import weakref

from prometheus_client import CollectorRegistry, Counter, Gauge

from strom_operator.autoscaler.decisions import ScalingDecision

_JOB = ("namespace", "flinkjob")
_VERTEX = _JOB + ("vertex_id", "vertex")


class AutoscalerMetrics:
    """The autoscaler's metrics registered in one registry (prometheus-client allows a name once per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(f"strom_autoscaler_{name}", doc, _VERTEX, registry=registry)

        self.true_processing_rate = gauge("true_processing_rate",
                                          "Records/s the vertex could process at its parallelism if always busy.")
        self.target_rate = gauge("target_rate", "Records/s the vertex must process (input rate + backlog catch-up).")
        self.utilization = gauge("utilization", "Target rate / true processing rate.")
        self.parallelism = gauge("parallelism", "Parallelism the vertex runs at.")
        self.recommended_parallelism = gauge("recommended_parallelism", "Parallelism the autoscaler recommends.")
        self.decisions = Counter("strom_autoscaler_decisions", "Autoscaler evaluations by action and reason.",
                                 _JOB + ("action", "reason"), registry=registry)

    def record(self, namespace: str, name: str, decision: ScalingDecision) -> None:
        self.decisions.labels(namespace, name, decision.action, decision.reason).inc()
        for v in decision.vertices:
            labels = (namespace, name, v.vertex_id, v.name)
            self.parallelism.labels(*labels).set(v.parallelism)
            self.recommended_parallelism.labels(*labels).set(v.recommended_parallelism)
            for gauge, value in ((self.true_processing_rate, v.true_processing_rate),
                                 (self.target_rate, v.target_rate), (self.utilization, v.utilization)):
                if value is not None:
                    gauge.labels(*labels).set(value)
                else:  # not measurable now: no stale figure from an earlier evaluation
                    _remove(gauge, labels)


def _remove(gauge: Gauge, labels: tuple[str, ...]) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:  # never set
        pass


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, AutoscalerMetrics] = weakref.WeakKeyDictionary()


def record_decision(registry: CollectorRegistry, *, namespace: str, name: str, decision: ScalingDecision) -> None:
    """Update the autoscaler metrics in `registry` from one decision (registering them on first use)."""
    metrics = _BY_REGISTRY.get(registry)
    if metrics is None:
        metrics = _BY_REGISTRY[registry] = AutoscalerMetrics(registry)
    metrics.record(namespace, name, decision)
