"""The batch state machine (strom_operator.batch.batch_lifecycle): every transition, without a cluster.

Each test drives `next_batch_step` with a status and an observed driver pod and checks the step
and the status it carries; times are fixed, so back-off deadlines are worked out by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from strom_operator.batch.batch_lifecycle import next_batch_step, retry_delay_s
from strom_operator.batch.batch_status import BatchStatus
from strom_operator.batch.batch_steps import CleanupExecutors, CreateDriver, DeleteDriver
from strom_operator.batch.observed_driver import ObservedBatch, ObservedDriver, observe_driver
from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.steps import Wait, WriteStatus

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
NO_POD = ObservedBatch(None)


def spec(**overrides) -> FlinkJobSpec:
    body = {"image": "strom/runtime:test", "mode": "batch", "job": {"entry": "/opt/jobs/count.py"}}
    body.update(overrides)
    return FlinkJobSpec.from_dict(body)


def step(s: FlinkJobSpec, status: FlinkJobStatus, observed: ObservedBatch = NO_POD, *, now: datetime = NOW):
    return next_batch_step(s, status, observed, now=now, name="count", namespace="jobs", generation=1)


def batch(status: FlinkJobStatus) -> BatchStatus:
    return BatchStatus.from_dict(status.batch)


def condition(status: FlinkJobStatus, type_: str) -> tuple[str, str]:
    c = status.condition(type_)
    assert c is not None
    return c.status, c.reason


def driver(phase: str, **kw) -> ObservedBatch:
    return ObservedBatch(ObservedDriver("count-driver-1", phase, **kw))


def submitted(s: FlinkJobSpec) -> FlinkJobStatus:
    first = step(s, FlinkJobStatus())
    assert isinstance(first, CreateDriver)
    return first.status


def running(s: FlinkJobSpec) -> FlinkJobStatus:
    st = step(s, submitted(s), driver("Running"), now=NOW + timedelta(seconds=5))
    assert isinstance(st, WriteStatus)
    return st.status


def test_a_new_batch_job_creates_driver_pod_1_and_writes_the_spec_ahead():
    s = spec()
    first = step(s, FlinkJobStatus())
    assert isinstance(first, CreateDriver) and first.submission == 1 and first.spec == s
    b = batch(first.status)
    assert (b.state, b.driver_pod, b.submission, b.attempt, b.submitted_at) == ("SUBMITTED", "count-driver-1", 1, 1,
                                                                                  NOW)
    assert first.status.lifecycle_state == "DEPLOYED" and first.status.job_status.state == "SUBMITTED"
    assert first.status.reconciliation.last_reconciled_spec == s.to_dict()
    assert condition(first.status, "Progressing") == ("True", "Submitted")
    assert first.status.observed_generation == 1


def test_pending_driver_waits_and_running_driver_goes_running_stable_ready():
    s = spec()
    st = submitted(s)
    wait = step(s, st, driver("Pending"))
    assert isinstance(wait, Wait) and batch(wait.status).state == "SUBMITTED"
    later = NOW + timedelta(seconds=5)
    run = step(s, st, ObservedBatch(ObservedDriver("count-driver-1", "Running"), executors_running=2), now=later)
    assert isinstance(run, WriteStatus)
    b = batch(run.status)
    assert (b.state, b.started_at, b.executors) == ("RUNNING", later, 2)
    assert run.status.lifecycle_state == "STABLE" and run.status.job_status.state == "RUNNING"
    assert condition(run.status, "Ready") == ("True", "JobRunning")
    again = step(s, run.status, ObservedBatch(ObservedDriver("count-driver-1", "Running"), executors_running=2))
    assert isinstance(again, Wait)  # nothing changed: nothing to write


def test_succeeded_driver_completes_and_cleans_its_executors():
    s = spec()
    done = step(s, running(s), driver("Succeeded", exit_code=0, reason="Completed"), now=NOW + timedelta(minutes=3))
    assert isinstance(done, CleanupExecutors) and done.driver_pod == "count-driver-1"
    b = batch(done.status)
    assert (b.state, b.exit_code, b.finished_at) == ("COMPLETED", 0, NOW + timedelta(minutes=3))
    assert done.status.lifecycle_state == "STABLE" and done.status.job_status.state == "COMPLETED"
    assert condition(done.status, "Ready") == ("True", "JobCompleted")
    assert isinstance(step(s, done.status, NO_POD), Wait)  # terminal


def test_completed_job_with_executors_left_cleans_them_again():
    s = spec()
    done = step(s, running(s), driver("Succeeded", exit_code=0, reason="Completed")).status
    again = step(s, done, ObservedBatch(ObservedDriver("count-driver-1", "Succeeded"), executors_running=1))
    assert isinstance(again, CleanupExecutors) and again.driver_pod == "count-driver-1"


def test_failed_driver_under_restart_policy_never_fails_the_job_with_the_drivers_reason():
    s = spec()
    failed = step(s, running(s), driver("Failed", exit_code=1, reason="Error", message="ValueError: bad record"))
    assert isinstance(failed, CleanupExecutors)
    b = batch(failed.status)
    assert (b.state, b.exit_code) == ("FAILED", 1)
    assert b.reason == "Error, exit code 1: ValueError: bad record"
    assert failed.status.lifecycle_state == "FAILED" and failed.status.job_status.state == "FAILED"
    assert failed.status.error == "driver pod count-driver-1 failed: Error, exit code 1: ValueError: bad record"
    assert condition(failed.status, "Degraded") == ("True", "JobFailed")
    assert isinstance(step(s, failed.status, NO_POD), Wait)


def test_on_failure_retries_with_doubling_back_off_up_to_the_limit_then_fails():
    s = spec(restartPolicy={"type": "OnFailure", "onFailureRetries": 2, "onFailureRetryInterval": "10 s"})
    status, now = submitted(s), NOW
    # attempt 1 fails -> wait 10 s; attempt 2 fails -> wait 20 s; attempt 3 fails -> FAILED (2 retries spent)
    for attempt, wait_s in ((1, 10), (2, 20)):
        pod = f"count-driver-{attempt}"
        failed = step(s, status, ObservedBatch(ObservedDriver(pod, "Failed", exit_code=1, reason="Error")), now=now)
        assert isinstance(failed, CleanupExecutors) and failed.driver_pod == pod
        b = batch(failed.status)
        assert (b.state, b.attempt, b.next_attempt_at) == ("PENDING_RERUN", attempt, now + timedelta(seconds=wait_s))
        assert failed.status.lifecycle_state == "DEPLOYED"
        assert condition(failed.status, "Degraded") == ("True", "DriverFailed")
        early = step(s, failed.status, now=now + timedelta(seconds=wait_s - 1))
        assert isinstance(early, Wait) and early.requeue_after == pytest.approx(1)
        now = now + timedelta(seconds=wait_s)
        retry = step(s, failed.status, now=now)
        assert isinstance(retry, CreateDriver) and retry.submission == attempt + 1
        b = batch(retry.status)
        assert (b.state, b.attempt, b.driver_pod) == ("SUBMITTED", attempt + 1, f"count-driver-{attempt + 1}")
        status = retry.status
    last = step(s, status, ObservedBatch(ObservedDriver("count-driver-3", "Failed", exit_code=1, reason="Error")),
                now=now)
    assert isinstance(last, CleanupExecutors) and batch(last.status).state == "FAILED"
    assert "after 3 attempts" in (last.status.error or "")


def test_retry_delay_doubles_and_is_capped_at_five_minutes_over_the_interval():
    assert [retry_delay_s(10, a) for a in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert retry_delay_s(10, 10) == 310  # 10 * 2**9 = 5120, capped at 10 + 300


def test_vanished_driver_pod_counts_as_a_failure():
    s = spec()
    gone = step(s, running(s), NO_POD)
    assert isinstance(gone, CleanupExecutors)
    assert batch(gone.status).state == "FAILED" and "is gone" in (batch(gone.status).reason or "")


def test_driver_stuck_pending_fails_after_the_pod_problem_deadline():
    s = spec(flinkConfiguration={"kubernetes.operator.pod.problem.deadline": "1 min"})
    st = submitted(s)
    stuck = driver("Pending", waiting_reason="ImagePullBackOff", message="no such image")
    early = step(s, st, stuck, now=NOW + timedelta(seconds=30))
    assert isinstance(early, WriteStatus) and batch(early.status).reason == "ImagePullBackOff: no such image"
    assert batch(early.status).state == "SUBMITTED"
    late = step(s, early.status, stuck, now=NOW + timedelta(seconds=61))
    assert isinstance(late, CleanupExecutors) and batch(late.status).state == "FAILED"
    assert "ImagePullBackOff" in (batch(late.status).reason or "")


def test_spec_change_while_running_deletes_the_driver_and_starts_a_new_run():
    s = spec()
    st = running(s)
    changed = spec(spark={"executor": {"instances": 4}})
    delete = step(changed, st, driver("Running"))
    assert isinstance(delete, DeleteDriver) and delete.driver_pod == "count-driver-1"
    b = batch(delete.status)
    assert (b.state, b.attempt) == ("PENDING_RERUN", 0)
    assert delete.status.reconciliation.last_reconciled_spec == changed.to_dict()
    create = step(changed, delete.status, NO_POD)
    assert isinstance(create, CreateDriver) and create.submission == 2 and create.spec == changed
    assert (batch(create.status).attempt, batch(create.status).driver_pod) == (1, "count-driver-2")


def test_restart_nonce_reruns_a_completed_job_and_restart_policy_changes_do_not():
    s = spec()
    done = step(s, running(s), driver("Succeeded", exit_code=0)).status
    assert isinstance(step(spec(restartPolicy={"type": "OnFailure"}), done, NO_POD), Wait)
    rerun = step(spec(restartNonce=1), done, NO_POD)
    assert isinstance(rerun, WriteStatus) and batch(rerun.status).state == "PENDING_RERUN"
    assert isinstance(step(spec(restartNonce=1), rerun.status, NO_POD), CreateDriver)


def test_invalid_spec_is_reported_and_the_running_driver_is_left_alone():
    s = spec()
    st = running(s)
    bad = spec(spark={"sparkConf": {"spark.master": "local[*]"}})
    report = step(bad, st, driver("Running"))
    assert isinstance(report, WriteStatus)
    assert condition(report.status, "Degraded") == ("True", "InvalidSpec")
    assert (report.status.error or "").startswith("invalid spec: spec.spark.sparkConf[spark.master]")
    assert isinstance(step(bad, report.status, driver("Running")), Wait)
    fixed = step(s, report.status, driver("Running"))
    assert isinstance(fixed, WriteStatus) and fixed.status.error is None
    assert condition(fixed.status, "Degraded") == ("False", "SpecValid")


def test_invalid_spec_at_creation_submits_nothing():
    bad = spec(job={"entry": "/opt/jobs/count.py", "upgradeMode": "savepoint"}, savepoints={"dir": "s3://b/p"})
    report = step(bad, FlinkJobStatus())
    assert isinstance(report, WriteStatus) and "spec.job.upgradeMode" in (report.status.error or "")
    assert isinstance(step(bad, report.status), Wait)


def test_mode_change_is_an_invalid_spec():
    s = spec()
    st = running(s)
    streaming = FlinkJobSpec.from_dict({**s.to_dict(), "mode": "streaming"})
    report = step(streaming, st, driver("Running"))
    assert isinstance(report, WriteStatus)
    assert "spec.mode: cannot change from 'batch' to 'streaming'" in (report.status.error or "")


def test_observe_driver_reads_termination_waiting_and_eviction():
    failed = {"metadata": {"name": "p"}, "status": {"phase": "Failed", "containerStatuses": [
        {"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": ""}}}]}}
    assert observe_driver(failed) == ObservedDriver("p", "Failed", 137, "OOMKilled", "")
    evicted = {"metadata": {"name": "p"}, "status": {"phase": "Failed", "reason": "Evicted", "message": "low memory"}}
    assert observe_driver(evicted).describe() == "Evicted: low memory"
    pulling = {"metadata": {"name": "p"}, "status": {"phase": "Pending", "containerStatuses": [
        {"state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}}
    assert observe_driver(pulling).stuck
    unschedulable = {"metadata": {"name": "p"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}]}}
    assert observe_driver(unschedulable).waiting_reason == "Unschedulable"
    assert observe_driver(None) is None
    long = {"metadata": {"name": "p"}, "status": {"phase": "Failed", "containerStatuses": [
        {"state": {"terminated": {"exitCode": 1, "reason": "Error", "message": "x" * 1000 + "END"}}}]}}
    assert observe_driver(long).message.endswith("END") and len(observe_driver(long).message) == 603
