"""The REST API fuzzed from its own OpenAPI description, against a real JobManager running a job.

A session cluster of real processes (one JobManager, one TaskManager) runs a small unbounded
streaming job; schemathesis, in-process, reads `GET /v1/openapi.json` from that JobManager and
sends every operation generated requests: schema-valid ones (positive), schema-violating ones
(negative), and valid ones aimed at the running job's real ids. Bounded and repeatable: a fixed
number of examples per operation and mode, a derandomized (seeded) Hypothesis, a time budget.
The assertion is the issue's: no answer is 5xx, and afterwards the JobManager still answers and
the job is still RUNNING. Operations that would end the job or write savepoints (cancel, stop,
trigger a savepoint) are fuzzed with random job ids only: their bodies are still parsed and
refused, but a valid one reaches no job.

The issue's 13 requests that answered 500 are replayed byte for byte against the same JobManager.
"""

from __future__ import annotations

import http.client
import json
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis  # the [test] extra installs it: CI must fuzz, never skip

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit

MAX_EXAMPLES = 25  # per operation and generation mode
BUDGET_S = 45.0  # the fuzzing stops generating past this, whatever is left
SECRET = "wJalrXUtnFEMI-fuzz"
# operations that must never reach the running job: they would end it or write savepoints anywhere
NOT_ON_THE_REAL_JOB = {("PATCH", "/jobs/{jobid}"), ("POST", "/jobs/{jobid}/stop"), ("POST", "/jobs/{jobid}/savepoints")}


def _streaming_job(tmp_path: Path) -> str:
    job = tmp_path / "fuzz_target_job.py"
    job.write_text(
        textwrap.dedent("""
        from strom.common import WatermarkStrategy
        from strom.datastream import StreamExecutionEnvironment
        from strom.datastream.connectors import DataGeneratorSource

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        numbers = env.from_source(DataGeneratorSource(lambda i: (i % 7, i), 10**12, 20.0),
                                  WatermarkStrategy.no_watermarks(), "numbers")
        numbers.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda s: None)
        env.execute("fuzz target")
        """)
    )
    return str(job)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionCluster, str]]:
    """A session cluster (web.submit.enable defaults to true) running one unbounded job; S3 points at a
    closed local port so that a fuzzed s3:// disposal fails at once instead of looking for AWS."""
    tmp_path = tmp_path_factory.mktemp("rest-fuzz")
    extra = ("-D", f"s3.secret-key={SECRET}", "-D", "s3.access-key=AKIAFUZZ", "-D", "s3.endpoint=http://127.0.0.1:9")
    c = SessionCluster(taskmanagers=1, slots=1, extra=extra)
    try:
        job_id = submit(c, _streaming_job(tmp_path))
        c.wait_for_state(job_id, ("RUNNING",))
        yield c, job_id
    finally:
        c.close()


