"""The REST endpoint under malformed, hostile and careless requests: each answers a 4xx with
`{"errors": [...]}` and the JobManager goes on; nothing is unpickled before the payload header is
checked; secrets never leave; savepoint targets are confined. Real aiohttp server on loopback,
raw `http.client` requests (so headers such as Content-Encoding are exactly what the test says),
a FakeJobManagerView behind it. Expected answers are written here from the issue's cases."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import logging
import pickle
import struct
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from strom import __version__
from strom.common import job_payload
from strom.common.job_payload import CONTENT_TYPE, MAGIC, encode_job
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.jobmanager.openapi import documented_operations, openapi_document
from strom.runtime.jobmanager.read_model import (
    ExecutionState,
    JobDetails,
    JobId,
    JobPlan,
    JobStatus,
    PlanNode,
    SubtaskDetails,
    VertexDetails,
    VertexId,
)
from strom.runtime.jobmanager.rest_api import create_rest_app, rest_runner
from strom.runtime.jobmanager.rest_requests import MalformedRequestLog, json_depth_exceeds, parse_json_object
from strom.runtime.jobmanager.web_dashboard import DASHBOARD_ROUTES

from tests.engine.fake_jobmanager_view import NOW_MS, FakeJobManagerView

JID = JobId("a1" * 16)
VID = VertexId("b2" * 16)
PARALLELISM = 3


@dataclass
class SavepointRecordingView(FakeJobManagerView):
    """The fake view plus savepoint triggers, recorded so a test can say what reached the view."""

    triggered: list[tuple[str, str | None]] = field(default_factory=list)

    def trigger_savepoint(self, jid: JobId, target: str | None, *, then: str | None, drain: bool = False,
                          trigger_id: str | None = None) -> str:
        self._details(jid)
        self.triggered.append((jid, target))
        return trigger_id or "t1"


def _view() -> SavepointRecordingView:
    v = SavepointRecordingView()
    subtasks = tuple(SubtaskDetails(i, ExecutionState.RUNNING, "h:1", None, NOW_MS, -1) for i in range(PARALLELISM))
    v.add_job(
        JobDetails(JID, "job", JobStatus.RUNNING, NOW_MS, -1, 128, {}, (
            VertexDetails(VID, "Map", PARALLELISM, 128, ExecutionState.RUNNING, NOW_MS, -1, subtasks),
        )),
        JobPlan(JID, "job", (PlanNode(VID, PARALLELISM, "", "", "Map"),)),
    )
    v.metrics[(JID, VID)] = {i: {"busyTimeMsPerSecond": float(100 * (i + 1))} for i in range(PARALLELISM)}
    v.configuration.update({
        "s3.access-key": "AKIAEXAMPLE",
        "s3.secret-key": "wJalrXUtnFEMI",
        "security.ssl.rest.key-password": "kp",
        "fs.azure.account.key.acct.blob.core.windows.net": "azkey",
        "metrics.reporter.x.apikey": "api",
        "kubernetes.jaas.config": "jaas",
        "env.http-headers": "h",
        "rest.port": "8081",
    })
    return v


@contextmanager
def serving(view: FakeJobManagerView, **app_options: Any) -> Iterator[int]:
    """The real REST app (create_rest_app, with `app_options`) on 127.0.0.1 in a thread; yields the port."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[web.AppRunner, int]:
        runner = rest_runner(create_rest_app(view, clock=lambda: NOW_MS, **app_options))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, int(runner.addresses[0][1])

    runner, port = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture
def view() -> SavepointRecordingView:
    return _view()


@pytest.fixture
def port(view: SavepointRecordingView) -> Iterator[int]:
    with serving(view) as p:
        yield p


