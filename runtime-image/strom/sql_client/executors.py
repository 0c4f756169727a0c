"""Where the session's jobs run: an embedded mini-cluster started with the first job (as `strom run` does), or
a running cluster reached through its REST API (`--jobmanager HOST:PORT`): each graph is encoded and POSTed
to /jobs, and the job's handle polls /jobs/:jobid. Both hand out job handles (`start_job`), so an INSERT
returns at once with its Job ID and a query's rows stream back to the client."""

from __future__ import annotations

import time
from typing import Any

from strom.client.rest_client import RestClient
from strom.common.job_execution_result import JobExecutionResult
from strom.common.job_payload import encode_job

TERMINAL_STATES = ("FINISHED", "FAILED", "CANCELED")
POLL_S = 0.2


class RestJobHandle:
    """A job on a remote cluster, as the executors' job clients are (strom.common.job_client)."""

    def __init__(self, client: RestClient, job_id: str) -> None:
        self.client = client
        self.job_id = job_id

    def get_job_id(self) -> str:
        return self.job_id

    def get_job_status(self) -> str:
        return str(self.client.job(self.job_id)["state"])

    def cancel(self) -> None:
        if self.get_job_status() not in TERMINAL_STATES:
            self.client.cancel(self.job_id)

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        """Until the job ended: its result, or RuntimeError naming how it ended (TimeoutError after `timeout`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.client.job(self.job_id)
            state = job["state"]
            if state == "FINISHED":
                return JobExecutionResult(self.job_id, int(job.get("duration", 0)))
            if state in ("FAILED", "CANCELED"):
                raise RuntimeError(f"job {self.job_id} ended {state} on the cluster at "
                                   f"{self.client.host}:{self.client.port} (strom info {self.job_id} shows why)")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {self.job_id} is still {state} after {timeout:g} s")
            time.sleep(POLL_S)  # polling the REST API: the job's state has no push channel


class RestClusterExecutor:
    """Submits each job graph to a running JobManager."""

    def __init__(self, client: RestClient) -> None:
        self.client = client

    def start_job(self, graph: Any) -> RestJobHandle:
        return RestJobHandle(self.client, self.client.submit(encode_job(graph, job_name=graph.job_name)))

    def __call__(self, graph: Any) -> JobExecutionResult:
        return self.start_job(graph).wait()


def local_executor(configuration: Any) -> Any:
    """`strom run`'s executor: a mini-cluster of JobManager + TaskManager processes, started by the first job."""
    from strom.cli import LazyClusterExecutor
    from strom.runtime.minicluster import MiniCluster

    return LazyClusterExecutor(MiniCluster(configuration), progress_interval_s=0.0)
