"""The operator's only way to the engine: a client of the JobManager's REST API (Flink's paths).

`JobManagerClient` is the protocol the observer and the step performer use; `RestJobManagerClient`
speaks HTTP with aiohttp, one short timeout per request (a JobManager that does not answer must
not stall a reconciliation). Failures are two kinds: `JobManagerUnreachable` (no answer: refused,
timed out, DNS) and `JobManagerError` (an answer with Flink's `{"errors": [...]}` and a status).
The savepoint trigger carries the operator's trigger id as Flink's `triggerId` (so a re-sent
trigger is idempotent on a JobManager that honours it); the id the JobManager answers with is
returned, because one that ignores `triggerId` picks its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp

from strom_operator.clients.jobmanager_tls import TlsTarget
from strom_operator.observe.observed import SavepointTrigger

DEFAULT_TIMEOUT_S = 5.0


class JobManagerUnreachable(Exception):
    """The JobManager did not answer (connection refused, timeout, unknown host)."""


class JobManagerError(Exception):
    """The JobManager answered with an error status; `errors` are Flink's messages."""

    def __init__(self, method: str, url: str, status: int, errors: list[str]) -> None:
        super().__init__(f"{method} {url} answered {status}: {'; '.join(errors) or 'no error message'}")
        self.status = status
        self.errors = errors


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One entry of `GET /jobs/overview`."""

    job_id: str
    name: str
    state: str
    start_time_ms: int


class JobManagerClient(Protocol):
    """What the operator asks of a JobManager; `base_url` selects which one."""

    async def jobs_overview(self, base_url: str) -> list[JobSummary]:
        """`GET /jobs/overview`."""

    async def latest_checkpoint(self, base_url: str, job_id: str) -> str | None:
        """The external path of the latest completed checkpoint (`GET /jobs/:jobid/checkpoints`)."""

    async def trigger_savepoint(self, base_url: str, job_id: str, *, target_dir: str | None, trigger_id: str,
                                cancel_job: bool = False) -> str:
        """`POST /jobs/:jobid/savepoints`; the request id to poll."""

    async def stop_with_savepoint(self, base_url: str, job_id: str, *, target_dir: str | None,
                                  trigger_id: str) -> str:
        """`POST /jobs/:jobid/stop` (no drain); the request id to poll."""

    async def savepoint_status(self, base_url: str, job_id: str, request_id: str) -> SavepointTrigger | None:
        """`GET /jobs/:jobid/savepoints/:triggerid`; None when the JobManager does not know the trigger."""

    async def cancel(self, base_url: str, job_id: str) -> None:
        """`PATCH /jobs/:jobid?mode=cancel`."""

    async def job_details(self, base_url: str, job_id: str) -> dict[str, Any]:
        """`GET /jobs/:jobid`: the job's vertices (id, name, parallelism, maxParallelism)."""

    async def job_plan(self, base_url: str, job_id: str) -> dict[str, Any]:
        """`GET /jobs/:jobid/plan`: the edges between the job's vertices."""

    async def subtask_metrics(self, base_url: str, path: str) -> list[dict[str, Any]]:
        """An aggregated subtask metrics query (`autoscaler.metrics_sample.subtask_metrics_path`)."""


