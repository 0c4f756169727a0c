"""Status fields derived from the rest of the status just before it is written.

* `Ready=False` while the lifecycle has not decided Ready yet (a first deployment, a spec that never
  deployed): kstatus readers and `kubectl wait --for=condition=Ready=false` expect the condition from
  the first status write on. Its reason is Deploying (Progressing=True) or NotReady, its message the
  Degraded or Progressing condition's; the lifecycle's own Ready (JobRunning, JobFailed, Suspended,
  ...) or a failure to act (action_failures.py) replaces it, and it comes back when a failure ends;
* kstatus' `Reconciling` and `Stalled` conditions (kstatus_conditions.py decides them from Ready,
  Progressing, Degraded and the lifecycle state), so Flux, `kubectl wait` and other kstatus readers
  understand a FlinkJob without a custom health check;
* `status.jobManagerUrl`: the JobManager Service's REST URL (https with spec.security.tls), where the
  web dashboard is; batch FlinkJobs have no JobManager and no URL;
* `status.selector`: the label selector of the TaskManager pods in `kubectl get -l` form, which the
  scale subresource's labelSelectorPath points at, so a HorizontalPodAutoscaler can target a FlinkJob.
  Batch FlinkJobs have no TaskManagers and no selector.

Pure: status in, status out. The reconciler applies it to every status it writes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from strom_operator.crd.status import FlinkJobStatus
from strom_operator.observe.kstatus_conditions import kstatus_conditions
from strom_operator.resources.labels import REST_PORT, FlinkJobRef, jobmanager_name, selector_labels

DERIVED_CONDITIONS = ("Reconciling", "Stalled")
# Ready's reasons when derived here; the lifecycle and action_failures.py never give Ready these.
DERIVED_READY_REASONS = ("Deploying", "NotReady")
NOT_YET_RUNNING = "waiting for the job to run"


def taskmanager_selector(ref: FlinkJobRef) -> str:
    return ",".join(f"{k}={v}" for k, v in selector_labels(ref, "taskmanager").items())


def jobmanager_url(ref: FlinkJobRef, *, tls: bool) -> str:
    """The JobManager Service's REST URL inside the cluster (the web dashboard is at its `/`)."""
    return f"{'https' if tls else 'http'}://{jobmanager_name(ref)}.{ref.namespace}.svc:{REST_PORT}"


def with_derived_fields(
    status: FlinkJobStatus, ref: FlinkJobRef, *, batch: bool, now: datetime, tls: bool = False
) -> FlinkJobStatus:
    """`status` with a derived Ready (when the lifecycle has none), Reconciling/Stalled recomputed and the
    TaskManager selector and JobManager URL set (streaming only; `tls`: spec.security.tls.enabled)."""
    streaming = replace(status, selector=taskmanager_selector(ref), job_manager_url=jobmanager_url(ref, tls=tls))
    out = with_derived_ready(replace(status, selector=None, job_manager_url=None) if batch else streaming, now)
    for condition in kstatus_conditions(out.to_dict()):
        out = out.with_condition(condition.type, condition.status, condition.reason, condition.message, now)
    return out


def is_derived_ready(status: FlinkJobStatus) -> bool:
    ready = status.condition("Ready")
    return ready is not None and ready.status == "False" and ready.reason in DERIVED_READY_REASONS


def with_derived_ready(status: FlinkJobStatus, now: datetime) -> FlinkJobStatus:
    """`status` with Ready=False derived from Progressing/Degraded, unless Ready is the lifecycle's or a failure's."""
    if status.condition("Ready") is not None and not is_derived_ready(status):
        return status
    progressing, degraded = status.condition("Progressing"), status.condition("Degraded")
    reason = "Deploying" if progressing is not None and progressing.status == "True" else "NotReady"
    if degraded is not None and degraded.status == "True" and degraded.message:
        message = degraded.message
    elif progressing is not None and progressing.message:
        message = progressing.message
    else:
        message = NOT_YET_RUNNING
    return status.with_condition("Ready", "False", reason, message, now)
