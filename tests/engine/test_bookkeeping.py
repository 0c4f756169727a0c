"""Bounded bookkeeping with Flink's keys: `web.exception-history-size` (failures per job),
`jobstore.expiration-time` / `jobstore.max-capacity` (finished jobs), `rest.async.store-duration`
(results of savepoint and disposal operations). The decisions are pure and driven by a hand-set
clock here; one session cluster shows the wiring end to end (history bounded, expired job 404)."""

from __future__ import annotations

import textwrap
import urllib.error
from dataclasses import dataclass
from pathlib import Path

import pytest
from strom.common import config_options as opts
from strom.common.configuration import Configuration
from strom.runtime.jobmanager.retention import (
    FinishedJob,
    exceptions_to_keep,
    jobs_to_drop,
    operations_to_drop,
)
from strom.runtime.jobmanager.savepoint_operations import SavepointOperations, TriggerResults

from tests.engine.cluster_testing import SessionCluster, wait_until
from tests.engine.test_cluster import submit


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- Flink's keys and defaults -----------------------------------------------------------------------


def test_bookkeeping_keys_have_flinks_defaults():
    assert opts.EXCEPTION_HISTORY_SIZE.key == "web.exception-history-size" and opts.EXCEPTION_HISTORY_SIZE.default == 16
    assert opts.JOBSTORE_EXPIRATION_TIME.key == "jobstore.expiration-time"
    assert opts.JOBSTORE_EXPIRATION_TIME.default == 3600  # seconds, as Flink reads the key
    assert opts.REST_ASYNC_STORE_DURATION.key == "rest.async.store-duration"
    assert opts.REST_ASYNC_STORE_DURATION.default == 5 * 60 * 1000
    assert opts.JOBSTORE_MAX_CAPACITY.key == "jobstore.max-capacity" and opts.JOBSTORE_MAX_CAPACITY.default > 0


def test_a_bad_bookkeeping_value_is_refused_naming_the_key():
    with pytest.raises(opts.ConfigError, match="'web.exception-history-size'"):
        Configuration({"web.exception-history-size": "0"})
    with pytest.raises(opts.ConfigError, match="'jobstore.max-capacity'"):
        Configuration({"jobstore.max-capacity": "many"})
    with pytest.raises(opts.ConfigError, match="'rest.async.store-duration'"):
        Configuration({"rest.async.store-duration": "5 fortnights"})


# -- exception history -------------------------------------------------------------------------------


def test_exception_history_keeps_the_newest_failures():
    failures = [f"failure {i}" for i in range(40)]
    assert failures[exceptions_to_keep(len(failures), 16)] == [f"failure {i}" for i in range(24, 40)]
    assert failures[exceptions_to_keep(3, 16)][:3] == ["failure 0", "failure 1", "failure 2"]
    assert exceptions_to_keep(0, 16) == slice(0, 0)


# -- the job store -----------------------------------------------------------------------------------


def test_finished_jobs_expire_after_the_expiration_time():
    jobs = [FinishedJob("a", 100.0), FinishedJob("b", 200.0), FinishedJob("c", 300.0)]
    # now 3800: a ended 3700 s ago (past 3600), b exactly 3600 s ago (expired, as an expire-after-write
    # cache at its deadline), c 3500 s ago (kept)
    assert jobs_to_drop(jobs, now=3800.0, expiration_s=3600, max_capacity=1000) == ["a", "b"]
    assert jobs_to_drop(jobs, now=3799.0, expiration_s=3600, max_capacity=1000) == ["a"]


def test_finished_jobs_beyond_the_capacity_are_dropped_oldest_first():
    jobs = [FinishedJob("new", 500.0), FinishedJob("old", 100.0), FinishedJob("mid", 300.0)]
    assert jobs_to_drop(jobs, now=600.0, expiration_s=3600, max_capacity=1) == ["old", "mid"]
    assert jobs_to_drop(jobs, now=600.0, expiration_s=3600, max_capacity=3) == []
    assert jobs_to_drop(jobs, now=600.0, expiration_s=3600, max_capacity=0) == ["old", "mid", "new"]


