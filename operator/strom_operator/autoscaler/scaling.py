"""One autoscaler evaluation: state + a fresh sample -> new state + a decision (pure; the handler does I/O).

In order, an evaluation
1. notices a restart of the job (another job id or start time, or another parallelism): the window
   starts empty, waiting scale-downs are dropped, and the restart counts against the hourly budget
   (upgrades included: every deployment starts the job anew; the first one seen does not count);
2. waits while a rescale it decided has not yet restarted the job;
3. waits out `stabilization` after the start, then samples into the window until it is full;
4. evaluates every vertex (evaluator.py) and recommends a parallelism (vertex_scaler.py);
5. delays scale-downs by `scaleDownDelay`, applying the highest recommendation of that period;
6. checks the budget of `maxRescalesPerHour`, then rescales, or only advises in mode 'advise'.
Whatever it concludes comes back as a ScalingDecision with the figures it used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from strom_operator.autoscaler import decisions as d
from strom_operator.autoscaler.evaluator import Evaluation, evaluate
from strom_operator.autoscaler.metrics_sample import MetricsSample
from strom_operator.autoscaler.metrics_window import MetricsWindow
from strom_operator.autoscaler.settings import AutoscalerSettings
from strom_operator.autoscaler.state import AutoscalerState, PendingScaleDown
from strom_operator.autoscaler.topology import JobTopology, VertexId
from strom_operator.autoscaler.vertex_scaler import DEAD_BAND, SCALE_DOWN, VertexRecommendation, recommend
from strom_operator.crd.status import format_time

HOUR_S = 3600.0


def task_managers_needed(parallelism: Mapping[VertexId, int], slots_per_task_manager: int) -> int:
    """With slot sharing a job needs as many slots as its highest vertex parallelism."""
    slots = max(parallelism.values(), default=1)
    return max(1, math.ceil(slots / slots_per_task_manager))


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _seconds_text(s: float) -> str:
    return f"{s / 60:g} min" if s >= 60 and s % 60 == 0 else f"{s:g} s"


class _Decide:
    """Builds the decisions of one evaluation: the time, mode and budget count are the same for all."""

    def __init__(self, settings: AutoscalerSettings, now: datetime) -> None:
        self.settings, self.now = settings, now

    def __call__(self, state: AutoscalerState, reason: str, message: str, *, action: str = d.NONE,
                 until: float | None = None, vertices: tuple[d.VertexFigures, ...] = (),
                 recommended: Mapping[str, int] | None = None,
                 task_managers: int | None = None) -> tuple[AutoscalerState, d.ScalingDecision]:
        decision = d.ScalingDecision(self.now, self.settings.mode, action, reason, message,
                                     None if until is None else _utc(until), dict(recommended or {}),
                                     task_managers, len(state.restarts), vertices)
        return state, decision


def autoscale(state: AutoscalerState, *, settings: AutoscalerSettings, topology: JobTopology | None,
              sample: MetricsSample | None, job_id: str, job_start: datetime, now: datetime,
              slots_per_task_manager: int) -> tuple[AutoscalerState, d.ScalingDecision]:
    """Evaluate a running job. `topology` and `sample` are None when the JobManager gave no answer."""
    t, start = now.timestamp(), job_start.timestamp()
    restarts = tuple(r for r in state.restarts if r > t - HOUR_S)
    state = replace(state, restarts=restarts)
    decision = _Decide(settings, now)

    if not settings.enabled:
        return decision(state, d.DISABLED, "spec.autoscaler.enabled is false")
    if topology is None or sample is None:
        return decision(state, d.WAITING_FOR_METRICS, "the JobManager reported no job vertices or metrics")

    if not state.window.belongs_to(job_id, start, topology.parallelism):
        if state.window.job_id is not None:  # a restart, not the first job seen
            # Another start time dates the restart; a parallelism changed in place dates from now.
            restarted_at = start if state.window.job_start != start else t
            restarts = tuple(r for r in state.restarts + (restarted_at,) if r > t - HOUR_S)
        state = AutoscalerState(MetricsWindow(job_id, start, topology.parallelism), {}, restarts, state.overrides)

    if state.rescale_requested_at is not None:
        timeout = state.rescale_requested_at + settings.stabilization_s + settings.metrics_window_s
        if t < timeout:
            asked = format_time(_utc(state.rescale_requested_at))
            return decision(state, d.RESCALE_IN_PROGRESS, f"waiting for the rescale decided at {asked} to restart "
                            "the job", until=timeout)
        state = replace(state, rescale_requested_at=None)  # it never came; evaluate afresh

    stable_at = start + settings.stabilization_s
    if t < stable_at:
        return decision(state, d.WAITING_FOR_STABILIZATION,
                        f"the job started at {format_time(job_start)}; samples count from "
                        f"{format_time(_utc(stable_at))} ({_seconds_text(settings.stabilization_s)} stabilization)",
                        until=stable_at)

    window = state.window.add(sample, window_s=settings.metrics_window_s)
    state = replace(state, window=window)
    if not window.is_full(window_s=settings.metrics_window_s, interval_s=settings.metrics_interval_s):
        needed = settings.metrics_window_s - settings.metrics_interval_s
        return decision(state, d.WAITING_FOR_METRICS,
                        f"{len(window.samples)} samples over {_seconds_text(window.span_s())} of the "
                        f"{_seconds_text(settings.metrics_window_s)} metrics window",
                        until=window.samples[0].time + needed)

    evaluation = evaluate(topology, window, catch_up_duration_s=settings.catch_up_duration_s)
    if evaluation.missing:
        return decision(state, d.WAITING_FOR_METRICS, "; ".join(evaluation.missing))
    return _decide(state, settings, topology, evaluation, t, slots_per_task_manager, decision)


def _decide(state: AutoscalerState, settings: AutoscalerSettings, topology: JobTopology, evaluation: Evaluation,
            t: float, slots: int, decision: _Decide) -> tuple[AutoscalerState, d.ScalingDecision]:
    recs: dict[VertexId, VertexRecommendation] = {v.id: recommend(evaluation.vertices[v.id], settings)
                                                  for v in topology.vertices}
    pending = dict(state.pending_scale_downs)
    final: dict[VertexId, int] = {}
    delayed_until: dict[VertexId, float] = {}
    outcomes: dict[VertexId, str] = {}
    for v in topology.vertices:
        rec = recs[v.id]
        outcomes[v.id] = rec.outcome
        if rec.kind != SCALE_DOWN:
            pending.pop(v.id, None)  # a recommendation that is no scale-down ends the waiting one
            final[v.id] = rec.recommended
            continue
        before = pending.get(v.id)
        waiting = (PendingScaleDown(t, rec.recommended) if before is None
                   else PendingScaleDown(before.since, max(before.highest, rec.recommended)))
        pending[v.id] = waiting
        due = waiting.since + settings.scale_down_delay_s
        if t >= due:
            final[v.id] = waiting.highest
            since = format_time(_utc(waiting.since))
            outcomes[v.id] = (f"{rec.current} -> {waiting.highest} (highest recommended since {since}); "
                              f"now: {rec.outcome}")
        else:
            final[v.id] = rec.current
            delayed_until[v.id] = due
            outcomes[v.id] = (f"scale-down to {waiting.highest} delayed until {format_time(_utc(due))}; "
                              f"now: {rec.outcome}")
    figures = tuple(_figures(evaluation, topology, recs, final, outcomes, delayed_until))
    current = topology.parallelism
    recommended = {str(k): v for k, v in final.items()}
    task_managers = task_managers_needed(final, slots)
    changed = [v for v in topology.vertices if final[v.id] != current[v.id]]
    state = replace(state, pending_scale_downs=pending)
    summary = "; ".join(f"{v.name}: {outcomes[v.id]}" for v in topology.vertices)
    figures_kw: dict[str, Any] = {"vertices": figures, "recommended": recommended, "task_managers": task_managers}
    if not changed:
        if delayed_until:
            return decision(state, d.SCALE_DOWN_DELAYED, summary, until=min(delayed_until.values()), **figures_kw)
        reason = d.WITHIN_DEAD_BAND if all(r.kind == DEAD_BAND for r in recs.values()) else d.NO_CHANGE
        return decision(state, reason, summary, **figures_kw)
    change = ", ".join(f"{v.name} {current[v.id]} -> {final[v.id]}" for v in changed)
    change += f"; TaskManagers {task_managers_needed(current, slots)} -> {task_managers}"
    if settings.advise_only:
        return decision(state, d.ADVISED, f"recommends {change} (mode advise). {summary}", action=d.ADVISE,
                        **figures_kw)
    if len(state.restarts) >= settings.max_rescales_per_hour:
        # Pending scale-downs keep waiting (and accumulating their highest recommendation) meanwhile.
        return decision(state, d.BUDGET_EXHAUSTED,
                        f"{len(state.restarts)} rescales or upgrades in the last hour reach maxRescalesPerHour "
                        f"{settings.max_rescales_per_hour}; would rescale {change}. {summary}",
                        until=min(state.restarts) + HOUR_S, **figures_kw)
    for vid in final:
        if vid in pending and final[vid] != current[vid]:
            del pending[vid]  # applied now
    state = replace(state, pending_scale_downs=pending, overrides=dict(final), rescale_requested_at=t)
    return decision(state, d.RESCALED, f"rescales {change}. {summary}", action=d.RESCALE, **figures_kw)


def _figures(evaluation: Evaluation, topology: JobTopology, recs: Mapping[VertexId, VertexRecommendation],
             final: Mapping[VertexId, int], outcomes: Mapping[VertexId, str],
             delayed_until: Mapping[VertexId, float]) -> list[d.VertexFigures]:
    out = []
    for v in topology.vertices:
        ev = evaluation.vertices[v.id]
        after = delayed_until.get(v.id)
        out.append(d.VertexFigures(
            vertex_id=v.id, name=v.name, parallelism=v.parallelism, recommended_parallelism=final[v.id],
            outcome=outcomes[v.id], input_rate=ev.input_rate, busy_ms_per_s=ev.busy_ms_per_s,
            back_pressured_ms_per_s=ev.back_pressured_ms_per_s, true_processing_rate=ev.true_processing_rate,
            target_rate=ev.target_rate, catch_up_rate=ev.catch_up_rate if v.is_source else None,
            backlog=ev.backlog, utilization=ev.utilization, scale_down_after=None if after is None else _utc(after)))
    return out