def send(port: int, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None
    finally:
        conn.close()


JSON = {"Content-Type": "application/json"}
BODY_PATHS = [f"/jobs/{JID}/savepoints", f"/jobs/{JID}/stop", "/savepoint-disposal"]


def _assert_refused(status: int, answer: Any, code: int = 400) -> None:
    assert status == code, answer
    assert isinstance(answer, dict) and isinstance(answer["errors"], list) and answer["errors"][0]


# -- the 500s ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", BODY_PATHS)
def test_an_unknown_charset_is_400(port: int, path: str) -> None:
    status, answer = send(port, "POST", path, b"{}", {"Content-Type": "application/json; charset=foobar-9"})
    _assert_refused(status, answer)
    assert "foobar-9" in answer["errors"][0]


@pytest.mark.parametrize("path", BODY_PATHS)
def test_deeply_nested_json_is_400(port: int, path: str) -> None:
    status, answer = send(port, "POST", path, b"[" * 200_000, JSON)
    _assert_refused(status, answer)


@pytest.mark.parametrize("path", BODY_PATHS)
def test_nesting_past_the_depth_limit_inside_an_object_is_400(port: int, path: str) -> None:
    body = b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}"
    status, answer = send(port, "POST", path, body, JSON)
    _assert_refused(status, answer)
    assert "deeper" in answer["errors"][0]


@pytest.mark.parametrize("path", BODY_PATHS)
def test_gzip_encoding_over_bytes_that_are_not_gzip_is_400(port: int, path: str) -> None:
    status, answer = send(port, "POST", path, b"this is not gzip", {**JSON, "Content-Encoding": "gzip"})
    _assert_refused(status, answer)


