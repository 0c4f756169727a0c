"""The record of one autoscaler evaluation: a decision, or a non-decision and why, with its figures.

Every evaluation produces one, whatever it concluded; it goes to `status.scaling.autoscaler`
(`to_dict`, schema in schema_status.AUTOSCALER_DECISION), to an event (`event_message`) and to the
operator's Prometheus metrics (prometheus.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from strom_operator.crd.status import format_time, parse_time

# Reasons, in the order an evaluation can stop at them (schema_status.AUTOSCALER_REASONS).
DISABLED = "Disabled"
WAITING_FOR_STABILIZATION = "WaitingForStabilization"
WAITING_FOR_METRICS = "WaitingForMetrics"
RESCALE_IN_PROGRESS = "RescaleInProgress"
WITHIN_DEAD_BAND = "WithinDeadBand"
NO_CHANGE = "NoChange"
SCALE_DOWN_DELAYED = "ScaleDownDelayed"
BUDGET_EXHAUSTED = "BudgetExhausted"
ADVISED = "Advised"
RESCALED = "Rescaled"

RESCALE, ADVISE, NONE = "rescale", "advise", "none"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


@dataclass(frozen=True, slots=True)
class VertexFigures:
    vertex_id: str
    name: str
    parallelism: int
    recommended_parallelism: int
    outcome: str
    input_rate: float | None = None
    busy_ms_per_s: float | None = None
    back_pressured_ms_per_s: float | None = None
    true_processing_rate: float | None = None
    target_rate: float | None = None
    catch_up_rate: float | None = None
    backlog: float | None = None
    utilization: float | None = None
    scale_down_after: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"vertexId": self.vertex_id, "name": self.name, "parallelism": self.parallelism,
                               "recommendedParallelism": self.recommended_parallelism, "outcome": self.outcome}
        for key, value in (("inputRate", self.input_rate), ("busyTimeMsPerSecond", self.busy_ms_per_s),
                           ("backPressuredTimeMsPerSecond", self.back_pressured_ms_per_s),
                           ("trueProcessingRate", self.true_processing_rate), ("targetRate", self.target_rate),
                           ("catchUpRate", self.catch_up_rate), ("backlog", self.backlog),
                           ("utilization", self.utilization)):
            if value is not None:
                out[key] = _round(value)
        if self.scale_down_after is not None:
            out["scaleDownAfter"] = format_time(self.scale_down_after)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VertexFigures:
        return cls(d["vertexId"], d.get("name", d["vertexId"]), int(d.get("parallelism", 0)),
                   int(d.get("recommendedParallelism", 0)), d.get("outcome", ""), d.get("inputRate"),
                   d.get("busyTimeMsPerSecond"), d.get("backPressuredTimeMsPerSecond"), d.get("trueProcessingRate"),
                   d.get("targetRate"), d.get("catchUpRate"), d.get("backlog"), d.get("utilization"),
                   parse_time(d.get("scaleDownAfter")))


@dataclass(frozen=True, slots=True)
class ScalingDecision:
    time: datetime
    mode: str  # scale | advise
    action: str  # RESCALE | ADVISE | NONE
    reason: str  # one of the reasons above
    message: str
    until: datetime | None = None  # when the reported wait ends, if known
    recommended_parallelism: Mapping[str, int] = field(default_factory=dict)
    task_managers: int | None = None
    rescales_in_last_hour: int = 0
    vertices: tuple[VertexFigures, ...] = ()

    @property
    def rescales(self) -> bool:
        return self.action == RESCALE

    def event_message(self) -> str:
        """One line for a Kubernetes event."""
        return f"Autoscaler {self.reason}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"time": format_time(self.time), "mode": self.mode, "action": self.action,
                               "reason": self.reason, "message": self.message,
                               "rescalesInLastHour": self.rescales_in_last_hour,
                               "vertices": [v.to_dict() for v in self.vertices]}
        if self.until is not None:
            out["until"] = format_time(self.until)
        if self.recommended_parallelism:
            out["recommendedParallelism"] = dict(self.recommended_parallelism)
        if self.task_managers is not None:
            out["taskManagers"] = self.task_managers
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScalingDecision:
        return cls(parse_time(d.get("time")) or datetime.fromtimestamp(0, UTC), d.get("mode", "scale"),
                   d.get("action", NONE), d.get("reason", ""), d.get("message", ""), parse_time(d.get("until")),
                   dict(d.get("recommendedParallelism") or {}), d.get("taskManagers"),
                   int(d.get("rescalesInLastHour", 0)),
                   tuple(VertexFigures.from_dict(v) for v in d.get("vertices") or ()))
