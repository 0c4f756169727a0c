"""The JobManager's REST endpoint: Flink's paths over aiohttp, answering from a `JobManagerView`.

Handlers are thin: validate path and query, ask the view, serialize with `rest_messages`.
Errors answer as Flink does, `{"errors": [...]}`: 404 for unknown jobs, vertices, TaskManagers
and paths, 400 for malformed ids, parameters and bodies, 403 for a submission the cluster refuses,
405 for a wrong method, 409 when the view refuses (e.g. cancelling a finished job), 413 for a body
past its limit. Refused requests are logged at WARNING without traceback, rate-limited
(`rest_requests.MalformedRequestLog`); 500 is left for bugs, and no input may reach it (CI fuzzes
the OpenAPI description served at `/v1/openapi.json`, tests/engine/test_rest_fuzz.py).
`start_rest_server(view, host, port)` binds it (port 0 = any free port) and returns the port.

Trust: an accepted `POST /jobs` runs the submitter's code in the JobManager by design (the payload
is a pickled job graph, as Flink runs an uploaded jar's main), so the REST endpoint must be reachable
only by trusted clients (network policy; mutual TLS is a follow-up). What this module guarantees
is that nothing is unpickled before the payload's header (format, Strom and Python versions) is
checked, and that `web.submit.enable: false` (application mode's default) refuses submission before
the body is even read.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from strom.common.config_options import REST_ASYNC_STORE_DURATION
from strom.common.configuration import Configuration
from strom.common.job_payload import JobPayloadError, check_header_compatible, read_header
from strom.runtime.checkpoint import savepoints
from strom.runtime.jobmanager import rest_messages as msg
from strom.runtime.jobmanager.checkpoint_config_info import checkpoint_config_info
from strom.runtime.jobmanager.log_requests import ClusterLogs, JobManagerOnlyLogs
from strom.runtime.jobmanager.openapi import openapi_document
from strom.runtime.jobmanager.read_model import (
    BadRequestError,
    ForbiddenError,
    JobId,
    JobManagerView,
    NotFoundError,
    RestHandlerError,
    SavepointStatus,
    TaskManagerId,
    VertexId,
    is_flink_id,
)
from strom.runtime.jobmanager.rest_logs import add_log_routes
from strom.runtime.jobmanager.rest_requests import RUNNER_OPTIONS, MalformedRequestLog, read_body, read_json_object
from strom.runtime.jobmanager.savepoint_operations import TriggerResults
from strom.runtime.jobmanager.web_dashboard import DashboardSettings, add_dashboard_routes, dashboard_settings
from strom.runtime.log_files import process_log_file

log = logging.getLogger(__name__)

VIEW_KEY: web.AppKey[JobManagerView] = web.AppKey("view")
CLOCK_KEY: web.AppKey[Callable[[], int]] = web.AppKey("clock")
DISPOSALS_KEY: web.AppKey[TriggerResults[SavepointStatus]] = web.AppKey("savepoint disposals")
SUBMIT_ENABLED_KEY: web.AppKey[bool] = web.AppKey("web.submit.enable")
DASHBOARD_KEY: web.AppKey[DashboardSettings] = web.AppKey("dashboard settings")
REFUSED_LOG_KEY: web.AppKey[MalformedRequestLog] = web.AppKey("refused request log")
MAX_CONTENT_LENGTH_KEY: web.AppKey[int] = web.AppKey("max content length")
SUBMIT_DISABLED = "job submission is disabled (web.submit.enable: false)"
# Flink's rest.server.max-content-length default: a job payload carries the user's functions.
DEFAULT_MAX_CONTENT_LENGTH = 104_857_600

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _errors(status: int, message: str) -> web.Response:
    return web.json_response({"errors": [message]}, status=status)


@web.middleware
async def _flink_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes Flink's error body with the status Flink would answer; refused requests
    are logged once at WARNING (rate-limited, no traceback), unexpected failures with their traceback."""
    try:
        return await handler(request)
    except RestHandlerError as e:
        return _refused(request, e.status, str(e))
    except msg.QueryError as e:
        return _refused(request, 400, f"Bad request: {e}")
    except web.HTTPNotFound:
        return _refused(request, 404, f"Not found: {request.path}")
    except web.HTTPMethodNotAllowed as e:
        allowed = ", ".join(sorted(e.allowed_methods))
        return _refused(request, 405, f"Method {request.method} is not allowed on {request.path}; allowed: {allowed}")
    except web.HTTPRequestEntityTooLarge as e:
        return _refused(request, 413, f"Request body too large: {e.text}")
    except web.HTTPException as e:
        if e.status >= 500:
            return _errors(e.status, e.reason)
        return _refused(request, e.status, e.reason)
    except Exception as e:  # noqa: BLE001 - the client gets the message, the log the traceback
        log.exception("REST handler for %s %s failed", request.method, request.path)
        return _errors(500, f"Internal server error: {type(e).__name__}: {e}")