def test_expired_and_surplus_jobs_are_dropped_together_without_double_counting():
    jobs = [FinishedJob(f"j{i}", float(i)) for i in range(10)]
    # j0..j3 expired (ended <= 4 s before now=10 with expiration 6); of the 6 left, capacity 2 keeps j8, j9
    assert jobs_to_drop(jobs, now=10.0, expiration_s=6, max_capacity=2) == [f"j{i}" for i in range(8)]


def test_jobs_ending_at_the_same_time_are_dropped_in_id_order():
    jobs = [FinishedJob("b", 1.0), FinishedJob("a", 1.0), FinishedJob("c", 1.0)]
    assert jobs_to_drop(jobs, now=2.0, expiration_s=3600, max_capacity=1) == ["a", "b"]


@dataclass
class StoredJob:
    """Stands in for a JobMaster in the dispatcher's job store: what the store reads."""

    job_id: str
    state: str
    end_time: float


def test_the_dispatcher_drops_only_finished_jobs_and_their_metrics():
    from strom.runtime.jobmanager.dispatcher import JobManager

    jm = JobManager(Configuration({"jobstore.expiration-time": "60", "jobstore.max-capacity": "1"}))
    stored = [
        StoredJob("running", "RUNNING", 0.0),
        StoredJob("suspended", "SUSPENDED", 1.0),  # the next JobManager recovers it: not the store's
        StoredJob("failed", "FAILED", 10.0),
        StoredJob("canceled", "CANCELED", 20.0),
        StoredJob("finished", "FINISHED", 30.0),
    ]
    for job in stored:
        jm.jobs[job.job_id] = job  # type: ignore[assignment]
        jm.registry.register_job_gauges(job.job_id, job.job_id, uptime_ms=lambda: 0, num_restarts=lambda: 0)
    assert jm.drop_finished_jobs(now=40.0) == ["failed", "canceled"]  # capacity 1
    assert sorted(jm.jobs) == ["finished", "running", "suspended"]
    assert jm.drop_finished_jobs(now=89.0) == []
    assert jm.drop_finished_jobs(now=90.0) == ["finished"]  # 60 s after it ended
    assert sorted(jm.jobs) == ["running", "suspended"]
    assert {job_id for job_id, _, _ in _registered_jobs(jm)} == {"running", "suspended"}


def _registered_jobs(jm):
    return [(jid, name, g) for jid, (name, g) in jm.registry._jobs.items()]


# -- results of asynchronous operations ----------------------------------------------------------------


def test_completed_operations_expire_after_the_store_duration():
    assert operations_to_drop({"a": 10.0, "b": 20.0}, now=310.0, store_duration_s=300) == ["a"]
    assert operations_to_drop({}, now=1e9, store_duration_s=300) == []


def test_a_savepoint_result_is_readable_for_the_store_duration_then_unknown():
    clock = FakeClock()
    ops = SavepointOperations(300_000, clock=clock)
    op = ops.start("t1")
    clock.now += 10_000  # in progress for hours: never dropped, a client still polls it
    assert ops.get("t1") is op and op.status == "IN_PROGRESS"
    ops.finish("t1", "file:///sp/savepoint-1", None)
    clock.now += 299.9
    assert ops.get("t1") is not None and ops.get("t1").location == "file:///sp/savepoint-1"
    clock.now += 0.1
    assert ops.get("t1") is None


def test_a_client_trigger_id_after_expiry_starts_a_new_operation():
    clock = FakeClock()
    ops = SavepointOperations(1000, clock=clock)
    ops.start("same")
    ops.finish("same", None, "declined")
    clock.now += 1.0
    assert ops.get("same") is None
    assert ops.start("same").status == "IN_PROGRESS"


def test_trigger_results_bound_disposal_results_too():
    clock = FakeClock()
    results: TriggerResults[str] = TriggerResults(2000, is_completed=lambda s: s != "IN_PROGRESS", clock=clock)
    results["d1"] = "IN_PROGRESS"
    results["d2"] = "COMPLETED"
    clock.now += 1.0
    results["d1"] = "COMPLETED"  # completes one second later: its two seconds start now
    clock.now += 1.0
    assert results.get("d2") is None and results.get("d1") == "COMPLETED" and len(results) == 1
    clock.now += 1.0
    assert results.get("d1") is None and len(results) == 0