def _send(port: int, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def _issue_cases(job_id: str) -> list[tuple[str, str, bytes, dict[str, str]]]:
    """The issue's requests that answered 500, as (method, path, body, headers)."""
    json_type = {"Content-Type": "application/json"}
    body_paths = [f"/jobs/{job_id}/savepoints", f"/jobs/{job_id}/stop", "/savepoint-disposal"]
    cases = [("POST", body_paths[0], b"{}", {"Content-Type": "application/json; charset=foobar-9"})]
    cases += [("POST", p, b"[" * 200_000, json_type) for p in body_paths]
    cases += [("POST", p, b"not gzip at all", {**json_type, "Content-Encoding": "gzip"}) for p in body_paths[:1]]
    for target in ("file://../../relative", "file:relative", "file://", "file://%2e%2e/%2e%2e"):
        cases.append(("POST", body_paths[0], json.dumps({"target-directory": target}).encode(), json_type))
        cases.append(("POST", body_paths[1], json.dumps({"targetDirectory": target}).encode(), json_type))
    return cases


def test_the_issues_requests_are_4xx_on_a_real_jobmanager(cluster: tuple[SessionCluster, str]) -> None:
    c, job_id = cluster
    for method, path, body, headers in _issue_cases(job_id):
        status, answer = _send(c.rest_port, method, path, body, headers)
        assert status == 400, (path, headers, body[:60], answer)
        assert answer["errors"][0]
    assert c.get(f"/jobs/{job_id}")["state"] == "RUNNING"


def test_a_huge_subtask_range_selects_the_vertex_subtasks(cluster: tuple[SessionCluster, str]) -> None:
    c, job_id = cluster
    vertex = c.get(f"/jobs/{job_id}")["vertices"][-1]["id"]
    path = f"/jobs/{job_id}/vertices/{vertex}/subtasks/metrics"
    assert c.get(f"{path}?subtasks=0-20000000") == c.get(f"{path}?subtasks=0")  # parallelism 1: subtask 0 only


@pytest.mark.parametrize("path", ["/jobmanager/config", "/jobs/{jid}/jobmanager/config", "/jobs/{jid}/config"])
def test_secrets_never_leave_a_real_jobmanager(cluster: tuple[SessionCluster, str], path: str) -> None:
    c, job_id = cluster
    text = json.dumps(c.get(path.format(jid=job_id)))
    assert SECRET not in text and "AKIAFUZZ" not in text
    if path == "/jobmanager/config":
        shown = {e["key"]: e["value"] for e in json.loads(text)}
        assert shown["s3.secret-key"] == "******" and shown["s3.access-key"] == "******"


def _fuzz_schema(document: dict[str, Any]) -> Any:
    # the job payload's media type is ours; as octet-stream the fuzzer sends arbitrary bytes to POST /jobs
    submit_body = document["paths"]["/jobs"]["post"]["requestBody"]["content"]
    submit_body["application/octet-stream"] = submit_body.pop("application/vnd.strom.job")
    return schemathesis.openapi.from_dict(document)


def test_fuzzing_the_openapi_gives_no_5xx_and_the_job_keeps_running(cluster: tuple[SessionCluster, str]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    c, job_id = cluster
    base = f"http://127.0.0.1:{c.rest_port}"
    details = c.get(f"/jobs/{job_id}")
    real_ids = {"jobid": job_id, "vertexid": details["vertices"][-1]["id"]}
    schema = _fuzz_schema(c.get("/v1/openapi.json"))
    deadline = time.monotonic() + BUDGET_S
    server_errors: list[str] = []
    sent = [0]
    statuses: dict[tuple[str, int], int] = {}

    def run(operation: Any, mode: Any, path_parameters: dict[str, str] | None) -> None:
        @settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
        def fuzz(case: Any) -> None:
            if time.monotonic() > deadline:
                return
            response = case.call(base_url=base, timeout=30)
            sent[0] += 1
            answered = (f"{case.method} {case.path}", response.status_code)
            statuses[answered] = statuses.get(answered, 0) + 1
            if response.status_code >= 500:
                server_errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                     f"{response.text[:300]}")

        try:
            fuzz()
        except Unsatisfiable:  # negative mode of an operation without inputs: nothing to violate
            pass

    for result in schema.get_all_operations():
        operation = result.ok()
        key = (operation.method.upper(), operation.path)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run(operation, mode, None)
        wanted = {p: v for p, v in real_ids.items() if "{" + p + "}" in operation.path}
        if wanted and key not in NOT_ON_THE_REAL_JOB:
            run(operation, GenerationMode.POSITIVE, wanted)

    assert sent[0] >= 300, f"only {sent[0]} fuzzed requests were sent: {statuses}"
    assert server_errors == []
    # the JobManager still answers, and the job it runs was not disturbed
    assert c.get("/overview")["taskmanagers"] == 1
    assert wait_until(lambda: c.get(f"/jobs/{job_id}")["state"] == "RUNNING", what="the job to be RUNNING")
