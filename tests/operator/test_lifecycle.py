"""The lifecycle state machine: every transition, driven through a fake cluster with a fixed clock."""

from __future__ import annotations

from dataclasses import replace

from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.lifecycle.steps import DeployJob, MarkDegraded, StopWithSavepoint, Wait, WriteStatus
from strom_operator.observe.observed import ObservedJob, PodProblem

from tests.operator.fakes import T0, FakeCluster, deploy_stable, drive, later, make_spec


def test_first_step_writes_created_with_the_target_spec_before_deploying():
    spec = make_spec()
    step = next_step(spec, FlinkJobStatus(), ObservedJob(), now=T0)
    assert isinstance(step, WriteStatus)
    assert step.status.lifecycle_state == "CREATED"
    assert step.status.reconciliation.last_reconciled_spec == spec.to_dict()
    assert step.status.reconciliation.upgrade_step == "DEPLOY"


def test_created_deploys_then_running_job_becomes_stable():
    spec, status, cluster = deploy_stable()
    assert cluster.actions[:3] == ["WriteStatus", "DeployJob", "WriteStatus"]
    assert status.reconciliation.last_stable_spec == spec.to_dict()
    assert status.condition("Ready").status == "True"
    assert status.scaling.parallelism == 2 and status.scaling.task_managers == 2


def test_deployed_job_not_yet_running_waits():
    cluster = FakeCluster(start_state="INITIALIZING")
    status, step = drive(make_spec(), FlinkJobStatus(), cluster, T0)
    assert status.lifecycle_state == "DEPLOYED"
    assert "RUNNING" in step.reason


def test_initial_savepoint_path_is_restored_on_first_deployment():
    cluster = FakeCluster()
    drive(make_spec(job__initialSavepointPath="s3://bucket/sp/init"), FlinkJobStatus(), cluster, T0)
    assert cluster.restored_from == "s3://bucket/sp/init"


def test_created_suspended_deploys_nothing():
    cluster = FakeCluster()
    status, _ = drive(make_spec(job__state="suspended"), FlinkJobStatus(), cluster, T0)
    assert status.lifecycle_state == "SUSPENDED" and cluster.deploys == 0


def test_savepoint_upgrade_writes_target_spec_before_stopping_and_restores_from_the_savepoint():
    _, status, cluster = deploy_stable()
    new_spec = make_spec(job__parallelism=4)
    first = next_step(new_spec, status, cluster.observe(), now=later(60))
    assert isinstance(first, WriteStatus)  # the write-ahead log comes before any teardown
    assert first.status.lifecycle_state == "UPGRADING"
    assert first.status.reconciliation.last_reconciled_spec == new_spec.to_dict()
    assert first.status.savepoints.pending is not None
    cluster.actions.clear()
    status, _ = drive(new_spec, status, cluster, later(60))
    assert cluster.actions[:6] == ["WriteStatus", "StopWithSavepoint", "WriteStatus", "DeleteDeployments",
                                   "WriteStatus", "DeployJob"]
    assert status.lifecycle_state == "STABLE"
    assert cluster.restored_from == status.savepoints.last.path
    assert status.restored_from.kind == "savepoint" and status.savepoints.last.kind == "upgrade"
    assert cluster.deployed.job.parallelism == 4


def test_last_state_upgrade_restarts_from_the_latest_checkpoint_without_a_savepoint():
    spec, status, cluster = deploy_stable(make_spec(job__upgradeMode="last-state"))
    cluster.last_checkpoint = "s3://bucket/chk/job1/chk-7"
    status, _ = drive(make_spec(job__upgradeMode="last-state", job__parallelism=3), status, cluster, later(60))
    assert "StopWithSavepoint" not in cluster.actions
    assert cluster.restored_from == "s3://bucket/chk/job1/chk-7"
    assert status.restored_from.kind == "checkpoint"


def test_stateless_upgrade_starts_empty():
    spec, status, cluster = deploy_stable(make_spec(job__upgradeMode="stateless"))
    cluster.last_checkpoint = "s3://bucket/chk/job1/chk-7"
    status, _ = drive(make_spec(job__upgradeMode="stateless", image="strom/runtime:2"), status, cluster, later(60))
    assert cluster.restored_from is None and status.restored_from.kind == "none"
    assert "StopWithSavepoint" not in cluster.actions


def test_failed_upgrade_savepoint_waits_with_the_reason_and_keeps_the_old_job():
    _, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "FAILED"
    cluster.last_checkpoint = "s3://bucket/chk/job1/chk-3"
    status, step = drive(make_spec(image="strom/runtime:2"), status, cluster, later(60))
    assert status.reconciliation.upgrade_step == "SAVEPOINT_FAILED"
    assert "disk full" in status.error and "disk full" in step.reason
    assert status.condition("Progressing").reason == "SavepointFailed"
    assert "DeleteDeployments" not in cluster.actions and cluster.job_state == "RUNNING"


