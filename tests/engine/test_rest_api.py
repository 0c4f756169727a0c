"""The REST API over real HTTP (aiohttp server on 127.0.0.1, port 0; urllib as the client),
backed by a FakeJobManagerView. Field names are written here from Flink's REST API docs
(flink-runtime rest.messages), independently of the serializer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from strom.common.job_payload import CONTENT_TYPE, decode_job, encode_job
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.jobmanager.read_model import (
    ExceptionEntry,
    ExecutionState,
    Hardware,
    JobDetails,
    JobExceptions,
    JobId,
    JobPlan,
    JobStatus,
    PlanInput,
    PlanNode,
    SubtaskDetails,
    TaskManagerId,
    TaskManagerInfo,
    VertexDetails,
    VertexId,
)
from strom.runtime.jobmanager.rest_messages import backpressure_level

from tests.engine.fake_jobmanager_view import NOW_MS, FakeJobManagerView, serving

JID = JobId("a1" * 16)
SRC = VertexId("b2" * 16)
MAP = VertexId("c3" * 16)
UNKNOWN = "f" * 32
TM = TaskManagerId("127.0.0.1:6122-abc123")
START = NOW_MS - 5_000


def _subtasks(n: int, state: ExecutionState) -> tuple[SubtaskDetails, ...]:
    return tuple(SubtaskDetails(i, state, "127.0.0.1:6121", TM, START + 100, -1, attempt=i % 2) for i in range(n))


def _running_job() -> JobDetails:
    return JobDetails(
        jid=JID,
        name="keyed job",
        state=JobStatus.RUNNING,
        start_time=START,
        end_time=-1,
        max_parallelism=128,
        timestamps={"CREATED": START, "RUNNING": START + 50},
        vertices=(
            VertexDetails(SRC, "Source: numbers", 1, 128, ExecutionState.RUNNING, START + 100, -1,
                          _subtasks(1, ExecutionState.RUNNING)),
            VertexDetails(MAP, "Map -> Sink", 3, 128, ExecutionState.RUNNING, START + 100, -1,
                          _subtasks(3, ExecutionState.RUNNING)),
        ),
        num_restarts=2,
    )


PLAN = JobPlan(JID, "keyed job", (
    PlanNode(SRC, 1, "", "", "Source: numbers"),
    PlanNode(MAP, 3, "", "", "Map -> Sink", (PlanInput(0, SRC, "HASH"),)),
))


@pytest.fixture
def view() -> FakeJobManagerView:
    v = FakeJobManagerView()
    v.add_job(_running_job(), PLAN)
    v.tms.append(TaskManagerInfo(TM, "tcp://127.0.0.1:6122", 6121, 4, 1, NOW_MS - 300, Hardware(2, 8 << 30, 4 << 30)))
    v.tm_metrics[TM] = {"Status.JVM.Memory.Heap.Used": 1234.0, "numSlotsFree": 1.0}
    return v


@pytest.fixture
def base(view: FakeJobManagerView) -> Iterator[str]:
    with serving(view) as port:
        yield f"http://127.0.0.1:{port}"


def call(base: str, path: str, method: str = "GET", data: bytes | None = None,
         content_type: str = "application/json") -> tuple[int, Any]:
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw, status = resp.read(), resp.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    return status, json.loads(raw) if raw else None


def get(base: str, path: str) -> Any:
    status, body = call(base, path)
    assert status == 200, body
    return body


# -- cluster --------------------------------------------------------------------------------------


def test_overview_has_flinks_fields(base: str) -> None:
    body = get(base, "/overview")
    assert set(body) == {"taskmanagers", "slots-total", "slots-available", "jobs-running", "jobs-finished",
                         "jobs-cancelled", "jobs-failed", "flink-version", "flink-commit"}
    assert (body["taskmanagers"], body["slots-total"], body["slots-available"], body["jobs-running"]) == (1, 4, 2, 1)


def test_config_is_flinks_dashboard_configuration(base: str) -> None:
    body = get(base, "/config")
    assert {"refresh-interval", "timezone-name", "timezone-offset", "flink-version", "flink-revision",
            "features"} <= set(body)


def test_jobmanager_config_lists_key_value_pairs(base: str) -> None:
    assert {"key": "parallelism.default", "value": "1"} in get(base, "/jobmanager/config")


def test_taskmanagers_have_flinks_fields(base: str) -> None:
    (tm,) = get(base, "/taskmanagers")["taskmanagers"]
    assert {"id", "path", "dataPort", "timeSinceLastHeartbeat", "slotsNumber", "freeSlots", "hardware",
            "memoryConfiguration"} <= set(tm)
    assert (tm["id"], tm["dataPort"], tm["slotsNumber"], tm["freeSlots"]) == (TM, 6121, 4, 1)
    assert set(tm["hardware"]) == {"cpuCores", "physicalMemory", "freeMemory", "managedMemory"}


def test_taskmanager_metrics_list_ids_then_values_as_strings(base: str) -> None:
    tm = urllib.request.quote(TM, safe="")
    assert get(base, f"/taskmanagers/{tm}/metrics") == [{"id": "Status.JVM.Memory.Heap.Used"}, {"id": "numSlotsFree"}]
    assert get(base, f"/taskmanagers/{tm}/metrics?get=numSlotsFree,missing") == [{"id": "numSlotsFree", "value": "1"}]


def test_unknown_taskmanager_is_404(base: str) -> None:
    status, body = call(base, "/taskmanagers/nobody/metrics")
    assert status == 404 and "nobody" in body["errors"][0]


# -- jobs -----------------------------------------------------------------------------------------


def test_jobs_lists_id_and_status(base: str) -> None:
    assert get(base, "/jobs") == {"jobs": [{"id": JID, "status": "RUNNING"}]}


def test_jobs_overview_has_flinks_job_details(base: str) -> None:
    (job,) = get(base, "/jobs/overview")["jobs"]
    assert set(job) == {"jid", "name", "state", "start-time", "end-time", "duration", "last-modification", "tasks"}
    assert (job["jid"], job["state"], job["start-time"], job["end-time"]) == (JID, "RUNNING", START, -1)
    assert job["duration"] == 5_000  # running: now - start
    assert job["last-modification"] == START + 50
    assert {"total", "created", "scheduled", "deploying", "running", "finished", "canceling", "canceled",
            "failed"} <= set(job["tasks"])
    assert job["tasks"]["running"] == 4 and job["tasks"]["total"] == 4


def test_job_details_have_vertices_and_plan(base: str) -> None:
    job = get(base, f"/jobs/{JID}")
    assert {"jid", "name", "isStoppable", "state", "start-time", "end-time", "duration", "now", "timestamps",
            "vertices", "status-counts", "plan"} <= set(job)
    assert job["now"] == NOW_MS and job["timestamps"]["RUNNING"] == START + 50
    assert [v["id"] for v in job["vertices"]] == [SRC, MAP]
    vertex = job["vertices"][1]
    assert {"id", "name", "parallelism", "maxParallelism", "status", "start-time", "end-time", "duration", "tasks",
            "metrics"} <= set(vertex)
    assert vertex["parallelism"] == 3 and vertex["tasks"]["RUNNING"] == 3
    assert {"read-bytes", "write-bytes", "read-records", "write-records"} <= set(vertex["metrics"])
    assert job["status-counts"]["RUNNING"] == 2
    assert job["plan"]["nodes"][1]["inputs"][0]["ship_strategy"] == "HASH"


def test_vertex_io_metrics_sum_the_subtasks(base: str, view: FakeJobManagerView) -> None:
    view.metrics[(JID, MAP)] = {0: {"numRecordsIn": 10}, 1: {"numRecordsIn": 5}, 2: {"numRecordsIn": 1}}
    vertex = get(base, f"/jobs/{JID}")["vertices"][1]
    assert vertex["metrics"]["read-records"] == 16 and vertex["metrics"]["read-records-complete"] is True
    assert vertex["metrics"]["write-records-complete"] is False


def test_plan_is_flinks_json_plan(base: str) -> None:
    plan = get(base, f"/jobs/{JID}/plan")["plan"]
    assert (plan["jid"], plan["name"]) == (JID, "keyed job")
    src, sink = plan["nodes"]
    assert {"id", "parallelism", "operator", "description"} <= set(src) and "inputs" not in src
    assert sink["inputs"] == [{"num": 0, "id": SRC, "ship_strategy": "HASH", "exchange": "pipelined_bounded"}]


def test_exceptions_have_root_and_history(base: str, view: FakeJobManagerView) -> None:
    older = ExceptionEntry("ConnectionResetError", "Traceback...reset", START + 10, "Map -> Sink (2/3)#0",
                           "127.0.0.1:6121", TM)
    newer = ExceptionEntry("TaskManagerLost", "Traceback...lost", START + 20, None)
    view.job_exceptions[JID] = JobExceptions(history=(newer, older))
    body = get(base, f"/jobs/{JID}/exceptions")
    assert body["root-exception"] == "Traceback...lost" and body["timestamp"] == START + 20
    entries = body["exceptionHistory"]["entries"]
    assert [e["exceptionName"] for e in entries] == ["TaskManagerLost", "ConnectionResetError"]
    assert {"exceptionName", "stacktrace", "timestamp", "taskName", "location", "taskManagerId",
            "failureLabels", "concurrentExceptions"} <= set(entries[1])
    assert entries[1]["taskName"] == "Map -> Sink (2/3)#0"
    assert "taskName" not in entries[0]  # a global failure has no task (Flink omits nulls)
    assert body["exceptionHistory"]["truncated"] is False


def test_exceptions_of_a_healthy_job_are_empty(base: str) -> None:
    body = get(base, f"/jobs/{JID}/exceptions")
    assert "root-exception" not in body and body["exceptionHistory"] == {"entries": [], "truncated": False}


def test_vertex_lists_subtasks(base: str) -> None:
    body = get(base, f"/jobs/{JID}/vertices/{MAP}")
    assert (body["id"], body["name"], body["parallelism"], body["now"]) == (MAP, "Map -> Sink", 3, NOW_MS)
    assert [s["subtask"] for s in body["subtasks"]] == [0, 1, 2]
    sub = body["subtasks"][1]
    assert {"subtask", "status", "attempt", "endpoint", "start-time", "end-time", "duration", "metrics",
            "taskmanager-id"} <= set(sub)
    assert (sub["status"], sub["attempt"], sub["taskmanager-id"], sub["duration"]) == ("RUNNING", 1, TM, 4_900)


def test_job_metrics_include_num_restarts(base: str, view: FakeJobManagerView) -> None:
    view.job_metric_values[JID] = {"uptime": 5000.0}
    assert get(base, f"/jobs/{JID}/metrics") == [{"id": "numRestarts"}, {"id": "uptime"}]
    assert get(base, f"/jobs/{JID}/metrics?get=numRestarts,uptime") == [
        {"id": "numRestarts", "value": "2"}, {"id": "uptime", "value": "5000"}]


# -- subtask metrics and back pressure ------------------------------------------------------------

SUBTASK_FIGURES = {
    0: {"numRecordsInPerSecond": 100.0, "busyTimeMsPerSecond": 250.0},
    1: {"numRecordsInPerSecond": 40.0, "busyTimeMsPerSecond": 900.5},
    2: {"numRecordsInPerSecond": 7.5},
}


def test_subtask_metrics_without_get_list_the_metric_ids(base: str, view: FakeJobManagerView) -> None:
    view.metrics[(JID, MAP)] = SUBTASK_FIGURES
    assert get(base, f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics") == [
        {"id": "busyTimeMsPerSecond"}, {"id": "numRecordsInPerSecond"}]


def test_subtask_metrics_aggregate_over_the_subtasks_that_report(base: str, view: FakeJobManagerView) -> None:
    view.metrics[(JID, MAP)] = SUBTASK_FIGURES
    body = get(base, f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics?get=numRecordsInPerSecond,busyTimeMsPerSecond")
    expected = []
    for name in ("numRecordsInPerSecond", "busyTimeMsPerSecond"):
        values = [m[name] for m in SUBTASK_FIGURES.values() if name in m]
        expected.append({"id": name, "min": min(values), "max": max(values), "avg": sum(values) / len(values),
                         "sum": sum(values)})
    assert body == expected


def test_subtask_metrics_honour_agg_and_subtasks(base: str, view: FakeJobManagerView) -> None:
    view.metrics[(JID, MAP)] = SUBTASK_FIGURES
    body = get(base, f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics?get=numRecordsInPerSecond&agg=max,sum&subtasks=1-2")
    assert body == [{"id": "numRecordsInPerSecond", "max": 40.0, "sum": 47.5}]


def test_backpressure_levels_follow_flinks_thresholds() -> None:
    assert [backpressure_level(r) for r in (0.0, 0.10, 0.1001, 0.50, 0.5001, 1.0)] == [
        "ok", "ok", "low", "low", "high", "high"]


@pytest.mark.parametrize(
    ("back_pressured_ms", "level"),
    [(0.0, "ok"), (100.0, "ok"), (101.0, "low"), (500.0, "low"), (501.0, "high"), (1000.0, "high")],
)
def test_backpressure_endpoint_level_at_the_boundaries(
    base: str, view: FakeJobManagerView, back_pressured_ms: float, level: str
) -> None:
    view.metrics[(JID, MAP)] = {
        0: {"backPressuredTimeMsPerSecond": 0.0, "idleTimeMsPerSecond": 1000.0, "busyTimeMsPerSecond": 0.0},
        1: {"backPressuredTimeMsPerSecond": back_pressured_ms, "idleTimeMsPerSecond": 0.0,
            "busyTimeMsPerSecond": 1000.0 - back_pressured_ms},
    }
    body = get(base, f"/jobs/{JID}/vertices/{MAP}/backpressure")
    assert set(body) == {"status", "backpressure-level", "end-timestamp", "subtasks"}
    assert (body["status"], body["backpressure-level"], body["end-timestamp"]) == ("ok", level, NOW_MS)
    s0, s1 = body["subtasks"]
    assert {"subtask", "backpressure-level", "ratio", "idleRatio", "busyRatio"} <= set(s1)
    assert (s0["backpressure-level"], s0["idleRatio"]) == ("ok", 1.0)
    assert (s1["subtask"], s1["backpressure-level"]) == (1, level)
    assert s1["ratio"] == pytest.approx(back_pressured_ms / 1000)
    assert s1["busyRatio"] == pytest.approx(1 - back_pressured_ms / 1000)


def test_backpressure_without_figures_is_flinks_deprecated_status(base: str) -> None:
    assert get(base, f"/jobs/{JID}/vertices/{MAP}/backpressure") == {"status": "deprecated"}


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    f"/jobs/{UNKNOWN}", f"/jobs/{UNKNOWN}/plan", f"/jobs/{UNKNOWN}/exceptions", f"/jobs/{UNKNOWN}/metrics",
    f"/jobs/{JID}/vertices/{UNKNOWN}", f"/jobs/{JID}/vertices/{UNKNOWN}/backpressure",
    f"/jobs/{JID}/vertices/{UNKNOWN}/subtasks/metrics", "/no/such/path",
])
def test_unknown_ids_and_paths_are_404_with_errors(base: str, path: str) -> None:
    status, body = call(base, path)
    assert status == 404
    assert isinstance(body["errors"], list) and body["errors"][0]


@pytest.mark.parametrize("path", [
    "/jobs/not-a-job-id", f"/jobs/{JID}/vertices/xyz", f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics?agg=median",
    f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics?get=a,,b", f"/jobs/{JID}/vertices/{MAP}/subtasks/metrics?subtasks=x",
])
def test_malformed_ids_and_parameters_are_400(base: str, path: str) -> None:
    status, body = call(base, path)
    assert status == 400 and body["errors"][0]


@pytest.mark.parametrize(("method", "path"), [
    ("DELETE", "/jobs"), ("POST", "/overview"), ("PUT", f"/jobs/{JID}"), ("POST", f"/jobs/{JID}/plan"),
])
def test_wrong_methods_are_405(base: str, method: str, path: str) -> None:
    status, body = call(base, path, method=method, data=b"{}")
    assert status == 405 and body["errors"][0]


def test_an_unexpected_failure_is_500_with_the_message(base: str, view: FakeJobManagerView) -> None:
    view.fail_overview_with = RuntimeError("slot pool exploded")
    status, body = call(base, "/overview")
    assert status == 500 and "slot pool exploded" in body["errors"][0]


# -- cancel and submit ----------------------------------------------------------------------------


def test_cancel_is_accepted_and_reaches_the_view(base: str, view: FakeJobManagerView) -> None:
    status, body = call(base, f"/jobs/{JID}?mode=cancel", method="PATCH")
    assert (status, body) == (202, {})
    assert view.cancelled == [JID]
    assert get(base, f"/jobs/{JID}")["state"] == "CANCELED"


def test_cancel_of_a_terminal_job_is_409(base: str) -> None:
    call(base, f"/jobs/{JID}?mode=cancel", method="PATCH")
    status, body = call(base, f"/jobs/{JID}?mode=cancel", method="PATCH")
    assert status == 409 and "CANCELED" in body["errors"][0]


def test_cancel_with_an_unknown_mode_is_400_and_unknown_job_404(base: str) -> None:
    assert call(base, f"/jobs/{JID}?mode=explode", method="PATCH")[0] == 400
    assert call(base, f"/jobs/{UNKNOWN}?mode=cancel", method="PATCH")[0] == 404


def _keyed_graph():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    (env.from_collection([("a", 1), ("b", 2)]).map(lambda t: (t[0], t[1] * 10))
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print())
    return env.get_stream_graph("submitted job")


def test_submit_round_trip_decodes_the_same_graph(base: str, view: FakeJobManagerView) -> None:
    graph = _keyed_graph()
    status, body = call(base, "/jobs", method="POST", data=encode_job(graph, job_name="renamed"),
                        content_type=CONTENT_TYPE)
    assert status == 202 and body["jobUrl"] == f"/jobs/{body['jobid']}"
    received = view.submitted[body["jobid"]]
    assert received.job_name == "renamed"
    assert [(n.id, n.name, n.parallelism) for n in received.nodes.values()] == [
        (n.id, n.name, n.parallelism) for n in graph.nodes.values()]
    assert [(e.source_id, e.target_id, e.partitioner.kind) for e in received.edges] == [
        (e.source_id, e.target_id, e.partitioner.kind) for e in graph.edges]
    map_fn = received.nodes[2].transformation.operator.function
    assert map_fn.map(("x", 4)) == ("x", 40)  # the user's lambda travelled by value
    job = get(base, f"/jobs/{body['jobid']}")
    assert job["name"] == "renamed" and job["state"] == "CREATED"


def test_decode_job_rejects_foreign_bytes_and_other_versions() -> None:
    payload = encode_job(_keyed_graph())
    assert decode_job(payload).job_name == "submitted job"
    with pytest.raises(ValueError, match="not a Strom job payload"):
        decode_job(b"PK\x03\x04 a jar")
    newer = payload[:8] + (99).to_bytes(2, "big") + payload[10:]
    with pytest.raises(ValueError, match="version 99 is not supported"):
        decode_job(newer)


@pytest.mark.parametrize("body", [b"", b"{\"not\": \"a payload\"}", b"STROMJOB\x00"])
def test_submit_with_a_malformed_body_is_400(base: str, body: bytes) -> None:
    status, answer = call(base, "/jobs", method="POST", data=body, content_type=CONTENT_TYPE)
    assert status == 400 and answer["errors"][0]


def test_submit_with_a_valid_header_but_broken_pickle_is_400(base: str) -> None:
    broken = encode_job(_keyed_graph())[:-20]
    status, answer = call(base, "/jobs", method="POST", data=broken, content_type=CONTENT_TYPE)
    assert status == 400 and "unpickle" in answer["errors"][0]