class RestJobManagerClient:
    """`JobManagerClient` over HTTP. One aiohttp session, opened lazily on the running loop. `tls`
    gives an https URL its client context and the server name to check (endpoints.tls_for): a
    JobManager with spec.security.tls asks for the job's certificate (mutual TLS)."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 tls: Callable[[str], TlsTarget | None] | None = None) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._tls = tls

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def _request(self, method: str, url: str, *, json_body: Any = None, params: dict[str, str] | None = None,
                       ) -> Any:
        tls = self._tls(url) if self._tls is not None else None
        kwargs: dict[str, Any] = {"ssl": tls.context, "server_hostname": tls.server_hostname} if tls else {}
        try:
            async with self._client().request(method, url, json=json_body, params=params, **kwargs) as r:
                text = await r.text()
                if r.status >= 400:
                    raise JobManagerError(method, url, r.status, _errors_of(text))
                if not text:
                    return None
                try:
                    return await r.json(content_type=None)
                except ValueError:
                    raise JobManagerError(method, url, r.status, [f"the body is not JSON: {text[:200]!r}"]) from None
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.InvalidURL, OSError) as e:
            raise JobManagerUnreachable(f"{method} {url}: {type(e).__name__}: {e}") from None

    async def jobs_overview(self, base_url: str) -> list[JobSummary]:
        body = await self._request("GET", _url(base_url, "/jobs/overview"))
        return [JobSummary(j["jid"], j.get("name", ""), j["state"], int(j.get("start-time") or 0))
                for j in (body or {}).get("jobs", [])]

    async def latest_checkpoint(self, base_url: str, job_id: str) -> str | None:
        body = await self._request("GET", _url(base_url, f"/jobs/{job_id}/checkpoints"))
        completed = ((body or {}).get("latest") or {}).get("completed")
        return completed.get("external_path") if completed else None

    async def trigger_savepoint(self, base_url: str, job_id: str, *, target_dir: str | None, trigger_id: str,
                                cancel_job: bool = False) -> str:
        body: dict[str, Any] = {"cancel-job": cancel_job, "triggerId": trigger_id}
        if target_dir:
            body["target-directory"] = target_dir
        answer = await self._request("POST", _url(base_url, f"/jobs/{job_id}/savepoints"), json_body=body)
        return str((answer or {}).get("request-id") or trigger_id)

    async def stop_with_savepoint(self, base_url: str, job_id: str, *, target_dir: str | None,
                                  trigger_id: str) -> str:
        body: dict[str, Any] = {"drain": False, "triggerId": trigger_id}
        if target_dir:
            body["targetDirectory"] = target_dir
        answer = await self._request("POST", _url(base_url, f"/jobs/{job_id}/stop"), json_body=body)
        return str((answer or {}).get("request-id") or trigger_id)

    async def savepoint_status(self, base_url: str, job_id: str, request_id: str) -> SavepointTrigger | None:
        try:
            body = await self._request("GET", _url(base_url, f"/jobs/{job_id}/savepoints/{request_id}"))
        except JobManagerError as e:
            if e.status == 404:
                return None
            raise
        return parse_savepoint_status(request_id, body or {})

    async def cancel(self, base_url: str, job_id: str) -> None:
        await self._request("PATCH", _url(base_url, f"/jobs/{job_id}"), params={"mode": "cancel"})

    async def job_details(self, base_url: str, job_id: str) -> dict[str, Any]:
        return dict(await self._request("GET", _url(base_url, f"/jobs/{job_id}")) or {})

    async def job_plan(self, base_url: str, job_id: str) -> dict[str, Any]:
        return dict(await self._request("GET", _url(base_url, f"/jobs/{job_id}/plan")) or {})

    async def subtask_metrics(self, base_url: str, path: str) -> list[dict[str, Any]]:
        body = await self._request("GET", _url(base_url, path))
        return list(body) if isinstance(body, list) else []


def parse_savepoint_status(trigger_id: str, body: dict[str, Any]) -> SavepointTrigger:
    """Flink's AsynchronousOperationResult: COMPLETED carries a location or a failure cause."""
    queue_status = (body.get("status") or {}).get("id", "IN_PROGRESS")
    if queue_status != "COMPLETED":
        return SavepointTrigger(trigger_id, "IN_PROGRESS")
    operation = body.get("operation") or {}
    cause = operation.get("failure-cause")
    if cause:
        text = cause.get("stack-trace") or cause.get("class") or str(cause)
        return SavepointTrigger(trigger_id, "FAILED", failure_cause=str(text).strip().splitlines()[-1][:500])
    return SavepointTrigger(trigger_id, "COMPLETED", location=operation.get("location"))


def _url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + path


def _errors_of(text: str) -> list[str]:
    import json

    try:
        body = json.loads(text)
    except ValueError:
        return [text[:300]] if text else []
    errors = body.get("errors") if isinstance(body, dict) else None
    return [str(e) for e in errors] if isinstance(errors, list) else [text[:300]]
