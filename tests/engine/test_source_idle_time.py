"""Sources that wait report the wait as idle time, as Flink's sources do (issue 16 item 8).

A source at 200 records/s does almost nothing: its thread's CPU time is a few ms per second. Before,
the wait for the next permit (or the next record of a sleeping SourceFunction, or data on a quiet
socket) happened inside a poll that then returned records, so it was booked as busy: ~998 ms/s.
The reference is the task thread's own CPU time (its clock from pthread_getcpuclockid): busy time
is wall time spent working, so it can exceed CPU time only by what the scheduler took away, never
approach 1000 ms/s while the thread burns a few ms of CPU per second.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from strom.common import WatermarkStrategy
from strom.connectors.datagen import DataGeneratorSource
from strom.datastream.functions import SourceFunction

from .test_task_metrics import NullSink, env_p1, start_job, stop, uptime_ms, wait_for

RATE = 200  # records per second


class SleepingSource(SourceFunction):
    """A SourceFunction rate-limited by sleeping: RATE records/s."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def run(self, ctx: Any) -> None:
        i = 0
        while not self.stopped.wait(1.0 / RATE):
            ctx.collect(i)
            i += 1

    def cancel(self) -> None:
        self.stopped.set()


def _thread_cpu_s(name_part: str) -> float:
    """CPU seconds of the live thread whose name contains `name_part` (the source task's thread)."""
    threads = [t for t in threading.enumerate() if name_part in t.name and t.native_id is not None]
    assert threads, [t.name for t in threading.enumerate()]
    return sum(time.clock_gettime(time.pthread_getcpuclockid(t.ident)) for t in threads)  # type: ignore[arg-type]


def _source_thread_name(job: Any) -> str:
    names = [t.name for t in threading.enumerate()]
    candidates = [n for n in names if "Source" in n or "gen" in n or "Custom" in n]
    assert candidates, names
    return candidates[0]


@pytest.mark.parametrize("kind", ["datagen rate limit", "sleeping SourceFunction"])
def test_a_rate_limited_source_is_idle_while_it_waits(kind):
    env = env_p1()
    if kind == "datagen rate limit":
        stream = env.from_source(
            DataGeneratorSource(lambda i: i, None, rate_limit=RATE), WatermarkStrategy.no_watermarks(), "gen"
        )
    else:
        stream = env.add_source(SleepingSource())
    stream.add_sink(NullSink())
    job = start_job(env, "rate limited")
    try:
        first = wait_for(job, lambda s: uptime_ms(s) > 500)
        records_before = first.subtasks[0].task["numRecordsOut"] or first.subtasks[0].task["numRecordsIn"]
        busy_before = first.subtasks[0].task["accumulatedBusyTime"]
        t0 = time.monotonic()
        snap = wait_for(job, lambda s: uptime_ms(s) > 3500)
        elapsed = time.monotonic() - t0
    finally:
        stop(job)
    task = snap.subtasks[0].task
    records = task["numRecordsIn"] - records_before if task["numRecordsIn"] else 0
    # the schedule held: about RATE records per second were read in the window we watched
    assert 0.5 * RATE * elapsed <= records <= 1.5 * RATE * elapsed + RATE, (records, elapsed)
    busy_ms = task["accumulatedBusyTime"] - busy_before
    assert busy_ms < 0.25 * elapsed * 1000, (kind, busy_ms, elapsed, task)  # was ~100 %
    assert task["busyTimeMsPerSecond"] < 250, task
    assert task["idleTimeMsPerSecond"] > 700, task


def test_busy_time_of_a_waiting_source_stays_near_its_cpu_time():
    """The reference figure: the task thread's CPU time over the same interval."""
    env = env_p1()
    env.from_source(DataGeneratorSource(lambda i: i, None, rate_limit=RATE), WatermarkStrategy.no_watermarks(),
                    "gen").add_sink(NullSink())
    job = start_job(env, "cpu reference")
    try:
        first = wait_for(job, lambda s: uptime_ms(s) > 500)
        name = _source_thread_name(job)
        cpu_before, busy_before = _thread_cpu_s(name), first.subtasks[0].task["accumulatedBusyTime"]
        t0 = time.monotonic()
        snap = wait_for(job, lambda s: uptime_ms(s) > 3500)
        cpu_ms = (_thread_cpu_s(name) - cpu_before) * 1000
        elapsed_ms = (time.monotonic() - t0) * 1000
    finally:
        stop(job)
    busy_ms = snap.subtasks[0].task["accumulatedBusyTime"] - busy_before
    # busy is wall time at work: CPU time plus what the scheduler took away on a loaded machine
    assert busy_ms <= 2 * cpu_ms + 0.1 * elapsed_ms, (busy_ms, cpu_ms, elapsed_ms)


def test_a_quiet_socket_source_is_idle():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        env = env_p1()
        env.socket_text_stream("127.0.0.1", port).add_sink(NullSink())
        job = start_job(env, "socket")
        conn, _ = server.accept()
        stopped = threading.Event()

        def trickle() -> None:  # 20 lines a second
            i = 0
            while not stopped.wait(0.05):
                try:
                    conn.sendall(f"{i}\n".encode())
                except OSError:
                    return
                i += 1

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            snap = wait_for(job, lambda s: uptime_ms(s) > 3000 and s.subtasks[0].task["numRecordsIn"] > 20)
        finally:
            stopped.set()
            stop(job)
            conn.close()
    task = snap.subtasks[0].task
    assert task["busyTimeMsPerSecond"] < 250, task
    assert task["idleTimeMsPerSecond"] > 700, task


def test_a_file_source_between_scans_is_idle(tmp_path):
    from strom.connectors.file_source import FileSource, StreamFormat

    (tmp_path / "a.txt").write_text("".join(f"{i}\n" for i in range(100)))
    env = env_p1()
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path)) \
        .monitor_continuously(1000).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "files").add_sink(NullSink())
    job = start_job(env, "monitor")
    try:
        snap = wait_for(job, lambda s: uptime_ms(s) > 3000 and s.subtasks[0].task["numRecordsIn"] == 100)
    finally:
        stop(job)
    task = snap.subtasks[0].task
    assert task["busyTimeMsPerSecond"] < 250, task
    assert task["idleTimeMsPerSecond"] > 700, task