@pytest.mark.parametrize(("encoding", "compress"), [("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_a_compressed_body_is_read(port: int, view: SavepointRecordingView, encoding: str, compress: Any) -> None:
    body = compress(json.dumps({"target-directory": "file:///tmp/sp"}).encode())
    status, answer = send(port, "POST", f"/jobs/{JID}/savepoints", body, {**JSON, "Content-Encoding": encoding})
    assert status == 202, answer
    assert view.triggered == [(JID, "file:///tmp/sp")]


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "gzip, gzip"])
def test_an_encoding_we_do_not_decode_is_415_with_flinks_error_body(port: int, encoding: str) -> None:
    status, answer = send(port, "POST", f"/jobs/{JID}/savepoints", b"{}", {**JSON, "Content-Encoding": encoding})
    _assert_refused(status, answer, 415)
    assert "gzip, deflate or identity" in answer["errors"][0]


def test_a_gzip_bomb_is_413_not_inflated(port: int) -> None:
    """64 MB of zeros compress to ~64 KB; the 1 MB limit applies to what they inflate to."""
    bomb = gzip.compress(b"{" + b" " * (64 << 20) + b"}")
    status, answer = send(port, "POST", f"/jobs/{JID}/savepoints", bomb, {**JSON, "Content-Encoding": "gzip"})
    _assert_refused(status, answer, 413)


def test_a_broken_encoding_logs_no_error_from_the_http_layer(port: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        for encoding in ("gzip", "deflate", "br"):
            status, _ = send(port, "POST", f"/jobs/{JID}/savepoints", b"plain", {**JSON, "Content-Encoding": encoding})
            assert status in (400, 415)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


@pytest.mark.parametrize("target", ["file://../../relative", "file:relative", "file://", "file://%2e%2e/%2e%2e",
                                    "relative/dir", "s3://bucket/a/../../b", "s3://bucket/%2e%2e/b", "s3://",
                                    "http://host/dir", "file:///tmp/%2E%2E/etc", "file://otherhost/x"])
@pytest.mark.parametrize(("path", "field_name"), [(f"/jobs/{JID}/savepoints", "target-directory"),
                                                  (f"/jobs/{JID}/stop", "targetDirectory")])
def test_a_savepoint_target_that_is_not_an_absolute_uri_is_400_naming_the_field(
    port: int, view: SavepointRecordingView, path: str, field_name: str, target: str
) -> None:
    status, answer = send(port, "POST", path, json.dumps({field_name: target}).encode(), JSON)
    _assert_refused(status, answer)
    message = answer["errors"][0]
    assert field_name in message and "file:///" in message and "s3://bucket" in message
    assert view.triggered == []  # refused before the view saw it


@pytest.mark.parametrize("target", ["file:///tmp/savepoints", "/tmp/savepoints", "s3://bucket/savepoints",
                                    "s3a://bucket", "file:/tmp/hadoop-style"])
def test_an_absolute_savepoint_target_reaches_the_view(port: int, view: SavepointRecordingView, target: str) -> None:
    status, answer = send(port, "POST", f"/jobs/{JID}/savepoints", json.dumps({"target-directory": target}).encode(),
                          JSON)
    assert status == 202, answer
    assert view.triggered == [(JID, target)]


def test_a_relative_savepoint_path_for_disposal_is_400(port: int) -> None:
    status, answer = send(port, "POST", "/savepoint-disposal", b'{"savepoint-path": "../sp"}', JSON)
    _assert_refused(status, answer)
    assert "savepoint-path" in answer["errors"][0]


def test_a_json_body_past_one_megabyte_is_413(port: int) -> None:
    body = json.dumps({"target-directory": "/tmp/x", "pad": "x" * 1_100_000}).encode()
    status, answer = send(port, "POST", f"/jobs/{JID}/savepoints", body, JSON)
    _assert_refused(status, answer, 413)


def test_a_subtask_range_far_past_the_parallelism_is_clipped(port: int) -> None:
    """0-20000000 on a vertex of parallelism 3 selects subtasks 0, 1, 2: busy times 100, 200, 300."""
    status, answer = send(port, "GET", f"/jobs/{JID}/vertices/{VID}/subtasks/metrics"
                          "?get=busyTimeMsPerSecond&subtasks=0-20000000")
    assert status == 200, answer
    assert answer == [{"id": "busyTimeMsPerSecond", "min": 100.0, "max": 300.0, "avg": 200.0, "sum": 600.0}]


def test_a_subtask_selection_never_holds_more_than_the_parallelism() -> None:
    """The set is built clipped: 20 M requested indexes cost three (the issue measured 1.2 GB unclipped)."""
    from strom.runtime.jobmanager.rest_messages import parse_subtask_selection

    assert parse_subtask_selection("0-20000000", 3) == {0, 1, 2}
    assert parse_subtask_selection("1,2-20000000,7", 3) == {1, 2}
    assert parse_subtask_selection("5-9", 3) == set()
    assert parse_subtask_selection(None, 3) is None


def test_a_subtask_range_entirely_past_the_parallelism_selects_nothing(port: int) -> None:
    status, answer = send(port, "GET", f"/jobs/{JID}/vertices/{VID}/subtasks/metrics"
                          "?get=busyTimeMsPerSecond&subtasks=5000000-9000000")
    assert status == 200 and answer == []


# -- secrets --------------------------------------------------------------------------------------


SECRET_VALUES = {"AKIAEXAMPLE", "wJalrXUtnFEMI", "kp", "azkey", "api", "jaas", "h"}


@pytest.mark.parametrize("path", ["/jobmanager/config", f"/jobs/{JID}/jobmanager/config"])
def test_configuration_endpoints_mask_sensitive_values(port: int, path: str) -> None:
    status, answer = send(port, "GET", path)
    assert status == 200
    shown = {e["key"]: e["value"] for e in answer}
    assert shown["s3.access-key"] == "******" and shown["s3.secret-key"] == "******"
    assert not SECRET_VALUES & set(shown.values())
    assert shown["rest.port"] == "8081"  # what is not secret is shown as it is


def test_job_config_shows_no_configuration_values(port: int) -> None:
    status, answer = send(port, "GET", f"/jobs/{JID}/config")
    assert status == 200
    assert not any(secret in json.dumps(answer) for secret in SECRET_VALUES)


def test_configuration_repr_masks_sensitive_values() -> None:
    from strom.common.configuration import Configuration

    shown = repr(Configuration({"s3.secret-key": "wJalrXUtnFEMI", "s3.access-key": "AKIAEXAMPLE"}))
    assert "wJalrXUtnFEMI" not in shown and "AKIAEXAMPLE" not in shown


def test_the_sensitive_key_rule_is_flinks_plus_access_key() -> None:
    from strom.common.configuration import _is_secret
    from strom.common.sensitive_keys import is_sensitive_key
    from strom.runtime.jobmanager.job_configuration import is_secret_key

    sensitive = ["a.password", "S3.SECRET-key", "fs.azure.account.key.x", "x.apikey", "x.auth-params", "service-key",
                 "x.token", "basic-auth", "x.jaas.config", "x.http-headers", "s3.access-key"]
    plain = ["rest.port", "s3.endpoint", "state.checkpoints.dir", "security.ssl.rest.enabled"]
    for check in (is_sensitive_key, is_secret_key, _is_secret):
        assert all(check(k) for k in sensitive) and not any(check(k) for k in plain)


# -- submission -----------------------------------------------------------------------------------


def _graph():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3]).map(lambda x: x + 1).print()
    return env.get_stream_graph("submitted job")


