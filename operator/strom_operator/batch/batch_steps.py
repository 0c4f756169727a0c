"""The steps batch_lifecycle asks the batch reconciler to perform, besides steps.WriteStatus and steps.Wait.

As for streaming jobs (steps.py), each step carries the whole status to write once it is done,
and each action is idempotent: applying the same objects again, deleting what may be gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from strom_operator.crd.spec import FlinkJobSpec
from strom_operator.crd.status import FlinkJobStatus
from strom_operator.lifecycle.steps import SOON, Wait, WriteStatus


@dataclass(frozen=True, slots=True)
class CreateDriver:
    """Apply the RBAC, ConfigMap, Service and driver pod of this submission (driver.driver_objects)."""

    spec: FlinkJobSpec
    submission: int
    status: FlinkJobStatus
    requeue_after: float = SOON


@dataclass(frozen=True, slots=True)
class DeleteDriver:
    """Delete a driver pod that is to be replaced (a changed spec) and its executor pods."""

    driver_pod: str
    status: FlinkJobStatus
    requeue_after: float = 0.0


@dataclass(frozen=True, slots=True)
class CleanupExecutors:
    """Delete the executor pods of an ended driver (Spark may not have: the driver crashed)."""

    driver_pod: str
    status: FlinkJobStatus
    requeue_after: float = 0.0


BatchStep = CreateDriver | DeleteDriver | CleanupExecutors | WriteStatus | Wait
