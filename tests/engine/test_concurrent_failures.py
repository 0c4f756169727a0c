"""One failover, several failures: a killed TaskManager and the downstream task that lost its connection
to it reach the JobManager in either order. As in Flink's exception history (REST /jobs/:id/exceptions,
`exceptionHistory.entries[*].concurrentExceptions`), the first one noticed is the entry's root cause and
the other is among its concurrent exceptions; neither is lost. Driven directly on a JobMaster with a fake
JobManager (no processes), so both orders are tested deterministically."""

from __future__ import annotations

import asyncio

import pytest
from strom.common.configuration import Configuration
from strom.datastream import StreamExecutionEnvironment
from strom.runtime.jobmanager.high_availability import NoHaServices
from strom.runtime.jobmanager.job_master import JobMaster
from strom.runtime.jobmanager.rest_messages import exceptions_json
from strom.runtime.jobmanager.rest_view import DispatcherView
from strom.runtime.metrics.registry import MetricRegistry
from strom.runtime.rpc import TaskStateUpdate

DOWNSTREAM = "connection to producer 10.0.0.2:6121 lost: ConnectionResetError"
LOSS = "connection to TaskManager tm-1 (10.0.0.2) was lost"


class _FakeResourceManager:
    taskmanagers: dict = {}

    def release(self, job_id: str) -> None:
        pass


class _FakeJobManager:
    """What a JobMaster calls on its JobManager; messages to TaskManagers are only counted."""

    def __init__(self) -> None:
        self.config = Configuration()
        self.ha = NoHaServices()
        self.registry = MetricRegistry()
        self.rm = _FakeResourceManager()
        self.jobs: dict[str, JobMaster] = {}
        self.sent = 0

    def send_raw(self, tm_id: str, msg: bytes) -> None:
        self.sent += 1

    def notify_slots_changed(self) -> None:
        pass

    def job_finished(self, job_id: str) -> None:
        pass


def _running_job(jm: _FakeJobManager) -> JobMaster:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1, 2, 3]).map(lambda x: x).print()
    job = JobMaster(jm, "a" * 32, env.get_stream_graph("concurrent failures"))  # type: ignore[arg-type]
    jm.jobs[job.job_id] = job
    for i, st in enumerate(job.subtasks.values()):  # subtask i on tm-(i % 2), all running
        st.state, st.tm_id = "RUNNING", f"tm-{i % 2}"
    job.state = "RUNNING"
    return job


def _downstream_failure(job: JobMaster) -> TaskStateUpdate:
    vertex_id, index = next(k for k, st in job.subtasks.items() if st.tm_id == "tm-0")
    return TaskStateUpdate(job.job_id, job.attempt, vertex_id, index, "FAILED", DOWNSTREAM)


@pytest.mark.parametrize("loss_first", [True, False])
def test_a_failover_entry_holds_the_taskmanager_loss_whichever_failure_came_first(loss_first):
    async def scenario() -> dict:
        jm = _FakeJobManager()
        job = _running_job(jm)
        if loss_first:
            job.on_taskmanager_lost("tm-1", LOSS)
            job.on_task_update(_downstream_failure(job))
        else:
            job.on_task_update(_downstream_failure(job))
            job.on_taskmanager_lost("tm-1", LOSS)
        job.on_taskmanager_lost("tm-1", LOSS + " (heartbeat timeout)")  # the same loss noticed twice
        return exceptions_json(DispatcherView(jm).exceptions(job.job_id))  # type: ignore[arg-type]

    out = asyncio.run(scenario())
    entries = out["exceptionHistory"]["entries"]
    assert len(entries) == 1  # one failover, one entry
    texts = [entries[0]["stacktrace"]] + [c["stacktrace"] for c in entries[0]["concurrentExceptions"]]
    if loss_first:
        # the task's failure arrives after the failover cancelled it: a consequence, not recorded
        assert texts == [LOSS]
        assert entries[0]["taskName"] == "TaskManager tm-1"
    else:
        assert texts == [DOWNSTREAM, LOSS]
        assert entries[0]["concurrentExceptions"][0]["taskName"] == "TaskManager tm-1"
        assert "concurrentExceptions" not in entries[0]["concurrentExceptions"][0]  # Flink nests one level


def test_a_loss_after_the_next_attempt_is_deployed_is_not_part_of_the_earlier_failover():
    async def scenario() -> tuple[dict, str]:
        jm = _FakeJobManager()
        job = _running_job(jm)
        job.on_task_update(_downstream_failure(job))
        # the next attempt runs everywhere on tm-0 only
        job.attempt += 1
        job.state = "RUNNING"
        for st in job.subtasks.values():
            st.state, st.tm_id = "DEPLOYING", "tm-0"
        for vertex_id, index in job.subtasks:
            job.on_task_update(TaskStateUpdate(job.job_id, job.attempt, vertex_id, index, "RUNNING", None))
        job.on_taskmanager_lost("tm-1", LOSS)
        return exceptions_json(DispatcherView(jm).exceptions(job.job_id)), job.state  # type: ignore[arg-type]

    out, state = asyncio.run(scenario())
    entries = out["exceptionHistory"]["entries"]
    assert [e["stacktrace"] for e in entries] == [DOWNSTREAM]
    assert entries[0]["concurrentExceptions"] == []
    assert state == "RUNNING"  # tm-1 ran nothing of this attempt