def _refused(request: web.Request, status: int, message: str) -> web.Response:
    request.app[REFUSED_LOG_KEY].refused(request.method, request.path, status, message)
    response = _errors(status, message)
    if request.can_read_body and not request.content.at_eof():
        # an unread body (refused before or while reading it) is not drained: close the connection
        response.force_close()
    return response


# -- request helpers -------------------------------------------------------------------------------


def _view(request: web.Request) -> JobManagerView:
    return request.app[VIEW_KEY]


def _now(request: web.Request) -> int:
    return request.app[CLOCK_KEY]()


def _job_id(request: web.Request) -> JobId:
    jid = request.match_info["jobid"]
    if not is_flink_id(jid):
        raise BadRequestError(f"Bad request: invalid job id {jid!r}: expected 32 hexadecimal digits")
    return JobId(jid.lower())


def _vertex_id(request: web.Request) -> VertexId:
    vid = request.match_info["vertexid"]
    if not is_flink_id(vid):
        raise BadRequestError(f"Bad request: invalid vertex id {vid!r}: expected 32 hexadecimal digits")
    return VertexId(vid.lower())


def _json(body: Any, status: int = 200) -> web.Response:
    return web.json_response(body, status=status)


# -- handlers --------------------------------------------------------------------------------------


async def overview(request: web.Request) -> web.Response:
    return _json(msg.overview_json(_view(request).overview()))


async def dashboard_config(request: web.Request) -> web.Response:
    o, web_ui = _view(request).overview(), request.app[DASHBOARD_KEY]
    return _json(
        msg.dashboard_config_json(
            o.flink_version,
            o.flink_commit,
            refresh_interval=web_ui.refresh_interval_ms,
            submit=web_ui.submit_enabled,
            cancel=web_ui.cancel_enabled,
        )
    )


async def jobmanager_config(request: web.Request) -> web.Response:
    return _json(msg.key_value_json(_view(request).config()))


async def job_config(request: web.Request) -> web.Response:
    return _json(msg.job_config_json(_view(request).job_config(_job_id(request))))


async def job_jobmanager_config(request: web.Request) -> web.Response:
    """Flink 1.17+'s /jobs/:jobid/jobmanager/config: the job's effective configuration as key/value pairs."""
    return _json(msg.key_value_json(_view(request).job_config(_job_id(request)).configuration))


async def jobs(request: web.Request) -> web.Response:
    return _json(msg.job_ids_json(_view(request).jobs()))


async def jobs_overview(request: web.Request) -> web.Response:
    return _json(msg.jobs_overview_json(_view(request).jobs(), _now(request)))


async def job_details(request: web.Request) -> web.Response:
    view, jid = _view(request), _job_id(request)
    details = view.job(jid)
    metrics = {v.id: view.subtask_metrics(jid, v.id) for v in details.vertices}
    return _json(msg.job_details_json(details, view.plan(jid), metrics, _now(request)))


async def cancel_job(request: web.Request) -> web.Response:
    jid = _job_id(request)
    mode = request.query.get("mode", "cancel")
    if mode != "cancel":
        raise BadRequestError(
            f"Bad request: unsupported termination mode {mode!r}: expected 'cancel' "
            "(stop with a savepoint is POST /jobs/:jobid/stop)"
        )
    result = _view(request).cancel(jid)
    if inspect.isawaitable(result):  # a view may cancel asynchronously
        await result
    return _json({}, status=202)


