"""Deleting a FlinkJob: savepoint first when spec.savepoints.onDeletion, never blocked forever."""

from __future__ import annotations

from strom_operator.lifecycle.deletion import next_deletion_step
from strom_operator.lifecycle.steps import FinishDeletion, StopWithSavepoint, WriteStatus

from tests.operator.fakes import deploy_stable, later, make_spec


def _run(spec, status, cluster, now, limit=10):
    for _ in range(limit):
        step = next_deletion_step(spec, status, cluster.observe(), now=now, name="wc")
        cluster.perform(step)
        status = step.status
        if isinstance(step, FinishDeletion):
            return step
    raise AssertionError(cluster.actions)


def test_deletion_takes_a_savepoint_when_asked():
    spec = make_spec(savepoints__onDeletion=True)
    _, status, cluster = deploy_stable(spec)
    step = _run(spec, status, cluster, later(60))
    assert "StopWithSavepoint" in cluster.actions
    assert step.status.savepoints.last.kind == "deletion" and step.status.lifecycle_state == "DELETING"
    assert step.status.savepoints.last.path in step.reason


def test_deletion_without_on_deletion_finishes_at_once():
    spec, status, cluster = deploy_stable()
    first = next_deletion_step(spec, status, cluster.observe(), now=later(60))
    assert isinstance(first, WriteStatus) and first.status.savepoints.pending is None
    assert isinstance(next_deletion_step(spec, first.status, cluster.observe(), now=later(60)), FinishDeletion)


def test_failed_deletion_savepoint_does_not_block_and_says_so():
    spec = make_spec(savepoints__onDeletion=True)
    _, status, cluster = deploy_stable(spec)
    cluster.savepoint_outcome = "FAILED"
    step = _run(spec, status, cluster, later(60))
    assert "without a final savepoint (disk full)" in step.reason


def test_deletion_savepoint_is_sent_to_the_running_job():
    spec = make_spec(savepoints__onDeletion=True)
    _, status, cluster = deploy_stable(spec)
    first = next_deletion_step(spec, status, cluster.observe(), now=later(60))
    second = next_deletion_step(spec, first.status, cluster.observe(), now=later(60))
    assert isinstance(second, StopWithSavepoint) and second.trigger_id == first.status.savepoints.pending.trigger_id
