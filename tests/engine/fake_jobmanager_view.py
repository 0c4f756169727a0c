"""A hand-written `JobManagerView` for REST and client tests: state is plain dicts the test fills.

`submit` really decodes the payload (strom.common.job_payload) and derives the job's vertices
from the JobGraph of the submitted StreamGraph, so a submit round trip exercises the same
decoding the JobManager does. A server helper runs the real aiohttp app on 127.0.0.1, port 0,
in a background thread, so tests (and the synchronous CLI) talk to it over real HTTP.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from strom.common.job_payload import JobPayloadError, decode_job
from strom.graph.job_graph import create_job_graph
from strom.graph.stream_graph import StreamGraph
from strom.runtime.jobmanager.read_model import (
    BadRequestError,
    ClusterOverview,
    ConflictError,
    ExecutionState,
    JobConfig,
    JobDetails,
    JobExceptions,
    JobId,
    JobPlan,
    JobStatus,
    JobSummary,
    NotFoundError,
    SubtaskDetails,
    SubtaskMetrics,
    TaskManagerId,
    TaskManagerInfo,
    VertexDetails,
    VertexId,
    new_job_id,
    plan_from_job_graph,
)
from strom.runtime.jobmanager.rest_api import start_rest_server

NOW_MS = 1_700_000_000_000  # the fake clock's "now"


@dataclass
class FakeJobManagerView:
    overview_value: ClusterOverview = field(default_factory=lambda: ClusterOverview(1, 4, 2, 1, 0, 0, 0))
    configuration: dict[str, str] = field(default_factory=lambda: {"rest.port": "0", "parallelism.default": "1"})
    details: dict[JobId, JobDetails] = field(default_factory=dict)
    plans: dict[JobId, JobPlan] = field(default_factory=dict)
    job_exceptions: dict[JobId, JobExceptions] = field(default_factory=dict)
    metrics: dict[tuple[JobId, VertexId], dict[int, dict[str, float]]] = field(default_factory=dict)
    job_metric_values: dict[JobId, dict[str, float]] = field(default_factory=dict)
    tms: list[TaskManagerInfo] = field(default_factory=list)
    tm_metrics: dict[TaskManagerId, dict[str, float]] = field(default_factory=dict)
    submitted: dict[JobId, StreamGraph] = field(default_factory=dict)
    payloads: dict[JobId, bytes] = field(default_factory=dict)
    cancelled: list[JobId] = field(default_factory=list)
    fail_overview_with: Exception | None = None
    address: str = "127.0.0.1:0"

    # -- filling -------------------------------------------------------------------------------
    def add_job(self, details: JobDetails, plan: JobPlan | None = None) -> None:
        self.details[details.jid] = details
        self.plans[details.jid] = plan or JobPlan(details.jid, details.name, ())

    def _details(self, jid: JobId) -> JobDetails:
        try:
            return self.details[jid]
        except KeyError:
            raise NotFoundError(f"Job {jid} not found") from None

    # -- JobManagerView ------------------------------------------------------------------------
    def overview(self) -> ClusterOverview:
        if self.fail_overview_with is not None:
            raise self.fail_overview_with
        return self.overview_value

    def config(self) -> Mapping[str, str]:
        return self.configuration

    def jobs(self) -> list[JobSummary]:
        return [d.summary() for d in self.details.values()]

    def job(self, jid: JobId) -> JobDetails:
        return self._details(jid)

    def job_config(self, jid: JobId) -> JobConfig:
        details = self._details(jid)
        return JobConfig(jid, details.name, "PIPELINED", "Restart deactivated.",
                         max((v.parallelism for v in details.vertices), default=1), dict(self.configuration))

    def plan(self, jid: JobId) -> JobPlan:
        self._details(jid)
        return self.plans[jid]

    def exceptions(self, jid: JobId) -> JobExceptions:
        self._details(jid)
        return self.job_exceptions.get(jid, JobExceptions())

    def cancel(self, jid: JobId) -> None:
        d = self._details(jid)
        if d.state.is_globally_terminal_state():
            raise ConflictError(f"Job {jid} has already reached the terminal state {d.state.value}")
        self.cancelled.append(jid)
        self.details[jid] = replace(
            d,
            state=JobStatus.CANCELED,
            end_time=NOW_MS,
            timestamps={**d.timestamps, JobStatus.CANCELED.value: NOW_MS},
        )

    def vertex(self, jid: JobId, vid: VertexId) -> VertexDetails:
        v = self._details(jid).vertex(vid)
        if v is None:
            raise NotFoundError(f"Vertex {vid} not found in job {jid}")
        return v

    def subtask_metrics(self, jid: JobId, vid: VertexId) -> SubtaskMetrics:
        self.vertex(jid, vid)
        return self.metrics.get((jid, vid), {})

    def job_metrics(self, jid: JobId) -> Mapping[str, float]:
        self._details(jid)
        return self.job_metric_values.get(jid, {})

    def taskmanagers(self) -> list[TaskManagerInfo]:
        return list(self.tms)

    def taskmanager_metrics(self, tmid: TaskManagerId) -> Mapping[str, float]:
        if not any(tm.id == tmid for tm in self.tms):
            raise NotFoundError(f"TaskManager {tmid} not found")
        return self.tm_metrics.get(tmid, {})

    async def submit(self, payload: bytes, content_type: str) -> JobId:
        try:
            graph = decode_job(payload)
        except JobPayloadError as e:
            raise BadRequestError(f"Bad request: {e}") from None
        jid = new_job_id()
        job_graph = create_job_graph(graph)
        vertices = tuple(
            VertexDetails(
                id=VertexId(v.id),
                name=v.name,
                parallelism=v.parallelism,
                max_parallelism=v.max_parallelism,
                status=ExecutionState.CREATED,
                start_time=-1,
                end_time=-1,
                subtasks=tuple(
                    SubtaskDetails(i, ExecutionState.CREATED, "(unassigned)", None, -1) for i in range(v.parallelism)
                ),
            )
            for v in job_graph.vertices
        )
        details = JobDetails(
            jid=jid,
            name=graph.job_name,
            state=JobStatus.CREATED,
            start_time=NOW_MS,
            end_time=-1,
            max_parallelism=graph.max_parallelism,
            timestamps={JobStatus.CREATED.value: NOW_MS},
            vertices=vertices,
        )
        self.add_job(details, plan_from_job_graph(jid, job_graph))
        self.submitted[jid] = graph
        self.payloads[jid] = payload
        return jid

    def rest_address(self) -> str:
        return self.address


@contextmanager
def serving(view: FakeJobManagerView) -> Iterator[int]:
    """Run the real REST server for `view` on 127.0.0.1 (a free port) in a thread; yields the port."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, object] = {}

    async def start() -> None:
        try:
            runner, port = await start_rest_server(view, "127.0.0.1", 0, clock=lambda: NOW_MS)
            state["runner"], state["port"] = runner, port
            view.address = f"127.0.0.1:{port}"
        except BaseException as e:  # surfaced in the test thread below
            state["error"] = e
        finally:
            started.set()

    thread = threading.Thread(target=loop.run_forever, name="fake-rest-server", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    if not started.wait(timeout=10):
        raise TimeoutError("the REST server did not start within 10 s")
    if "error" in state:
        raise state["error"]  # type: ignore[misc]
    try:
        yield int(state["port"])  # type: ignore[call-overload]
    finally:
        asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(timeout=10)  # type: ignore[attr-defined]
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