class _WritesAFile:
    """Unpickling this runs code: it writes `path` (what the issue's attack did)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path(self.path).write_text, ("ran",))


def _payload(meta: dict[str, Any], body: bytes) -> bytes:
    header = json.dumps(meta).encode()
    return MAGIC + struct.pack(">HI", job_payload.FORMAT_VERSION, len(header)) + header + body


def _this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def test_the_payload_header_carries_the_python_version() -> None:
    header, _ = job_payload.read_header(encode_job(_graph()))
    assert header.python_version == _this_python() and header.strom_version == __version__


@pytest.mark.parametrize(("meta", "words"), [
    ({"job_name": "j", "strom_version": __version__, "python_version": "2.7"}, ["Python 2.7", _this_python()]),
    ({"job_name": "j", "strom_version": __version__}, ["Python", _this_python()]),
    ({"job_name": "j", "strom_version": "0.0.1-other", "python_version": _this_python()}, ["0.0.1-other", __version__]),
])
def test_a_payload_from_another_python_or_strom_is_400_and_never_unpickled(
    port: int, tmp_path: Path, meta: dict[str, Any], words: list[str]
) -> None:
    marker = tmp_path / "pwned"
    body = pickle.dumps(_WritesAFile(str(marker)))
    status, answer = send(port, "POST", "/jobs", _payload(meta, body), {"Content-Type": CONTENT_TYPE})
    _assert_refused(status, answer)
    assert all(w in answer["errors"][0] for w in words), answer
    assert not marker.exists()


def test_a_payload_with_another_format_version_is_400_and_never_unpickled(port: int, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    header = b'{"job_name": "j"}'
    payload = MAGIC + struct.pack(">HI", 2, len(header)) + header + pickle.dumps(_WritesAFile(str(marker)))
    status, answer = send(port, "POST", "/jobs", payload, {"Content-Type": CONTENT_TYPE})
    _assert_refused(status, answer)
    assert "version 2" in answer["errors"][0] and not marker.exists()


def test_submission_disabled_is_403_without_reading_the_body(tmp_path: Path) -> None:
    view = _view()
    marker = tmp_path / "pwned"
    payload = _payload({"job_name": "j", "strom_version": __version__, "python_version": _this_python()},
                       pickle.dumps(_WritesAFile(str(marker))))
    with serving(view, submit_enabled=False) as p:
        status, answer = send(p, "POST", "/jobs", payload, {"Content-Type": CONTENT_TYPE})
        assert (status, answer) == (403, {"errors": ["job submission is disabled (web.submit.enable: false)"]})
        assert send(p, "GET", "/overview")[0] == 200  # the rest of the API is unaffected
    assert not marker.exists() and view.submitted == {}


def test_submission_enabled_accepts_a_current_payload(port: int, view: SavepointRecordingView) -> None:
    status, answer = send(port, "POST", "/jobs", encode_job(_graph()), {"Content-Type": CONTENT_TYPE})
    assert status == 202, answer
    assert list(view.submitted) == [answer["jobid"]]


def test_web_submit_enable_is_off_in_application_mode_unless_set() -> None:
    from strom.common import config_options as opts
    from strom.common.configuration import Configuration
    from strom.runtime.jobmanager.process import with_application_mode_defaults

    assert opts.WEB_SUBMIT_ENABLE.key == "web.submit.enable" and opts.WEB_SUBMIT_ENABLE.default is True  # session
    assert with_application_mode_defaults(Configuration()).get(opts.WEB_SUBMIT_ENABLE) is False
    user_on = Configuration({"web.submit.enable": "true"})
    assert with_application_mode_defaults(user_on).get(opts.WEB_SUBMIT_ENABLE) is True


# -- logging --------------------------------------------------------------------------------------


def test_a_flood_of_malformed_requests_logs_a_few_warnings_without_tracebacks(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="strom.runtime.jobmanager.rest_api"):
        for _ in range(50):
            status, _ = send(port, "POST", f"/jobs/{JID}/savepoints", b"[" * 1000, JSON)
            assert status == 400
    records = [r for r in caplog.records if r.name == "strom.runtime.jobmanager.rest_api"]
    assert 1 <= len(records) <= 10
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in records)


def test_the_refused_request_log_summarizes_what_it_suppressed() -> None:
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("test.refused")
    logger.addHandler(Collect())
    logger.propagate = False
    now = [0.0]
    refused = MalformedRequestLog(logger, burst=2, window_s=60, clock=lambda: now[0])
    for _ in range(5):
        refused.refused("POST", "/x", 400, "bad")
    assert len(lines) == 2
    now[0] = 61.0
    refused.refused("POST", "/x", 400, "bad")
    assert lines[2] == "3 more refused REST requests were not logged" and len(lines) == 4


# -- JSON parsing (pure) --------------------------------------------------------------------------


def test_json_depth_is_measured_without_recursion() -> None:
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    assert json_depth_exceeds(deep, 32)
    assert not json_depth_exceeds({"a": [1, {"b": 2}]}, 3)
    assert json_depth_exceeds({"a": [1, {"b": []}]}, 3)


@pytest.mark.parametrize("raw", [b"\xff\xfe", b"[1]", b'"text"', b"{", b"[" * 100_000])
def test_parse_json_object_refuses_what_is_not_a_json_object(raw: bytes) -> None:
    from strom.runtime.jobmanager.read_model import BadRequestError

    with pytest.raises(BadRequestError):
        parse_json_object(raw, None, where="POST /x")


def test_parse_json_object_honours_the_charset() -> None:
    assert parse_json_object('{"k": "é"}'.encode("latin-1"), "latin-1", where="POST /x") == {"k": "é"}


# -- OpenAPI --------------------------------------------------------------------------------------


def test_the_openapi_document_lists_exactly_the_served_operations(port: int) -> None:
    status, served = send(port, "GET", "/v1/openapi.json")
    assert status == 200 and served["openapi"].startswith("3.")
    app = create_rest_app(_view())
    routes = {(r.method, r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"} - DASHBOARD_ROUTES
    assert documented_operations(served) == routes
    assert documented_operations(openapi_document("x")) == routes


def test_the_cli_client_reports_disabled_submission_in_one_line() -> None:
    """The client sends a whole payload (here 8 MB) and must still read the 403, not a reset connection."""
    from strom.client.rest_client import RestClient, RestError

    with serving(_view(), submit_enabled=False) as p:
        with pytest.raises(RestError) as refused:
            RestClient("127.0.0.1", p).submit(encode_job(_graph()) + b"\0" * (8 << 20))
    assert refused.value.status == 403
    assert str(refused.value).startswith("job submission is disabled (web.submit.enable: false)")


def test_arbitrary_content_type_and_encoding_headers_are_never_5xx(port: int) -> None:
    """OpenAPI fuzzing does not vary these headers; a seeded Hypothesis run does, with bodies to match."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
    charsets = st.sampled_from(["utf-8", "utf-16", "latin-1", "foobar-9", "rot13", "base64", "", '"', "utf-8; x=y"])
    content_type = st.one_of(header_text, charsets.map(lambda c: f"application/json; charset={c}"))
    encoding = st.one_of(header_text, st.sampled_from(["gzip", "deflate", "identity", "br", "gzip, deflate", ""]))
    body = st.one_of(st.binary(max_size=200), st.just(gzip.compress(b'{"drain": true}')), st.just(b"[" * 5000))

    @settings(max_examples=150, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(path=st.sampled_from(BODY_PATHS), content_type=content_type, encoding=encoding, body=body)
    def request(path: str, content_type: str, encoding: str, body: bytes) -> None:
        status, answer = send(port, "POST", path, body, {"Content-Type": content_type, "Content-Encoding": encoding})
        assert status < 500, (path, content_type, encoding, body[:40], answer)

    request()
