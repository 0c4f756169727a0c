"""Savepoints for an in-process JobClient (`execute_async`'s, `strom run`'s): Flink's JobClient semantics.

`trigger_savepoint` and `stop_with_savepoint` start the operation on the JobMaster (on its event
loop, as the REST handlers do) and wait for its outcome: the savepoint's location, or an error
naming why it failed. A stop completes once the job has ended, as Flink's does.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from strom.runtime.jobmanager.savepoint_operations import SavepointRefused

if TYPE_CHECKING:
    from strom.runtime.jobmanager.job_master import JobMaster

POLL_S = 0.02


class SavepointFailed(RuntimeError):
    """A savepoint was started but did not complete."""


def take_savepoint(
    loop: asyncio.AbstractEventLoop,
    job: JobMaster,
    directory: str | None,
    *,
    then: str | None = None,
    drain: bool = False,
    timeout: float | None = None,
) -> str:
    """The location of a savepoint of `job` to `directory` (None: `state.savepoints.dir`); with `then`
    ('FINISHED': stop) the job ends after it. Raises SavepointRefused, ConfigError or SavepointFailed."""

    async def trigger() -> str:
        return job.trigger_savepoint(directory, then=then, drain=drain)

    def refused() -> SavepointRefused:
        return SavepointRefused(f"job {job.job_id} is {job.state}: only a RUNNING job can take a savepoint")

    coroutine = trigger()
    try:
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    except RuntimeError:  # an embedded job's loop ends with the job
        coroutine.close()
        raise refused() from None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            trigger_id = future.result(POLL_S)
            break
        except TimeoutError:
            if not loop.is_running():  # stopped with its job before it ran the trigger
                future.cancel()
                raise refused() from None
            if deadline is not None and time.monotonic() > deadline:
                future.cancel()
                raise TimeoutError(f"savepoint of job {job.job_id} was not started within {timeout} s") from None
    while True:
        op = job.savepoints.get(trigger_id)
        if op is not None and op.status == "COMPLETED":
            if op.location is None:
                raise SavepointFailed(f"savepoint of job {job.job_id} failed: {op.failure or 'unknown reason'}")
            return op.location
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"savepoint of job {job.job_id} did not complete within {timeout} s")
        time.sleep(POLL_S)  # the operation completes on the loop; its record is read here
