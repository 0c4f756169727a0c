"""One vertex's recommended parallelism from its evaluation (Flink's JobVertexScaler, in spirit).

* utilization = target rate / true processing rate at the current parallelism; inside the dead
  band [targetUtilization - utilizationBoundary, targetUtilization + utilizationBoundary] nothing changes;
* outside it: required = ceil(target rate / (true rate per subtask x targetUtilization)), so the
  vertex would be busy `targetUtilization` of the time;
* clamped to [minParallelism, maxParallelism] and to the vertex's max parallelism (its key groups);
* aligned to a divisor of the max parallelism when that is one step up (p + 1): then every subtask
  holds the same number of key groups. Never aligned down, which would fall short of the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from strom_operator.autoscaler.evaluator import VertexEvaluation
from strom_operator.autoscaler.settings import AutoscalerSettings

# Slack for float error in target / capacity (e.g. 700 / (100 x 0.7) = 10.000000000000002).
_EPSILON = 1e-9

SCALE_UP = "scale-up"
SCALE_DOWN = "scale-down"
DEAD_BAND = "within-dead-band"
UNMEASURABLE = "unmeasurable"
NO_CHANGE = "no-change"


@dataclass(frozen=True, slots=True)
class VertexRecommendation:
    current: int
    recommended: int
    kind: str  # SCALE_UP | SCALE_DOWN | DEAD_BAND | UNMEASURABLE | NO_CHANGE
    outcome: str  # the reason in words, with the figures


def align_to_key_groups(parallelism: int, key_groups: int, upper: int) -> int:
    """`parallelism`, or parallelism + 1 when that divides `key_groups` evenly and is allowed."""
    if key_groups % parallelism == 0:
        return parallelism
    if parallelism + 1 <= upper and key_groups % (parallelism + 1) == 0:
        return parallelism + 1
    return parallelism


def bounds(ev: VertexEvaluation, settings: AutoscalerSettings) -> tuple[int, int]:
    upper = max(1, min(settings.max_parallelism, ev.vertex.max_parallelism))
    return min(settings.min_parallelism, upper), upper


def recommend(ev: VertexEvaluation, settings: AutoscalerSettings) -> VertexRecommendation:
    current = ev.vertex.parallelism
    utilization, per_subtask = ev.utilization, ev.true_rate_per_subtask
    if utilization is None or per_subtask is None or ev.target_rate is None:
        why = ("it processed no records in the window" if ev.true_processing_rate is None
               else "its target rate is unknown (an input processed no records)")
        return VertexRecommendation(current, current, UNMEASURABLE, f"keeps {current}: {why}")
    low = max(0.0, settings.target_utilization - settings.utilization_boundary)
    high = settings.target_utilization + settings.utilization_boundary
    if low - _EPSILON <= utilization <= high + _EPSILON:
        return VertexRecommendation(current, current, DEAD_BAND,
                                    f"keeps {current}: utilization {utilization:.2f} within [{low:.2f}, {high:.2f}]")
    required = max(1, math.ceil(ev.target_rate / (per_subtask * settings.target_utilization) - _EPSILON))
    lower, upper = bounds(ev, settings)
    clamped = min(max(required, lower), upper)
    chosen = align_to_key_groups(clamped, ev.vertex.max_parallelism, upper)
    figures = (f"utilization {utilization:.2f} outside [{low:.2f}, {high:.2f}], target {ev.target_rate:.1f} rec/s, "
               f"true rate {per_subtask:.1f} rec/s per subtask -> {required} needed")
    if clamped != required:
        figures += f", bounded to {clamped}"
    if chosen != clamped:
        figures += f", aligned to {chosen} (divides {ev.vertex.max_parallelism} key groups)"
    if chosen == current:
        return VertexRecommendation(current, current, NO_CHANGE, f"keeps {current}: {figures}")
    kind = SCALE_UP if chosen > current else SCALE_DOWN
    return VertexRecommendation(current, chosen, kind, f"{current} -> {chosen}: {figures}")
