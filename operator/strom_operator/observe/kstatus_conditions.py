"""kstatus' Reconciling and Stalled conditions, derived from the conditions the operator keeps.

Flux, `kubectl wait` and other kstatus readers know a custom resource's state only from
`status.observedGeneration` and two abnormal-true conditions: Reconciling (the controller is working
towards the latest spec) and Stalled (it cannot get there without a change by the user). This maps
Strom's Ready/Progressing/Degraded and lifecycleState onto them, by the same rules as the Argo CD
health check (charts/strom-operator/health/flinkjob.lua) and the Flux healthCheckExprs of
examples/gitops/: Stalled is a failed, rolled-back or invalid FlinkJob, pods stuck past their deadline,
a deployment that timed out, an upgrade savepoint that failed, or a failure to act that only the user
can fix (a 403, an admission denial, missing S3 credentials); Reconciling is any other state that is
not yet the running (or suspended) job. Never both. Pure: status in, two conditions out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Progressing=False reasons after which the operator waits for the user.
STALLED_PROGRESS = ("DeploymentTimeout", "SavepointFailed")
# Degraded=True reasons after which the operator goes on by itself (a batch driver's retry).
RETRIED = ("DriverFailed",)
# Ready=False reasons of a failure to act (action_failures.py) that the next try meets again until the
# user changes something: RBAC, admission, an invalid object, the S3 credentials. The others
# (ApiUnreachable, ApiError, Conflict, Unauthorized before a credentials refresh, S3Unreachable) pass.
NEEDS_USER = ("Forbidden", "Invalid", "AdmissionDenied", "NotFound", "S3AccessDenied", "S3CredentialsMissing")


@dataclass(frozen=True, slots=True)
class KstatusCondition:
    type: str
    status: str
    reason: str
    message: str


def kstatus_conditions(status: Mapping[str, Any]) -> tuple[KstatusCondition, KstatusCondition]:
    """(Reconciling, Stalled) for a FlinkJob status as the operator writes it (FlinkJobStatus.to_dict)."""
    conditions = {c["type"]: c for c in status.get("conditions") or ()
                  if isinstance(c, Mapping) and isinstance(c.get("type"), str)}
    stalled = _stalled(status, conditions)
    if stalled is not None:
        return (KstatusCondition("Reconciling", "False", "Stalled", stalled[1]),
                KstatusCondition("Stalled", "True", *stalled))
    reconciling = _reconciling(status, conditions)
    if reconciling is not None:
        return (KstatusCondition("Reconciling", "True", *reconciling),
                KstatusCondition("Stalled", "False", "Progressing", reconciling[1]))
    settled = "the job is suspended" if status.get("lifecycleState") == "SUSPENDED" else "the job is running"
    return (KstatusCondition("Reconciling", "False", "Reconciled", settled),
            KstatusCondition("Stalled", "False", "Reconciled", settled))


def _holds(conditions: Mapping[str, Mapping[str, Any]], type_: str, status: str = "True") -> bool:
    return (conditions.get(type_) or {}).get("status") == status


def _said(condition: Mapping[str, Any] | None, reason: str, message: str) -> tuple[str, str]:
    condition = condition or {}
    return condition.get("reason") or reason, condition.get("message") or message


def _stalled(status: Mapping[str, Any], conditions: Mapping[str, Mapping[str, Any]]) -> tuple[str, str] | None:
    state = status.get("lifecycleState")
    degraded = conditions.get("Degraded") or {}
    if degraded.get("status") == "True" and degraded.get("reason") == "InvalidSpec":
        return _said(degraded, "InvalidSpec", "the spec is invalid")
    if state == "FAILED":
        return "JobFailed", status.get("error") or _said(conditions.get("Ready"), "", "the job failed")[1]
    if state == "ROLLED_BACK":
        why = (status.get("reconciliation") or {}).get("reason") or status.get("error") or "the new spec did not run"
        return "RolledBack", f"rolled back to the last stable spec: {why}"
    if degraded.get("status") == "True" and degraded.get("reason") not in RETRIED:
        return _said(degraded, "Degraded", "degraded")
    ready = conditions.get("Ready") or {}
    if ready.get("status") == "False" and ready.get("reason") in NEEDS_USER:
        return _said(ready, "Failing", "the operator cannot act")
    progressing = conditions.get("Progressing") or {}
    if progressing.get("status") == "False" and progressing.get("reason") in STALLED_PROGRESS:
        return _said(progressing, "Stalled", "the deployment did not progress")
    return None


def _reconciling(status: Mapping[str, Any], conditions: Mapping[str, Mapping[str, Any]]) -> tuple[str, str] | None:
    if _holds(conditions, "Progressing"):
        return _said(conditions.get("Progressing"), "Progressing", "progressing")
    if _holds(conditions, "Degraded"):  # a retried failure (RETRIED)
        return _said(conditions.get("Degraded"), "Retrying", "retrying")
    if status.get("lifecycleState") == "SUSPENDED" or _holds(conditions, "Ready"):
        return None
    return _said(conditions.get("Ready"), "Deploying", "waiting for the job to run")
