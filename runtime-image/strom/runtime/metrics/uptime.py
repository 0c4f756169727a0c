"""Flink's `uptime` job gauge (UpTimeGauge), as a pure function of the job's state and clock.

Milliseconds since the job last switched to RUNNING while it runs (a restart starts it again from
0); 0 while it is not running yet or not at the moment (CREATED, RESTARTING, ...); -1 once it
reached a terminal state (FINISHED, FAILED, CANCELED, SUSPENDED: "no longer running"). So a
finished job's `flink_jobmanager_job_uptime` is -1 in Flink too; its run time is in the REST job
details (`duration`).
"""

from __future__ import annotations

from collections.abc import Collection

NO_LONGER_RUNNING = -1


def uptime_ms(state: str, running_since_s: float | None, now_s: float, *, terminal_states: Collection[str]) -> int:
    if state == "RUNNING" and running_since_s is not None:
        return max(0, int((now_s - running_since_s) * 1000))  # max: the wall clock may step back
    if state in terminal_states:
        return NO_LONGER_RUNNING
    return 0
