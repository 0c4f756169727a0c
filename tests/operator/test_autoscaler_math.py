"""The scaling math: true processing rate, target rate with backlog catch-up, propagation through a DAG,
dead band, bounds and key-group alignment. Every expected number is worked by hand in the test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings as settings_hypothesis
from hypothesis import strategies as st
from strom_operator.autoscaler.evaluator import VertexEvaluation, evaluate, output_ratio
from strom_operator.autoscaler.metrics_window import MetricsWindow
from strom_operator.autoscaler.topology import VertexId
from strom_operator.autoscaler.vertex_scaler import (
    DEAD_BAND,
    NO_CHANGE,
    SCALE_DOWN,
    SCALE_UP,
    UNMEASURABLE,
    align_to_key_groups,
    recommend,
)

from tests.operator.autoscaler_helpers import PRIME_KEY_GROUPS, metrics, sample, settings, topology, vertex


def _window(topo, *samples) -> MetricsWindow:
    w = MetricsWindow("job", 0.0, topo.parallelism)
    for s in samples:
        w = w.add(s, window_s=600.0)
    return w


def _evaluation(parallelism: int, *, true_total: float | None, target: float | None,
                max_parallelism: int = PRIME_KEY_GROUPS) -> VertexEvaluation:
    """A vertex evaluated as having `true_total` records/s capacity at `parallelism` and `target` to do."""
    v = vertex("v", parallelism, max_parallelism=max_parallelism)
    return VertexEvaluation(v, input_rate=1.0, output_rate=1.0, busy_ms_per_s=500.0, back_pressured_ms_per_s=0.0,
                            backlog=None, true_processing_rate=true_total, target_rate=target)


# -- evaluation --------------------------------------------------------------------------------------


def test_true_processing_rate_is_input_rate_over_busy_fraction_averaged_over_the_window():
    """Busy 500 and 700 ms/s average to 600; input 900 and 1500 rec/s average to 1200.
    True rate = 1200 / 0.6 = 2000 rec/s for 4 subtasks = 500 per subtask."""
    topo = topology(vertex("src", 4))
    w = _window(topo, sample(0, src=metrics(busy=500, in_rate=900)), sample(60, src=metrics(busy=700, in_rate=1500)))
    ev = evaluate(topo, w, catch_up_duration_s=300).vertices[VertexId("src")]
    assert ev.input_rate == pytest.approx(1200)
    assert ev.busy_ms_per_s == pytest.approx(600)
    assert ev.true_processing_rate == pytest.approx(2000)
    assert ev.true_rate_per_subtask == pytest.approx(500)


def test_source_target_adds_backlog_catch_up_and_backlog_growth():
    """Source at parallelism 1 reads 600 rec/s with busy 600 ms/s: true rate 600 / 0.6 = 1000 rec/s.
    Its backlog grew from 10 000 (t=0) to 64 000 (t=540): 54 000 / 540 = 100 rec/s arrive unread,
    so arrival = 700 rec/s. Catch-up of the latest backlog in 160 s: 64 000 / 160 = 400 rec/s.
    Target = 700 + 400 = 1100 rec/s; utilization 1100 / 1000 = 1.1 > 0.7 + 0.3, so scale up to
    ceil(1100 / (1000 x 0.7)) = ceil(1.571) = 2."""
    topo = topology(vertex("src", 1))
    w = _window(topo, sample(0, src=metrics(busy=600, in_rate=600, pending=10_000)),
                sample(540, src=metrics(busy=600, in_rate=600, pending=64_000)))
    ev = evaluate(topo, w, catch_up_duration_s=160).vertices[VertexId("src")]
    assert ev.backlog == 64_000
    assert ev.catch_up_rate == pytest.approx(400)
    assert ev.target_rate == pytest.approx(1100)
    assert ev.utilization == pytest.approx(1.1)
    rec = recommend(ev, settings())
    assert (rec.kind, rec.recommended) == (SCALE_UP, 2)


def test_backlog_alone_drives_a_scale_up_of_a_vertex_that_keeps_up_with_its_input():
    """Parallelism 2 reading 1000 rec/s at busy 800 ms/s: true rate 1250 (625 per subtask); utilization
    without backlog 0.8 is inside the band. A backlog of 120 000 to catch up in 300 s adds 400 rec/s:
    target 1400, utilization 1.12 -> ceil(1400 / (625 x 0.7)) = ceil(3.2) = 4."""
    topo = topology(vertex("src", 2))
    w = _window(topo, sample(0, src=metrics(busy=800, in_rate=1000, pending=120_000)),
                sample(60, src=metrics(busy=800, in_rate=1000, pending=120_000)))
    ev = evaluate(topo, w, catch_up_duration_s=300).vertices[VertexId("src")]
    assert ev.target_rate == pytest.approx(1400)
    assert recommend(ev, settings()).recommended == 4


def test_target_rates_propagate_through_fan_out_and_fan_in_by_output_ratios():
    """src -> a, src -> b (fan-out), a -> j, b -> j (fan-in); all at parallelism 1.

    src reads 1000 rec/s (busy 500) and writes each record to both outputs (out 2000); backlog
    60 000 over 300 s adds 200: src target = 1200.
    src -> a: a has one input, so the edge carries a's input 1000; ratio 1000 / 1000 = 1 -> a target 1200.
    src -> b: likewise ratio 1 -> b target 1200.
    a -> j: j's other input b feeds only j, so a -> j = j in 3500 - b out 3000 = 500; ratio
    500 / a in 1000 = 0.5 -> 600.  b -> j = 3500 - a out 500 = 3000; ratio 3000 / 1000 = 3 -> 3600.
    j target = 600 + 3600 = 4200.
    True rates: src 1000/0.5 = 2000, a 1000/0.4 = 2500, b 1000/1.0 = 1000, j 3500/0.9 = 3888.9.
    Utilizations: src 0.6 and a 0.48 stay; b 1.2 -> ceil(1200/700) = 2; j 1.08 -> ceil(4200/2722.2) = 2."""
    topo = topology(vertex("j", 1, "a", "b"), vertex("a", 1, "src"), vertex("b", 1, "src"), vertex("src", 1))
    assert [v.id for v in topo.vertices] == ["src", "a", "b", "j"]  # topological order, whatever the input order
    s = sample(0, src=metrics(busy=500, in_rate=1000, out_rate=2000, pending=60_000),
               a=metrics(busy=400, in_rate=1000, out_rate=500), b=metrics(busy=1000, in_rate=1000, out_rate=3000),
               j=metrics(busy=900, in_rate=3500, out_rate=3500))
    evs = evaluate(topo, _window(topo, s), catch_up_duration_s=300).vertices
    targets = {vid: evs[VertexId(vid)].target_rate for vid in ("src", "a", "b", "j")}
    assert targets == pytest.approx({"src": 1200, "a": 1200, "b": 1200, "j": 4200})
    recs = {vid: recommend(evs[VertexId(vid)], settings()) for vid in ("src", "a", "b", "j")}
    assert {vid: (r.kind, r.recommended) for vid, r in recs.items()} == {
        "src": (DEAD_BAND, 1), "a": (DEAD_BAND, 1), "b": (SCALE_UP, 2), "j": (SCALE_UP, 2)}


def test_edge_of_a_fan_out_into_an_ambiguous_fan_in_shares_the_output_rate_evenly():
    """s1 -> j, s1 -> k, s2 -> j, s2 -> l. For s1 -> j: j reads from s2 too, which also feeds l,
    so j's input cannot be split; s1 feeds two vertices: its 200 out rec/s (each record to both)
    count 100 per edge; ratio 100 / s1's 100 in = 1."""
    topo = topology(vertex("s1", 1), vertex("s2", 1), vertex("j", 1, "s1", "s2"), vertex("k", 1, "s1"),
                    vertex("l", 1, "s2"))
    s = sample(0, s1=metrics(busy=100, in_rate=100, out_rate=200), s2=metrics(busy=100, in_rate=50, out_rate=100),
               j=metrics(busy=100, in_rate=150), k=metrics(busy=100, in_rate=100), l=metrics(busy=100, in_rate=50))
    evs = evaluate(topo, _window(topo, s), catch_up_duration_s=300).vertices
    assert output_ratio(topo, evs, VertexId("s1"), VertexId("j")) == pytest.approx(1.0)
    assert evs[VertexId("j")].target_rate == pytest.approx(100 + 50)


