"""The typed FlinkJob status: frozen dataclasses, `from_dict`/`to_dict`, and the merge patch between two.

Times are timezone-aware UTC datetimes here and RFC 3339 strings in the resource. The status
never holds secrets: only paths, ids, states and reasons.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any


def format_time(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str | None) -> datetime | None:
    if not s:
        return None
    return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)


def _t(s: Any) -> datetime | None:
    return parse_time(s) if isinstance(s, str) else None


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        return
    d[key] = format_time(value) if isinstance(value, datetime) else value


@dataclass(frozen=True, slots=True)
class Savepoint:
    path: str
    timestamp: datetime
    kind: str  # manual | periodic | upgrade | suspend | deletion | rescale

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Savepoint:
        return cls(d["path"], _t(d.get("timestamp")) or datetime.fromtimestamp(0, UTC), d.get("kind", "manual"))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "timestamp": format_time(self.timestamp), "kind": self.kind}


@dataclass(frozen=True, slots=True)
class PendingSavepoint:
    trigger_id: str
    kind: str
    triggered_at: datetime
    nonce: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PendingSavepoint:
        return cls(d["triggerId"], d.get("kind", "manual"), _t(d.get("triggeredAt")) or datetime.fromtimestamp(0, UTC),
                   d.get("nonce"))

    def to_dict(self) -> dict[str, Any]:
        out = {"triggerId": self.trigger_id, "kind": self.kind, "triggeredAt": format_time(self.triggered_at)}
        _put(out, "nonce", self.nonce)
        return out


@dataclass(frozen=True, slots=True)
class SavepointsStatus:
    last: Savepoint | None = None
    history: tuple[Savepoint, ...] = ()
    pending: PendingSavepoint | None = None
    last_trigger_nonce: int | None = None
    last_triggered_at: datetime | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SavepointsStatus:
        return cls(
            Savepoint.from_dict(d["last"]) if d.get("last") else None,
            tuple(Savepoint.from_dict(s) for s in d.get("history") or ()),
            PendingSavepoint.from_dict(d["pending"]) if d.get("pending") else None,
            d.get("lastTriggerNonce"),
            _t(d.get("lastTriggeredAt")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"history": [s.to_dict() for s in self.history]}
        _put(out, "last", self.last.to_dict() if self.last else None)
        _put(out, "pending", self.pending.to_dict() if self.pending else None)
        _put(out, "lastTriggerNonce", self.last_trigger_nonce)
        _put(out, "lastTriggeredAt", self.last_triggered_at)
        return out


@dataclass(frozen=True, slots=True)
class JobStatus:
    job_id: str | None = None
    state: str | None = None
    start_time: datetime | None = None
    last_checkpoint: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobStatus:
        return cls(d.get("jobId"), d.get("state"), _t(d.get("startTime")), d.get("lastCheckpoint"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "jobId", self.job_id)
        _put(out, "state", self.state)
        _put(out, "startTime", self.start_time)
        _put(out, "lastCheckpoint", self.last_checkpoint)
        return out


@dataclass(frozen=True, slots=True)
class Reconciliation:
    last_reconciled_spec: Mapping[str, Any] | None = None
    last_stable_spec: Mapping[str, Any] | None = None
    upgrade_step: str | None = None
    upgrade_started_at: datetime | None = None
    deployed_at: datetime | None = None
    restore_path: str | None = None
    reason: str | None = None
    # Per job vertex parallelism the autoscaler set (pipeline.jobvertex-parallelism-overrides): of the
    # deployment in progress or deployed, and of the last stable one (a rollback restores those).
    vertex_parallelism: Mapping[str, int] = field(default_factory=dict)
    stable_vertex_parallelism: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reconciliation:
        return cls(d.get("lastReconciledSpec"), d.get("lastStableSpec"), d.get("upgradeStep"),
                   _t(d.get("upgradeStartedAt")), _t(d.get("deployedAt")), d.get("restorePath"), d.get("reason"),
                   dict(d.get("vertexParallelism") or {}), dict(d.get("stableVertexParallelism") or {}))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "lastReconciledSpec", copy.deepcopy(dict(self.last_reconciled_spec))
             if self.last_reconciled_spec is not None else None)
        _put(out, "lastStableSpec", copy.deepcopy(dict(self.last_stable_spec))
             if self.last_stable_spec is not None else None)
        _put(out, "upgradeStep", self.upgrade_step)
        _put(out, "upgradeStartedAt", self.upgrade_started_at)
        _put(out, "deployedAt", self.deployed_at)
        _put(out, "restorePath", self.restore_path)
        _put(out, "reason", self.reason)
        _put(out, "vertexParallelism", dict(self.vertex_parallelism) or None)
        _put(out, "stableVertexParallelism", dict(self.stable_vertex_parallelism) or None)
        return out


@dataclass(frozen=True, slots=True)
class Scaling:
    parallelism: int
    task_managers: int
    slots_total: int
    # Per job vertex parallelism set by the autoscaler (pipeline.jobvertex-parallelism-overrides).
    vertex_parallelism: Mapping[str, int] = field(default_factory=dict)
    # The autoscaler's latest decision or non-decision with its figures (autoscaler.decisions.ScalingDecision).
    autoscaler: Mapping[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Scaling:
        return cls(d.get("parallelism", 0), d.get("taskManagers", 0), d.get("slotsTotal", 0),
                   dict(d.get("vertexParallelism") or {}), d.get("autoscaler"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"parallelism": self.parallelism, "taskManagers": self.task_managers,
                               "slotsTotal": self.slots_total}
        _put(out, "vertexParallelism", dict(self.vertex_parallelism) or None)
        _put(out, "autoscaler", copy.deepcopy(dict(self.autoscaler)) if self.autoscaler is not None else None)
        return out


@dataclass(frozen=True, slots=True)
class RestoredFrom:
    kind: str  # savepoint | checkpoint | none
    path: str | None
    age: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "age": self.age, "why": self.why}
        _put(out, "path", self.path)
        return out


@dataclass(frozen=True, slots=True)
class Condition:
    type: str  # Ready | Progressing | Degraded | JobManagerReady
    status: str  # True | False | Unknown
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "status": self.status, "reason": self.reason,
                               "message": self.message}
        _put(out, "lastTransitionTime", self.last_transition_time)
        return out


@dataclass(frozen=True, slots=True)
class FlinkJobStatus:
    lifecycle_state: str | None = None
    job_status: JobStatus = JobStatus()
    savepoints: SavepointsStatus = SavepointsStatus()
    reconciliation: Reconciliation = Reconciliation()
    scaling: Scaling | None = None
    restored_from: RestoredFrom | None = None
    conditions: tuple[Condition, ...] = field(default=())
    observed_generation: int | None = None
    error: str | None = None
    batch: Mapping[str, Any] | None = None  # status.batch, typed by batch/batch_status.py
    sql: Mapping[str, Any] | None = None  # status.sql: the deployed SQL plan (lifecycle/sql_admission.py)
    selector: str | None = None  # the TaskManager pods' label selector (scale subresource), derived_status.py
    job_manager_url: str | None = None  # the JobManager Service's REST URL (the dashboard), derived_status.py

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> FlinkJobStatus:
        d = d or {}
        sc, rf = d.get("scaling"), d.get("restoredFrom")
        return cls(
            lifecycle_state=d.get("lifecycleState"),
            job_status=JobStatus.from_dict(d.get("jobStatus") or {}),
            savepoints=SavepointsStatus.from_dict(d.get("savepoints") or {}),
            reconciliation=Reconciliation.from_dict(d.get("reconciliation") or {}),
            scaling=Scaling.from_dict(sc) if sc else None,
            restored_from=RestoredFrom(rf.get("kind", "none"), rf.get("path"), rf.get("age", ""), rf.get("why", ""))
            if rf else None,
            conditions=tuple(Condition(c["type"], c["status"], c.get("reason", ""), c.get("message", ""),
                                       _t(c.get("lastTransitionTime"))) for c in d.get("conditions") or ()),
            observed_generation=d.get("observedGeneration"),
            error=d.get("error"),
            batch=d.get("batch"),
            sql=d.get("sql"),
            selector=d.get("selector"),
            job_manager_url=d.get("jobManagerUrl"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "lifecycleState", self.lifecycle_state)
        out["jobStatus"] = self.job_status.to_dict()
        out["savepoints"] = self.savepoints.to_dict()
        out["reconciliation"] = self.reconciliation.to_dict()
        _put(out, "scaling", self.scaling.to_dict() if self.scaling else None)
        _put(out, "restoredFrom", self.restored_from.to_dict() if self.restored_from else None)
        out["conditions"] = [c.to_dict() for c in self.conditions]
        _put(out, "observedGeneration", self.observed_generation)
        _put(out, "error", self.error)
        _put(out, "batch", copy.deepcopy(dict(self.batch)) if self.batch is not None else None)
        _put(out, "sql", copy.deepcopy(dict(self.sql)) if self.sql is not None else None)
        _put(out, "selector", self.selector)
        _put(out, "jobManagerUrl", self.job_manager_url)
        return out

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def with_condition(self, type_: str, status: str, reason: str, message: str, now: datetime) -> FlinkJobStatus:
        """Set one condition; its lastTransitionTime moves only when its status changes (Kubernetes convention)."""
        old = self.condition(type_)
        since = old.last_transition_time if old is not None and old.status == status else now
        new = Condition(type_, status, reason, message, since)
        others = tuple(c for c in self.conditions if c.type != type_)
        order = {"Ready": 0, "Progressing": 1, "Degraded": 2, "JobManagerReady": 3, "Reconciling": 4, "Stalled": 5}
        return replace(self, conditions=tuple(sorted(others + (new,), key=lambda c: order.get(c.type, 9))))


def status_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) turning `before` into `after`: removed keys become None."""
    patch: dict[str, Any] = {}
    for key in before.keys() | after.keys():
        if key not in after:
            patch[key] = None
        elif key not in before:
            patch[key] = copy.deepcopy(after[key])
        elif isinstance(before[key], dict) and isinstance(after[key], dict):
            sub = status_patch(before[key], after[key])
            if sub:
                patch[key] = sub
        elif before[key] != after[key]:
            patch[key] = copy.deepcopy(after[key])
    return patch
