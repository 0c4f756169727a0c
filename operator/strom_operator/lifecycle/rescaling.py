"""The autoscaler's decisions entering the lifecycle: when it may evaluate, and a rescale as an upgrade.

Pure, like state_machine.py. The autoscaler evaluates only a STABLE job that runs the reconciled spec
with nothing in flight (an upgrade, a savepoint, a spec change waiting): its metrics describe that
job, and a rescale must not race another redeployment. A rescale is an upgrade of the running spec
with new per-vertex parallelism, written to the log (reconciliation.vertexParallelism) before the
job is stopped: with a savepoint when the spec has a savepoint directory, else as the spec's
upgradeMode says (last-state: the latest checkpoint; stateless: empty). The upgrade steps
(upgrades.py) then stop, delete and deploy it; the new job restarting is what the autoscaler's
budget counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from strom_operator.crd.spec import FlinkJobSpec, needs_upgrade
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.savepoint_history import with_pending
from strom_operator.lifecycle.steps import WriteStatus
from strom_operator.lifecycle.upgrades import Situation


def autoscaler_blocked(spec: FlinkJobSpec, status: FlinkJobStatus) -> str | None:
    """Why the autoscaler must not evaluate now, or None when it may."""
    rec = status.reconciliation
    if not spec.autoscaler.enabled:
        return "spec.autoscaler.enabled is false"
    if spec.mode != "streaming":
        return f"spec.mode is {spec.mode}: the autoscaler scales streaming jobs"
    if status.lifecycle_state != "STABLE":
        return f"the lifecycle state is {status.lifecycle_state or 'not set yet'}, not STABLE"
    if rec.upgrade_step is not None:
        return f"an upgrade is in progress ({rec.upgrade_step})"
    if status.savepoints.pending is not None:
        return f"a {status.savepoints.pending.kind} savepoint is in progress"
    if status.error is not None and status.error.startswith("invalid spec: "):
        return "the spec is invalid"
    if rec.last_reconciled_spec is None or needs_upgrade(spec, rec.last_reconciled_spec) or \
            spec.job.state != FlinkJobSpec.from_dict(rec.last_reconciled_spec).job.state:
        return "a spec change waits to be deployed"
    js = status.job_status
    if js.state != "RUNNING":
        return f"the job is {js.state or 'not reported yet'}"
    if not js.job_id or js.start_time is None:
        return "the JobManager has not reported the job's id and start time yet"
    return None


def begin_rescale(s: Situation, vertex_parallelism: Mapping[str, int], why: str) -> WriteStatus:
    """Write the rescale (target per-vertex parallelism, first upgrade step) before anything stops."""
    status, rec = s.status, s.status.reconciliation
    running = FlinkJobSpec.from_dict(rec.last_reconciled_spec) if rec.last_reconciled_spec is not None else s.spec
    # upgradeMode stateless restores nothing (upgrades.choose_restore): no savepoint to take then
    take_savepoint = s.observed.running and bool(running.savepoints.dir) and running.job.upgrade_mode != "stateless"
    new = replace(status, lifecycle_state="UPGRADING", reconciliation=replace(
        rec, upgrade_started_at=s.now, restore_path=None, reason=f"autoscaler rescale: {why}",
        upgrade_step="STOP_WITH_SAVEPOINT" if take_savepoint else "DELETE_DEPLOYMENTS",
        vertex_parallelism=dict(vertex_parallelism)))
    if take_savepoint:
        new = with_pending(new, s.name, "rescale", s.now)
    return WriteStatus(new.with_condition("Progressing", "True", "Rescaling", f"autoscaler rescale: {why}"[:1000],
                                          s.now))
