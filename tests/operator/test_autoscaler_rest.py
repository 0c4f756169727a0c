"""Reading the JobManager REST API into a topology and a metrics sample.

The JSON comes from the engine's own REST message builders (strom.runtime.jobmanager.rest_messages),
so a drift between what the engine answers and what the operator reads fails here; and from
hand-written Flink-shaped JSON for what the engine does not produce (numbers as strings, -1).
"""

from __future__ import annotations

import pytest
from strom.runtime.jobmanager import rest_messages as msg
from strom.runtime.jobmanager.read_model import (
    ExecutionState,
    JobDetails,
    JobPlan,
    JobStatus,
    PlanInput,
    PlanNode,
    VertexDetails,
)
from strom_operator.autoscaler.metrics_sample import (
    SCALING_METRICS,
    sample_from_rest,
    subtask_metrics_path,
    vertex_metrics_from_rest,
)
from strom_operator.autoscaler.topology import JobTopology, VertexId, topology_from_rest

from tests.operator.autoscaler_helpers import vertex

JID = "a" * 32


def _vertex(vid: str, name: str, parallelism: int) -> VertexDetails:
    return VertexDetails(vid, name, parallelism, 128, ExecutionState.RUNNING, 1000, -1, ())


def _engine_json() -> tuple[dict, dict]:
    """A job src -> {filter, enrich} -> sink, as the engine's REST API answers /jobs/:jobid and /plan."""
    vertices = (_vertex("v-sink", "Sink", 1), _vertex("v-src", "Source", 2), _vertex("v-filter", "Filter", 3),
                _vertex("v-enrich", "Enrich", 4))
    plan = JobPlan(JID, "job", (
        PlanNode("v-sink", 1, "Sink", "", "Sink", (PlanInput(0, "v-filter", "REBALANCE"),
                                                    PlanInput(1, "v-enrich", "HASH"))),
        PlanNode("v-src", 2, "Source", "", "Source"),
        PlanNode("v-filter", 3, "Filter", "", "Filter", (PlanInput(0, "v-src", "REBALANCE"),)),
        PlanNode("v-enrich", 4, "Enrich", "", "Enrich", (PlanInput(0, "v-src", "HASH"),)),
    ))
    details = JobDetails(JID, "job", JobStatus.RUNNING, 1000, -1, 128, {}, vertices)
    return msg.job_details_json(details, plan, {}, 2000), msg.plan_json(plan)


def test_topology_from_the_engines_job_details_and_plan_in_topological_order():
    job, plan = _engine_json()
    topo = topology_from_rest(job, plan)
    assert [v.id for v in topo.vertices] == ["v-src", "v-filter", "v-enrich", "v-sink"]
    sink = topo.vertex(VertexId("v-sink"))
    assert (sink.name, sink.parallelism, sink.max_parallelism, sink.inputs) == ("Sink", 1, 128,
                                                                                ("v-filter", "v-enrich"))
    assert topo.outputs(VertexId("v-src")) == ("v-filter", "v-enrich")
    assert topo.parallelism == {"v-src": 2, "v-filter": 3, "v-enrich": 4, "v-sink": 1}
    # /jobs/:jobid carries the plan too
    assert topology_from_rest(job) == topo


def test_sample_from_the_engines_aggregated_subtask_metrics():
    """Two source subtasks: busy 300 and 700 -> max 700; in 100 + 150 = 250; backlog 10 + 20 = 30."""
    subtasks = {0: {"busyTimeMsPerSecond": 300.0, "backPressuredTimeMsPerSecond": 50.0,
                    "numRecordsInPerSecond": 100.0, "numRecordsOutPerSecond": 100.0, "pendingRecords": 10.0,
                    "idleTimeMsPerSecond": 650.0},
                1: {"busyTimeMsPerSecond": 700.0, "backPressuredTimeMsPerSecond": 0.0,
                    "numRecordsInPerSecond": 150.0, "numRecordsOutPerSecond": 150.0, "pendingRecords": 20.0}}
    answer = msg.aggregate_subtask_metrics(subtasks, list(SCALING_METRICS), ["max", "sum"])
    m = vertex_metrics_from_rest(answer)
    assert (m.busy_ms_per_s, m.back_pressured_ms_per_s) == (700.0, 50.0)
    assert (m.records_in_per_s, m.records_out_per_s, m.pending_records) == (250.0, 250.0, 30.0)


def test_a_metric_no_subtask_reports_is_none_not_zero():
    answer = msg.aggregate_subtask_metrics({0: {"numRecordsInPerSecond": 5.0}}, list(SCALING_METRICS), ["max", "sum"])
    m = vertex_metrics_from_rest(answer)
    assert m.records_in_per_s == 5.0
    assert m.busy_ms_per_s is None and m.pending_records is None and m.records_out_per_s is None


def test_flink_shaped_answers_numbers_as_strings_and_unknown_ids():
    m = vertex_metrics_from_rest([{"id": "busyTimeMsPerSecond", "min": "1", "max": "812.5", "avg": "2", "sum": "3"},
                                  {"id": "numRecordsInPerSecond", "max": 9, "sum": "40"},
                                  {"id": "somethingElse", "max": 1, "sum": 1},
                                  {"id": "pendingRecords", "max": "NaN?", "sum": "not a number"}])
    assert (m.busy_ms_per_s, m.records_in_per_s, m.pending_records) == (812.5, 40.0, None)


def test_sample_covers_every_vertex_even_those_without_an_answer():
    topo = JobTopology.of([vertex("a", 1), vertex("b", 1, "a")])
    s = sample_from_rest(topo, {"a": [{"id": "busyTimeMsPerSecond", "max": 10.0, "sum": 10.0}]}, time=5.0)
    assert s.time == 5.0 and set(s.vertices) == {"a", "b"}
    assert s.vertices[VertexId("a")].busy_ms_per_s == 10.0
    assert s.vertices[VertexId("b")].busy_ms_per_s is None


def test_vertex_max_parallelism_minus_one_falls_back_to_the_jobs():
    job = {"maxParallelism": 64, "vertices": [{"id": "x", "name": "X", "parallelism": 2, "maxParallelism": -1}],
           "plan": {"nodes": [{"id": "x"}]}}
    assert topology_from_rest(job).vertex(VertexId("x")).max_parallelism == 64


def test_subtask_metrics_path_asks_for_every_scaling_metric_with_max_and_sum():
    assert subtask_metrics_path(JID, "v1") == (
        f"/jobs/{JID}/vertices/v1/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond,"
        "numRecordsInPerSecond,numRecordsOutPerSecond,pendingRecords&agg=max,sum")
    assert msg.parse_aggregations("max,sum") == ["max", "sum"]  # the engine accepts the query


def test_a_cycle_or_an_unknown_input_is_rejected_clearly():
    with pytest.raises(ValueError, match="unknown vertex"):
        JobTopology.of([vertex("a", 1, "ghost")])
    with pytest.raises(ValueError, match="cycle"):
        JobTopology.of([vertex("a", 1, "b"), vertex("b", 1, "a")])