def test_failed_upgrade_savepoint_falls_back_to_last_checkpoint_only_when_allowed():
    conf = {"kubernetes.operator.job.upgrade.last-state-fallback.enabled": "true"}
    spec, status, cluster = deploy_stable(make_spec(flinkConfiguration=conf))
    cluster.savepoint_outcome = "FAILED"
    cluster.last_checkpoint = "s3://bucket/chk/job1/chk-3"
    status, _ = drive(make_spec(flinkConfiguration=conf, image="strom/runtime:2"), status, cluster, later(60))
    assert cluster.restored_from == "s3://bucket/chk/job1/chk-3"
    assert status.restored_from.kind == "checkpoint" and "fallback" in status.restored_from.why
    assert status.lifecycle_state == "STABLE"


def test_upgrade_savepoint_timeout_counts_as_failure():
    _, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "IN_PROGRESS"
    new = make_spec(image="strom/runtime:2")
    status, step = drive(new, status, cluster, later(60))
    assert "waiting for savepoint" in step.reason
    status, step = drive(new, status, cluster, later(60 + 11 * 60))
    assert status.reconciliation.upgrade_step == "SAVEPOINT_FAILED" and "within 10 min" in status.error


def test_new_spec_after_a_failed_savepoint_retries_the_upgrade():
    _, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "FAILED"
    status, _ = drive(make_spec(image="strom/runtime:2"), status, cluster, later(60))
    cluster.savepoint_outcome, cluster.savepoint = "COMPLETED", None
    status, _ = drive(make_spec(image="strom/runtime:3"), status, cluster, later(120))
    assert status.lifecycle_state == "STABLE" and cluster.deployed.image == "strom/runtime:3"


def test_reverting_to_the_running_spec_after_a_failed_savepoint_cancels_the_upgrade():
    spec, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "FAILED"
    status, _ = drive(make_spec(image="strom/runtime:2"), status, cluster, later(60))
    deploys = cluster.deploys
    status, _ = drive(spec, status, cluster, later(120))
    assert status.lifecycle_state == "STABLE" and cluster.deploys == deploys
    assert status.condition("Progressing").reason == "UpgradeCancelled"


def test_suspend_stops_with_savepoint_and_resume_restores_it():
    _, status, cluster = deploy_stable()
    status, _ = drive(make_spec(job__state="suspended"), status, cluster, later(60))
    assert status.lifecycle_state == "SUSPENDED" and cluster.deployed is None
    assert status.savepoints.last.kind == "suspend"
    suspend_savepoint = status.savepoints.last.path
    cluster.last_checkpoint = "s3://bucket/chk/job1/chk-1"  # older than the savepoint
    status, _ = drive(make_spec(), status, cluster, later(120))
    assert status.lifecycle_state == "STABLE"
    assert cluster.restored_from == suspend_savepoint


def test_manual_savepoint_on_nonce_change():
    _, status, cluster = deploy_stable()
    status, _ = drive(make_spec(job__savepointTriggerNonce=1), status, cluster, later(60))
    assert status.savepoints.last.kind == "manual" and status.savepoints.last_trigger_nonce == 1
    assert cluster.deploys == 1  # a nonce is not an upgrade
    status, _ = drive(make_spec(job__savepointTriggerNonce=1), status, cluster, later(90))
    assert len(status.savepoints.history) == 1  # the same nonce does not trigger again


def test_failed_manual_savepoint_is_reported_and_not_retried():
    _, status, cluster = deploy_stable()
    cluster.savepoint_outcome = "FAILED"
    status, _ = drive(make_spec(job__savepointTriggerNonce=5), status, cluster, later(60))
    assert status.error == "manual savepoint failed: disk full"
    assert status.savepoints.pending is None and status.savepoints.last_trigger_nonce == 5


def test_periodic_savepoints_follow_the_interval():
    spec = make_spec(savepoints__periodicInterval="1 h")
    _, status, cluster = deploy_stable(spec)
    status, _ = drive(spec, status, cluster, later(30 * 60))
    assert status.savepoints.last is None
    status, _ = drive(spec, status, cluster, later(61 * 60))
    assert status.savepoints.last.kind == "periodic"
    status, _ = drive(spec, status, cluster, later(90 * 60))
    assert len(status.savepoints.history) == 1


def test_history_is_pruned_by_count_and_the_pruned_paths_disposed():
    spec = make_spec(savepoints__maxHistory=2)
    _, status, cluster = deploy_stable(spec)
    for n in range(1, 4):
        spec = make_spec(savepoints__maxHistory=2, job__savepointTriggerNonce=n)
        status, _ = drive(spec, status, cluster, later(60 * n))
    assert len(status.savepoints.history) == 2
    assert len(cluster.disposed) == 1 and cluster.disposed[0] not in [s.path for s in status.savepoints.history]


