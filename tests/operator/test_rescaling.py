"""A rescale decided by the autoscaler, carried through the lifecycle as an upgrade (pure, fake cluster).

The autoscaler's per-vertex parallelism is written to the log before the job stops, deployed as
`pipeline.jobvertex-parallelism-overrides` with TaskManagers for the highest vertex parallelism,
kept across later upgrades and the autoscaler's record with it, and restored by a rollback.
"""

from __future__ import annotations

from dataclasses import replace

import yaml
from strom_operator.crd.status import FlinkJobStatus, Scaling
from strom_operator.lifecycle.rescaling import autoscaler_blocked, begin_rescale
from strom_operator.lifecycle.upgrades import Situation
from strom_operator.resources.builders import build_job_objects
from strom_operator.resources.configmap import CONFIG_FILE
from strom_operator.resources.labels import FlinkJobRef

from tests.operator.fakes import deploy_stable, drive, later, make_spec

REF = FlinkJobRef("wc", "jobs", "uid-1")
OVERRIDES = {"a" * 32: 1, "b" * 32: 5}
RECORD = {"time": "2024-05-01T12:00:00Z", "mode": "scale", "action": "rescale", "reason": "Rescaled",
          "message": "rescales Map 2 -> 5", "rescalesInLastHour": 0, "vertices": []}


def _autoscaled(**overrides: object):
    spec = make_spec(autoscaler__enabled=True, taskManager__slots=2, **overrides)
    _, status, cluster = deploy_stable(spec)
    return spec, status, cluster


def _rescale(spec, status, cluster, now):
    with_record = replace(status, scaling=replace(status.scaling, autoscaler=RECORD))
    step = begin_rescale(Situation(spec, with_record, cluster.observe(), now, "wc"), OVERRIDES, "Map 2 -> 5")
    return step.status


def test_rescale_is_logged_before_the_job_stops_then_deployed_from_its_savepoint_with_the_overrides():
    spec, status, cluster = _autoscaled()
    logged = _rescale(spec, status, cluster, later(60))
    assert logged.lifecycle_state == "UPGRADING"
    assert logged.reconciliation.upgrade_step == "STOP_WITH_SAVEPOINT"
    assert dict(logged.reconciliation.vertex_parallelism) == OVERRIDES
    assert logged.savepoints.pending is not None and logged.savepoints.pending.kind == "rescale"
    assert cluster.deploys == 1  # nothing stopped yet

    status, _ = drive(spec, logged, cluster, later(61))
    assert status.lifecycle_state == "STABLE" and cluster.deploys == 2
    assert cluster.vertex_parallelism == OVERRIDES
    assert cluster.restored_from == status.savepoints.last.path and status.savepoints.last.kind == "rescale"
    # slot sharing: the highest vertex parallelism 5 over TaskManagers of 2 slots -> 3 TaskManagers
    assert status.scaling.parallelism == 5 and status.scaling.task_managers == 3 and status.scaling.slots_total == 6
    assert dict(status.scaling.vertex_parallelism) == OVERRIDES
    assert status.scaling.autoscaler == RECORD  # the decision that caused it is still shown
    assert dict(status.reconciliation.stable_vertex_parallelism) == OVERRIDES


def test_deployed_objects_carry_the_overrides_and_enough_taskmanagers():
    spec = make_spec(autoscaler__enabled=True, taskManager__slots=2)
    objects = build_job_objects(REF, spec, vertex_parallelism=OVERRIDES)
    config, tm = objects[0], objects[-1]
    engine = yaml.safe_load(config["data"][CONFIG_FILE])
    assert engine["pipeline.jobvertex-parallelism-overrides"] == f"{'a' * 32}:1,{'b' * 32}:5"
    assert tm["spec"]["replicas"] == 3
    plain = build_job_objects(REF, spec)
    assert "pipeline.jobvertex-parallelism-overrides" not in yaml.safe_load(plain[0]["data"][CONFIG_FILE])
    assert plain[3]["spec"]["replicas"] == 1  # parallelism 2 on 2 slots


