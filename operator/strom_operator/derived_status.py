"""Status fields derived from the rest of the status just before it is written.

* kstatus' `Reconciling` and `Stalled` conditions (kstatus_conditions.py decides them from Ready,
  Progressing, Degraded and the lifecycle state), so Flux, `kubectl wait` and other kstatus readers
  understand a FlinkJob without a custom health check;
* `status.selector`: the label selector of the TaskManager pods in `kubectl get -l` form, which the
  scale subresource's labelSelectorPath points at, so a HorizontalPodAutoscaler can target a FlinkJob.
  Batch FlinkJobs have no TaskManagers and no selector.

Pure: status in, status out. The reconciler applies it to every status it writes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from strom_operator.kstatus_conditions import kstatus_conditions
from strom_operator.labels import FlinkJobRef, selector_labels
from strom_operator.status import FlinkJobStatus

DERIVED_CONDITIONS = ("Reconciling", "Stalled")


def taskmanager_selector(ref: FlinkJobRef) -> str:
    return ",".join(f"{k}={v}" for k, v in selector_labels(ref, "taskmanager").items())


def with_derived_fields(status: FlinkJobStatus, ref: FlinkJobRef, *, batch: bool, now: datetime) -> FlinkJobStatus:
    """`status` with Reconciling/Stalled recomputed and the TaskManager selector set (streaming only)."""
    out = replace(status, selector=None if batch else taskmanager_selector(ref))
    for condition in kstatus_conditions(out.to_dict()):
        out = out.with_condition(condition.type, condition.status, condition.reason, condition.message, now)
    return out