async def submit_job(request: web.Request) -> web.Response:
    """POST /jobs: refused (403) before reading the body when submission is off; otherwise the payload's
    header is checked (format, Strom and Python versions) before the view unpickles anything."""
    if not request.app[SUBMIT_ENABLED_KEY]:
        raise ForbiddenError(SUBMIT_DISABLED)
    payload = await read_body(request, request.app[MAX_CONTENT_LENGTH_KEY])
    if not payload:
        raise BadRequestError("Bad request: POST /jobs expects a job payload as the body (see `strom submit`)")
    try:
        header, _ = read_header(payload)
        check_header_compatible(header)
    except JobPayloadError as e:
        raise BadRequestError(f"Bad request: {e}") from None
    jid = await _view(request).submit(payload, request.content_type)
    return _json({"jobid": jid, "jobUrl": f"/jobs/{jid}"}, status=202)


async def job_plan(request: web.Request) -> web.Response:
    return _json(msg.plan_json(_view(request).plan(_job_id(request))))


async def job_exceptions(request: web.Request) -> web.Response:
    return _json(msg.exceptions_json(_view(request).exceptions(_job_id(request))))


async def job_metrics(request: web.Request) -> web.Response:
    view, jid = _view(request), _job_id(request)
    metrics = dict(view.job_metrics(jid))
    # numRestarts is part of the read model; a view need not repeat it among its metrics.
    metrics.setdefault("numRestarts", float(view.job(jid).num_restarts))
    return _json(msg.metric_values_json(metrics, msg.parse_csv(request.query.get("get"))))


async def job_checkpoints(request: web.Request) -> web.Response:
    return _json(msg.checkpoints_json(_view(request).checkpoints(_job_id(request))))


async def job_checkpoint_config(request: web.Request) -> web.Response:
    jid = _job_id(request)
    info = checkpoint_config_info(_view(request).job_config(jid).configuration)
    if info is None:
        raise NotFoundError(f"Checkpointing is not enabled for job {jid} (execution.checkpointing.interval)")
    return _json(info)


async def _json_body(request: web.Request) -> dict[str, Any]:
    return await read_json_object(request)


def _optional(body: dict[str, Any], key: str, kind: type) -> Any:
    value = body.get(key)
    if value is not None and not isinstance(value, kind):
        raise BadRequestError(f"Bad request: {key!r} must be a {kind.__name__}, got {value!r}")
    return value


_TRIGGER_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


def _trigger_id(body: dict[str, Any]) -> str | None:
    """Flink's optional `triggerId`: the client names the operation, so a repeated request is idempotent."""
    value = _optional(body, "triggerId", str)
    if value is not None and not _TRIGGER_ID.fullmatch(value):
        raise BadRequestError(f"Bad request: 'triggerId' must be 1-64 characters of [0-9A-Za-z_-], got {value!r}")
    return value


def _savepoint_target(body: dict[str, Any], key: str) -> str | None:
    """The requested savepoint directory, refused (400 naming `key`) unless it is an absolute URI."""
    target = _optional(body, key, str)
    if not target:
        return None
    problem = savepoints.savepoint_target_problem(target)
    if problem is not None:
        raise BadRequestError(
            f"Bad request: invalid {key!r} {target[:200]!r}: {problem}; expected {savepoints.VALID_TARGET_EXAMPLE}"
        )
    return target


async def trigger_savepoint(request: web.Request) -> web.Response:
    jid, body = _job_id(request), await _json_body(request)
    target = _savepoint_target(body, "target-directory")
    then = "CANCELED" if _optional(body, "cancel-job", bool) else None
    trigger_id = _view(request).trigger_savepoint(jid, target, then=then, trigger_id=_trigger_id(body))
    return _json(msg.savepoint_trigger_json(trigger_id), status=202)


async def stop_with_savepoint(request: web.Request) -> web.Response:
    jid, body = _job_id(request), await _json_body(request)
    target = _savepoint_target(body, "targetDirectory")
    drain = bool(_optional(body, "drain", bool))
    trigger_id = _view(request).trigger_savepoint(
        jid, target, then="FINISHED", drain=drain, trigger_id=_trigger_id(body)
    )
    return _json(msg.savepoint_trigger_json(trigger_id), status=202)


async def savepoint_status(request: web.Request) -> web.Response:
    jid, tid = _job_id(request), request.match_info["triggerid"]
    return _json(msg.savepoint_status_json(_view(request).savepoint_status(jid, tid)))