def test_a_disposal_result_is_gone_after_the_rest_store_duration(tmp_path):
    """POST /savepoint-disposal's result is readable once completed, and 404 once rest.async.store-duration
    (300 ms here) has passed since it completed."""
    import asyncio
    import time

    from aiohttp.test_utils import TestClient, TestServer
    from strom.runtime.jobmanager.rest_api import create_rest_app

    from tests.engine.fake_jobmanager_view import FakeJobManagerView

    view = FakeJobManagerView()
    view.configuration = {**view.configuration, "rest.async.store-duration": "300 ms"}

    async def scenario() -> tuple[dict, int]:
        async with TestClient(TestServer(create_rest_app(view))) as client:
            answer = await client.post("/savepoint-disposal", json={"savepoint-path": f"file://{tmp_path}/none"})
            assert answer.status == 200, await answer.text()
            path = f"/savepoint-disposal/{(await answer.json())['request-id']}"
            deadline = time.monotonic() + 10
            while (result := await (await client.get(path)).json())["status"]["id"] != "COMPLETED":
                assert time.monotonic() < deadline, "the disposal did not complete"
                await asyncio.sleep(0.01)
            while (status := (await client.get(path)).status) == 200:
                assert time.monotonic() < deadline, "the disposal result was kept beyond the store duration"
                await asyncio.sleep(0.02)
            return result, status

    result, status = asyncio.run(scenario())
    assert result["operation"]["failure-cause"]  # there was nothing to dispose of
    assert status == 404


# -- end to end: a session cluster with small bounds -----------------------------------------------------

RESTARTS = 6


def always_failing_job(tmp_path: Path) -> str:
    job = tmp_path / "failing.py"
    conf = {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(RESTARTS),
        "restart-strategy.fixed-delay.delay": "10 ms",
    }
    job.write_text(
        textwrap.dedent(f"""
        from strom.common import Configuration
        from strom.datastream import StreamExecutionEnvironment

        def explode(v):
            raise ValueError("boom " + str(v))

        env = StreamExecutionEnvironment.get_execution_environment()
        env.configure(Configuration({conf!r}))
        env.from_collection([1, 2, 3]).map(explode).print()
        env.execute("always failing")
    """)
    )
    return str(job)


def _status(cluster: SessionCluster, path: str) -> int:
    try:
        cluster.get(path)
    except urllib.error.HTTPError as e:
        return e.code
    return 200


def test_a_failing_job_keeps_a_bounded_history_and_leaves_the_store_when_it_expires(tmp_path):
    """1 + RESTARTS attempts fail; the history keeps the newest 3 (web.exception-history-size), newest
    first; jobstore.expiration-time (6 s here) after FAILED the job's paths answer 404."""
    extra = ("-D", "web.exception-history-size=3", "-D", "jobstore.expiration-time=6")
    cluster = SessionCluster(taskmanagers=1, slots=1, extra=extra)
    try:
        job_id = submit(cluster, always_failing_job(tmp_path))
        assert cluster.wait_for_state(job_id, ("FAILED", "FINISHED")) == "FAILED"
        history = cluster.get(f"/jobs/{job_id}/exceptions")["exceptionHistory"]
        entries = history["entries"]
        assert len(entries) == 3 and history["truncated"] is True  # 7 failures, 3 kept
        assert all("boom" in e["stacktrace"] for e in entries)
        stamps = [e["timestamp"] for e in entries]
        assert stamps == sorted(stamps, reverse=True)
        assert cluster.get(f"/jobs/{job_id}/metrics?get=numRestarts") == [{"id": "numRestarts", "value": "6"}]
        wait_until(lambda: _status(cluster, f"/jobs/{job_id}") == 404, timeout=30, what="the expired job gone")
        assert _status(cluster, f"/jobs/{job_id}/exceptions") == 404
        assert job_id not in {j["jid"] for j in cluster.get("/jobs/overview")["jobs"]}
    finally:
        cluster.close()