def test_history_is_pruned_even_when_the_next_periodic_savepoint_is_already_due():
    """Passes 2 s apart with a 1 s interval: a periodic savepoint is due on every pass after the
    previous one completed, and pruning must still happen before the next is triggered."""
    spec = make_spec(savepoints__maxHistory=2, savepoints__periodicInterval="1 s")
    _, status, cluster = deploy_stable(spec)
    for n in range(1, 40):
        step = next_step(spec, status, cluster.observe(), now=later(2 * n), name="wc")
        cluster.perform(step)
        status = step.status
    assert len(status.savepoints.history) <= 2
    assert len(cluster.disposed) >= 5
    assert not set(cluster.disposed) & {s.path for s in status.savepoints.history}


def test_upgrade_not_running_in_time_rolls_back_to_the_stable_spec_from_the_upgrade_savepoint():
    spec, status, cluster = deploy_stable()
    cluster.start_state = "INITIALIZING"  # the new version never starts
    new = make_spec(image="strom/runtime:broken")
    status, _ = drive(new, status, cluster, later(60))
    upgrade_savepoint = status.savepoints.last.path
    assert status.lifecycle_state == "DEPLOYED"
    cluster.start_state = "RUNNING"
    status, _ = drive(new, status, cluster, later(60 + 6 * 60))
    assert status.lifecycle_state == "ROLLED_BACK"
    assert cluster.deployed.image == spec.image and cluster.restored_from == upgrade_savepoint
    assert "not RUNNING within 5 min" in status.reconciliation.reason
    # The failed spec is not retried while it stays the desired one.
    deploys = cluster.deploys
    status, _ = drive(new, status, cluster, later(60 + 9 * 60))
    assert status.lifecycle_state == "ROLLED_BACK" and cluster.deploys == deploys
    # the rolled-back job runs: Ready, and no longer "waiting for the job to reach RUNNING"
    assert status.condition("Ready").status == "True"
    assert (status.condition("Progressing").status, status.condition("Progressing").reason) == ("False", "RolledBack")


def test_readiness_timeout_is_configurable():
    conf = {"kubernetes.operator.deployment.readiness.timeout": "1 min"}
    _, status, cluster = deploy_stable(make_spec(flinkConfiguration=conf))
    cluster.start_state = "INITIALIZING"
    new = make_spec(flinkConfiguration=conf, image="strom/runtime:2")
    status, _ = drive(new, status, cluster, later(60))
    status, _ = drive(new, status, cluster, later(60 + 90))
    assert status.lifecycle_state == "ROLLED_BACK"


def test_first_deployment_that_fails_goes_to_failed_and_a_new_spec_redeploys():
    cluster = FakeCluster(start_state="FAILED")
    status, _ = drive(make_spec(), FlinkJobStatus(), cluster, T0)
    assert status.lifecycle_state == "FAILED" and status.condition("Ready").reason == "JobFailed"
    cluster.start_state = "RUNNING"
    status, _ = drive(make_spec(restartNonce=1), status, cluster, later(60))
    assert status.lifecycle_state == "STABLE" and cluster.deploys == 2


def test_running_job_that_fails_goes_to_failed():
    spec, status, cluster = deploy_stable()
    cluster.job_state = "FAILED"
    status, _ = drive(spec, status, cluster, later(60))
    assert status.lifecycle_state == "FAILED"


def test_pods_stuck_beyond_the_deadline_mark_degraded_then_recover():
    cluster = FakeCluster(start_state="INITIALIZING")
    spec = make_spec()
    status, _ = drive(spec, FlinkJobStatus(), cluster, T0)
    cluster.pod_problems = (PodProblem("wc-taskmanager-1", "ImagePullBackOff", T0, "image not found"),)
    status, _ = drive(spec, status, cluster, later(60))
    assert status.condition("Degraded") is None  # within the deadline
    step = next_step(spec, status, cluster.observe(), now=later(180))
    assert isinstance(step, MarkDegraded) and step.reason == "ImagePullBackOff"
    assert "wc-taskmanager-1" in step.message and "image not found" in step.message
    status, _ = drive(spec, step.status, cluster, later(181))
    cluster.pod_problems = ()
    status, _ = drive(spec, status, cluster, later(200))
    assert status.condition("Degraded").status == "False"


def test_invalid_spec_sets_condition_and_keeps_the_last_valid_spec_running():
    spec, status, cluster = deploy_stable()
    bad = make_spec(job__parallelism=500)
    status, step = drive(bad, status, cluster, later(60))
    assert status.error.startswith("invalid spec: spec.job.parallelism: 500 exceeds")
    assert status.condition("Degraded").reason == "InvalidSpec"
    assert cluster.deploys == 1 and status.lifecycle_state == "STABLE"
    status, _ = drive(spec, status, cluster, later(120))
    assert status.error is None and status.condition("Degraded").status == "False"