def test_a_vertex_missing_a_metric_makes_the_evaluation_wait_and_names_it():
    topo = topology(vertex("src", 2), vertex("map", 2, "src", name="Map"))
    s = sample(0, src=metrics(busy=500, in_rate=1000, out_rate=1000), map=metrics(in_rate=1000))
    evaluation = evaluate(topo, _window(topo, s), catch_up_duration_s=300)
    assert evaluation.vertices == {}
    assert evaluation.missing == ("vertex 'Map' (map) reports no busyTimeMsPerSecond yet",)


def test_a_vertex_that_processed_nothing_keeps_its_parallelism_and_so_does_its_downstream():
    topo = topology(vertex("src", 3), vertex("sink", 5, "src"))
    s = sample(0, src=metrics(busy=0, in_rate=0, out_rate=0), sink=metrics(busy=0, in_rate=0))
    evs = evaluate(topo, _window(topo, s), catch_up_duration_s=300).vertices
    for vid, p in (("src", 3), ("sink", 5)):
        rec = recommend(evs[VertexId(vid)], settings())
        assert (rec.kind, rec.recommended) == (UNMEASURABLE, p)


# -- recommendation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target, kind, expected", [
    # parallelism 4, true rate 1000 rec/s (250 per subtask); band [0.4, 1.0]
    (400, DEAD_BAND, 4),      # utilization 0.40: the band's lower edge counts as inside
    (1000, DEAD_BAND, 4),     # 1.00: the upper edge too
    (700, DEAD_BAND, 4),      # 0.70: the target itself
    (390, SCALE_DOWN, 3),     # 0.39 -> ceil(390 / (250 x 0.7)) = ceil(2.23) = 3
    (1010, SCALE_UP, 6),      # 1.01 -> ceil(1010 / 175) = ceil(5.77) = 6
])
def test_dead_band_around_the_target_utilization(target, kind, expected):
    rec = recommend(_evaluation(4, true_total=1000, target=target), settings())
    assert (rec.kind, rec.recommended) == (kind, expected)


