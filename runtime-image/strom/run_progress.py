"""Progress of the job `strom run` waits for: now and then (every `--progress-interval` seconds, default
10) one INFO line on stderr with the records its tasks took in and sent out so far and the rates since the
last line, read from the JobManager's metrics (Flink's numRecordsIn/numRecordsOut of each task, summed
over the job's tasks: what Flink's web UI shows per vertex). stdout stays the job's output.

`progress_line` is pure; `report_progress` reads the JobManager (on its loop) from a thread of its own.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("strom.run")

DEFAULT_INTERVAL_S = 10.0


@dataclass(frozen=True, slots=True)
class Counts:
    """A job's records so far, at `at_s` (monotonic seconds)."""

    records_in: int
    records_out: int
    at_s: float


def progress_line(job_name: str, started_s: float, now: Counts, before: Counts | None) -> str:
    """`Job 'x' running 20 s: 123,456 records in (6,172/s), 1,000 records out (50/s)`; the rates are
    since `before` (the previous line), or since the start."""
    since_in, since_out, since_s = (before.records_in, before.records_out, before.at_s) if before else (0, 0, started_s)
    span = max(now.at_s - since_s, 1e-9)
    rate_in = (now.records_in - since_in) / span
    rate_out = (now.records_out - since_out) / span
    return (
        f"Job '{job_name}' running {now.at_s - started_s:.0f} s: {now.records_in:,} records in ({rate_in:,.0f}/s), "
        f"{now.records_out:,} records out ({rate_out:,.0f}/s)"
    )


def job_counts(jm: Any, job_id: str) -> Counts:
    """Sum of numRecordsIn/numRecordsOut over the job's subtasks, as the TaskManagers last reported them.
    Read on the JobManager's loop, which owns its state."""

    async def read() -> tuple[int, int]:
        job = jm.jobs[job_id]
        records_in = records_out = 0
        for v in job.job_graph.vertices:
            for values in jm.subtask_metrics(job_id, v.name, v.parallelism).values():
                records_in += int(values.get("numRecordsIn", 0))
                records_out += int(values.get("numRecordsOut", 0))
        return records_in, records_out

    records_in, records_out = asyncio.run_coroutine_threadsafe(read(), jm.loop).result(10)
    return Counts(records_in, records_out, time.monotonic())


@contextmanager
def report_progress(jm: Any, job_id: str, job_name: str, interval_s: float) -> Iterator[None]:
    """While the body waits for the job: a progress line every `interval_s` seconds (0: none)."""
    if interval_s <= 0:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def loop() -> None:
        before: Counts | None = None
        while not done.wait(interval_s):
            try:
                now = job_counts(jm, job_id)
            except Exception as e:  # noqa: BLE001 - progress must never fail the job; say why once
                log.debug("no progress for job %s: %s", job_id, e)
                return
            if done.is_set():
                return  # the job ended meanwhile: its outcome is the last word
            log.info("%s", progress_line(job_name, started, now, before))
            before = now

    thread = threading.Thread(target=loop, name=f"progress-{job_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(5)
