"""Flink's log paths on the REST endpoint: the JobManager's and each TaskManager's log directory,
log file and stdout, as the dashboard's log pages read them.

`/jobmanager/logs` and `/taskmanagers/:id/logs` answer Flink's LogListInfo; a file, `/log` and
`/stdout` answer text/plain: the file's last MiB (`strom.runtime.log_files`). A TaskManager's files
come over its RPC connection (`log_requests`); the name in the path is checked where the file is
read, and never becomes a path outside the log directory.
"""

from __future__ import annotations

from aiohttp import web

from strom.runtime.jobmanager.log_requests import ClusterLogs
from strom.runtime.jobmanager.read_model import RestHandlerError
from strom.runtime.log_files import log_answer_json
from strom.runtime.rpc import LogAnswer

LOGS_KEY: web.AppKey[ClusterLogs] = web.AppKey("cluster logs")


class LogAnswerError(RestHandlerError):
    def __init__(self, answer: LogAnswer) -> None:
        super().__init__(answer.error)
        self.status = answer.status


def _respond(answer: LogAnswer, *, listing: bool) -> web.Response:
    if answer.status != 200:
        raise LogAnswerError(answer)
    if listing:
        return web.json_response(log_answer_json(answer))
    # text/plain with nosniff: a log line that looks like markup is never rendered as a page
    return web.Response(
        body=answer.text, content_type="text/plain", charset="utf-8", headers={"X-Content-Type-Options": "nosniff"}
    )


def _kind_name(request: web.Request) -> tuple[str, str]:
    last = request.path.rstrip("/").rsplit("/", 1)[1]
    if "filename" in request.match_info:
        return "file", request.match_info["filename"]
    return {"logs": "list", "log": "log", "stdout": "stdout"}[last], ""


async def jobmanager_logs(request: web.Request) -> web.Response:
    kind, name = _kind_name(request)
    return _respond(request.app[LOGS_KEY].jobmanager(kind, name), listing=kind == "list")


async def taskmanager_logs(request: web.Request) -> web.Response:
    kind, name = _kind_name(request)
    answer = await request.app[LOGS_KEY].taskmanager(request.match_info["tmid"], kind, name)
    return _respond(answer, listing=kind == "list")


def add_log_routes(app: web.Application, logs: ClusterLogs) -> None:
    app[LOGS_KEY] = logs
    r = app.router
    r.add_get("/jobmanager/logs", jobmanager_logs)
    r.add_get("/jobmanager/logs/{filename}", jobmanager_logs)
    r.add_get("/jobmanager/log", jobmanager_logs)
    r.add_get("/jobmanager/stdout", jobmanager_logs)
    r.add_get("/taskmanagers/{tmid}/logs", taskmanager_logs)
    r.add_get("/taskmanagers/{tmid}/logs/{filename}", taskmanager_logs)
    r.add_get("/taskmanagers/{tmid}/log", taskmanager_logs)
    r.add_get("/taskmanagers/{tmid}/stdout", taskmanager_logs)
