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
from typing import Any

from strom.common.completable_future import CompletableFuture
from strom.common.job_id import JobID
from strom.common.job_status import JobStatus


class JobClient:
    def __init__(self, executor_client: Any) -> None:
        self._client = executor_client
        self._result: concurrent.futures.Future[Any] | None = None
        self._lock = threading.Lock()

    def _wait(self, timeout: float | None) -> Any:
        wait = getattr(self._client, "wait", None) or self._client.get_job_execution_result
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

    def get_job_execution_result(self, timeout: float | None = None) -> Any:
        if timeout is not None:
            return self._wait(timeout)
        with self._lock:
            if self._result is None:
                future: concurrent.futures.Future[Any] = concurrent.futures.Future()
                future.set_running_or_notify_cancel()

                def wait_for_the_job() -> None:
                    try:
                        future.set_result(self._wait(None))
                    except BaseException as e:  # noqa: BLE001 - the job's failure is the future's outcome
                        future.set_exception(e)

                threading.Thread(target=wait_for_the_job, name=f"job result {self.get_job_id()}", daemon=True).start()
                self._result = future
        return CompletableFuture(self._result)

    def wait(self, timeout: float | None = None) -> Any:
        return self._wait(timeout)

    def __repr__(self) -> str:
        return f"JobClient({self.get_job_id()})"