async def dispose_savepoint(request: web.Request) -> web.Response:
    """POST /savepoint-disposal {"savepoint-path": ...}: delete a savepoint in the background (with
    the JobManager's storage credentials); poll GET /savepoint-disposal/:triggerid."""
    body = await _json_body(request)
    path = _savepoint_target(body, "savepoint-path")
    if not path:
        raise BadRequestError("Bad request: 'savepoint-path' (the savepoint's directory) is required")
    operations = request.app[DISPOSALS_KEY]
    trigger_id = uuid.uuid4().hex
    operations[trigger_id] = SavepointStatus("IN_PROGRESS")
    config = Configuration(dict(_view(request).config()))

    def dispose() -> None:
        try:
            location = savepoints.dispose_savepoint(path, config)
        except Exception as e:  # noqa: BLE001 - every failure is the operation's result
            operations[trigger_id] = SavepointStatus("COMPLETED", failure=f"cannot dispose of {path}: {e}")
            return
        log.info("Disposed of savepoint %s", location)
        operations[trigger_id] = SavepointStatus("COMPLETED", location=location)

    asyncio.get_running_loop().run_in_executor(None, dispose)
    return _json(msg.savepoint_trigger_json(trigger_id), status=200)


async def savepoint_disposal_status(request: web.Request) -> web.Response:
    status = request.app[DISPOSALS_KEY].get(request.match_info["triggerid"])
    if status is None:
        raise NotFoundError(f"Not found: no savepoint disposal {request.match_info['triggerid']!r}")
    answer = msg.savepoint_status_json(status)
    if answer["operation"] is not None:
        answer["operation"].pop("location", None)  # Flink's disposal result has no location
    return _json(answer)


async def vertex_details(request: web.Request) -> web.Response:
    view, jid, vid = _view(request), _job_id(request), _vertex_id(request)
    vertex = view.vertex(jid, vid)
    return _json(msg.vertex_json(vertex, view.subtask_metrics(jid, vid), _now(request)))


async def subtask_metrics(request: web.Request) -> web.Response:
    view, jid, vid = _view(request), _job_id(request), _vertex_id(request)
    get = msg.parse_csv(request.query.get("get"))
    aggs = msg.parse_aggregations(request.query.get("agg"))
    vertex = view.vertex(jid, vid)  # 404 for an unknown vertex even when the view keeps no metrics for it
    subtasks = msg.parse_subtask_selection(request.query.get("subtasks"), vertex.parallelism)
    return _json(msg.aggregate_subtask_metrics(view.subtask_metrics(jid, vid), get, aggs, subtasks))


async def backpressure(request: web.Request) -> web.Response:
    view, jid, vid = _view(request), _job_id(request), _vertex_id(request)
    vertex = view.vertex(jid, vid)
    return _json(msg.backpressure_json(vertex, view.subtask_metrics(jid, vid), _now(request)))


async def vertex_watermarks(request: web.Request) -> web.Response:
    view, jid, vid = _view(request), _job_id(request), _vertex_id(request)
    view.vertex(jid, vid)  # 404 for an unknown vertex
    return _json(msg.watermarks_json(view.subtask_metrics(jid, vid)))


async def taskmanagers(request: web.Request) -> web.Response:
    return _json({"taskmanagers": [msg.taskmanager_json(tm) for tm in _view(request).taskmanagers()]})


async def taskmanager_metrics(request: web.Request) -> web.Response:
    tmid = TaskManagerId(request.match_info["tmid"])
    metrics = _view(request).taskmanager_metrics(tmid)
    return _json(msg.metric_values_json(metrics, msg.parse_csv(request.query.get("get"))))


# -- application -----------------------------------------------------------------------------------


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


async def openapi(request: web.Request) -> web.Response:
    """GET /v1/openapi.json: the OpenAPI description of the paths this endpoint serves."""
    return _json(openapi_document(request.app[VIEW_KEY].overview().flink_version))


