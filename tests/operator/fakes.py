"""Test helpers: spec factories and a fake cluster that performs lifecycle steps.

`FakeCluster` plays JobManager, Deployments and S3 for `next_step`: a deploy starts a job (or
one that never runs, or fails), savepoint triggers complete, fail or hang as the test says.
`drive` runs next_step -> perform -> write status until the machine waits, as a handler would.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.state_machine import next_step
from strom_operator.lifecycle.steps import (
    DeleteDeployments,
    DeployJob,
    DisposeSavepoints,
    Step,
    StopWithSavepoint,
    TriggerSavepoint,
    Wait,
)
from strom_operator.observe.observed import ObservedJob, PodProblem, SavepointTrigger

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def spec_dict(**overrides: Any) -> dict[str, Any]:
    """A valid savepoint-mode spec; `job__parallelism=4` sets spec.job.parallelism."""
    d: dict[str, Any] = {
        "image": "strom/runtime:1",
        "job": {"entry": "/opt/jobs/wc.py", "parallelism": 2, "upgradeMode": "savepoint"},
        "checkpointing": {"interval": "10 s", "dir": "s3://bucket/chk"},
        "savepoints": {"dir": "s3://bucket/sp"},
    }
    for key, value in overrides.items():
        node = d
        *parents, leaf = key.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return d


def make_spec(**overrides: Any) -> FlinkJobSpec:
    return FlinkJobSpec.from_dict(spec_dict(**overrides))


@dataclass
class FakeCluster:
    deployed: FlinkJobSpec | None = None
    restored_from: str | None = None
    job_state: str | None = None
    job_id: str | None = None
    last_checkpoint: str | None = None
    savepoint: SavepointTrigger | None = None
    # what the next savepoint trigger does: COMPLETED | FAILED | IN_PROGRESS
    savepoint_outcome: str = "COMPLETED"
    # state of a newly deployed job: RUNNING | INITIALIZING | FAILED
    start_state: str = "RUNNING"
    pod_problems: tuple[PodProblem, ...] = ()
    actions: list[str] = field(default_factory=list)
    stop_triggers: list[str] = field(default_factory=list)
    disposed: list[str] = field(default_factory=list)
    deploys: int = 0
    vertex_parallelism: dict[str, int] = field(default_factory=dict)  # of the latest deployment

    def observe(self) -> ObservedJob:
        return ObservedJob(deployments_exist=self.deployed is not None, job_id=self.job_id, job_state=self.job_state,
                           last_checkpoint=self.last_checkpoint, savepoint=self.savepoint,
                           pod_problems=self.pod_problems)

    def perform(self, step: Step) -> None:
        self.actions.append(type(step).__name__)
        if isinstance(step, DeployJob):
            self.deploys += 1
            self.deployed, self.restored_from = step.spec, step.restore_from
            self.vertex_parallelism = dict(step.vertex_parallelism)
            self.job_id, self.job_state, self.savepoint = f"job{self.deploys}", self.start_state, None
        elif isinstance(step, DeleteDeployments):
            self.deployed, self.job_state, self.job_id = None, None, None
        elif isinstance(step, StopWithSavepoint | TriggerSavepoint):
            if isinstance(step, StopWithSavepoint):
                self.stop_triggers.append(step.trigger_id)
            if self.savepoint is not None and self.savepoint.trigger_id == step.trigger_id:
                return  # Flink deduplicates a trigger id it knows
            location = f"{step.target_dir}/savepoint-{len(self.actions)}"
            self.savepoint = SavepointTrigger(step.trigger_id, self.savepoint_outcome,
                                              location if self.savepoint_outcome == "COMPLETED" else None,
                                              "disk full" if self.savepoint_outcome == "FAILED" else None)
            if isinstance(step, StopWithSavepoint) and self.savepoint_outcome == "COMPLETED":
                self.job_state = "FINISHED"
        elif isinstance(step, DisposeSavepoints):
            self.disposed.extend(step.paths)


def drive(spec: FlinkJobSpec, status: FlinkJobStatus, cluster: FakeCluster, now: datetime, *,
          max_steps: int = 30, lose_status_of: str | None = None) -> tuple[FlinkJobStatus, Step]:
    """Reconcile until a Wait. `lose_status_of`: for the first step of that type, perform the
    action but drop its status write, as an operator killed between the two would."""
    for _ in range(max_steps):
        step = next_step(spec, status, cluster.observe(), now=now, name="wc")
        cluster.perform(step)
        if lose_status_of == type(step).__name__:
            lose_status_of = None
            continue
        # The status goes through the resource as a dict: round-trip it like the API server.
        status = FlinkJobStatus.from_dict(copy.deepcopy(step.status.to_dict()))
        if isinstance(step, Wait):
            return status, step
    raise AssertionError(f"no Wait within {max_steps} steps: {cluster.actions}")


def deploy_stable(spec: FlinkJobSpec | None = None, now: datetime = T0) -> tuple[FlinkJobSpec, FlinkJobStatus,
                                                                                 FakeCluster]:
    spec = spec or make_spec()
    cluster = FakeCluster()
    status, _ = drive(spec, FlinkJobStatus(), cluster, now)
    assert status.lifecycle_state == "STABLE", cluster.actions
    return spec, status, cluster


def later(seconds: float, base: datetime = T0) -> datetime:
    return base + timedelta(seconds=seconds)