def test_invalid_spec_before_anything_ran_waits():
    status, step = drive(make_spec(taskManager__slots=0), FlinkJobStatus(), FakeCluster(), T0)
    assert isinstance(step, Wait) and "spec.taskManager.slots" in step.reason
    assert status.lifecycle_state is None


def test_operator_only_change_updates_the_log_without_redeploying():
    _, status, cluster = deploy_stable()
    status, _ = drive(make_spec(savepoints__maxHistory=3), status, cluster, later(60))
    assert status.reconciliation.last_reconciled_spec["savepoints"]["maxHistory"] == 3
    assert cluster.deploys == 1


def test_generation_is_recorded_as_observed_generation():
    step = next_step(make_spec(), FlinkJobStatus(), ObservedJob(), now=T0, generation=7)
    assert step.status.observed_generation == 7


def test_restart_between_stop_with_savepoint_and_its_status_write_resends_the_same_trigger():
    _, status, cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    cluster.savepoint_outcome = "IN_PROGRESS"
    status, _ = drive(new, status, cluster, later(60), lose_status_of="StopWithSavepoint")
    assert len(set(cluster.stop_triggers)) == 1  # resent with the id from the log: one savepoint
    cluster.savepoint = replace(cluster.savepoint, status="COMPLETED", location="s3://bucket/sp/savepoint-x")
    cluster.job_state = "FINISHED"
    status, _ = drive(new, status, cluster, later(90))
    assert status.lifecycle_state == "STABLE" and cluster.restored_from == "s3://bucket/sp/savepoint-x"


def test_restart_after_deleting_deployments_resumes_to_the_deploy():
    _, status, cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    status, _ = drive(new, status, cluster, later(60), lose_status_of="DeleteDeployments")
    assert status.lifecycle_state == "STABLE" and cluster.deployed.image == "strom/runtime:2"
    assert cluster.restored_from == status.savepoints.last.path


def test_restart_after_deploy_before_status_write_deploys_the_same_again():
    _, status, cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    # the status of the upgrade's deploy is lost; the next reconciliation applies it again
    status, _ = drive(new, status, cluster, later(60), lose_status_of="DeployJob")
    assert status.lifecycle_state == "STABLE"
    assert cluster.actions.count("DeployJob") == 3  # first deployment, lost one, repeat
    assert cluster.restored_from == status.savepoints.last.path


def test_every_upgrade_step_resumes_from_status_alone():
    """Stop the machine after each step of an upgrade, rebuild everything from the stored status
    dict, and check it converges to the same end state."""
    spec, base_status, base_cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    for cut in range(1, 6):
        cluster = FakeCluster(deployed=base_cluster.deployed, job_state="RUNNING", job_id="job1")
        status = base_status
        for _ in range(cut):
            step = next_step(new, status, cluster.observe(), now=later(60))
            cluster.perform(step)
            status = step.status
        restored = FlinkJobStatus.from_dict(status.to_dict())  # a new operator process reads the status
        final, _ = drive(new, restored, cluster, later(61))
        assert final.lifecycle_state == "STABLE", cut
        assert cluster.deployed.image == "strom/runtime:2"
        assert cluster.restored_from == final.savepoints.last.path


def test_stop_with_savepoint_waits_while_jobmanager_does_not_answer():
    _, status, cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    step = next_step(new, status, cluster.observe(), now=later(60))
    step = next_step(new, step.status, ObservedJob(deployments_exist=True), now=later(61))
    assert isinstance(step, Wait) and "JobManager" in step.reason


def test_stop_with_savepoint_goes_to_the_running_job():
    _, status, cluster = deploy_stable()
    new = make_spec(image="strom/runtime:2")
    step = next_step(new, status, cluster.observe(), now=later(60))
    step = next_step(new, step.status, cluster.observe(), now=later(61))
    assert isinstance(step, StopWithSavepoint)
    assert step.job_id == "job1" and step.target_dir == "s3://bucket/sp"
    assert step.trigger_id == step.status.savepoints.pending.trigger_id


def test_deploy_step_carries_restore_flags():
    _, status, cluster = deploy_stable(make_spec(job__allowNonRestoredState=True))
    new = make_spec(job__allowNonRestoredState=True, image="strom/runtime:2")
    steps = []
    for _ in range(6):
        step = next_step(new, status, cluster.observe(), now=later(60))
        cluster.perform(step)
        status = step.status
        steps.append(step)
    deploy = next(s for s in steps if isinstance(s, DeployJob))
    assert deploy.allow_non_restored_state and deploy.restore_from == status.savepoints.last.path
