"""`JobClient` (`pyflink.common.JobClient`): the handle `execute_async` returns.

It wraps the executor's own client (local, mini cluster, `strom run`'s cluster client, Spark)
and answers in PyFlink's shapes: `get_job_execution_result()` is a CompletableFuture whose
`result()` is the JobExecutionResult (or raises the job's failure), `get_job_status()` a future
of a JobStatus, `cancel()` a future. `get_job_execution_result(timeout)` with a timeout is Strom's
earlier signature: it waits and returns the JobExecutionResult itself.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, Protocol, overload

from strom.common.completable_future import CompletableFuture
from strom.common.job_execution_result import JobExecutionResult
from strom.common.job_id import JobID
from strom.common.job_status import JobStatus


class ExecutorJobClient(Protocol):
    """What every executor's own client has (embedded, mini-cluster, Spark). Each also has
    `wait(timeout)` or `get_job_execution_result(timeout)` returning the JobExecutionResult, and a
    cluster's has `stop_with_savepoint` / `trigger_savepoint`; those are looked up by name."""

    def get_job_id(self) -> str: ...

    def get_job_status(self) -> str: ...

    def cancel(self) -> None: ...


class JobClient:
    def __init__(self, executor_client: ExecutorJobClient) -> None:
        self._client = executor_client
        self._result: concurrent.futures.Future[JobExecutionResult] | None = None
        self._lock = threading.Lock()

    def _wait(self, timeout: float | None) -> JobExecutionResult:
        wait: Callable[[float | None], JobExecutionResult] = (
            getattr(self._client, "wait", None) or getattr(self._client, "get_job_execution_result")  # noqa: B009
        )
        return wait(timeout)

    def get_job_id(self) -> JobID:
        return JobID(self._client.get_job_id())

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        return CompletableFuture.completed(JobStatus(str(self._client.get_job_status())))

    def cancel(self) -> CompletableFuture[None]:
        self._client.cancel()
        return CompletableFuture.completed(None)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: str | None = None
    ) -> CompletableFuture[str]:
        stop = getattr(self._client, "stop_with_savepoint", None)
        if stop is None:
            raise NotImplementedError(
                "stop_with_savepoint: this job runs in the embedded executor, which takes no savepoints; submit it "
                "to a cluster (strom run -m HOST:PORT) and use strom stop JOBID"
            )
        return CompletableFuture.completed(stop(advance_to_end_of_event_time, savepoint_directory))

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture[str]:
        trigger = getattr(self._client, "trigger_savepoint", None)
        if trigger is None:
            raise NotImplementedError(
                "trigger_savepoint: this job runs in the embedded executor, which takes no savepoints; submit it to "
                "a cluster (strom run -m HOST:PORT) and use strom savepoint JOBID"
            )
        return CompletableFuture.completed(trigger(savepoint_directory))

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        return CompletableFuture.completed({})

    @overload
    def get_job_execution_result(self, timeout: None = None) -> CompletableFuture[JobExecutionResult]: ...

    @overload
    def get_job_execution_result(self, timeout: float) -> JobExecutionResult: ...

    def get_job_execution_result(
        self, timeout: float | None = None
    ) -> JobExecutionResult | CompletableFuture[JobExecutionResult]:
        """PyFlink's: a future of the result. With a `timeout` (Strom's earlier signature): wait, return the result."""
        if timeout is not None:
            return self._wait(timeout)
        with self._lock:
            if self._result is None:
                future: concurrent.futures.Future[JobExecutionResult] = concurrent.futures.Future()
                future.set_running_or_notify_cancel()

                def wait_for_the_job() -> None:
                    try:
                        future.set_result(self._wait(None))
                    except BaseException as e:  # noqa: BLE001 - the job's failure is the future's outcome
                        future.set_exception(e)

                threading.Thread(target=wait_for_the_job, name=f"job result {self.get_job_id()}", daemon=True).start()
                self._result = future
        return CompletableFuture(self._result)

    def wait(self, timeout: float | None = None) -> JobExecutionResult:
        return self._wait(timeout)

    def __repr__(self) -> str:
        return f"JobClient({self.get_job_id()})"