def test_a_narrow_boundary_scales_what_a_wide_one_keeps():
    """Utilization 0.9 with boundary 0.1: outside [0.6, 0.8] -> ceil(900 / (250 x 0.7)) = ceil(5.14) = 6."""
    assert recommend(_evaluation(4, true_total=1000, target=900), settings()).kind == DEAD_BAND
    assert recommend(_evaluation(4, true_total=1000, target=900), settings(utilization_boundary=0.1)).recommended == 6


@pytest.mark.parametrize("changes, max_parallelism, target, expected", [
    ({"min_parallelism": 3}, PRIME_KEY_GROUPS, 10, 3),   # needs ceil(10/175) = 1, raised to minParallelism 3
    ({"max_parallelism": 6}, PRIME_KEY_GROUPS, 2000, 6),  # needs ceil(2000/175) = 12, capped at 6
    ({}, 5, 2000, 5),                                      # capped by the vertex's own max parallelism 5
])
def test_recommendation_is_clamped_to_the_bounds(changes, max_parallelism, target, expected):
    rec = recommend(_evaluation(4, true_total=1000, target=target, max_parallelism=max_parallelism),
                    settings(**changes))
    assert rec.recommended == expected


def test_a_recommendation_that_rounds_back_to_the_current_parallelism_is_no_change():
    """Parallelism 4, capacity 1000 rec/s (250 per subtask), target 950. With targetUtilization 0.96 and
    boundary 0 the band is [0.96, 0.96], so utilization 0.95 is outside it; yet
    ceil(950 / (250 x 0.96)) = ceil(3.958) = 4, the current parallelism: no change."""
    rec = recommend(_evaluation(4, true_total=1000, target=950),
                    settings(target_utilization=0.96, utilization_boundary=0.0))
    assert (rec.kind, rec.recommended) == (NO_CHANGE, 4)


@pytest.mark.parametrize("parallelism, key_groups, upper, expected", [
    (7, 128, 128, 8),    # 8 divides 128 and is one step up
    (5, 128, 128, 5),    # 6 does not divide 128; 8 is three steps away: unchanged
    (8, 128, 128, 8),    # already a divisor
    (63, 128, 128, 64),
    (127, 128, 127, 127),  # 128 would divide but is above the allowed maximum
    (9, 120, 120, 10),
    (11, 120, 120, 12),
    (13, 120, 120, 13),  # 14 does not divide 120
])
def test_alignment_to_a_divisor_of_the_max_parallelism_is_at_most_one_step(parallelism, key_groups, upper, expected):
    assert align_to_key_groups(parallelism, key_groups, upper) == expected


def test_recommendation_aligns_to_key_groups():
    """Parallelism 2 with 200 rec/s capacity (100 per subtask), target 490: ceil(490 / 70) = 7,
    aligned to 8 for 128 key groups; target 350 needs 5, which stays 5."""
    assert recommend(_evaluation(2, true_total=200, target=490, max_parallelism=128), settings()).recommended == 8
    assert recommend(_evaluation(2, true_total=200, target=350, max_parallelism=128), settings()).recommended == 5


@settings_hypothesis(max_examples=300, deadline=None)
@given(parallelism=st.integers(1, 64), per_subtask=st.floats(1, 10_000), utilization=st.floats(0, 5),
       key_groups=st.sampled_from([7, 64, 120, 128, 997]), min_p=st.integers(1, 4), max_p=st.integers(4, 200))
def test_recommendation_is_the_least_parallelism_meeting_the_target_within_bounds(parallelism, per_subtask,
                                                                                 utilization, key_groups, min_p,
                                                                                 max_p):
    """Against a plain reference: outside the dead band the recommendation is the smallest p whose capacity
    at the target utilization covers the target, raised to minParallelism, capped by the bounds, plus at
    most one step of alignment; inside the band it is the current parallelism."""
    parallelism = min(parallelism, key_groups)
    target = utilization * per_subtask * parallelism
    conf = settings(min_parallelism=min_p, max_parallelism=max_p)
    rec = recommend(_evaluation(parallelism, true_total=per_subtask * parallelism, target=target,
                                max_parallelism=key_groups), conf)
    upper = min(max_p, key_groups)
    if 0.4 - 1e-9 <= utilization <= 1.0 + 1e-9:
        assert rec.recommended == parallelism
        return
    # (the same 1e-9 slack for float error in the quotient as the scaler allows)
    least = next(p for p in range(1, 100_000) if p >= target / (per_subtask * 0.7) - 1e-9)
    bounded = min(max(least, min(min_p, upper)), upper)
    assert rec.recommended in (bounded, bounded + 1)
    assert rec.recommended <= upper
    if rec.recommended == bounded + 1:
        assert key_groups % rec.recommended == 0 and key_groups % bounded != 0