def test_overrides_and_the_autoscaler_record_survive_an_upgrade_that_keeps_the_parallelism():
    spec, status, cluster = _autoscaled()
    status, _ = drive(spec, _rescale(spec, status, cluster, later(60)), cluster, later(61))
    upgraded = make_spec(autoscaler__enabled=True, taskManager__slots=2, image="strom/runtime:2")
    status, _ = drive(upgraded, status, cluster, later(120))
    assert status.lifecycle_state == "STABLE" and cluster.deployed.image == "strom/runtime:2"
    assert cluster.vertex_parallelism == OVERRIDES
    assert status.scaling.autoscaler == RECORD


def test_a_new_spec_parallelism_or_a_disabled_autoscaler_drops_the_overrides():
    spec, status, cluster = _autoscaled()
    rescaled, _ = drive(spec, _rescale(spec, status, cluster, later(60)), cluster, later(61))
    status, _ = drive(make_spec(autoscaler__enabled=True, taskManager__slots=2, job__parallelism=3), rescaled,
                      cluster, later(120))
    assert cluster.vertex_parallelism == {} and status.scaling.parallelism == 3
    # disabling the autoscaler redeploys nothing (an operator-only field); the next upgrade drops them
    disabled = make_spec(autoscaler__enabled=False, taskManager__slots=2)
    status, _ = drive(disabled, rescaled, cluster, later(180))
    assert cluster.deploys == 3 and status.scaling.parallelism == 5
    status, _ = drive(replace(disabled, image="strom/runtime:2"), status, cluster, later(240))
    assert cluster.deploys == 4 and cluster.vertex_parallelism == {} and status.scaling.parallelism == 2


def test_a_rescale_whose_job_never_runs_rolls_back_to_the_stable_parallelism():
    spec, status, cluster = _autoscaled(flinkConfiguration={"kubernetes.operator.deployment.readiness.timeout":
                                                            "1 min"})
    first, _ = drive(spec, _rescale(spec, status, cluster, later(60)), cluster, later(61))
    assert cluster.vertex_parallelism == OVERRIDES
    smaller = {"a" * 32: 1, "b" * 32: 3}
    logged = begin_rescale(Situation(spec, first, cluster.observe(), later(120), "wc"), smaller, "Map 5 -> 3").status
    cluster.start_state = "INITIALIZING"  # the rescaled job never reaches RUNNING
    status, _ = drive(spec, logged, cluster, later(121))
    assert cluster.vertex_parallelism == smaller
    cluster.start_state = "RUNNING"
    status, _ = drive(spec, status, cluster, later(200))
    assert status.lifecycle_state == "ROLLED_BACK"
    assert cluster.vertex_parallelism == OVERRIDES and status.scaling.parallelism == 5


def test_the_autoscaler_evaluates_only_a_stable_running_job_of_the_reconciled_spec():
    spec, status, cluster = _autoscaled()
    assert "start time" in autoscaler_blocked(spec, status)
    status = replace(status, job_status=replace(status.job_status, start_time=later(1)))
    assert autoscaler_blocked(spec, status) is None
    assert "enabled is false" in autoscaler_blocked(make_spec(taskManager__slots=2), status)
    assert "streaming" in autoscaler_blocked(replace(spec, mode="batch"), status)
    assert "UPGRADING" in autoscaler_blocked(spec, replace(status, lifecycle_state="UPGRADING"))
    changed = make_spec(autoscaler__enabled=True, taskManager__slots=2, image="strom/runtime:2")
    assert "spec change" in autoscaler_blocked(changed, status)
    pending = _rescale(spec, status, cluster, later(60))
    assert autoscaler_blocked(spec, replace(pending, lifecycle_state="STABLE",
                                            reconciliation=status.reconciliation)) is not None  # savepoint pending
    finished = replace(status, job_status=replace(status.job_status, state="FINISHED"))
    assert "FINISHED" in autoscaler_blocked(spec, finished)


def test_suspension_keeps_the_autoscaler_record():
    spec, status, cluster = _autoscaled()
    status = replace(status, scaling=replace(status.scaling, autoscaler=RECORD))
    suspended, _ = drive(make_spec(autoscaler__enabled=True, taskManager__slots=2, job__state="suspended"), status,
                         cluster, later(60))
    assert suspended.lifecycle_state == "SUSPENDED"
    assert suspended.scaling == Scaling(0, 0, 0, autoscaler=RECORD)
    assert FlinkJobStatus.from_dict(suspended.to_dict()).scaling == suspended.scaling
