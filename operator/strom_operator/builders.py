"""All Kubernetes objects of a deployed FlinkJob, in the order they are applied.

The config first (pods mount it), then the Service (TaskManagers dial it), then the JobManager
and TaskManager Deployments. Each object is built by its own module; this is the one list a
handler applies for a `DeployJob` step.
"""

from __future__ import annotations

from typing import Any

from strom_operator.configmap import build_configmap
from strom_operator.jobmanager import build_jobmanager_deployment, build_jobmanager_service
from strom_operator.labels import FlinkJobRef
from strom_operator.spec import FlinkJobSpec
from strom_operator.status import Scaling
from strom_operator.taskmanager import build_taskmanager_deployment, taskmanager_replicas


def build_job_objects(ref: FlinkJobRef, spec: FlinkJobSpec, *, restore_from: str | None = None,
                      allow_non_restored_state: bool = False) -> list[dict[str, Any]]:
    return [
        build_configmap(ref, spec),
        build_jobmanager_service(ref),
        build_jobmanager_deployment(ref, spec, restore_from=restore_from,
                                    allow_non_restored_state=allow_non_restored_state),
        build_taskmanager_deployment(ref, spec),
    ]


def scaling_of(spec: FlinkJobSpec) -> Scaling:
    """What status.scaling reports for a deployed spec."""
    tms = taskmanager_replicas(spec.job.parallelism, spec.task_manager.slots)
    return Scaling(spec.job.parallelism, tms, tms * spec.task_manager.slots)
