"""The OpenAPI 3.0 description of the REST paths the JobManager serves (`GET /v1/openapi.json`).

Flink publishes its description as a document generated at build time (docs/static/generated/
rest_v1_dispatcher.yml) and serves none; we serve ours, so a client or a fuzzer reads the
API from the JobManager it talks to. It is written by hand from the route table in `rest_api`
(a test checks that both list the same operations) and names the request fields and query
parameters each handler reads; response bodies are described loosely (an object or a list), as
their field names live in `rest_messages`. Pure: builds a dict, no I/O.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

OPENAPI_PATH = "/v1/openapi.json"
_FLINK_ID = {"type": "string", "pattern": "^[0-9a-fA-F]{32}$", "description": "32 hexadecimal digits"}
_ANY_OBJECT: Json = {"type": "object"}
_ERRORS: Json = {
    "description": "Flink's error body",
    "content": {
        "application/json": {
            "schema": {"type": "object", "properties": {"errors": {"type": "array", "items": {"type": "string"}}}}
        }
    },
}


def _path_param(name: str, schema: Json | None = None) -> Json:
    return {"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}


def _query_param(name: str, description: str, schema: Json | None = None) -> Json:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _json_body(properties: Json, *, required: list[str] | None = None) -> Json:
    schema: Json = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"required": False, "content": {"application/json": {"schema": schema}}}


def _operation(
    operation_id: str,
    summary: str,
    *,
    ok: str = "200",
    params: list[Json] | None = None,
    body: Json | None = None,
    response: Json | None = None,
) -> Json:
    op: Json = {
        "operationId": operation_id,
        "summary": summary,
        "responses": {
            ok: {"description": "success", "content": {"application/json": {"schema": response or _ANY_OBJECT}}},
            "4XX": _ERRORS,
        },
    }
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = body
    return op


_JOB = _path_param("jobid", dict(_FLINK_ID))
_VERTEX = _path_param("vertexid", dict(_FLINK_ID))
_TRIGGER = _path_param("triggerid")
_TM = _path_param("tmid")
_FILE = _path_param("filename")
_GET = _query_param("get", "comma-separated metric names")
_TARGET = {"type": "string", "description": "absolute URI: file:///path or s3://bucket/prefix"}
_TRIGGER_ID = {"type": "string", "description": "optional client-chosen id ([0-9A-Za-z_-]{1,64})"}
_LIST: Json = {"type": "array"}


def openapi_document(version: str) -> Json:
    """The OpenAPI 3.0.3 document of this JobManager's REST API (`version`: the engine's)."""
    paths: Json = {
        "/overview": {"get": _operation("getClusterOverview", "Cluster overview")},
        "/config": {"get": _operation("getDashboardConfiguration", "Dashboard configuration")},
        "/jobmanager/config": {
            "get": _operation(
                "getClusterConfigurationInfo", "JobManager configuration (secrets masked)", response=_LIST
            )
        },
        "/jobs": {
            "get": _operation("getJobIdsWithStatusesOverview", "Job ids and states"),
            "post": _operation(
                "submitJob",
                "Submit a job payload (strom submit); runs the submitter's code: trusted clients only",
                ok="202",
                body={
                    "required": True,
                    "content": {"application/vnd.strom.job": {"schema": {"type": "string", "format": "binary"}}},
                },
            ),
        },
        "/jobs/overview": {"get": _operation("getJobsOverview", "Overview of all jobs")},
        "/jobs/{jobid}": {
            "get": _operation("getJobDetails", "Job details", params=[_JOB]),
            "patch": _operation(
                "cancelJob",
                "Cancel the job",
                ok="202",
                params=[_JOB, _query_param("mode", "termination mode", {"type": "string", "enum": ["cancel"]})],
            ),
        },
        "/jobs/{jobid}/config": {"get": _operation("getJobConfig", "Job configuration", params=[_JOB])},
        "/jobs/{jobid}/jobmanager/config": {
            "get": _operation(
                "getJobManagerJobConfiguration",
                "The job's effective configuration (secrets masked)",
                params=[_JOB],
                response=_LIST,
            )
        },
        "/jobs/{jobid}/plan": {"get": _operation("getJobPlan", "Job plan", params=[_JOB])},
        "/jobs/{jobid}/exceptions": {"get": _operation("getJobExceptions", "Exception history", params=[_JOB])},
        "/jobs/{jobid}/metrics": {
            "get": _operation("getJobMetrics", "Job metrics", params=[_JOB, _GET], response=_LIST)
        },
        "/jobs/{jobid}/checkpoints": {
            "get": _operation("getCheckpointingStatistics", "Checkpoint statistics", params=[_JOB])
        },
        "/jobs/{jobid}/checkpoints/config": {
            "get": _operation("getCheckpointConfig", "Checkpointing configuration (404: off)", params=[_JOB])
        },
        "/jobs/{jobid}/savepoints": {
            "post": _operation(
                "triggerSavepoint",
                "Trigger a savepoint",
                ok="202",
                params=[_JOB],
                body=_json_body(
                    {"target-directory": _TARGET, "cancel-job": {"type": "boolean"}, "triggerId": _TRIGGER_ID}
                ),
            )
        },
        "/jobs/{jobid}/savepoints/{triggerid}": {
            "get": _operation("getSavepointStatus", "Savepoint operation status", params=[_JOB, _TRIGGER])
        },
        "/jobs/{jobid}/stop": {
            "post": _operation(
                "stopWithSavepoint",
                "Stop the job with a savepoint",
                ok="202",
                params=[_JOB],
                body=_json_body({"targetDirectory": _TARGET, "drain": {"type": "boolean"}, "triggerId": _TRIGGER_ID}),
            )
        },
        "/savepoint-disposal": {
            "post": _operation(
                "triggerSavepointDisposal",
                "Dispose of a savepoint (only the files its _metadata lists)",
                body=_json_body({"savepoint-path": _TARGET}, required=["savepoint-path"]),
            )
        },
        "/savepoint-disposal/{triggerid}": {
            "get": _operation("getSavepointDisposalStatus", "Savepoint disposal status", params=[_TRIGGER])
        },
        "/jobs/{jobid}/vertices/{vertexid}": {
            "get": _operation("getJobVertexDetails", "Vertex details", params=[_JOB, _VERTEX])
        },
        "/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics": {
            "get": _operation(
                "getAggregatedSubtaskMetrics",
                "Subtask metrics aggregated",
                response=_LIST,
                params=[
                    _JOB,
                    _VERTEX,
                    _GET,
                    _query_param("agg", "some of min,max,avg,sum"),
                    _query_param("subtasks", "indexes and ranges, e.g. 0,2-4 (clipped to the parallelism)"),
                ],
            )
        },
        "/jobs/{jobid}/vertices/{vertexid}/backpressure": {
            "get": _operation("getJobVertexBackPressure", "Vertex back pressure", params=[_JOB, _VERTEX])
        },
        "/jobs/{jobid}/vertices/{vertexid}/watermarks": {
            "get": _operation(
                "getJobVertexWatermarks", "Subtasks' input watermarks", params=[_JOB, _VERTEX], response=_LIST
            )
        },
        "/taskmanagers": {"get": _operation("getTaskManagersOverview", "TaskManagers")},
        "/taskmanagers/{tmid}/metrics": {
            "get": _operation(
                "getTaskManagerMetrics", "TaskManager metrics", params=[_TM, _GET], response=_LIST
            )
        },
        # log files: text/plain, the last MiB; 404 when the process writes none (env.log.dir unset)
        "/jobmanager/logs": {"get": _operation("getJobManagerLogList", "The JobManager's log directory")},
        "/jobmanager/logs/{filename}": {
            "get": _operation("getJobManagerLogFile", "A file of the JobManager's log directory", params=[_FILE])
        },
        "/jobmanager/log": {"get": _operation("getJobManagerLog", "The JobManager's log file")},
        "/jobmanager/stdout": {"get": _operation("getJobManagerStdout", "The JobManager's stdout (.out file)")},
        "/taskmanagers/{tmid}/logs": {
            "get": _operation("getTaskManagerLogList", "A TaskManager's log directory", params=[_TM])
        },
        "/taskmanagers/{tmid}/logs/{filename}": {
            "get": _operation("getTaskManagerLogFile", "A file of a TaskManager's log directory", params=[_TM, _FILE])
        },
        "/taskmanagers/{tmid}/log": {"get": _operation("getTaskManagerLog", "A TaskManager's log file", params=[_TM])},
        "/taskmanagers/{tmid}/stdout": {
            "get": _operation("getTaskManagerStdout", "A TaskManager's stdout (.out file)", params=[_TM])
        },
        OPENAPI_PATH: {"get": _operation("getOpenApi", "This document")},
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Strom JobManager REST API",
            "version": version,
            "description": "Flink's REST paths and JSON field names, for what Strom implements.",
        },
        "paths": paths,
    }


def documented_operations(document: Json) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation in `document`, paths in aiohttp's `{name}` form."""
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}
