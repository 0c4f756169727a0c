"""The OpenAPI schema of `FlinkJob.status`, the operator's write-ahead log.

What the operator has decided is written here before it acts, so an operator that restarts in the
middle of an upgrade reads where it was and resumes (lifecycle.py). status.py is the typed view.
"""

from __future__ import annotations

from strom_operator.schema_types import Schema, array, free_object, integer, obj, string

LIFECYCLE_STATES = ("CREATED", "DEPLOYED", "STABLE", "UPGRADING", "SUSPENDED", "FAILED",
                    "ROLLING_BACK", "ROLLED_BACK", "DELETING")
UPGRADE_STEPS = ("STOP_WITH_SAVEPOINT", "DELETE_DEPLOYMENTS", "DEPLOY", "SAVEPOINT_FAILED")
SAVEPOINT_KINDS = ("manual", "periodic", "upgrade", "suspend", "deletion")
TIMESTAMP = "RFC 3339 UTC time, e.g. 2024-05-01T12:00:00Z."


def _savepoint(description: str) -> Schema:
    return obj(description, {
        "path": string("Location of the savepoint (s3://... or file://...)."),
        "timestamp": string("When the savepoint completed. " + TIMESTAMP),
        "kind": string("Why it was taken.", enum=SAVEPOINT_KINDS),
    })


STATUS: Schema = obj("Observed state of the job, and the operator's record of what it is doing.", {
    "lifecycleState": string("Where the FlinkJob is in its lifecycle.", enum=LIFECYCLE_STATES),
    "jobStatus": obj("The job as the JobManager's REST API reports it.", {
        "jobId": string("Flink job id (32 hex digits)."),
        "state": string("Job state reported by the JobManager (e.g. RUNNING, FAILED, FINISHED)."),
        "startTime": string("When the job started. " + TIMESTAMP),
        "lastCheckpoint": string("Location of the latest completed checkpoint."),
    }),
    "savepoints": obj("Savepoints taken by the operator.", {
        "last": _savepoint("The latest completed savepoint."),
        "history": array("Completed savepoints, oldest first; pruned by spec.savepoints.maxHistory and maxAge.",
                         _savepoint("A completed savepoint.")),
        "pending": obj("A savepoint that was triggered and has not completed.", {
            "triggerId": string("Trigger id sent to the JobManager; re-sending it is idempotent."),
            "kind": string("Why it was triggered.", enum=SAVEPOINT_KINDS),
            "triggeredAt": string("When it was triggered. " + TIMESTAMP),
            "nonce": integer("The spec.job.savepointTriggerNonce a manual savepoint answers."),
        }),
        "lastTriggerNonce": integer("The spec.job.savepointTriggerNonce last acted upon."),
        "lastTriggeredAt": string("When the operator last triggered a savepoint (periodic savepoints count "
                                  "from it, so a failing one is not retried in a loop). " + TIMESTAMP),
    }),
    "reconciliation": obj("The operator's write-ahead log of upgrades.", {
        "lastReconciledSpec": free_object("The spec the operator is deploying or has deployed (written "
                                          "before anything is torn down)."),
        "lastStableSpec": free_object("The last spec whose job reached RUNNING; rollbacks restore it."),
        "upgradeStep": string("The step of the upgrade in progress.", enum=UPGRADE_STEPS),
        "upgradeStartedAt": string("When the upgrade in progress started. " + TIMESTAMP),
        "deployedAt": string("When the current deployments were created. " + TIMESTAMP),
        "restorePath": string("Savepoint or checkpoint the next deployment restores from."),
        "reason": string("Why the operator is waiting, rolled back or failed, in words."),
    }),
    "scaling": obj("Parallelism and slots of the deployed job.", {
        "parallelism": integer("Parallelism of the deployed job."),
        "taskManagers": integer("Number of TaskManager pods."),
        "slotsTotal": integer("TaskManagers times slots per TaskManager."),
    }),
    "restoredFrom": obj("What the running job restored its state from.", {
        "kind": string("Kind of snapshot restored.", enum=("savepoint", "checkpoint", "none")),
        "path": string("Location of the snapshot."),
        "age": string("Age of the snapshot when restored, e.g. '5 min' (empty when unknown)."),
        "why": string("Why this snapshot (or none) was chosen."),
    }),
    "conditions": array("Ready, Progressing and Degraded conditions, with reasons.", obj("A condition.", {
        "type": string("Condition type.", enum=("Ready", "Progressing", "Degraded")),
        "status": string("Whether the condition holds.", enum=("True", "False", "Unknown")),
        "reason": string("One-word CamelCase reason."),
        "message": string("Human-readable explanation."),
        "lastTransitionTime": string("When the status last changed. " + TIMESTAMP),
    }, required=("type", "status"))),
    "observedGeneration": integer("The metadata.generation of the FlinkJob last reconciled."),
    "error": string("The latest error (invalid spec, failed savepoint, failed job), empty when none."),
})