def create_rest_app(
    view: JobManagerView,
    *,
    clock: Callable[[], int] | None = None,
    max_content_length: int = DEFAULT_MAX_CONTENT_LENGTH,
    submit_enabled: bool = True,
    refused_log: MalformedRequestLog | None = None,
    logs: ClusterLogs | None = None,
) -> web.Application:
    """The REST application; `clock` (epoch ms) is injectable so tests control "now";
    `submit_enabled` is `web.submit.enable` (POST /jobs answers 403 when False); `logs` serves the log
    paths (default: the JobManager's own files by its configuration, no TaskManager's)."""
    app = web.Application(middlewares=[_flink_errors], client_max_size=max_content_length)
    app[VIEW_KEY] = view
    # disposal results are kept rest.async.store-duration after they completed (Flink's default 5 min)
    store = REST_ASYNC_STORE_DURATION
    store_ms = store.parse(view.config().get(store.key, store.default))
    app[DISPOSALS_KEY] = TriggerResults(store_ms, is_completed=lambda s: s.status == "COMPLETED")
    app[CLOCK_KEY] = clock or _wall_clock_ms
    app[SUBMIT_ENABLED_KEY] = submit_enabled
    app[DASHBOARD_KEY] = dashboard_settings(view.config(), submit_enabled=submit_enabled)
    app[MAX_CONTENT_LENGTH_KEY] = max_content_length
    app[REFUSED_LOG_KEY] = refused_log or MalformedRequestLog(log)
    r = app.router
    r.add_get("/v1/openapi.json", openapi)
    r.add_get("/overview", overview)
    r.add_get("/config", dashboard_config)
    r.add_get("/jobmanager/config", jobmanager_config)
    r.add_get("/jobs", jobs)
    r.add_post("/jobs", submit_job)
    # Registered before /jobs/{jobid} so "overview" is never read as a job id.
    r.add_get("/jobs/overview", jobs_overview)
    r.add_get("/jobs/{jobid}", job_details)
    r.add_patch("/jobs/{jobid}", cancel_job)
    r.add_get("/jobs/{jobid}/config", job_config)
    r.add_get("/jobs/{jobid}/jobmanager/config", job_jobmanager_config)
    r.add_get("/jobs/{jobid}/plan", job_plan)
    r.add_get("/jobs/{jobid}/exceptions", job_exceptions)
    r.add_get("/jobs/{jobid}/metrics", job_metrics)
    r.add_get("/jobs/{jobid}/checkpoints", job_checkpoints)
    r.add_get("/jobs/{jobid}/checkpoints/config", job_checkpoint_config)
    r.add_post("/jobs/{jobid}/savepoints", trigger_savepoint)
    r.add_get("/jobs/{jobid}/savepoints/{triggerid}", savepoint_status)
    r.add_post("/jobs/{jobid}/stop", stop_with_savepoint)
    r.add_post("/savepoint-disposal", dispose_savepoint)
    r.add_get("/savepoint-disposal/{triggerid}", savepoint_disposal_status)
    r.add_get("/jobs/{jobid}/vertices/{vertexid}", vertex_details)
    r.add_get("/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics", subtask_metrics)
    r.add_get("/jobs/{jobid}/vertices/{vertexid}/backpressure", backpressure)
    r.add_get("/jobs/{jobid}/vertices/{vertexid}/watermarks", vertex_watermarks)
    r.add_get("/taskmanagers", taskmanagers)
    r.add_get("/taskmanagers/{tmid}/metrics", taskmanager_metrics)
    add_log_routes(app, logs or JobManagerOnlyLogs(process_log_file(view.config(), "jobmanager")))
    add_dashboard_routes(app)  # the web dashboard at / (strom.web), reading the routes above
    return app


def rest_runner(app: web.Application) -> web.AppRunner:
    """The runner for the REST app: no access log, and bodies left compressed for `rest_requests`
    to decode (aiohttp's own decoding fails outside the handlers, as plain text and an ERROR)."""
    return web.AppRunner(app, **RUNNER_OPTIONS)


async def start_rest_server(
    view: JobManagerView,
    host: str,
    port: int,
    *,
    clock: Callable[[], int] | None = None,
    submit_enabled: bool = True,
    ssl_context: ssl.SSLContext | None = None,
    logs: ClusterLogs | None = None,
) -> tuple[web.AppRunner, int]:
    """Serve the REST API on host:port (0 = any free port), over HTTPS with `ssl_context`
    (`strom.common.tls.rest_server_tls`: mutual when it requires client certificates); returns the
    runner (call `await runner.cleanup()` to stop) and the bound port."""
    runner = rest_runner(create_rest_app(view, clock=clock, submit_enabled=submit_enabled, logs=logs))
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        raise OSError(
            e.errno, f"cannot bind the REST endpoint to {host}:{port} (rest.address/rest.port): {e.strerror}"
        ) from None
    bound_port = int(runner.addresses[0][1])
    log.info("REST endpoint listening on %s:%d", host, bound_port)
    return runner, bound_port
