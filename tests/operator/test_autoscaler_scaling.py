"""One evaluation after another: stabilization, the metrics window, delayed scale-down, the rescale
budget, advise mode, restarts. Time is driven by the test; every expected figure is worked by hand.

The job of most tests is one source `src` over 997 key groups (prime: no alignment) reading 200 rec/s.
At parallelism p and busy time b ms/s its true rate is 200 / (b/1000) rec/s, its utilization b/1000,
and it needs ceil(200 / (200/(b/1000)/p x 0.7)) = ceil(p x b / 700) subtasks.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from strom_operator.autoscaler import decisions as d
from strom_operator.autoscaler.configmap_store import state_from_configmap_data, state_to_configmap_data
from strom_operator.autoscaler.scaling import autoscale, task_managers_needed
from strom_operator.autoscaler.state import AutoscalerState
from strom_operator.resources.configmap import parallelism_overrides_value

from tests.operator.autoscaler_helpers import metrics, sample, settings, topology, vertex

T = 1_700_000_000.0
# A window as long as the sampling interval holds one sample: each evaluation sees the latest figures.
ONE_SAMPLE = dict(metrics_interval_s=60.0, metrics_window_s=60.0)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class Job:
    """Drives `autoscale` for one job through time, optionally storing the state in a ConfigMap between runs."""

    def __init__(self, *, through_configmap: bool = False, slots: int = 1, **changes: object) -> None:
        self.settings = settings(**{**ONE_SAMPLE, **changes})
        self.state = AutoscalerState()
        self.through_configmap = through_configmap
        self.slots = slots

    def evaluate(self, t: float, *, job_id: str = "job-1", start: float = T, parallelism: int = 8,
                 busy: float | None = 500, in_rate: float | None = 200, pending: float | None = None,
                 extra_vertices: tuple = (), extra_metrics: dict | None = None) -> d.ScalingDecision:
        topo = topology(vertex("src", parallelism, name="Source"), *extra_vertices)
        s = sample(t, src=metrics(busy=busy, in_rate=in_rate, out_rate=in_rate, pending=pending),
                   **(extra_metrics or {}))
        self.state, decision = autoscale(self.state, settings=self.settings, topology=topo, sample=s, job_id=job_id,
                                         job_start=_at(start), now=_at(t), slots_per_task_manager=self.slots)
        if self.through_configmap:
            self.state, problem = state_from_configmap_data(state_to_configmap_data(self.state))
            assert problem is None
        return decision


def test_no_decision_while_the_job_stabilizes_after_its_start():
    job = Job()
    first = job.evaluate(T + 100)
    assert (first.reason, first.action, first.until) == (d.WAITING_FOR_STABILIZATION, d.NONE, _at(T + 300))
    assert job.state.window.samples == ()  # samples from the stabilization period are not kept
    assert job.evaluate(T + 300).reason == d.WITHIN_DEAD_BAND  # 5 min after the start


def test_a_decision_needs_a_full_metrics_window():
    """Window 10 min sampled each minute: a window is full once its samples span 10 min less one
    interval = 540 s, i.e. at the 10th sample (T+300 ... T+840)."""
    job = Job(metrics_interval_s=60.0, metrics_window_s=600.0)
    reasons = [job.evaluate(T + 300 + 60 * k).reason for k in range(11)]
    assert reasons == [d.WAITING_FOR_METRICS] * 9 + [d.WITHIN_DEAD_BAND] * 2
    assert len(job.state.window.samples) == 11


def test_missing_metrics_mean_waiting_for_metrics_never_a_scale_to_one():
    """`map` reports records but no busy time yet: the job would look idle; the autoscaler waits."""
    job = Job()
    extra = (vertex("map", 4, "src", name="Map"),)
    decision = job.evaluate(T + 300, busy=50, extra_vertices=extra, extra_metrics={"map": metrics(in_rate=200)})
    assert (decision.reason, decision.action) == (d.WAITING_FOR_METRICS, d.NONE)
    assert "vertex 'Map' (map) reports no busyTimeMsPerSecond yet" in decision.message
    assert decision.recommended_parallelism == {} and job.state.overrides == {}


def test_no_answer_from_the_jobmanager_is_waiting_for_metrics():
    job = Job()
    state, decision = autoscale(job.state, settings=job.settings, topology=None, sample=None, job_id="job-1",
                                job_start=_at(T), now=_at(T + 400), slots_per_task_manager=1)
    assert decision.reason == d.WAITING_FOR_METRICS and state == job.state


@pytest.mark.parametrize("through_configmap", [False, True])
def test_scale_down_waits_out_the_delay_and_applies_the_highest_recommendation(through_configmap):
    """Parallelism 8, delay 10 min. Busy 250 -> ceil(8 x 250 / 700) = ceil(2.86) = 3;
    busy 300 -> ceil(3.43) = 4; busy 100 -> ceil(1.14) = 2; busy 200 -> ceil(2.29) = 3.
    Recommended since T+300, the scale-down applies at T+900 with the highest of 3, 4, 2, 3 = 4.
    Through a ConfigMap between evaluations (an operator restart each time) the result is the same."""
    job = Job(scale_down_delay_s=600.0, through_configmap=through_configmap)
    first = job.evaluate(T + 300, busy=250)
    assert (first.reason, first.until) == (d.SCALE_DOWN_DELAYED, _at(T + 900))
    assert first.vertices[0].scale_down_after == _at(T + 900)
    assert job.evaluate(T + 420, busy=300).reason == d.SCALE_DOWN_DELAYED
    assert job.evaluate(T + 540, busy=100).reason == d.SCALE_DOWN_DELAYED
    due = job.evaluate(T + 900, busy=200)
    assert (due.reason, due.action) == (d.RESCALED, d.RESCALE)
    assert due.recommended_parallelism == {"src": 4}
    assert job.state.overrides == {"src": 4} and job.state.pending_scale_downs == {}


def test_a_recommendation_inside_the_dead_band_cancels_a_waiting_scale_down():
    """Busy 250 at T+300 starts a scale-down wait; busy 500 (utilization 0.5) at T+420 ends it; busy 250
    at T+540 starts a new wait, due at T+540+600 = T+1140, so T+1020 still waits."""
    job = Job(scale_down_delay_s=600.0)
    job.evaluate(T + 300, busy=250)
    assert job.evaluate(T + 420, busy=500).reason == d.WITHIN_DEAD_BAND
    assert job.state.pending_scale_downs == {}
    job.evaluate(T + 540, busy=250)
    later = job.evaluate(T + 1020, busy=250)
    assert (later.reason, later.until) == (d.SCALE_DOWN_DELAYED, _at(T + 1140))


def test_a_zero_scale_down_delay_scales_down_at_once():
    decision = Job(scale_down_delay_s=0.0).evaluate(T + 300, busy=250)
    assert decision.reason == d.RESCALED and decision.recommended_parallelism == {"src": 3}


def test_rescale_budget_counts_upgrades_and_frees_up_after_an_hour():
    """Budget 2 per hour. job-1 starts at T (the first start seen is not counted); an upgrade starts
    job-2 at T+600 (1); the autoscaler rescales it 2 -> 6 and job-3 starts at T+1000 (2). Overloaded
    again, job-3 must wait until the upgrade's restart is an hour old: T+600+3600 = T+4200.
    Overload: busy 1000 and a backlog of 60 000 to catch up in 300 s: target 200 + 200 = 400 rec/s,
    true rate 200 rec/s; at parallelism 2 ceil(400 / (100 x 0.7)) = 6, at 6 ceil(400 / (33.3 x 0.7)) = 18."""
    job = Job()
    assert job.evaluate(T + 300, job_id="job-1", start=T).reason == d.WITHIN_DEAD_BAND
    upgraded = job.evaluate(T + 900, job_id="job-2", start=T + 600, parallelism=2, busy=1000, pending=60_000)
    assert (upgraded.reason, upgraded.recommended_parallelism) == (d.RESCALED, {"src": 6})
    assert upgraded.rescales_in_last_hour == 1
    rescaled = dict(job_id="job-3", start=T + 1000, parallelism=6, busy=1000, pending=60_000)
    blocked = job.evaluate(T + 1300, **rescaled)
    assert (blocked.reason, blocked.action, blocked.until) == (d.BUDGET_EXHAUSTED, d.NONE, _at(T + 4200))
    assert blocked.rescales_in_last_hour == 2 and blocked.recommended_parallelism == {"src": 18}
    assert job.evaluate(T + 4199, **rescaled).reason == d.BUDGET_EXHAUSTED
    freed = job.evaluate(T + 4200, **rescaled)
    assert (freed.reason, freed.recommended_parallelism, freed.rescales_in_last_hour) == (d.RESCALED, {"src": 18}, 1)


def test_after_deciding_a_rescale_it_waits_for_the_job_to_restart():
    """Rescaled at T+300; without a restart the next evaluations report the rescale in progress until
    stabilization + window (300 + 60 s) have passed, then evaluate afresh."""
    job = Job()
    overload = dict(parallelism=2, busy=1000, pending=60_000)
    assert job.evaluate(T + 300, **overload).reason == d.RESCALED
    waiting = job.evaluate(T + 420, **overload)
    assert (waiting.reason, waiting.until) == (d.RESCALE_IN_PROGRESS, _at(T + 660))
    assert job.evaluate(T + 660, **overload).reason == d.RESCALED


def test_a_restart_restarts_stabilization_and_empties_the_window():
    job = Job()
    assert job.evaluate(T + 300).reason == d.WITHIN_DEAD_BAND
    after = job.evaluate(T + 1100, job_id="job-2", start=T + 1000)
    assert (after.reason, after.until) == (d.WAITING_FOR_STABILIZATION, _at(T + 1300))
    assert job.state.window.samples == () and job.state.window.job_id == "job-2"
    assert after.rescales_in_last_hour == 1


def test_a_changed_parallelism_without_a_new_start_is_a_new_window():
    job = Job(metrics_interval_s=60.0, metrics_window_s=600.0)
    job.evaluate(T + 300)
    job.evaluate(T + 360)
    job.evaluate(T + 420, parallelism=4)
    assert [s.time for s in job.state.window.samples] == [T + 420]
    assert job.state.restarts == (T + 420,)


def test_advise_mode_recommends_and_changes_nothing():
    """Overloaded at parallelism 2 -> 6 (see the budget test); with 4 slots per TaskManager that is
    ceil(6 / 4) = 2 TaskManagers. Advice is repeated, it never waits for a restart."""
    job = Job(mode="advise", slots=4)
    for t in (T + 300, T + 420):
        advice = job.evaluate(t, parallelism=2, busy=1000, pending=60_000)
        assert (advice.reason, advice.action) == (d.ADVISED, d.ADVISE)
        assert advice.recommended_parallelism == {"src": 6} and advice.task_managers == 2
    assert job.state.overrides == {} and job.state.rescale_requested_at is None


def test_disabled_autoscaler_decides_nothing():
    job = Job(enabled=False)
    decision = job.evaluate(T + 1000, busy=1000, pending=60_000)
    assert (decision.reason, decision.action) == (d.DISABLED, d.NONE)
    assert job.state == AutoscalerState()


def test_task_managers_follow_the_highest_vertex_parallelism_with_slot_sharing():
    """src 2 -> 6 (overloaded), map stays 3 (utilization 0.5): slots needed = max(6, 3) = 6; with 4 slots
    per TaskManager ceil(6 / 4) = 2, before ceil(3 / 4) = 1."""
    job = Job(slots=4)
    decision = job.evaluate(T + 300, parallelism=2, busy=1000, pending=60_000,
                            extra_vertices=(vertex("map", 3, "src", name="Map"),),
                            extra_metrics={"map": metrics(busy=500, in_rate=200)})
    assert decision.recommended_parallelism == {"src": 6, "map": 3}
    assert decision.task_managers == 2
    assert "TaskManagers 1 -> 2" in decision.message
    assert task_managers_needed({"a": 3, "b": 5}, 2) == 3 and task_managers_needed({"a": 1}, 4) == 1


def test_parallelism_overrides_in_flinks_map_syntax_sorted_by_vertex():
    assert parallelism_overrides_value({"bb": 2, "aa": 4}) == "aa:4,bb:2"
    assert parallelism_overrides_value({}) == ""