# -- numRestarts survives a JobManager failover ------------------------------------------------------------


def test_the_ha_store_keeps_the_restart_count_beside_the_checkpoint_pointer(tmp_path):
    from strom.runtime.jobmanager.high_availability import CheckpointPointer, ha_services_for

    ha = ha_services_for(
        Configuration({"high-availability.type": "file", "high-availability.storageDir": f"file://{tmp_path}"})
    )
    ha.job_submitted("j1", b"graph")
    [fresh] = ha.recover_jobs()
    assert fresh.num_restarts == 0  # never restarted: nothing kept, counted from 0
    ha.checkpoint_completed("j1", CheckpointPointer(4, "j1/chk-4"))
    ha.job_restarted("j1", 2)
    ha.job_restarted("j1", 3)
    [job] = ha.recover_jobs()
    assert (job.job_id, job.checkpoint, job.num_restarts) == ("j1", CheckpointPointer(4, "j1/chk-4"), 3)
    ha.job_terminated("j1")
    assert ha.recover_jobs() == []


@pytest.mark.parametrize("content", [b"{not json", b'{"numRestarts": -1}', b'{"numRestarts": "7"}', b"{}"])
def test_an_unreadable_restart_count_does_not_keep_the_job_from_recovering(tmp_path, content):
    from strom.runtime.jobmanager.high_availability import ha_services_for

    ha = ha_services_for(
        Configuration({"high-availability.type": "file", "high-availability.storageDir": f"file://{tmp_path}"})
    )
    ha.job_submitted("j1", b"graph")
    (tmp_path / "default" / "jobs" / "j1" / "restarts").write_bytes(content)
    [job] = ha.recover_jobs()
    assert job.num_restarts == 0


def _num_restarts(cluster: SessionCluster, job_id: str) -> int:
    [metric] = cluster.get(f"/jobs/{job_id}/metrics?get=numRestarts")
    return int(float(metric["value"]))


def test_num_restarts_survives_a_jobmanager_failover(tmp_path):
    """One restart (a TaskManager killed) before the JobManager is killed; the new JobManager reports
    numRestarts 1: the count kept in the HA store, and the failover itself is no restart (as Flink,
    where a JobManager taking a job over is not a failure the restart strategy handled)."""
    from tests.engine.test_file_sink_cleanup import counting_job, expected_counts, published_counts, running_subtasks

    count = 16_000
    ha_dir = tmp_path / "ha"
    ha = ("-D", "high-availability.type=file", "-D", f"high-availability.storageDir=file://{ha_dir}")
    cluster = SessionCluster(taskmanagers=3, slots=1, extra=ha)
    try:
        path, out = counting_job(tmp_path, count=count, rate=1600.0)
        job_id = submit(cluster, path)
        wait_until(
            lambda: cluster.get(f"/jobs/{job_id}/checkpoints")["counts"]["completed"] >= 1,
            timeout=60,
            what="a completed checkpoint",
        )
        victim = sorted(running_subtasks(cluster, job_id))[0]
        cluster.kill_taskmanager(cluster.tms[int(victim.split("-")[1])])
        wait_until(lambda: _num_restarts(cluster, job_id) == 1, timeout=60, what="numRestarts 1")
        kept = ha_dir / "default" / "jobs" / job_id / "restarts"
        wait_until(lambda: kept.is_file() and b'"numRestarts": 1' in kept.read_bytes(), what="the count kept")
        cluster.wait_for_state(job_id, ("RUNNING",))
        cluster.kill_jobmanager()
        cluster.restart_jobmanager()
        assert _num_restarts(cluster, job_id) == 1
        assert cluster.wait_for_state(job_id, ("FINISHED", "FAILED", "CANCELED"), timeout=120) == "FINISHED"
        assert _num_restarts(cluster, job_id) == 1
        assert published_counts(out) == expected_counts(count)
    finally:
        cluster.close()
